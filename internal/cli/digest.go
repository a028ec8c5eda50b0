package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
)

func newDigestCmd(a *app) *cobra.Command {
	opts := &digestOptions{}
	cmd := &cobra.Command{
		Use: "digest SOURCE",
		Example: `  berth digest ./acme-notes
  berth digest acme-notes-1.4.2.tar.gz --listing > listing.txt`,
		Short: "Print a bundle's digest, or its canonical listing",
		Long: `Digest prints sha256:<hex>, the sha256 of the bundle's canonical listing:
one line per file, sorted by path bytes, "<mode> <sha256> <size> <path>",
with mode 100644, 100755 or 120000 (symlink). A directory and an archive of
the same tree have the same digest; an exec bit changes it.

--listing prints the listing itself: it is the artifact that 'berth sign'
and 'cosign sign-blob' sign. Invalid bundles are refused (exit 3).`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Source = args[0]
			return runDigest(cmd.Context(), a, opts)
		},
	}
	limitFlags(cmd, &opts.Bundle)
	cmd.Flags().BoolVar(&opts.Listing, "listing", false, "print the canonical listing instead of the digest")
	a.jsonFlag(cmd, &opts.JSON, digestJSON{})
	cmd.MarkFlagsMutuallyExclusive("listing", "json")
	return cmd
}

// digestOptions are the inputs of berth digest.
type digestOptions struct {
	// Source is the positional argument.
	Source        string
	Listing, JSON bool
	Bundle        bundle.Options
}

func runDigest(ctx context.Context, a *app, opts *digestOptions) error {
	hctx, stopProgress := a.hashing(ctx, !opts.JSON, "hashing")
	b, err := openBundle(hctx, opts.Source, &opts.Bundle)
	stopProgress()
	if err != nil {
		return err
	}
	defer b.Close()
	switch {
	case opts.Listing:
		_, err = a.stdout.Write(b.Listing().Bytes())
	case opts.JSON:
		err = writeJSON(a.stdout, digestJSON{Digest: b.Digest, Files: len(b.Listing().Entries), TotalSize: b.Listing().TotalSize()})
	default:
		_, err = fmt.Fprintln(a.stdout, b.Digest)
	}
	return err
}

// digestJSON is what digest --json prints.
type digestJSON struct {
	Digest    string `json:"digest"`
	Files     int    `json:"files"`
	TotalSize int64  `json:"totalSize"`
}
