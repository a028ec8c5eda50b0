package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/review"
)

// The user's side of a marketplace: berth marketplace, search and show.

// catalogs opens the verified catalog cache under $BERTH_HOME.
func (a *app) catalogs() (*marketplace.Cache, error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	return marketplace.OpenCache(paths.Catalogs(), nil), nil
}

// resolveOptions are the operator's resolution settings.
func (a *app) resolveOptions() *marketplace.ResolveOptions {
	return &marketplace.ResolveOptions{}
}

func (a *app) marketplaceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "marketplace",
		Short: "Add, list, remove and update the catalogs you install plugins from",
		Long: `A catalog is a TUF repository that a curator signs (berth catalog). berth
keeps a verified copy of each catalog you add under $BERTH_HOME/catalogs/,
and every update is a full TUF update against it: a rolled-back, frozen
(expired), mixed-and-matched, badly signed or altered catalog is refused
with exit 4, naming which and what to do; a network failure is exit 1.
search and show answer from the verified copy, offline.`,
		Args: exactArgs(0, "a subcommand: add, list, remove or update"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.marketplaceAddCommand(), a.marketplaceListCommand(), a.marketplaceRemoveCommand(), a.marketplaceUpdateCommand())
	return cmd
}

func (a *app) marketplaceAddCommand() *cobra.Command {
	var rootFile, rootSHA string
	cmd := &cobra.Command{
		Use:   "add NAME SOURCE (--root FILE | --root-sha256 HEX)",
		Short: "Add a catalog, its root of trust pinned, and verify it",
		Long: `Add adds the catalog served at SOURCE under NAME: a directory, a file://
URL, an https:// URL (system roots; SSL_CERT_FILE and SSL_CERT_DIR are
honoured), or an http:// URL on a loopback address (local mirrors). berth
never trusts a catalog's root on first use: pin it with --root FILE (a
root.json you got from the curator) or --root-sha256 HEX (the sha256 of
the catalog's 1.root.json, which berth catalog init prints). Then it runs a
full TUF update and keeps the verified copy. HTTPS requests use the
standard proxy variables HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their
lower-case forms); loopback addresses are never proxied.`,
		Args: exactArgs(2, "NAME and SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := marketplace.CheckName(name); err != nil {
				return usagef("%v", err)
			}
			if (rootFile == "") == (rootSHA == "") {
				return usagef("give exactly one of --root FILE and --root-sha256 HEX: berth never trusts a catalog's root on first use (berth catalog init printed the sha256 of 1.root.json)")
			}
			src, err := marketplace.ParseSource(args[1])
			if err != nil {
				return err
			}
			var pin marketplace.RootPin
			if rootFile != "" {
				data, err := readLimitedFile(rootFile, 512000)
				if err != nil {
					return err
				}
				pin.Root = data
			} else {
				pin.SHA256 = rootSHA
			}
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			ci, err := c.Add(cmd.Context(), name, src, pin)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Added catalog %s from %s: %d plugin(s), targets version %d, fresh until %s.\n",
				ci.Name, ci.Source, ci.Plugins, ci.TargetsVersion, ci.Expires().Format(time.RFC3339))
			a.printSkipped(ci.Name, ci.Problems)
			return nil
		},
	}
	cmd.Flags().StringVar(&rootFile, "root", "", "a root.json of the catalog that you trust")
	cmd.Flags().StringVar(&rootSHA, "root-sha256", "", "the sha256 (hex) of the catalog's 1.root.json")
	return cmd
}

func readLimitedFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over the %d-byte limit", path, max)
	}
	return data, nil
}

func (a *app) printSkipped(name string, n int) {
	if n > 0 {
		fmt.Fprintf(a.stderr, "berth: warning: catalog %s has %d problem(s) in its entries; the entries affected are skipped (berth search lists the rest)\n", name, n)
	}
}

