package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/oci"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

func newCatalogPushCmd(a *app) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use: "push DIR oci://REGISTRY/REPOSITORY[:TAG]",
		Example: `  berth catalog push ./catalog oci://ghcr.io/acme/berth-catalog
  berth catalog push ./catalog oci://registry.example/tools/catalog:stable`,
		Short: "Publish a catalog to an OCI registry",
		Long: `Push publishes the catalog in DIR (its TUF metadata, its catalog target and
every bundle archive under bundles/) to an OCI registry, each bundle's
Sigstore bundle attached to it as a referrer (the referrers API, or the
tag schema on registries without it). The tag (default "catalog") is set
last, in one request, so readers see the old catalog or the new one.
Blobs the registry already has are not sent again; the same catalog
pushed twice gives the same digests. Before pushing, the published
metadata in DIR is verified as every catalog command verifies it.

Credentials come from the Docker config file and its credential helpers
(docker login, oras login); berth never writes them. A registry on a
loopback address that does not speak TLS is reached over plain http.
docs/marketplace.md, "Catalogs in an OCI registry", gives the layout.`,
		Args: exactArgs(2, "DIR and an oci:// location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCatalogPush(cmd.Context(), a, args[0], args[1], jsonOut)
		},
	}
	a.jsonFlag(cmd, &jsonOut, catalogPushJSON{})
	return cmd
}

// catalogPushJSON is what berth catalog push --json prints.
type catalogPushJSON struct {
	Dir string `json:"dir"`
	// Ref is the pushed index by digest; Tag the tag pointing at it.
	Ref           string `json:"ref"`
	Tag           string `json:"tag"`
	Files         int    `json:"files"`
	Uploaded      int    `json:"uploaded"`
	UploadedBytes int64  `json:"uploadedBytes"`
	Bundles       int    `json:"bundles"`
	// RootSHA256 is the sha256 of 1.root.json, the pin users give to
	// berth marketplace add.
	RootSHA256 string `json:"rootSha256"`
}

