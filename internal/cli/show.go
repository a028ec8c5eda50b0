package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

func newShowCmd(a *app) *cobra.Command {
	opts := &showOptions{}
	cmd := &cobra.Command{
		Use: "show NAME[@VERSION]",
		Example: `  berth show acme-notes
  berth show acme-notes@1.4.2 --json`,
		Short: "Show a catalog plugin: its review, signers and versions (offline)",
		Long: `Show prints everything to know before installing a plugin, from the
verified copy of its catalog: the review summary in the words of berth
review (the catalog's claim, computed from the bundle at publication;
install checks it against the real bundle), the signers the catalog allows
for it, every version with its status and reason, the version berth
install NAME would pick and why each other is skipped, and the context
cost of the tools the curator lists. With @VERSION it shows that
version's review. Show never downloads a bundle, starts anything, or
writes, and needs no network. A name in several catalogs needs --catalog.

An entry of an unsigned source (an MCP Registry, a marketplace.json) is
marked UNSIGNED; show builds its bundle (from the cached server.json, or
the plugin's directory in a local marketplace; nothing is downloaded or
run), shows its review and prints its digest and the exact install
command, which needs --allow-unsigned and that --digest. A registry entry
can be named by its registry name (io.github.acme/weather) or by the berth
name it maps to (io-github-acme-weather); the review shows both.`,
		Args: exactArgs(1, "NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return runShow(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Catalog, "catalog", "", "the catalog to show it from (needed when several list it)")
	a.jsonFlag(cmd, &opts.JSON, marketplace.Showing{})
	return cmd
}

// showOptions are the inputs of berth show.
type showOptions struct {
	// Ref is the positional argument.
	Ref     string
	JSON    bool
	Catalog string
}

func runShow(ctx context.Context, a *app, opts *showOptions) error {
	given, version, _ := strings.Cut(opts.Ref, "@")
	name, _, err := marketplace.LookupName(given)
	if err != nil {
		return usagef("%v", err)
	}
	if err := store.CheckRef(name, version); err != nil {
		return usagef("%v", err)
	}
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	if opts.Catalog == "" {
		cats, err := c.Lookup(name)
		if err != nil {
			return err
		}
		switch len(cats) {
		case 0:
			return fmt.Errorf("%w: no catalog lists %s (berth search %s looks for similar names; berth marketplace update refreshes the catalogs)", marketplace.ErrNoPlugin, name, name)
		case 1:
			opts.Catalog = cats[0]
		default:
			return usagef("%s is in several catalogs (%s); berth does not guess: pass --catalog NAME", name, strings.Join(cats, ", "))
		}
	} else if err := marketplace.CheckName(opts.Catalog); err != nil {
		return usagef("--catalog: %v", err)
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return err
	}
	kind, err := c.Kind(opts.Catalog)
	if err != nil {
		return err
	}
	if kind != marketplace.KindTUF {
		out, err := c.ShowUnsigned(ctx, opts.Catalog, given, version, ro, nil)
		if out != nil && !opts.JSON {
			a.writeShowUnsigned(out)
		}
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(a.stdout, out)
		}
		return nil
	}
	p, ci, err := c.Plugin(opts.Catalog, name)
	if err != nil {
		return err
	}
	out, err := marketplace.Show(p, ci, version, ro)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	return a.writeShow(out)
}

func (a *app) writeShowUnsigned(out *marketplace.UnsignedShowing) {
	w := a.stdout
	ci := out.Catalog
	title := out.Name
	if out.SourceName != "" && out.SourceName != out.Name {
		title += " (registry name " + out.SourceName + ")"
	}
	if out.Description != "" {
		title += ": " + out.Description
	}
	fmt.Fprintln(w, review.Printable(title))
	builtin := ci.Kind == marketplace.KindBuiltin
	if builtin {
		fmt.Fprintf(w, "  catalog %s: %s\n", ci.Name, review.Printable(ci.Source))
	} else {
		fmt.Fprintf(w, "  catalog %s: an unsigned %s source, %s\n", ci.Name, ci.Kind, review.Printable(ci.Source))
	}
	if out.Homepage != "" {
		fmt.Fprintf(w, "  homepage: %s\n", review.Printable(out.Homepage))
	}
	if builtin {
		fmt.Fprintln(w, "\nBUILT IN: this berth binary pins the entry to its bundle's digest and its npm package's tarball integrity; nobody signs it at run time, no catalog can revoke it.")
	} else {
		fmt.Fprintln(w, "\nUNSIGNED: nobody signed this entry; berth installs it only by the exact digest you pin.")
	}
	fmt.Fprintln(w, "\nVersions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range out.Versions {
		status := string(v.Status)
		if v.StatusMessage != "" {
			status += ": " + v.StatusMessage
		}
		note := v.Skipped
		if v.Picked {
			note = "<- berth install " + out.Name + " picks this"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.Version, v.Released.Format("2006-01-02"), review.Printable(status), review.Printable(note))
	}
	tw.Flush()
	for _, warn := range out.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", review.Printable(warn))
	}
	if out.Review == nil {
		return
	}
	if m := out.MCPB; m != nil {
		fmt.Fprintf(w, "\n%s %s is one MCP Bundle: berth downloaded %s, checked that its SHA-256 is %s (the entry's fileSha256), and imported it. It installs as %s %s, the name and version its manifest gives it.\n",
			out.Name, out.Shown, review.Printable(m.URL), m.SHA256, review.Printable(m.Name), review.Printable(m.Version))
	}
	fmt.Fprintf(w, "\nReview of %s %s, from the bundle berth builds for it (digest %s):\n\n", out.Name, out.Shown, out.Digest)
	out.Review.LocateRuntimes()
	out.Review.WriteText(w)
	if ci.Kind == marketplace.KindBuiltin {
		fmt.Fprintf(w, "\nTo install it (pinned to this digest by berth):\n  %s\n", out.InstallCommand)
	} else {
		fmt.Fprintf(w, "\nTo install it (unsigned, pinned to this digest):\n  %s\n", out.InstallCommand)
	}
}

func (a *app) writeShow(out *marketplace.Showing) error {
	w := a.stdout
	p, ci := out.Plugin, out.Catalog
	a.printStale([]*marketplace.CatalogInfo{ci})
	fmt.Fprintln(w, out.Title())
	if len(p.Tags) > 0 {
		fmt.Fprintf(w, "  tags: %s\n", strings.Join(p.Tags, ", "))
	}
	fmt.Fprintln(w, "\n"+marketplace.SignersHeading)
	for _, s := range p.Signers {
		fmt.Fprintf(w, "  %s\n", review.Printable(s.String()))
	}
	fmt.Fprintln(w, "\nVersions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range out.Versions {
		note := v.Note(p.Name)
		if v.Picked {
			note = "<- " + note
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.Version, v.Released.Format("2006-01-02"), review.Printable(v.StatusText()), review.Printable(note))
	}
	tw.Flush()
	if s := out.NoPick(); s != "" {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintf(w, "\n%s\n\n", out.ReviewHeading())
	out.Review.LocateRuntimes()
	if err := out.Review.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, out.ToolsHeading())
	for _, t := range out.Tools {
		line := "  " + t.Server + "__" + t.Name
		if t.Description != "" {
			line += ": " + shorten(t.Description, 70)
		}
		for _, h := range t.Hints() {
			line += " (" + h + ")"
		}
		fmt.Fprintln(w, review.Printable(line))
	}
	return nil
}