func (a *app) marketplaceListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the catalogs you added",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			list, err := c.List()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "No catalogs yet. Add one with: berth marketplace add NAME SOURCE --root-sha256 HEX")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPLUGINS\tVERSION\tFRESH UNTIL\tSOURCE")
			for _, ci := range list {
				fresh := ci.Expires().Format(time.RFC3339)
				if ci.Stale {
					fresh += " (STALE: berth marketplace update " + ci.Name + ")"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", ci.Name, ci.Plugins, ci.TargetsVersion, fresh, review.Printable(ci.Source))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the catalogs as JSON")
	return cmd
}

func (a *app) marketplaceRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a catalog and its verified copy",
		Long: `Remove forgets the catalog and deletes its verified copy. Plugins you
installed from it stay trusted and enabled; berth verify still checks them.`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := marketplace.CheckName(args[0]); err != nil {
				return usagef("%v", err)
			}
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			if err := c.Remove(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Removed catalog %s.\n", args[0])
			return nil
		},
	}
}

func (a *app) marketplaceUpdateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "update [NAME]",
		Short: "Update catalogs: a full TUF update of each (or of one)",
		Long: `Update runs a full TUF update of every catalog (or of NAME) against its
source and keeps the new verified copy. A refusal (rollback, expired,
mix-and-match, bad signature, altered catalog, a published version whose
digest changed) is exit 4 and keeps the old copy; a network failure is
exit 1. With no NAME, every catalog is updated and the worst exit code
wins. Versions whose status changed are listed.`,
		Args: rangeArgs(0, 1, "at most one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				if names, err = c.Names(); err != nil {
					return err
				}
				if len(names) == 0 {
					fmt.Fprintln(a.stdout, "No catalogs yet. Add one with: berth marketplace add NAME SOURCE --root-sha256 HEX")
					return nil
				}
			} else if err := marketplace.CheckName(names[0]); err != nil {
				return usagef("%v", err)
			}
			var worst error
			for _, n := range names {
				r, err := c.Refresh(cmd.Context(), n)
				if err != nil {
					fmt.Fprintf(a.stderr, "berth: %s\n", strings.TrimRight(err.Error(), "\n"))
					worst = worse(worst, err)
					continue
				}
				if !r.Changed {
					fmt.Fprintf(a.stdout, "%s: up to date (targets version %d, fresh until %s).\n", n, r.TargetsVersion, r.Expires().Format(time.RFC3339))
					continue
				}
				fmt.Fprintf(a.stdout, "%s: updated to targets version %d: %d plugin(s), fresh until %s.\n", n, r.TargetsVersion, r.Plugins, r.Expires().Format(time.RFC3339))
				for _, line := range statusChanges(r.Old, r.New) {
					fmt.Fprintf(a.stdout, "  %s\n", review.Printable(line))
				}
				a.printSkipped(n, len(r.Problems))
			}
			if worst != nil {
				return &reported{worst}
			}
			return nil
		},
	}
}

// statusChanges lists the versions whose status changed between two
// copies of a catalog.
func statusChanges(old, new *marketplace.Catalog) []string {
	if old == nil || new == nil {
		return nil
	}
	var out []string
	for _, np := range new.Plugins {
		op := old.Plugin(np.Name)
		for _, nv := range np.Versions {
			var was marketplace.Status
			if op != nil {
				if ov := op.Version(nv.Version); ov != nil {
					was = ov.Status
				}
			}
			if was == "" && nv.Status == marketplace.StatusActive || was == nv.Status {
				continue
			}
			line := fmt.Sprintf("%s@%s is now %s", np.Name, nv.Version, nv.Status)
			if nv.Reason != "" {
				line += ": " + nv.Reason
			}
			out = append(out, line)
		}
	}
	return out
}

