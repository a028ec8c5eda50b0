package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/oci"
	"github.com/berth-mcp/berth/review"
)

func newMirrorCmd(a *app) *cobra.Command {
	opts := &mirrorOptions{}
	cmd := &cobra.Command{
		Use: "mirror CATALOG DEST",
		Example: `  berth mirror acme /srv/mirrors/acme
  berth mirror acme ./acme-mirror --json
  berth mirror acme oci://registry.corp.example/mirrors/acme`,
		Short: "Copy a signed catalog, its bundles and signatures, for a network without access to its source",
		Long: `Mirror copies the signed catalog CATALOG (one you added with berth
marketplace add) into the directory DEST, so that a network without access
to its source can add DEST with the same root pin. It runs a full TUF
update of CATALOG first (every refusal of berth marketplace update is
mirror's, exit 4), then reads the catalog again from its first root on and
writes exactly the verified metadata (every root version, timestamp.json,
the snapshot, the targets and the catalog target, under the names clients
fetch) and every bundle archive and signature the catalog lists at a path
relative to it, each archive checked against its size and sha256.
Absolute URLs are not copied (their own server serves them): each is
named. Unsigned sources (--registry, --unsigned) and the built-in catalog
cannot be mirrored. A catalog with a mirror (--mirror) is read from it
first, as updates read it, except when DEST is that mirror: then berth
reads the catalog's source.

DEST is written whole or not at all: the mirror is built beside it and
renamed into place. DEST may be new, empty, or an earlier mirror of the
same catalog, which is replaced (a reader sees the old mirror or the new
one); anything else, or a symbolic link, is refused. Serve DEST as it is
(a web server, a bucket, a file share), and give its users the line
mirror prints: berth marketplace add NAME DEST --root-sha256 HEX. A mirror
cannot change what a catalog says, only stop serving it.

DEST may also be an OCI repository, oci://REGISTRY/REPOSITORY[:TAG]: the
same files, mirrored into a private temporary directory, are pushed as
berth catalog push pushes a catalog (bundles with their signatures as
referrers, the tag, default "catalog", set last), with the credentials of
the Docker config file. When DEST is the catalog's own mirror, berth reads
the catalog's source.`,
		Args: exactArgs(2, "CATALOG and DEST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Catalog, opts.Dest = args[0], args[1]
			return runMirror(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, marketplace.MirrorResult{})
	return cmd
}

// mirrorOptions are the inputs of berth mirror.
type mirrorOptions struct {
	// Catalog and Dest are the positional arguments.
	Catalog, Dest string
	JSON          bool
}

func runMirror(ctx context.Context, a *app, opts *mirrorOptions) error {
	if err := marketplace.CheckName(opts.Catalog); err != nil {
		return usagef("%v", err)
	}
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	if oci.IsRef(opts.Dest) {
		return runMirrorOCI(ctx, a, c, opts)
	}
	res, err := c.Mirror(ctx, opts.Catalog, opts.Dest, nil)
	if err != nil {
		return err
	}
	if res.MirrorFailure != "" {
		a.warnMirrorFailure(opts.Catalog, res.MirrorFailure)
	}
	if opts.JSON {
		return writeJSON(a.stdout, res)
	}
	verb := "Mirrored"
	if res.Replaced {
		verb = "Replaced the earlier mirror with"
	}
	fmt.Fprintf(a.stdout, "%s catalog %s (targets version %d) in %s: %d file(s), %d bytes (%d metadata, %d archive(s), %d signature(s)",
		verb, res.Catalog, res.TargetsVersion, res.Dir, res.Files(), res.Bytes, res.Metadata, res.Archives, res.Signatures)
	if res.Reused > 0 {
		fmt.Fprintf(a.stdout, "; %d archive(s) taken, checked, from the earlier mirror", res.Reused)
	}
	fmt.Fprintln(a.stdout, ").")
	for _, n := range res.NotMirrored {
		fmt.Fprintf(a.stdout, "not mirrored: %s\n", review.Printable(n.String()))
	}
	if res.Skipped > 0 {
		fmt.Fprintf(a.stdout, "not mirrored: the files of %d catalog entr(ies) berth skips as malformed (berth marketplace list counts them)\n", res.Skipped)
	}
	fmt.Fprintf(a.stdout, "Its users add it with the same root pin:\n  berth marketplace add %s %s --root-sha256 %s\n", res.Catalog, review.Printable(fsx.ShellQuote(res.Dir)), res.RootSHA256)
	return nil
}

// mirrorOCIJSON is what berth mirror CATALOG oci://… --json prints: the
// mirror, with dir its oci:// location, and what the push sent.
type mirrorOCIJSON struct {
	*marketplace.MirrorResult
	// Ref is the pushed index by digest.
	Ref           string `json:"ref"`
	Uploaded      int    `json:"uploaded"`
	UploadedBytes int64  `json:"uploadedBytes"`
}

// runMirrorOCI mirrors a catalog into an OCI repository: the verified
// catalog into a private temporary directory (Cache.Mirror), which is
// then pushed as berth catalog push pushes a catalog.
func runMirrorOCI(ctx context.Context, a *app, c *marketplace.Cache, opts *mirrorOptions) error {
	ref, err := oci.ParseRef(opts.Dest)
	if err != nil {
		return usagef("DEST: %v", err)
	}
	if ref.Digest != "" {
		return usagef("DEST %s names a digest; mirror into a repository or a tag (the tag defaults to %q)", opts.Dest, oci.DefaultTag)
	}
	mo := &marketplace.MirrorOptions{}
	if infos, err := c.List(); err == nil {
		for _, ci := range infos {
			if ci.Name == opts.Catalog && ci.Mirror != "" {
				if m, err := oci.ParseRef(ci.Mirror); err == nil && m.Registry == ref.Registry && m.Repository == ref.Repository {
					mo.SourceOnly = true
				}
			}
		}
	}
	tmp, err := os.MkdirTemp("", "berth-mirror-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	res, err := c.Mirror(ctx, opts.Catalog, filepath.Join(tmp, "catalog"), mo)
	if err != nil {
		return err
	}
	if res.MirrorFailure != "" {
		a.warnMirrorFailure(opts.Catalog, res.MirrorFailure)
	}
	pr, err := oci.PushCatalog(ctx, res.Dir, ref, nil)
	if err != nil {
		return err
	}
	tagged := &oci.Ref{Registry: ref.Registry, Repository: ref.Repository, Tag: pr.Tag}
	loc := tagged.String()
	if pr.Tag == oci.DefaultTag {
		loc = ref.Repo()
	}
	res.Dir = loc
	if opts.JSON {
		return writeJSON(a.stdout, mirrorOCIJSON{MirrorResult: res, Ref: pr.Ref.String(), Uploaded: pr.Uploaded, UploadedBytes: pr.UploadedBytes})
	}
	fmt.Fprintf(a.stdout, "Mirrored catalog %s (targets version %d) into %s (index %s): %d file(s), %d uploaded (%d bytes), %d bundle(s) with their signatures as referrers.\n",
		res.Catalog, res.TargetsVersion, tagged, pr.Ref.Digest, pr.Files, pr.Uploaded, pr.UploadedBytes, pr.Bundles)
	for _, n := range res.NotMirrored {
		fmt.Fprintf(a.stdout, "not mirrored: %s\n", review.Printable(n.String()))
	}
	fmt.Fprintf(a.stdout, "Its users add it with the same root pin:\n  berth marketplace add %s %s --root-sha256 %s\n", res.Catalog, loc, res.RootSHA256)
	return nil
}

// warnMirrorFailure says, on stderr, that a catalog's mirror could not
// be reached and its source was read instead.
func (a *app) warnMirrorFailure(name, failure string) string {
	w := fmt.Sprintf("catalog %s: its mirror could not be reached (%s); berth read the catalog's source instead", name, failure)
	fmt.Fprintf(a.stderr, "berth: warning: %s\n", review.PrintableLines(w))
	return w
}

func newMarketplaceSetMirrorCmd(a *app) *cobra.Command {
	opts := &setMirrorOptions{}
	cmd := &cobra.Command{
		Use: "set-mirror NAME (URL | --none)",
		Example: `  berth marketplace set-mirror acme https://mirror.corp.example/acme
  berth marketplace set-mirror acme /srv/mirrors/acme
  berth marketplace set-mirror acme --none`,
		Short: "Set or drop the mirror a signed catalog is read from first",
		Long: `set-mirror sets the mirror of the signed catalog NAME, as marketplace add
--mirror does: every update reads URL (a directory or URL, like a SOURCE)
first, and the catalog's source only when the mirror cannot be reached.
Nothing is read now; the next update verifies what the mirror serves
against the same pinned root and the verified copy, and refuses (exit 4)
what fails. --none drops the mirror. The catalog's source, which berth.lock
records, does not change.`,
		Args: rangeArgs(1, 2, "NAME and URL (or NAME --none)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if len(args) == 2 {
				opts.URL = args[1]
			}
			return runSetMirror(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.None, "none", false, "drop the mirror: updates read the catalog's source")
	a.jsonFlag(cmd, &opts.JSON, marketplace.CatalogInfo{})
	return cmd
}

// setMirrorOptions are the inputs of berth marketplace set-mirror.
type setMirrorOptions struct {
	// Name and URL are the positional arguments.
	Name, URL  string
	None, JSON bool
}

func runSetMirror(ctx context.Context, a *app, opts *setMirrorOptions) error {
	if err := marketplace.CheckName(opts.Name); err != nil {
		return usagef("%v", err)
	}
	if (opts.URL == "") == !opts.None {
		return usagef("give the mirror's URL or directory, or --none to drop the mirror")
	}
	var mirror *marketplace.Source
	if opts.URL != "" {
		var err error
		if mirror, err = marketplace.ParseSource(opts.URL); err != nil {
			return fmt.Errorf("the mirror: %w", err)
		}
	}
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	ci, err := c.SetMirror(ctx, opts.Name, mirror)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, ci)
	}
	if ci.Mirror == "" {
		fmt.Fprintf(a.stdout, "Catalog %s has no mirror: updates read its source %s.\n", ci.Name, review.Printable(ci.Source))
		return nil
	}
	fmt.Fprintf(a.stdout, "Catalog %s is read from its mirror %s first, and from its source %s when the mirror cannot be reached; the next update verifies the mirror (berth marketplace update %s).\n",
		ci.Name, review.Printable(ci.Mirror), review.Printable(ci.Source), ci.Name)
	return nil
}
