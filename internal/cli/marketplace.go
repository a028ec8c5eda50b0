package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// The user's side of a marketplace: berth marketplace, search and show.

// catalogs opens the verified catalog cache under $BERTH_HOME.
func (a *app) catalogs() (*marketplace.Cache, error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	c := marketplace.OpenCache(paths.Catalogs(), nil)
	// The built-in catalog is there from the first command on, unless the
	// operator removed it. A BERTH_HOME berth cannot write to lists the
	// catalogs it has: the failure is no reason to refuse a command.
	if !a.completing {
		_ = c.EnsureBuiltin(context.Background())
	}
	return c, nil
}

// resolveOptions are the operator's resolution settings: the
// min-release-age cooldown of config.json.
func (a *app) resolveOptions() (*marketplace.ResolveOptions, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	cfg, err := st.Config()
	if err != nil {
		return nil, err
	}
	age, err := cfg.ReleaseCooldown()
	if err != nil {
		return nil, err
	}
	return &marketplace.ResolveOptions{MinReleaseAge: age}, nil
}

func newMarketplaceCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "marketplace",
		Example: `  berth marketplace add acme https://plugins.acme.example --root-sha256 <hex>
  berth marketplace add acme oci://ghcr.io/acme/berth-catalog --root-sha256 <hex>
  berth marketplace list
  berth marketplace update`,
		Short: "Add, list, remove and update the catalogs you install plugins from",
		Long: `A catalog is a TUF repository that a curator signs (berth catalog). berth
keeps a verified copy of each catalog you add under $BERTH_HOME/catalogs/,
and every update is a full TUF update against it: a rolled-back, frozen
(expired), mixed-and-matched, badly signed or altered catalog is refused
with exit 4, naming which and what to do; a network failure is exit 1.
search and show answer from the verified copy, offline; serve and export
show the same in a web browser.`,
		Args: exactArgs(0, "a subcommand: add, list, remove, update, set-mirror, serve or export"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newMarketplaceAddCmd(a), newMarketplaceListCmd(a), newMarketplaceRemoveCmd(a), newMarketplaceUpdateCmd(a),
		newMarketplaceSetMirrorCmd(a), newMarketplaceServeCmd(a), newMarketplaceExportCmd(a))
	return cmd
}