func (a *app) searchCommand() *cobra.Command {
	var catalog, tier, tag string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search [QUERY]",
		Short: "Search the catalogs' plugins (offline, from the verified copies)",
		Long: `Search ranks the plugins of every catalog you added: an exact name first,
then a name that starts with QUERY, then every word of QUERY in the name,
then in the name or tags, then anywhere (description, publisher); ties
go to the better tier (official, verified, community). Each result names
its catalog, tier, the version berth install NAME would pick, and its
status. Search reads only the verified copies: no network, no download,
nothing written. A catalog past its expiry still answers, marked stale.`,
		Args: rangeArgs(0, 1, "at most one QUERY (quote several words)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTier(tier)
			if err != nil {
				return err
			}
			q := marketplace.Query{Catalog: catalog, Tier: t, Tag: tag}
			if len(args) == 1 {
				q.Text = args[0]
			}
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			res, err := c.Search(q, a.resolveOptions())
			if err != nil {
				return err
			}
			if asJSON {
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
			for _, r := range res.Results {
				version, status := r.Latest, string(r.Status)
				if version == "" {
					version, status = "-", "none installable"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, version, status, r.Tier, r.Catalog, review.Printable(shorten(r.Description, 60)))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&catalog, "catalog", "", "search only this catalog")
	f.StringVar(&tier, "tier", "", "only plugins of this tier (official, verified, community)")
	f.StringVar(&tag, "tag", "", "only plugins with this tag")
	f.BoolVar(&asJSON, "json", false, "print the results and the catalogs' state as JSON")
	return cmd
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

type showVersion struct {
	Version     string             `json:"version"`
	Status      marketplace.Status `json:"status"`
	Reason      string             `json:"reason,omitempty"`
	Replacement string             `json:"replacement,omitempty"`
	Released    time.Time          `json:"released"`
	Digest      string             `json:"digest"`
	Picked      bool               `json:"picked"`
	Skipped     string             `json:"skipped,omitempty"`
}

type showOutput struct {
	Catalog  *marketplace.CatalogInfo `json:"catalog"`
	Plugin   *marketplace.Plugin      `json:"plugin"`
	Versions []showVersion            `json:"versions"`
	// Install is the version berth install NAME would pick; "" when none.
	Install string `json:"install"`
	// Shown is the version whose review is shown.
	Shown         string             `json:"shown"`
	Review        *review.Disclosure `json:"review"`
	Tools         []marketplace.Tool `json:"tools"`
	ContextTokens int                `json:"contextTokens"`
}

func (a *app) showCommand() *cobra.Command {
	var catalog string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME[@VERSION]",
		Short: "Show a catalog plugin: its review, signers and versions (offline)",
		Long: `Show prints everything to know before installing a plugin, from the
verified copy of its catalog: the review summary in the words of berth
review (the catalog's claim, computed from the bundle at publication;
install checks it against the real bundle), the signers the catalog allows
for it, every version with its status and reason, the version berth
install NAME would pick and why each other is skipped, and the context
cost of the tools the curator lists. With @VERSION it shows that
version's review. Show never downloads a bundle, starts anything, or
writes, and needs no network. A name in several catalogs needs --catalog.`,
		Args: exactArgs(1, "NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, version, err := parseRef(args[0])
			if err != nil {
				return err
			}
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			if catalog == "" {
				cats, err := c.Lookup(name)
				if err != nil {
					return err
				}
				switch len(cats) {
				case 0:
					return fmt.Errorf("%w: no catalog lists %s (berth search %s looks for similar names; berth marketplace update refreshes the catalogs)", marketplace.ErrNoPlugin, name, name)
				case 1:
					catalog = cats[0]
				default:
					return usagef("%s is in several catalogs (%s); berth does not guess: pass --catalog NAME", name, strings.Join(cats, ", "))
				}
			} else if err := marketplace.CheckName(catalog); err != nil {
				return usagef("--catalog: %v", err)
			}
			p, ci, err := c.Plugin(catalog, name)
			if err != nil {
				return err
			}
			res, rerr := marketplace.Resolve(p, "", a.resolveOptions())
			if rerr != nil && res == nil {
				return rerr
			}
			out := showOutput{Catalog: ci, Plugin: p, Versions: []showVersion{}}
			if res.Chosen != nil {
				out.Install = res.Chosen.Version
			}
			for _, cand := range res.Candidates {
				v := cand.Version
				out.Versions = append(out.Versions, showVersion{Version: v.Version, Status: v.Status, Reason: v.Reason, Replacement: v.Replacement, Released: v.Released, Digest: v.Digest, Picked: cand.Chosen, Skipped: cand.Skipped})
			}
			shown := res.Chosen
			if version != "" {
				if shown = p.Version(version); shown == nil {
					var vs []string
					for _, v := range out.Versions {
						vs = append(vs, v.Version)
					}
					return fmt.Errorf("%w: catalog %s has no version %s of %s (it has %s)", marketplace.ErrNoPlugin, catalog, version, name, strings.Join(vs, ", "))
				}
			}
			if shown == nil && len(p.Versions) > 0 {
				shown = res.Candidates[0].Version // the highest, to show what it would do
			}
			out.Shown = shown.Version
			out.Review = shown.Summary.Disclosure(p, shown)
			out.Tools = shown.Summary.Tools
			if out.Tools == nil {
				out.Tools = []marketplace.Tool{}
			}
			out.ContextTokens = marketplace.EstimateTokens(shown.Summary.Tools)
			if asJSON {
				return writeJSON(a.stdout, out)
			}
			return a.writeShow(&out)
		},
	}
	cmd.Flags().StringVar(&catalog, "catalog", "", "the catalog to show it from (needed when several list it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print everything as JSON")
	return cmd
}

func (a *app) writeShow(out *showOutput) error {
	w := a.stdout
	p, ci := out.Plugin, out.Catalog
	a.printStale([]*marketplace.CatalogInfo{ci})
	fmt.Fprintf(w, "%s, from catalog %s (tier %s)\n", p.Name, ci.Name, p.Tier)
	if len(p.Tags) > 0 {
		fmt.Fprintf(w, "  tags: %s\n", strings.Join(p.Tags, ", "))
	}
	fmt.Fprintln(w, "\nSigners the catalog allows for it (a bundle signed by anyone else is refused):")
	for _, s := range p.Signers {
		fmt.Fprintf(w, "  %s\n", review.Printable(s.String()))
	}
	fmt.Fprintln(w, "\nVersions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range out.Versions {
		status := string(v.Status)
		if v.Reason != "" {
			status += ": " + v.Reason
		}
		if v.Replacement != "" {
			status += " (use " + v.Replacement + " instead)"
		}
		note := "skipped: " + v.Skipped
		if v.Picked {
			note = "<- berth install " + p.Name + " picks this"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.Version, v.Released.Format("2006-01-02"), review.Printable(status), review.Printable(note))
	}
	tw.Flush()
	if out.Install == "" {
		fmt.Fprintf(w, "berth install %s would pick no version: each is skipped for the reason shown.\n", p.Name)
	}
	fmt.Fprintf(w, "\nReview of %s, as the catalog states it (berth install checks it against the bundle and refuses a difference):\n\n", out.Shown)
	if err := out.Review.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch len(out.Tools) {
	case 0:
		fmt.Fprintln(w, "Tools: the curator lists none, so berth cannot estimate their context cost before you install.")
	default:
		fmt.Fprintf(w, "Tools the curator lists (%d), about %d tokens of context:\n", len(out.Tools), out.ContextTokens)
		for _, t := range out.Tools {
			line := "  " + t.Server + "__" + t.Name
			if t.Description != "" {
				line += ": " + shorten(t.Description, 70)
			}
			if an := t.Annotations; an != nil && an.DestructiveHint != nil && *an.DestructiveHint {
				line += " (destructive)"
			}
			fmt.Fprintln(w, review.Printable(line))
		}
	}
	return nil
}