func runCatalogPush(ctx context.Context, a *app, dir, loc string, jsonOut bool) error {
	ref, err := oci.ParseRef(loc)
	if err != nil {
		return usagef("%v", err)
	}
	if ref.Digest != "" {
		return usagef("%s names a digest; push a catalog to a repository or a tag (the tag defaults to %q)", loc, oci.DefaultTag)
	}
	r, err := repo.Open(dir, "", nil)
	if err != nil {
		return err
	}
	if _, err := r.Published(); err != nil {
		return err
	}
	root, err := os.ReadFile(filepath.Join(dir, "1.root.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(root)
	res, err := oci.PushCatalog(ctx, dir, ref, nil)
	if err != nil {
		return err
	}
	out := catalogPushJSON{Dir: dir, Ref: res.Ref.String(), Tag: res.Tag, Files: res.Files, Uploaded: res.Uploaded, UploadedBytes: res.UploadedBytes, Bundles: res.Bundles, RootSHA256: hex.EncodeToString(sum[:])}
	if jsonOut {
		return writeJSON(a.stdout, out)
	}
	tagged := &oci.Ref{Registry: ref.Registry, Repository: ref.Repository, Tag: res.Tag}
	fmt.Fprintf(a.stdout, "Pushed the catalog in %s to %s\n  index %s\n  %d files (%d uploaded, %d bytes), %d bundles with their signatures as referrers\n",
		dir, tagged, res.Ref.Digest, res.Files, res.Uploaded, res.UploadedBytes, res.Bundles)
	src := tagged.String()
	if res.Tag == oci.DefaultTag {
		src = ref.Repo()
	}
	fmt.Fprintf(a.stdout, "Users add it with:\n  berth marketplace add %s %s --root-sha256 %s\n", r.Name(), src, out.RootSHA256)
	return nil
}

func newPushCmd(a *app) *cobra.Command {
	var sigFile string
	var jsonOut bool
	var bopts bundle.Options
	cmd := &cobra.Command{
		Use: "push BUNDLE oci://REGISTRY/REPOSITORY[:TAG]",
		Example: `  berth push acme-notes-1.4.2.tar.gz oci://ghcr.io/acme/acme-notes
  berth push ./acme-notes oci://registry.example/tools/acme-notes:1.4.2`,
		Short: "Publish one signed bundle to an OCI registry",
		Long: `Push publishes one bundle (an archive, or a directory packed as the
deterministic .tar.gz berth catalog add makes) as an OCI artifact, with
its Sigstore bundle (BUNDLE.sigstore.json, or --signature) attached as a
referrer. The tag defaults to the bundle's version ("+" of a build
suffix written "_", as OCI tags have no "+"). It prints the
manifest's digest: others trust the bundle by that digest only, as
  berth trust oci://REGISTRY/REPOSITORY@sha256:<digest>
since a tag can be moved to other content.`,
		Args: exactArgs(2, "BUNDLE and an oci:// location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPush(cmd.Context(), a, args[0], args[1], sigFile, &bopts, jsonOut)
		},
	}
	limitFlags(cmd, &bopts)
	cmd.Flags().StringVar(&sigFile, "signature", "", "the Sigstore bundle to attach (default BUNDLE.sigstore.json)")
	a.jsonFlag(cmd, &jsonOut, pushJSON{})
	return cmd
}

// pushJSON is what berth push --json prints.
type pushJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Ref is the bundle's manifest by digest, what berth trust takes.
	Ref string `json:"ref"`
	Tag string `json:"tag"`
}

func runPush(ctx context.Context, a *app, src, loc, sigFile string, bopts *bundle.Options, jsonOut bool) error {
	ref, err := oci.ParseRef(loc)
	if err != nil {
		return usagef("%v", err)
	}
	if ref.Digest != "" {
		return usagef("%s names a digest; push to a repository or a tag, and berth prints the digest", loc)
	}
	if sigFile == "" {
		sigFile = store.DefaultSignatureFile(src)
	}
	if _, err := os.Stat(sigFile); err != nil {
		return fmt.Errorf("%s has no signature at %s; sign it with berth sign (or give --signature FILE): others trust a bundle from a registry only with its signature", src, sigFile)
	}
	b, err := bundle.Open(ctx, src, bopts)
	if err != nil {
		return err
	}
	defer b.Close()
	archive := src
	if fi, err := os.Stat(src); err == nil && fi.IsDir() {
		tmp, err := os.MkdirTemp("", "berth-push-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		archive = filepath.Join(tmp, b.Manifest.Name+"-"+b.Manifest.Version+".tar.gz")
		f, err := os.OpenFile(archive, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		if err := repo.PackTarGz(ctx, b, f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if ref.Tag == "" {
		// An OCI tag has no "+": a semver build suffix takes "_", as
		// Helm does (1.0.0+build.5 → 1.0.0_build.5).
		ref.Tag = strings.ReplaceAll(b.Manifest.Version, "+", "_")
	}
	res, err := oci.PushBundle(ctx, oci.BundleFiles{Archive: archive, Signature: sigFile, Name: b.Manifest.Name, Version: b.Manifest.Version}, ref, nil)
	if err != nil {
		return err
	}
	if jsonOut {
		return writeJSON(a.stdout, pushJSON{Name: b.Manifest.Name, Version: b.Manifest.Version, Ref: res.Ref.String(), Tag: res.Tag})
	}
	fmt.Fprintf(a.stdout, "Pushed %s %s to %s:%s\n  %s\nOthers trust it by its digest:\n  berth trust %s\n", b.Manifest.Name, b.Manifest.Version, ref.Repo(), res.Tag, res.Ref, res.Ref)
	return nil
}

// pullForTrust reads a bundle from a registry by digest into a private
// temporary directory for berth trust: the archive, and its signature
// from the referrer unless the operator gives one.
func pullForTrust(ctx context.Context, loc string, opts *trustOptions, topts *store.TrustOptions) (archive string, cleanup func(), err error) {
	ref, err := oci.ParseRef(loc)
	if err != nil {
		return "", nil, usagef("%v", err)
	}
	if ref.Digest == "" {
		return "", nil, usagef("%s names a tag, not a digest; a tag can be moved to other content, so berth trusts a bundle from a registry only by digest, as it refuses an image by tag in a manifest: write %s@sha256:<digest> (berth push prints it)", loc, ref.Repo())
	}
	tmp, err := os.MkdirTemp("", "berth-pull-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	f, err := os.OpenFile(filepath.Join(tmp, ".download"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	pb, err := oci.PullBundle(ctx, ref, f, nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	// The archive takes the name of its format, which is how berth
	// reads it.
	archive = filepath.Join(tmp, pb.FileName)
	if err := os.Rename(filepath.Join(tmp, ".download"), archive); err != nil {
		cleanup()
		return "", nil, err
	}
	topts.Source = ref.String()
	if opts.SigFile == "" && !opts.AllowUnsigned {
		if pb.Signature == nil {
			cleanup()
			return "", nil, fmt.Errorf("%w: %s has no signature attached (no referrer of artifactType %s); ask its publisher to push it with berth push, or give --signature FILE", trust.ErrUntrusted, ref, oci.ArtifactTypeSigstore)
		}
		topts.Signature = pb.Signature
	}
	return archive, cleanup, nil
}

// isOCI reports whether a command's SOURCE is an oci:// location.
func isOCI(s string) bool { return oci.IsRef(strings.TrimSpace(s)) }

// locatedError is err with the temporary path of a pulled bundle
// replaced by the location the operator gave.
type locatedError struct {
	err      error
	from, to string
}

func (e *locatedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.from, e.to) }

func (e *locatedError) Unwrap() error { return e.err }
