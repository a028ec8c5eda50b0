package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/review"
)

// pinnedOf is what Open pinned of b's source, or nil.
func pinnedOf(b *bundle.Bundle) []bundle.PinRecord {
	if b.Import == nil {
		return nil
	}
	return b.Import.Pinned
}

// importedAs says, for messages, what format a bundle was read from.
func importedAs(b *bundle.Bundle) string {
	if b.Manifest == nil || b.Manifest.ImportedFrom == nil {
		return ""
	}
	imp := b.Manifest.ImportedFrom
	v := ""
	if imp.FormatVersion != "" {
		v = " " + imp.FormatVersion
	}
	return fmt.Sprintf("imported from %s%s (%s)", imp.Format, v, imp.Manifest)
}

// importJSON is what import --json prints.
type importJSON struct {
	// Out is the directory the berth bundle was written into.
	Out     string `json:"out"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Digest is the bundle's digest: the same for the source and for the
	// written bundle.
	Digest string `json:"digest"`
	// Format is the format the source was read from (berth for a berth
	// bundle, copied as it is).
	Format string `json:"format"`
	// ImportedFrom is what the written berth.json records about its
	// source.
	ImportedFrom *bundle.ImportedFrom `json:"importedFrom,omitempty"`
	// Notes are what berth noted while reading the source.
	Notes []string `json:"notes,omitempty"`
	// Pinned are the fetches --pin pinned, with when and where each was
	// resolved (importedFrom.pinned holds them without the time).
	Pinned []bundle.PinRecord `json:"pinned,omitempty"`
}

func newImportCmd(a *app) *cobra.Command {
	opts := &importOptions{}
	cmd := &cobra.Command{
		Use: "import SOURCE --out DIR",
		Example: `  berth import ./everything.mcpb --out ./everything
  berth import ./my-claude-plugin --out ./my-plugin-berth
  berth import ./my-claude-plugin --without slack --out ./my-plugin-berth
  berth import ./server.json --out ./acme-search --json
  berth import --pin ./my-claude-plugin --out ./my-plugin-berth`,
		Short: "Write the berth bundle of an MCP Bundle, Claude Code plugin or server.json",
		Long: `Import reads an MCP Bundle (.mcpb, or a directory with manifest.json), a
Claude Code plugin (a directory with .claude-plugin/plugin.json) or an MCP
Registry server.json, validates it as validate does, and writes the
equivalent berth bundle into the new directory DIR: the source's files and
a generated berth.json (docs/manifest.md, "Importing other formats").

The written bundle discloses the same authority as its source, and has the
digest that validate, review and trust show for the source; importing it
again gives the same digest. berth.json records where it came from and what
was not carried over. A .mcpb's signature block is not part of the bundle.

A runtime fetch that the source leaves unpinned (npx -y pkg, pkg@latest,
pkg@^1, uvx pkg, an image by tag) is refused. With --pin, berth resolves
each one now against the registry that $BERTH_HOME/fetchers names (npm's
packument, the PyPI index's JSON simple API, the image registry's manifest),
writes the exact version (for an image, the digest) into the command, and
records what the source asked for and the result in importedFrom.pinned;
it prints each resolution. Two imports that resolve alike give the same
digest. The result is an ordinary pinned bundle: review it before you trust
it.

An invalid source writes nothing (exit 3). DIR must not exist.

--without SERVER leaves out a server of a Claude Code plugin, for a plugin
whose only refusable part is that server (an empty connector url, an
OAuth-only remote): the rest is imported, and the server is listed under
"not carried over" with the reason. It may be repeated.`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Source = args[0]
			return runImport(cmd.Context(), a, opts)
		},
	}
	limitFlags(cmd, &opts.Bundle)
	cmd.Flags().StringVar(&opts.Out, "out", "", "the new directory to write the berth bundle into")
	cmd.Flags().StringArrayVar(&opts.Bundle.Without, "without", nil, "leave out this server of a Claude Code plugin (its name in the plugin or in berth), listed as not carried over; repeatable")
	cmd.Flags().BoolVar(&opts.Pin, "pin", false, pinHelp)
	a.jsonFlag(cmd, &opts.JSON, importJSON{})
	return cmd
}

// importOptions are the inputs of berth import.
type importOptions struct {
	// Source is the positional argument.
	Source string
	JSON   bool
	Bundle bundle.Options
	Out    string
	Pin    bool
}

func runImport(ctx context.Context, a *app, opts *importOptions) error {
	if opts.Out == "" {
		return usagef("--out DIR is required: the new directory to write the berth bundle into")
	}
	if err := a.pinOptions(opts.Pin, &opts.Bundle); err != nil {
		return err
	}
	b, err := openBundle(ctx, opts.Source, &opts.Bundle)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.WriteTree(ctx, opts.Out); err != nil {
		return fmt.Errorf("cannot write %s: %w", opts.Out, err)
	}
	format := bundle.FormatBerth
	if imp := b.Manifest.ImportedFrom; imp != nil && b.Import != nil {
		format = imp.Format
	}
	if opts.JSON {
		return writeJSON(a.stdout, importJSON{Out: opts.Out, Name: b.Manifest.Name, Version: b.Manifest.Version, Digest: b.Digest, Format: format, ImportedFrom: b.Manifest.ImportedFrom, Notes: b.Notes, Pinned: pinnedOf(b)})
	}
	for _, n := range b.Notes {
		fmt.Fprintf(a.stderr, "note: %s\n", n)
	}
	what := importedAs(b)
	switch {
	case b.Import == nil && what != "":
		what = "already a berth bundle (" + what + "), copied as it is"
	case b.Import == nil:
		what = "already a berth bundle, copied as it is"
	}
	fmt.Fprintf(a.stdout, "Wrote %s: %s %s, %s, %s.\n", opts.Out, b.Manifest.Name, b.Manifest.Version, what, b.Digest)
	if imp := b.Manifest.ImportedFrom; imp != nil && len(imp.NotCarriedOver) > 0 {
		n := len(imp.NotCarriedOver)
		parts := "1 part of the source was"
		if n != 1 {
			parts = fmt.Sprintf("%d parts of the source were", n)
		}
		fmt.Fprintf(a.stdout, "%s not carried over; berth review lists them.\n", parts)
	}
	if imp := b.Manifest.ImportedFrom; imp != nil && len(imp.Pinned) > 0 {
		fmt.Fprintf(a.stdout, "Pinned on import (importedFrom.pinned):\n")
		for _, p := range imp.Pinned {
			asked := "the source asked for " + p.Requested
			if p.Requested == "" {
				asked = "the source named no version"
			}
			fmt.Fprintf(a.stdout, "  %s: %s %s; %s\n", p.Server, review.Printable(p.Package), review.Printable(p.Resolved), review.Printable(asked))
		}
	}
	fmt.Fprintf(a.stdout, "Review it with: berth review %s\n", filepath.Clean(opts.Out))
	return nil
}
