package trust

import (
	_ "embed"
	"errors"
	"fmt"
	"os"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/berth-mcp/berth/internal/fsx"
)

// publicGoodTrustedRootJSON is the Sigstore public-good trusted root
// (Fulcio CAs, Rekor logs, CT logs, timestamp authorities) as shipped by
// sigstore-go v1.3.0 in examples/trusted-root-public-good.json. It is
// public data. Refresh it from the Sigstore TUF repository
// (https://tuf-repo-cdn.sigstore.dev, target trusted_root.json) when
// Sigstore rotates keys; identity signers with an explicit TrustedRoot
// file do not use it.
//
//go:embed publicgood_trusted_root.json
var publicGoodTrustedRootJSON string

// maxTrustedRootSize bounds a trusted_root.json read from disk.
const maxTrustedRootSize = 8 << 20

// PublicGoodTrustedRoot returns a fresh parse of the embedded Sigstore
// public-good trusted root, the root of identity signers whose TrustedRoot
// is empty.
func PublicGoodTrustedRoot() (*root.TrustedRoot, error) {
	tr, err := root.NewTrustedRootFromJSON([]byte(publicGoodTrustedRootJSON))
	if err != nil {
		// Only a broken build can get here: the file is embedded.
		return nil, fmt.Errorf("embedded Sigstore public-good trusted root does not load: %w", err)
	}
	return tr, nil
}

// loadTrustedRoot loads the trusted root of an identity signer: the file
// at path, or the embedded public-good root when path is "".
func loadTrustedRoot(path string) (*root.TrustedRoot, error) {
	if path == "" {
		return PublicGoodTrustedRoot()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w; give the path of an existing trusted_root.json, or omit it to use the Sigstore public-good root", path, err)
	}
	defer f.Close()
	data, err := fsx.ReadAll(f, path, maxTrustedRootSize)
	if tl := (*fsx.TooLargeError)(nil); errors.As(err, &tl) {
		return nil, fmt.Errorf("trusted root %s is larger than %d MiB: give a Sigstore trusted_root.json", path, maxTrustedRootSize>>20)
	}
	if err != nil {
		return nil, fmt.Errorf("trusted root %s: %w", path, err)
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("trusted root %s is not a valid Sigstore trusted_root.json (%w); fetch a current one, e.g. `cosign trusted-root create` or the Sigstore TUF repository", path, err)
	}
	if len(tr.FulcioCertificateAuthorities()) == 0 {
		return nil, errors.New("trusted root " + path + " lists no Fulcio certificate authority, so no certificate identity can verify under it: use a trusted_root.json with certificateAuthorities")
	}
	return tr, nil
}
