package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// refreshInstalled updates the catalogs that installed plugins came from
// (each once). With lenient, a refusal is only a warning (outdated and a
// preview report on the verified copies all the same).
func (a *app) refreshInstalled(ctx context.Context, c *marketplace.Cache, st *store.Store, allowStale, lenient bool) error {
	recs, err := st.Records()
	if err != nil {
		return err
	}
	have, err := c.Names()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Catalog == nil || seen[r.Catalog.Name] || !contains(have, r.Catalog.Name) {
			continue
		}
		seen[r.Catalog.Name] = true
		if err := a.refreshCatalog(ctx, c, st, r.Catalog.Name, allowStale); err != nil {
			if !lenient {
				return err
			}
			fmt.Fprintf(a.stderr, "berth: warning: %s\n", forCLI(err))
		}
	}
	return nil
}

// lockConstraints are the constraints of the workspace's berth.lock, if
// it has one.
func lockConstraints(ws string) (map[string]string, error) {
	l, err := lock.Read(ws)
	if err != nil || l == nil {
		return nil, err
	}
	m := map[string]string{}
	for _, p := range l.Plugins {
		m[p.Name] = p.Constraint
	}
	return m, nil
}

// outdatedIn is what outdated and upgrade list: the installed catalog
// plugins against the constraints of ws's berth.lock, resolved as install
// resolves (the options are returned for the upgrades themselves).
func (a *app) outdatedIn(c *marketplace.Cache, st *store.Store, ws string) ([]*lock.Outdated, *marketplace.ResolveOptions, error) {
	cons, err := lockConstraints(ws)
	if err != nil {
		return nil, nil, err
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return nil, nil, err
	}
	list, err := lock.ListOutdated(c, st, cons, ro)
	return list, ro, err
}

const outdatedLong = `Outdated updates the catalogs plugins were installed from (offline, their
verified copies are used) and lists, per plugin installed from a catalog,
its highest installed version, the constraint it was installed for (the
workspace's berth.lock's, when it has one), the newest version that
constraint allows (resolved as install would), the latest version, and the
installed version's status in the catalog (active, deprecated, yanked,
revoked). berth upgrade installs the newest allowed version.`

// outdatedOptions are the inputs of berth outdated.
type outdatedOptions struct {
	Workspace string
	JSON      bool
}