func newMarketplaceAddCmd(a *app) *cobra.Command {
	opts := &marketplaceAddOptions{}
	cmd := &cobra.Command{
		Use: "add NAME SOURCE (--root FILE | --root-sha256 HEX | --registry | --unsigned) [--mirror URL] | add builtin --builtin",
		Example: `  berth marketplace add acme https://plugins.acme.example --root-sha256 <hex>
  berth marketplace add acme oci://ghcr.io/acme/berth-catalog --root-sha256 <hex>
  berth marketplace add acme https://plugins.acme.example --root-sha256 <hex> --mirror https://mirror.corp.example/acme
  berth marketplace add local ./catalog --root ./catalog/1.root.json
  berth marketplace add mcp https://registry.modelcontextprotocol.io --registry
  berth marketplace add team ./claude-marketplace --unsigned
  berth marketplace add local ./catalog --root ./catalog/1.root.json --json
  berth marketplace add builtin --builtin`,
		Short: "Add a catalog, its root of trust pinned, and verify it",
		Long: `Add adds the catalog served at SOURCE under NAME: a directory, a file://
URL, an https:// URL (system roots; SSL_CERT_FILE and SSL_CERT_DIR are
honoured), an http:// URL on a loopback address (local mirrors), or an
OCI registry, oci://REGISTRY/REPOSITORY[:TAG] (berth catalog push
publishes one there; credentials from the Docker config file). berth
never trusts a catalog's root on first use: pin it with --root FILE (a
root.json you got from the curator) or --root-sha256 HEX (the sha256 of
the catalog's 1.root.json, which berth catalog init prints). Then it runs a
full TUF update and keeps the verified copy. HTTPS requests use the
standard proxy variables HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their
lower-case forms); loopback addresses are never proxied.

--mirror URL (any kind of SOURCE, often a copy berth mirror made) makes
every update, and this first one, read the catalog from the mirror first,
and from SOURCE only when the mirror cannot be reached (a network failure,
or a file it does not have), which berth says. What the mirror serves is
verified against the same pinned root: a refusal of it is a refusal (exit
4, naming the mirror), never a reason to read SOURCE instead. Bundles are
downloaded from the mirror first too (an archive the mirror alters is
refused by its catalog sha256, and the next location is tried, as for
any list of URLs). SOURCE stays the catalog's source:
berth.lock records it, never the mirror.

Two unsigned, read-only sources can be added too, and nobody signs what
they list. --registry adds an MCP Registry: SOURCE is its base URL, https,
or http on a loopback address. berth lists every server version through
/v0/servers, follows its cursors (at most 1000 pages of at most 8 MiB, and
a cursor loop is refused with exit 4), drops deleted versions and marks
deprecated ones. --unsigned adds a Claude Code marketplace.json: a
directory holding .claude-plugin/marketplace.json, the file itself, or its
https URL. Only plugins in a directory inside a local marketplace can be
installed; any other source (github, git URL, npm, or a relative path when
the marketplace came from a URL) is skipped, with the reason. Every
malformed or skipped entry is named, and the rest are listed. Search and
show mark these entries unsigned. berth install takes one only with
--allow-unsigned and the --digest that berth show prints.

berth has a built-in catalog, named builtin, of well-known reference MCP
servers, each pinned by this binary to its bundle's digest and its npm
package's integrity. Once you remove it (berth marketplace remove builtin)
it stays removed, and a catalog you add under that name is yours; add
builtin --builtin puts the built-in one back.`,
		Args: rangeArgs(1, 2, "NAME and SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if len(args) == 2 {
				opts.Source = args[1]
			}
			return runMarketplaceAdd(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.RootFile, "root", "", "a root.json of the catalog that you trust")
	cmd.Flags().StringVar(&opts.RootSHA256, "root-sha256", "", "the sha256 (hex) of the catalog's 1.root.json")
	cmd.Flags().BoolVar(&opts.Registry, "registry", false, "SOURCE is an MCP Registry (its base URL): read-only and unsigned")
	cmd.Flags().BoolVar(&opts.Unsigned, "unsigned", false, "SOURCE is a Claude Code marketplace.json (its directory, file or URL): read-only and unsigned")
	cmd.Flags().StringVar(&opts.Mirror, "mirror", "", "read the catalog from this mirror first (a directory or URL, like SOURCE), from SOURCE when the mirror cannot be reached")
	cmd.Flags().BoolVar(&opts.Builtin, "builtin", false, "put back the built-in catalog you removed (NAME builtin, no SOURCE)")
	a.jsonFlag(cmd, &opts.JSON, marketplaceAddJSON{})
	return cmd
}

// marketplaceAddOptions are the inputs of berth marketplace add.
type marketplaceAddOptions struct {
	// Name and Source are the positional arguments.
	Name, Source             string
	Registry, Unsigned, JSON bool
	// Builtin puts the built-in catalog back.
	Builtin              bool
	RootFile, RootSHA256 string
	// Mirror is where the catalog is read first; "" for none.
	Mirror string
}

func runMarketplaceAdd(ctx context.Context, a *app, opts *marketplaceAddOptions) error {
	name := opts.Name
	if err := marketplace.CheckName(name); err != nil {
		return usagef("%v", err)
	}
	if opts.Builtin {
		return a.restoreBuiltin(ctx, opts)
	}
	if opts.Source == "" {
		return usagef("give NAME and SOURCE (or, to put back the built-in catalog, berth marketplace add builtin --builtin)")
	}
	modes := 0
	for _, b := range []bool{opts.RootFile != "", opts.RootSHA256 != "", opts.Registry, opts.Unsigned} {
		if b {
			modes++
		}
	}
	if modes != 1 {
		return usagef("give exactly one of --root FILE and --root-sha256 HEX for a signed catalog (berth never trusts a catalog's root on first use; berth catalog init printed the sha256 of 1.root.json), or --registry for an MCP Registry, or --unsigned for a Claude Code marketplace.json")
	}
	if opts.Registry || opts.Unsigned {
		if opts.Mirror != "" {
			return usagef("--mirror is for a signed catalog, whose pinned root lets berth check what a mirror serves; an unsigned source (--registry, --unsigned) has none")
		}
		return a.addUnsignedSource(ctx, name, opts.Source, opts.Registry, opts.JSON)
	}
	src, err := marketplace.ParseSource(opts.Source)
	if err != nil {
		return err
	}
	var mirror *marketplace.Source
	if opts.Mirror != "" {
		if mirror, err = marketplace.ParseSource(opts.Mirror); err != nil {
			return fmt.Errorf("--mirror: %w", err)
		}
		if mirror.String() == src.String() {
			return usagef("--mirror %s is the catalog's source itself; give another place that serves the catalog, or leave --mirror out", opts.Mirror)
		}
	}
	var pin marketplace.RootPin
	if opts.RootFile != "" {
		data, err := fsx.ReadFile(opts.RootFile, 512000)
		if err != nil {
			return fmt.Errorf("--root: %w; pass the catalog's 1.root.json (berth catalog init writes it), or --root-sha256 HEX", err)
		}
		pin.Root = data
	} else {
		h := strings.ToLower(strings.TrimPrefix(opts.RootSHA256, "sha256:"))
		if _, err := hex.DecodeString(h); err != nil || len(h) != 64 {
			return usagef("--root-sha256 %q is not 64 hex digits; berth catalog init printed the sha256 of 1.root.json", opts.RootSHA256)
		}
		pin.SHA256 = h
	}
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	r, err := c.AddMirrored(ctx, name, src, mirror, pin)
	if err != nil {
		return err
	}
	var mirrorWarnings []string
	if r.MirrorFailure != "" {
		mirrorWarnings = append(mirrorWarnings, a.warnMirrorFailure(r.Name, r.MirrorFailure))
	}
	if opts.JSON {
		warnings := append(mirrorWarnings, a.printSkipped(r.Name, len(r.Problems))...)
		return writeJSON(a.stdout, marketplaceAddJSON{Catalog: r.CatalogInfo, Skipped: nonNilProblems(r.Problems), Warnings: nonNilStrings(warnings)})
	}
	from := r.Source
	if r.Mirror != "" && r.MirrorFailure == "" {
		from = r.Mirror + ", the mirror of " + r.Source
	}
	fmt.Fprintf(a.stdout, "Added catalog %s from %s: %d plugin(s), targets version %d, fresh until %s.\n",
		r.Name, review.Printable(from), r.Plugins, r.TargetsVersion, r.Expires().Format(time.RFC3339))
	a.printSkipped(r.Name, len(r.Problems))
	return nil
}

// marketplaceAddJSON is what marketplace add --json prints.
type marketplaceAddJSON struct {
	// Catalog is the catalog added, as berth marketplace list --json
	// shows it: its kind (tuf, or an unsigned mcp-registry or
	// claude-marketplace), its source, the TUF versions and expiries of a
	// signed catalog, and the count of plugins and of problems.
	Catalog *marketplace.CatalogInfo `json:"catalog"`
	// Skipped are the entries the catalog lists that berth skipped
	// (malformed, or a marketplace.json entry berth cannot install), each
	// with where it is (path, and plugin when it has a name), the rule
	// and why; [] when none.
	Skipped []*catalog.Problem `json:"skipped"`
	// Warnings are the warnings berth also prints on stderr, in the same
	// words; [] when none.
	Warnings []string `json:"warnings"`
}

func nonNilProblems(ps []*catalog.Problem) []*catalog.Problem {
	if ps == nil {
		return []*catalog.Problem{}
	}
	return ps
}

// addUnsignedSource is marketplace add --registry or --unsigned.
func (a *app) addUnsignedSource(ctx context.Context, name, source string, registry, asJSON bool) error {
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	var r *marketplace.RefreshResult
	what := "MCP Registry"
	if registry {
		src, err := marketplace.ParseRegistrySource(source)
		if err != nil {
			return err
		}
		if r, err = c.AddRegistry(ctx, name, src); err != nil {
			return err
		}
	} else {
		what = "Claude Code marketplace"
		src, err := marketplace.ClaudeMarketplaceSource(source)
		if err != nil {
			return err
		}
		if r, err = c.AddClaudeMarketplace(ctx, name, src); err != nil {
			return err
		}
	}
	if asJSON {
		warnings := a.printProblems(r.Name, r.Problems)
		return writeJSON(a.stdout, marketplaceAddJSON{Catalog: r.CatalogInfo, Skipped: nonNilProblems(r.Problems), Warnings: nonNilStrings(warnings)})
	}
	fmt.Fprintf(a.stdout, "Added %s %s from %s: %d plugin(s), UNSIGNED: nobody signed what it lists; berth install takes an entry only with --allow-unsigned and the --digest berth show prints.\n",
		what, r.Name, review.Printable(r.Source), r.Plugins)
	a.printProblems(r.Name, r.Problems)
	return nil
}

// printProblems names every entry of an unsigned source that was skipped,
// on stderr, and returns the warnings it printed.
func (a *app) printProblems(name string, ps []*catalog.Problem) []string {
	var warnings []string
	for _, p := range ps {
		w := fmt.Sprintf("catalog %s skipped an entry: %s", name, p.String())
		fmt.Fprintf(a.stderr, "berth: warning: %s\n", review.Printable(w))
		warnings = append(warnings, w)
	}
	if len(ps) > 0 {
		fmt.Fprintf(a.stderr, "berth: catalog %s: %d entr(ies) skipped; the rest are listed\n", name, len(ps))
	}
	return warnings
}

// printSkipped warns on stderr that a signed catalog skipped n entries,
// and returns the warning it printed.
func (a *app) printSkipped(name string, n int) []string {
	if n == 0 {
		return nil
	}
	w := fmt.Sprintf("catalog %s has %d problem(s) in its entries; the entries affected are skipped (berth search lists the rest)", name, n)
	fmt.Fprintf(a.stderr, "berth: warning: %s\n", w)
	return []string{w}
}

func newMarketplaceListCmd(a *app) *cobra.Command {
	opts := &marketplaceListOptions{}
	cmd := &cobra.Command{
		Use: "list",
		Example: `  berth marketplace list
  berth marketplace list --json`,
		Short: "List the catalogs you added",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMarketplaceList(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, []*marketplace.CatalogInfo{})
	return cmd
}

// marketplaceListOptions are the inputs of berth marketplace list.
type marketplaceListOptions struct {
	JSON bool
}

func runMarketplaceList(_ context.Context, a *app, opts *marketplaceListOptions) error {
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	list, err := c.List()
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "No catalogs yet. Add one with: berth marketplace add NAME SOURCE --root-sha256 HEX")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPLUGINS\tVERSION\tFRESH UNTIL\tSOURCE")
	for _, ci := range list {
		if ci.Kind == marketplace.KindBuiltin {
			fmt.Fprintf(tw, "%s\t%d\t-\tnever expires (built into berth)\t%s\n", ci.Name, ci.Plugins, review.Printable(ci.Source))
			continue
		}
		if ci.Unsigned {
			fmt.Fprintf(tw, "%s\t%d\t-\tunsigned %s, listed %s\t%s\n", ci.Name, ci.Plugins, ci.Kind, ci.UpdatedAt.Format(time.RFC3339), review.Printable(ci.Source))
			continue
		}
		fresh := ci.Expires().Format(time.RFC3339)
		if ci.Stale {
			fresh += " (STALE: berth marketplace update " + ci.Name + ")"
		}
		source := ci.Source
		if ci.Mirror != "" {
			source += " (mirror: " + ci.Mirror + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", ci.Name, ci.Plugins, ci.TargetsVersion, fresh, review.Printable(source))
	}
	return tw.Flush()
}

func newMarketplaceRemoveCmd(a *app) *cobra.Command {
	opts := &marketplaceRemoveOptions{}
	cmd := &cobra.Command{
		Use: "remove NAME",
		Example: `  berth marketplace remove acme
  berth marketplace remove acme --json`,
		Short: "Remove a catalog and its verified copy",
		Long: `Remove forgets the catalog and deletes its verified copy. Plugins you
installed from it stay trusted and enabled; berth verify still checks them.`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runMarketplaceRemove(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, marketplaceRemoveJSON{})
	return cmd
}

// marketplaceRemoveOptions are the inputs of berth marketplace remove.
type marketplaceRemoveOptions struct {
	// Name is the positional argument.
	Name string
	JSON bool
}

func runMarketplaceRemove(ctx context.Context, a *app, opts *marketplaceRemoveOptions) error {
	if err := marketplace.CheckName(opts.Name); err != nil {
		return usagef("%v", err)
	}
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	if err := c.Remove(ctx, opts.Name); err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, marketplaceRemoveJSON{Removed: opts.Name})
	}
	fmt.Fprintf(a.stdout, "Removed catalog %s.\n", opts.Name)
	if opts.Name == builtin.Name {
		fmt.Fprintf(a.stdout, "It stays removed, and a catalog you add under the name %s is yours; berth marketplace add %s --builtin puts the built-in one back.\n", builtin.Name, builtin.Name)
	}
	return nil
}

// marketplaceRemoveJSON is what marketplace remove --json prints.
type marketplaceRemoveJSON struct {
	// Removed is the name of the catalog removed with its verified copy.
	Removed string `json:"removed"`
}

func newMarketplaceUpdateCmd(a *app) *cobra.Command {
	opts := &marketplaceUpdateOptions{}
	cmd := &cobra.Command{
		Use: "update [NAME]",
		Example: `  berth marketplace update
  berth marketplace update acme
  berth marketplace update --json`,
		Short: "Update catalogs: a full TUF update of each (or of one)",
		Long: `Update runs a full TUF update of every catalog (or of NAME) against its
source and keeps the new verified copy. A refusal (rollback, expired,
mix-and-match, bad signature, altered catalog, a published version whose
digest changed) is exit 4 and keeps the old copy; a network failure is
exit 1. With no NAME, every catalog is updated and the worst exit code
wins. Versions whose status changed are listed, and published versions
whose review summary of what they may do changed are a warning (install
and upgrade compare with the bundle itself). An unsigned source (an
MCP Registry, a marketplace.json) is listed again in full, and every
entry it skipped is named.

What an update finds reaches what is trusted: a version you installed
from this catalog that it now revokes is disabled in every workspace at
once (running berth serve processes drop it at their next boundary), and
berth verify fails for it (exit 4) naming the reason; a deprecated or
yanked one is only a warning. A catalog revokes only what it installed
(the trust record names it, with the same root keys): its revocation of a
version another catalog installed, or you trusted by hand, is a warning
with its reason and the command to act on it (berth revoke NAME@VERSION).
A revocation stays until you lift it (berth revoke --lift NAME@VERSION)
or the same catalog lists that version and digest as active again; a
catalog that stops listing the version lifts nothing.`,
		Args: rangeArgs(0, 1, "at most one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			return runMarketplaceUpdate(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, marketplaceUpdateJSON{})
	return cmd
}

// marketplaceUpdateOptions are the inputs of berth marketplace update.
type marketplaceUpdateOptions struct {
	// Args are the positional arguments: none, or one NAME.
	Args []string
	JSON bool
}

func runMarketplaceUpdate(ctx context.Context, a *app, opts *marketplaceUpdateOptions) error {
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	names := opts.Args
	if len(names) == 0 {
		if names, err = updatable(c); err != nil {
			return err
		}
		if len(names) == 0 {
			if opts.JSON {
				return writeJSON(a.stdout, marketplaceUpdateJSON{Catalogs: []marketplaceUpdated{}})
			}
			fmt.Fprintln(a.stdout, "No catalogs to update (the built-in one comes with berth). Add one with: berth marketplace add NAME SOURCE --root-sha256 HEX")
			return nil
		}
	} else if err := marketplace.CheckName(names[0]); err != nil {
		return usagef("%v", err)
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	var worst error
	out := marketplaceUpdateJSON{Catalogs: []marketplaceUpdated{}}
	for _, n := range names {
		u, err := c.Update(ctx, st, n)
		if err != nil {
			msg := strings.TrimRight(forCLI(err).Error(), "\n")
			fmt.Fprintf(a.stderr, "berth: %s\n", msg)
			worst = worse(worst, err)
			out.Catalogs = append(out.Catalogs, marketplaceUpdated{Name: n, Error: msg, ExitCode: exitCode(err),
				StatusChanges: []statusChange{}, Skipped: []*catalog.Problem{}, Warnings: []string{}})
			continue
		}
		r := u.RefreshResult
		a.reportSummaryChanges(n, r.SummaryChanges)
		if opts.JSON {
			out.Catalogs = append(out.Catalogs, a.updatedJSON(n, u))
			continue
		}
		if r.Kind == marketplace.KindBuiltin {
			fmt.Fprintf(a.stdout, "%s: %s: %d plugin(s), built into berth: nothing to update.\n", n, review.Printable(r.Source), r.Plugins)
			continue
		}
		if r.Unsigned {
			state := "up to date"
			if r.Changed {
				state = "updated"
			}
			fmt.Fprintf(a.stdout, "%s: %s: %d plugin(s) (unsigned %s, listed %s).\n", n, state, r.Plugins, r.Kind, r.CheckedAt.Format(time.RFC3339))
			a.printProblems(n, r.Problems)
			continue
		}
		a.printUpdated(n, u, st, c)
	}
	if opts.JSON {
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	}
	if worst != nil {
		return &reported{worst}
	}
	return nil
}

// printUpdated prints the successful update of the signed catalog n,
// and warns of its mirror when it could not be reached.
func (a *app) printUpdated(n string, u *marketplace.UpdateResult, st *store.Store, c *marketplace.Cache) {
	r := u.RefreshResult
	if r.MirrorFailure != "" {
		a.warnMirrorFailure(n, r.MirrorFailure)
	}
	from := ""
	if r.Mirror != "" && r.MirrorFailure == "" {
		from = ", read from its mirror " + review.Printable(r.Mirror)
	}
	if !r.Changed {
		fmt.Fprintf(a.stdout, "%s: up to date (targets version %d, fresh until %s%s).\n", n, r.TargetsVersion, r.Expires().Format(time.RFC3339), from)
		a.reportInstalled(a.stdout, "  ", u.Installed, st, c)
		return
	}
	fmt.Fprintf(a.stdout, "%s: updated to targets version %d: %d plugin(s), fresh until %s%s.\n", n, r.TargetsVersion, r.Plugins, r.Expires().Format(time.RFC3339), from)
	for _, sc := range statusChanges(r.Old, r.New) {
		fmt.Fprintf(a.stdout, "  %s\n", review.Printable(sc.String()))
	}
	a.reportInstalled(a.stdout, "  ", u.Installed, st, c)
	a.printSkipped(n, len(r.Problems))
}

// marketplaceUpdateJSON is what marketplace update --json prints. It is
// printed when some catalogs failed too; the exit code is the worst.
type marketplaceUpdateJSON struct {
	// Catalogs has an entry for each catalog updated, in the order
	// updated (by name without NAME); [] when there are none.
	Catalogs []marketplaceUpdated `json:"catalogs"`
}

// marketplaceUpdated is the update of one catalog.
type marketplaceUpdated struct {
	Name string `json:"name"`
	// Error is why the update of this catalog failed or was refused, as
	// berth also prints it on stderr; the old copy stays, changed is
	// false, catalog and installed are omitted and the lists are [].
	Error string `json:"error,omitempty"`
	// ExitCode is the exit code of Error alone: 1 for a network failure,
	// 4 for a refusal. 0 when the update succeeded.
	ExitCode int `json:"exitCode"`
	// Changed is true when the verified copy changed ("updated" in the
	// text), false when it was up to date.
	Changed bool `json:"changed"`
	// Catalog is the catalog after the update, as berth marketplace list
	// --json shows it: kind, source, TUF versions and expiries of a signed
	// catalog, counts of plugins and problems.
	Catalog *marketplace.CatalogInfo `json:"catalog,omitempty"`
	// StatusChanges are the versions whose status the update changed;
	// [] when none.
	StatusChanges []statusChange `json:"statusChanges"`
	// Installed is what the catalog now says about the versions you
	// trusted: revoked ones (and the workspaces they were disabled in)
	// and deprecated or yanked ones.
	Installed *marketplace.InstalledStatus `json:"installed,omitempty"`
	// Skipped are the entries berth skipped, each with where it is, the
	// rule and why: every one for an unsigned source, which is listed
	// again in full; for a signed catalog only when it changed (an up to
	// date one keeps the count in catalog.problems). [] when none.
	Skipped []*catalog.Problem `json:"skipped"`
	// Warnings are the warnings berth prints as text (on stderr, and the
	// deprecated or yanked versions you trusted), in the same words; []
	// when none.
	Warnings []string `json:"warnings"`
}

// reportSummaryChanges warns, on stderr, of the published versions whose
// review summary a catalog's refresh found changed.
func (a *app) reportSummaryChanges(name string, changes []marketplace.SummaryChange) {
	for _, sc := range changes {
		fmt.Fprintf(a.stderr, "berth: warning: catalog %s: %s\n", name, review.PrintableLines(sc.String()))
	}
}

// updatedJSON is the --json entry of one catalog's update; it prints
// the same warnings on stderr as the text does.
func (a *app) updatedJSON(name string, u *marketplace.UpdateResult) marketplaceUpdated {
	r := u.RefreshResult
	e := marketplaceUpdated{Name: name, Changed: r.Changed, Catalog: r.CatalogInfo, Installed: u.Installed, StatusChanges: []statusChange{}, Skipped: []*catalog.Problem{}}
	var warnings []string
	if r.MirrorFailure != "" {
		warnings = append(warnings, a.warnMirrorFailure(name, r.MirrorFailure))
	}
	switch {
	case r.Unsigned:
		e.Skipped = nonNilProblems(r.Problems)
		warnings = a.printProblems(name, r.Problems)
	case r.Changed:
		if sc := statusChanges(r.Old, r.New); sc != nil {
			e.StatusChanges = sc
		}
		e.Skipped = nonNilProblems(r.Problems)
		warnings = a.printSkipped(name, len(r.Problems))
	}
	for _, sc := range r.SummaryChanges {
		warnings = append(warnings, "catalog "+name+": "+sc.String())
	}
	if u.Installed != nil {
		for _, s := range u.Installed.Warnings {
			warnings = append(warnings, s.String())
		}
		for _, n := range u.Installed.Notices {
			warnings = append(warnings, n.String())
		}
	}
	e.Warnings = nonNilStrings(warnings)
	return e
}

// statusChange is a version whose status changed between two copies of
// a catalog.
type statusChange struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	// Was is the status before; empty for a version new in the catalog.
	Was    catalog.Status `json:"was,omitempty"`
	Status catalog.Status `json:"status"`
	// Reason is the catalog's reason for the status, if it gives one.
	Reason string `json:"reason,omitempty"`
}

func (s statusChange) String() string {
	line := fmt.Sprintf("%s@%s is now %s", s.Plugin, s.Version, s.Status)
	if s.Reason != "" {
		line += ": " + s.Reason
	}
	return line
}

// statusChanges lists the versions whose status changed between two
// copies of a catalog.
func statusChanges(old, new *catalog.Catalog) []statusChange {
	if old == nil || new == nil {
		return nil
	}
	var out []statusChange
	for _, np := range new.Plugins {
		op := old.Plugin(np.Name)
		for _, nv := range np.Versions {
			var was catalog.Status
			if op != nil {
				if ov := op.Version(nv.Version); ov != nil {
					was = ov.Status
				}
			}
			if was == "" && nv.Status == catalog.StatusActive || was == nv.Status {
				continue
			}
			out = append(out, statusChange{Plugin: np.Name, Version: nv.Version, Was: was, Status: nv.Status, Reason: nv.Reason})
		}
	}
	return out
}

// restoreBuiltin is marketplace add builtin --builtin.
func (a *app) restoreBuiltin(ctx context.Context, opts *marketplaceAddOptions) error {
	if opts.Name != builtin.Name || opts.Source != "" || opts.Mirror != "" || opts.Registry || opts.Unsigned || opts.RootFile != "" || opts.RootSHA256 != "" {
		return usagef("--builtin puts back the built-in catalog: give the name %s and no SOURCE or other flag (berth marketplace add %s --builtin)", builtin.Name, builtin.Name)
	}
	c, err := a.catalogs()
	if err != nil {
		return err
	}
	ci, err := c.RestoreBuiltin(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, marketplaceAddJSON{Catalog: ci, Skipped: []*catalog.Problem{}, Warnings: []string{}})
	}
	fmt.Fprintf(a.stdout, "Added catalog %s, %s: %d plugin(s), pinned by this berth binary.\n", ci.Name, ci.Source, ci.Plugins)
	return nil
}

// updatable lists the catalogs marketplace update with no NAME updates:
// all but the built-in one, which comes with the binary.
func updatable(c *marketplace.Cache) ([]string, error) {
	names, err := c.Names()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(names, func(n string) bool {
		k, err := c.Kind(n)
		return err == nil && k == marketplace.KindBuiltin
	}), nil
}
