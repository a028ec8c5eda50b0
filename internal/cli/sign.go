package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

func (a *app) keygenCommand() *cobra.Command {
	var prefix string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "keygen --out PREFIX",
		Example: `  berth keygen --out ~/keys/acme`,
		Short:   "Make an ECDSA P-256 key pair for signing bundles",
		Long: `Keygen writes PREFIX.key (the private key, PKCS#8 PEM, mode 0600) and
PREFIX.pub (the public key, PEM). It never overwrites a file. Keep the
private key secret; give PREFIX.pub to the people who trust your bundles
(berth signers add-key NAME PREFIX.pub).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if prefix == "" {
				return usagef("--out PREFIX is required")
			}
			key, pub, err := trust.WriteKeyPair(prefix)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, keygenJSON{PrivateKey: key, PublicKey: pub})
			}
			fmt.Fprintf(a.stdout, "Wrote %s (private, keep it secret) and %s (public).\n", key, pub)
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "out", "", "write PREFIX.key and PREFIX.pub")
	a.jsonFlag(cmd, &asJSON, keygenJSON{})
	return cmd
}

func (a *app) signCommand() *cobra.Command {
	var opts bundle.Options
	var keyFile, out string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "sign SOURCE --key PREFIX.key",
		Example: `  berth sign ./acme-notes --key ~/keys/acme.key
  berth sign acme-notes-1.4.2.tar.gz --key ~/keys/acme.key --out acme-notes.sigstore.json`,
		Short: "Sign a bundle's canonical listing with a key",
		Long: `Sign validates the bundle and writes a Sigstore bundle (v0.3 JSON) over its
canonical listing, key-based with no transparency log, to
SOURCE.sigstore.json or --out FILE. cosign sign-blob --bundle FILE
--new-bundle-format over 'berth digest --listing' output works too.`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyFile == "" {
				return usagef("--key FILE is required (make one with berth keygen --out PREFIX)")
			}
			priv, err := os.ReadFile(keyFile)
			if err != nil {
				return err
			}
			hctx, stopProgress := a.hashing(cmd.Context(), !asJSON, "hashing")
			b, err := openBundle(hctx, args[0], &opts)
			stopProgress()
			if err != nil {
				return err
			}
			defer b.Close()
			sig, err := trust.Sign(cmd.Context(), b.Listing().Bytes(), priv)
			if err != nil {
				return err
			}
			if out == "" {
				out = store.DefaultSignatureFile(args[0])
			}
			if err := atomicfile.WriteFile(out, sig, 0o644); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, signJSON{Name: b.Manifest.Name, Version: b.Manifest.Version, Digest: b.Digest, Signature: out})
			}
			fmt.Fprintf(a.stdout, "Signed %s %s (%s); signature written to %s.\n", b.Manifest.Name, b.Manifest.Version, b.Digest, out)
			return nil
		},
	}
	a.jsonFlag(cmd, &asJSON, signJSON{})
	limitFlags(cmd, &opts)
	cmd.Flags().StringVar(&keyFile, "key", "", "the private key (PKCS#8 PEM, from berth keygen)")
	cmd.Flags().StringVar(&out, "out", "", "where to write the signature (default SOURCE.sigstore.json)")
	return cmd
}

// keygenJSON is what keygen --json prints.
type keygenJSON struct {
	// PrivateKey is the private key's file (mode 0600).
	PrivateKey string `json:"privateKey"`
	// PublicKey is the public key's file, for berth signers add-key.
	PublicKey string `json:"publicKey"`
}

// signJSON is what sign --json prints.
type signJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Signature is the Sigstore bundle file written.
	Signature string `json:"signature"`
}