func newOutdatedCmd(a *app) *cobra.Command {
	opts := &outdatedOptions{}
	cmd := &cobra.Command{
		Use:   "outdated",
		Short: "List installed catalog plugins with newer versions",
		Long:  outdatedLong,
		Example: `  berth outdated
  berth outdated --json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOutdated(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	a.jsonFlag(cmd, &opts.JSON, []*lock.Outdated{})
	return cmd
}

func runOutdated(ctx context.Context, a *app, opts *outdatedOptions) error {
	ws, st, c, err := a.openCatalogWorkspace(opts.Workspace)
	if err != nil {
		return err
	}
	if err := a.refreshInstalled(ctx, c, st, true, true); err != nil {
		return err
	}
	list, _, err := a.outdatedIn(c, st, ws)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "Nothing is installed from a catalog (berth install NAME).")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCATALOG\tCURRENT\tCONSTRAINT\tWANTED\tLATEST\tSTATUS")
	for _, o := range list {
		status := string(o.Status)
		switch {
		case o.Problem != "":
			status = o.Problem
		case o.Status == "":
			status = "not listed"
		case o.Reason != "":
			status += ": " + o.Reason
		}
		if o.Note != "" {
			status += "; " + o.Note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Name, o.Catalog, o.Current, dash(o.Constraint), dash(o.Wanted), dash(o.Latest), review.Printable(status))
	}
	return tw.Flush()
}

// openCatalogWorkspace resolves the workspace dir and opens the store
// and the catalog cache, as outdated, upgrade and sync begin.
func (a *app) openCatalogWorkspace(dir string) (string, *store.Store, *marketplace.Cache, error) {
	ws, err := pool.Workspace(dir)
	if err != nil {
		return "", nil, nil, err
	}
	st, c, err := a.storeAndCatalogs()
	if err != nil {
		return "", nil, nil, err
	}
	return ws, st, c, nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// upgradeEntry is one upgrade, as upgrade --json prints it.
type upgradeEntry struct {
	Name    string                     `json:"name"`
	Catalog string                     `json:"catalog"`
	From    string                     `json:"from"`
	To      string                     `json:"to"`
	Diff    *marketplace.AuthorityDiff `json:"diff"`
	Grows   bool                       `json:"grows"`
	// Done is true when it was installed; Error says why not.
	Done        bool          `json:"done"`
	Error       string        `json:"error,omitempty"`
	NewSigner   *trust.Signer `json:"newSigner,omitempty"`
	Enabled     string        `json:"enabled,omitempty"`
	LockUpdated bool          `json:"lockUpdated"`
	// Warnings are worth a person's attention, as berth also prints them
	// on stderr: a catalog that changed the review summary of the
	// installed version since it published it.
	Warnings []string `json:"warnings,omitempty"`
	// Sources are the variables the new version's servers read, each
	// with whether it is set here and the command that sets it when it
	// is not (as review --json says them): what to set before first use.
	// From the catalog's review summary with --preview and
	// --fail-on-changes, from the installed bundle's review after an
	// upgrade.
	Sources []sourceJSON `json:"sources,omitempty"`
	// Fetched are the packages of the runtime-fetched servers' trees
	// that the upgrade added, removed or changed the version of (known
	// once the new version's trees are resolved, at its trust).
	Fetched []review.PackageChange `json:"fetched,omitempty"`
}

// upgradeJSON is what upgrade --json prints.
type upgradeJSON struct {
	Available int            `json:"available"`
	Upgrades  []upgradeEntry `json:"upgrades"`
}

// errUpgradesAvailable is --fail-on-changes' verdict (exit 5).
var errUpgradesAvailable = fmt.Errorf("upgrades are available: %w", store.ErrDrift)

const upgradeLong = `Upgrade installs the newest version that each plugin's constraint allows
(or NAME's only), as berth outdated lists them. Before anything, it shows
the authority diff between the installed and the new version: servers
added or removed, programs, arguments, fetched packages, environment
sources, endpoints and network hosts, credentials, tool filters, native
tools, and the tools the curator lists. The installed side is read from
the staged copy you reviewed and trusted, and the tool list recorded when
you installed it, never from what the catalog says of it now; a catalog
whose summary of the installed version no longer matches them is
reported (a published version never changes). A diff where authority
grows always needs a confirmation (--yes confirms); so does a new
signer. The new version goes through the same path as berth install
(the catalog's digest, signers and review summary checked), is enabled
in the workspace where the old one was, and the workspace's berth.lock
is updated when there is one. A version signed by another signer than
the installed one is refused (exit 4) unless --allow-signer-change.

When a catalog revoked the installed version, the upgrade is the newest
version the constraint allows that is not revoked, even an older one: a
step down, shown and always confirmed (--yes off a terminal), and enabled
only in a workspace the revocation disabled the old version in (berth keeps
where; a berth.lock in the workspace does not count).

Each upgrade (and each diff of --preview) ends, as berth review does, with
the variables the new version's servers read, whether each is set here,
the berth secret set command for each one that is not, and the remotes
that sign in with OAuth (berth login): what to set before first use.

--preview shows the diffs and changes nothing, not even the catalog
copies. --fail-on-changes updates the catalogs, shows the diffs, changes
no plugin, and exits 5 when an upgrade is available: a CI freshness gate.`

// upgradeOptions are the inputs of berth upgrade.
type upgradeOptions struct {
	// Name is the one plugin to upgrade ("" for all).
	Name                                                             string
	Workspace                                                        string
	Preview, FailOnChanges, Yes, AllowStale, AllowSignerChange, JSON bool
}

func newUpgradeCmd(a *app) *cobra.Command {
	opts := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "upgrade [NAME]",
		Short: "Upgrade installed catalog plugins, showing the authority diff first",
		Long:  upgradeLong,
		Example: `  berth upgrade --preview
  berth upgrade acme-notes
  berth upgrade --yes
  berth upgrade --fail-on-changes`,
		Args: rangeArgs(0, 1, "at most one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := store.CheckRef(args[0], ""); err != nil {
					return usagef("%v", err)
				}
				opts.Name = args[0]
			}
			return runUpgrade(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	f := cmd.Flags()
	f.BoolVar(&opts.Preview, "preview", false, "show the authority diffs and change nothing")
	f.BoolVar(&opts.FailOnChanges, "fail-on-changes", false, "change no plugin, and exit 5 when an upgrade is available (a CI gate)")
	f.BoolVarP(&opts.Yes, "yes", "y", false, "confirm grown authority and new signers without asking (required when not on a terminal)")
	f.BoolVar(&opts.AllowStale, "allow-stale", false, "accept a catalog copy past its expiry (the trust record says so)")
	f.BoolVar(&opts.AllowSignerChange, "allow-signer-change", false, "accept a new version signed by another of the catalog's allowed signers")
	a.jsonFlag(cmd, &opts.JSON, upgradeJSON{})
	return cmd
}

func runUpgrade(ctx context.Context, a *app, opts *upgradeOptions) error {
	if opts.JSON && !opts.Yes && !opts.Preview && !opts.FailOnChanges {
		return usagef("--json cannot ask for confirmation; add --yes (or use --preview)")
	}
	ws, st, c, err := a.openCatalogWorkspace(opts.Workspace)
	if err != nil {
		return err
	}
	if !opts.Preview {
		if err := a.refreshInstalled(ctx, c, st, opts.AllowStale, opts.FailOnChanges); err != nil {
			return err
		}
	}
	list, ro, err := a.outdatedIn(c, st, ws)
	if err != nil {
		return err
	}
	todo, err := a.upgradesToDo(list, opts)
	if err != nil {
		return err
	}
	out := upgradeJSON{Upgrades: []upgradeEntry{}}
	var worst error
	for _, o := range todo {
		e, err := a.upgradeOne(ctx, st, c, ws, o, ro, opts)
		if err != nil {
			e.Error = forCLI(err).Error()
			worst = worse(worst, err)
			if !opts.JSON {
				fmt.Fprintf(a.stderr, "berth: %s: %s\n", o.Name, e.Error)
			}
		}
		out.Upgrades = append(out.Upgrades, *e)
	}
	out.Available = len(todo)
	if opts.JSON {
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else if opts.Preview && len(todo) > 0 {
		fmt.Fprintln(a.stdout, "\nNothing was changed (--preview). Run berth upgrade to install these.")
	}
	if worst != nil {
		return &reported{worst}
	}
	if opts.FailOnChanges && len(todo) > 0 {
		if !opts.JSON {
			fmt.Fprintf(a.stdout, "\n%d upgrade(s) available; nothing was changed (--fail-on-changes).\n", len(todo))
		}
		return &reported{errUpgradesAvailable}
	}
	return nil
}

// upgradesToDo picks from list the upgrades opts asks for, and says
// which are at their newest already.
func (a *app) upgradesToDo(list []*lock.Outdated, opts *upgradeOptions) ([]*lock.Outdated, error) {
	one := opts.Name != ""
	found := !one
	var todo []*lock.Outdated
	for _, o := range list {
		if one && o.Name != opts.Name {
			continue
		}
		found = true
		if o.Problem != "" && one {
			return nil, fmt.Errorf("%s cannot be upgraded: %s", o.Name, o.Problem)
		}
		if !o.Upgrade {
			if one && !opts.JSON {
				fmt.Fprintf(a.stdout, "%s %s is already the newest version %s.\n", o.Name, o.Current, constraintWords(o.Constraint))
			}
			continue
		}
		todo = append(todo, o)
	}
	if !found {
		return nil, store.NotTrustedf("%s is not installed from a catalog (berth outdated lists what is; berth install %s installs it)", opts.Name, opts.Name)
	}
	if len(todo) == 0 && !one && !opts.JSON {
		fmt.Fprintln(a.stdout, "Everything installed from a catalog is at the newest version its constraint allows.")
	}
	return todo, nil
}

func constraintWords(c string) string {
	if c == "" {
		return "there is"
	}
	return "that " + c + " allows"
}

// revokedWayBack is what upgrade says of a revoked installed version.
func revokedWayBack(o *lock.Outdated) string {
	kind := "another version"
	if o.StepDown {
		kind = "a step down"
	}
	allows := ""
	if o.Constraint != "" {
		allows = " that " + o.Constraint + " allows"
	}
	return fmt.Sprintf("%s: %s is revoked by catalog %s (%s); %s is the newest version%s that is not revoked", kind, o.Current, o.RevokedBy, review.Printable(o.Reason), o.Wanted, allows)
}

// revokedWasHere reports whether o's revoked version was enabled in ws
// when the revocation disabled it (berth's own record of where, never a
// berth.lock in ws, which may be a stranger's): only there does upgrade
// enable the version that replaces it.
func revokedWasHere(st *store.Store, ws string, o *lock.Outdated) (bool, error) {
	rec := o.Record()
	rv, err := st.Revoked(rec.Name, rec.Version, rec.Digest)
	if err != nil || rv == nil {
		return false, err
	}
	return slices.Contains(rv.Disabled, ws), nil
}

// upgradeOne shows the authority diff of one upgrade and, unless only
// looking, installs it, enables it where the old version was enabled in
// ws, and updates ws's berth.lock.
func (a *app) upgradeOne(ctx context.Context, st *store.Store, c *marketplace.Cache, ws string, o *lock.Outdated, ro *marketplace.ResolveOptions, opts *upgradeOptions) (*upgradeEntry, error) {
	look, yes, asJSON := opts.Preview || opts.FailOnChanges, opts.Yes, opts.JSON
	e := &upgradeEntry{Name: o.Name, Catalog: o.Catalog, From: o.Current, To: o.Wanted}
	from, toolsFromCatalog, warning, err := installedSummary(ctx, st, o)
	if err != nil {
		return e, err
	}
	if warning != "" {
		e.Warnings = append(e.Warnings, warning)
		fmt.Fprintf(a.stderr, "berth: warning: %s\n", review.PrintableLines(warning))
	}
	e.Diff = marketplace.DiffAuthority(o.Current, from, o.Wanted, &o.WantedVersion().Summary)
	e.Diff.InstalledToolsFromCatalog = toolsFromCatalog
	e.Grows = e.Diff.Grows()
	if !asJSON {
		fmt.Fprintf(a.stdout, "\n%s %s -> %s (catalog %s):\n", o.Name, o.Current, o.Wanted, o.Catalog)
		if o.RevokedBy != "" {
			fmt.Fprintf(a.stdout, "  %s\n", revokedWayBack(o))
		}
		e.Diff.WriteText(a.stdout)
	}
	if look {
		wv := o.WantedVersion()
		e.Sources = a.beforeFirstUse(wv.Summary.Disclosure(o.Plugin(), wv), asJSON)
		return e, nil
	}
	if o.StepDown {
		if err := a.confirm(fmt.Sprintf("Step %s down from %s (revoked) to %s?", o.Name, o.Current, o.Wanted), yes, "--yes"); err != nil {
			return e, err
		}
	} else if e.Grows {
		if err := a.confirm(fmt.Sprintf("Upgrade %s to %s? Its authority grows.", o.Name, o.Wanted), yes, "--yes"); err != nil {
			return e, err
		}
	}
	req := marketplace.InstallRequest{Name: o.Name, Catalog: o.Catalog, Constraint: o.Constraint, AllowStale: opts.AllowStale, AllowSignerChange: opts.AllowSignerChange, Resolve: ro}
	res, err := a.installOne(ctx, st, c, req, installShow{quiet: asJSON}, func(ic *marketplace.InstallCandidate) error {
		e.Fetched = review.FetchedChanges(o.Record().Fetched, ic.Fetched)
		if !asJSON {
			review.WriteFetchedChanges(a.stdout, e.Fetched)
		}
		if ic.NewSigner == nil {
			return nil
		}
		if !asJSON {
			a.showCandidate(ic, false)
		}
		return a.confirm(fmt.Sprintf("Trust this new signer for %s?", o.Name), yes, "--yes")
	})
	if err != nil {
		return e, err
	}
	e.Done, e.NewSigner, e.To = true, res.Trust.NewSigner, res.Version.Version
	if err := a.enableUpgraded(ctx, st, ws, o, res.Trust.Record, e, asJSON); err != nil {
		return e, err
	}
	e.Sources = a.beforeFirstUse(res.Trust.Review, asJSON)
	return e, nil
}

// enableUpgraded enables rec, o's upgrade, in ws where o's version is
// enabled there (or was, until its revocation disabled it), updating
// ws's berth.lock, and names the other workspaces that keep theirs.
func (a *app) enableUpgraded(ctx context.Context, st *store.Store, ws string, o *lock.Outdated, rec *store.Record, e *upgradeEntry, asJSON bool) error {
	state, err := st.State()
	if err != nil {
		return err
	}
	here := state.Workspaces[ws] != nil && state.Workspaces[ws].Plugins[o.Name] != nil
	if !here && o.RevokedBy != "" {
		if here, err = revokedWasHere(st, ws, o); err != nil {
			return err
		}
		if !here && !asJSON {
			fmt.Fprintf(a.stdout, "%s is installed, not enabled in %s: the revoked %s was not enabled here; berth enable %s --workspace %s enables it.\n", rec.ID(), ws, o.Current, o.Name, ws)
		}
	}
	if here {
		if e.LockUpdated, err = a.enableAndLock(ctx, st, ws, rec, o.Constraint, !asJSON); err != nil {
			return err
		}
		e.Enabled = ws
	}
	if !asJSON {
		for _, other := range state.EnabledIn(o.Name) {
			if other != ws {
				fmt.Fprintf(a.stdout, "%s stays at its version in %s: berth upgrade %s --workspace %s there.\n", o.Name, other, o.Name, other)
			}
		}
	}
	return nil
}

// installedSummary is the review summary of the installed version, built
// from its staged snapshot: the bundle that was reviewed and trusted,
// never what the catalog says of it now. The curator's tool list (which
// no bundle carries) is the one the trust record kept at install; a
// record written before berth kept it falls back to the catalog's list
// for that exact bundle, and toolsFromCatalog says so. When the catalog's
// summary of that bundle no longer matches the snapshot (which install
// checked it equal to), or its tool list the recorded one, the catalog
// changed a version it had published: warning says so.
func installedSummary(ctx context.Context, st *store.Store, o *lock.Outdated) (s *catalog.Summary, toolsFromCatalog bool, warning string, err error) {
	rec := o.Record()
	d, err := store.ParseDigest(rec.Digest)
	if err != nil {
		return nil, false, "", err
	}
	tools, recorded, err := marketplace.InstalledTools(rec)
	if err != nil {
		return nil, false, "", err
	}
	b, err := bundle.Open(ctx, st.Paths().Snapshot(d), nil)
	if err != nil {
		var ie *bundle.InvalidError
		if errors.As(err, &ie) {
			return nil, false, "", fmt.Errorf("the staged copy of %s cannot be read to compare it (%v); run berth verify", rec.ID(), err)
		}
		return nil, false, "", err
	}
	defer b.Close()
	disclosure := review.New(b)
	sum := catalog.NewSummary(disclosure)
	if recorded {
		sum.Tools, sum.ContextTokens = tools, catalog.EstimateTokens(tools)
	}
	v := o.CurrentVersion()
	if v == nil {
		return &sum, false, "", nil
	}
	var diffs []string
	var me *marketplace.SummaryMismatchError
	if err := marketplace.CheckSummary(o.Name, v, disclosure); errors.As(err, &me) {
		diffs = me.Differences
	}
	if recorded {
		diffs = append(diffs, marketplace.ToolListChanges(tools, v.Summary.Tools)...)
	} else {
		sum.Tools, sum.ContextTokens = v.Summary.Tools, v.Summary.ContextTokens
	}
	if len(diffs) > 0 {
		warning = fmt.Sprintf("catalog %s now lists %s@%s (%s), the version you installed from it, with another review summary than the one it published and you installed:\n  %s\nberth compares the upgrade with the installed copy, not with what the catalog says now; a published version never changes, so tell the curator",
			o.Catalog, o.Name, o.Current, rec.Digest, strings.Join(diffs, "\n  "))
	}
	return &sum, !recorded, warning, nil
}
