package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/review"
)

func newSearchCmd(a *app) *cobra.Command {
	opts := &searchOptions{}
	cmd := &cobra.Command{
		Use: "search [QUERY]",
		Example: `  berth search notes
  berth search --tag search --json`,
		Short: "Search the catalogs' plugins (offline, from the verified copies)",
		Long: `Search ranks the plugins of every catalog you added: an exact name first,
then a name that starts with QUERY, then every word of QUERY in the name,
then in the name or tags, then anywhere (description, publisher); ties
go to the better tier (official, verified, community). Each result names
its catalog, tier, the version berth install NAME would pick, and its
status. Search reads only the verified copies: no network, no download,
nothing written. A catalog past its expiry still answers, marked stale.
Entries of an unsigned source (an MCP Registry, a marketplace.json) are
marked unsigned, and deprecated ones deprecated; a registry name
(io.github.acme/weather) finds the entry it maps to. A registry entry
berth cannot build a bundle for is marked "cannot be built" (its version
is the highest one berth can build, when an older one can be).`,
		Args: rangeArgs(0, 1, "at most one QUERY (quote several words)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			return runSearch(cmd.Context(), a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Catalog, "catalog", "", "search only this catalog")
	f.StringVar(&opts.Tier, "tier", "", "only plugins of this tier (official, verified, community)")
	f.StringVar(&opts.Tag, "tag", "", "only plugins with this tag")
	a.jsonFlag(cmd, &opts.JSON, marketplace.SearchResult{})
	return cmd
}

// searchOptions are the inputs of berth search.
type searchOptions struct {
	// Args are the positional arguments: none, or one QUERY.
	Args               []string
	JSON               bool
	Catalog, Tier, Tag string
}

func runSearch(_ context.Context, a *app, opts *searchOptions) error {
	t, err := parseTier(opts.Tier)
	if err != nil {
		return err
	}
	q := marketplace.Query{Catalog: opts.Catalog, Tier: t, Tag: opts.Tag}
	if len(opts.Args) == 1 {
		q.Text = opts.Args[0]
	}
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return err
	}
	res, err := c.Search(q, ro)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, res)
	}
	if len(res.Catalogs) == 0 {
		fmt.Fprintln(a.stdout, "No catalogs yet. Add one with: berth marketplace add NAME SOURCE --root-sha256 HEX")
		return nil
	}
	a.printStale(res.Catalogs)
	if len(res.Results) == 0 {
		fmt.Fprintf(a.stdout, "Nothing matches %q.\n", q.Text)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSTATUS\tTIER\tCATALOG\tDESCRIPTION")
	unbuildable := false
	for _, r := range res.Results {
		version, status := r.Latest, string(r.Status)
		switch {
		case r.Unbuildable != "":
			version, status, unbuildable = "-", "cannot be built", true
		case version == "":
			version, status = "-", "none installable"
		}
		switch {
		case r.Builtin:
			status += ", built in"
		case r.Unsigned:
			status += ", unsigned"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, version, status, r.Tier, r.Catalog, review.Printable(shorten(r.Description, 60)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unbuildable {
		fmt.Fprintln(a.stdout, "\"cannot be built\": berth cannot build a bundle for any version of the entry that install would pick; berth show NAME says why for each version (search --json gives the reason as \"unbuildable\").")
	}
	return nil
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (a *app) printStale(list []*marketplace.CatalogInfo) {
	for _, ci := range list {
		if ci.Stale {
			fmt.Fprintf(a.stdout, "Note: catalog %s is stale since %s: its verified copy has expired, so it may miss updates and revocations (berth marketplace update %s).\n",
				ci.Name, ci.Expires().Format(time.RFC3339), ci.Name)
		}
	}
}
