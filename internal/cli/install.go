package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// installJSON is what install --json prints.
type installJSON struct {
	Catalog   *marketplace.CatalogInfo `json:"catalog"`
	Name      string                   `json:"name"`
	Version   string                   `json:"version"`
	Digest    string                   `json:"digest"`
	URL       string                   `json:"url"`
	Already   bool                     `json:"already"`
	Record    *store.Record            `json:"record"`
	Review    *review.Disclosure       `json:"review"`
	NewSigner *trust.Signer            `json:"newSigner"`
	Staged    string                   `json:"staged"`
	// Enabled is the workspace it was enabled in ("" without --enable).
	Enabled string `json:"enabled"`
	// LockUpdated is true when the workspace's berth.lock was updated.
	LockUpdated bool     `json:"lockUpdated"`
	Warnings    []string `json:"warnings"`
	// Unsigned is true for an entry of an unsigned source (an MCP
	// Registry, a marketplace.json), trusted by its pinned digest.
	Unsigned bool `json:"unsigned"`
	// SourceName is the source's name of the entry (the registry name).
	SourceName string `json:"sourceName,omitempty"`
	// Sources are the variables its servers read, each with whether it
	// is set here and the command that sets it when it is not (as review
	// --json says them): what to set before first use.
	Sources []sourceJSON `json:"sources"`
}

const installLong = `Install updates the plugin's catalog (a full TUF update; offline, its
verified copy is used), resolves the highest version that satisfies
CONSTRAINT (a semver constraint: ^1.2, ~1.4.0, ">=1 <2", 1.4.2; none means
any) and the bundle's requires.berth, skipping prereleases unless the
constraint names one, yanked and revoked versions, and versions younger
than your min-release-age (berth config set min-release-age DUR). It
downloads the archive to a temp file, capped at its catalog size, with the
sha256 checked while it streams (a progress bar on a terminal), and then
runs exactly the path of berth trust: validate (exit 3), verify the
signature (exit 4), review, confirm, stage, record.

The signature must be by one of the signers the catalog allows for the
plugin. A signer your policy does not have yet is shown, and once you
confirm (--yes confirms) it is added to your policy scoped to this plugin
only: it never verifies another plugin's bundle (berth signers list shows
the scope). The downloaded bundle's review must equal the catalog's review
summary, or install refuses (exit 4) and shows every difference. The trust
record names the catalog, its root key IDs and its targets version.

A name listed by several catalogs needs --catalog (exit 2). A catalog copy
past its expiry is refused (exit 4) unless --allow-stale, which the record
then says. --enable also enables it in the workspace, and updates the
workspace's berth.lock when there is one. --json cannot ask, so it needs
--yes. Install ends, as berth review does, with the variables the plugin's
servers read, whether each is set here, the berth secret set command for
each one that is not, and the remotes that sign in with OAuth (berth
login): what to set before first use (--json: "sources").

A plugin is not given the secrets berth's secret store holds for other
plugins: when it names one, install asks on a terminal whether it may use
it. --yes never answers that question: with --yes, --json or off a
terminal, nothing is bound and install prints the command that binds it
('berth secret bind NAME --plugin PLUGIN').

Install also asks, on a terminal, for each value the plugin asks you to
confirm (its publisher's fixed environment values and its MCP Bundle
options that are not sensitive; berth confirm explains): --yes never
answers it. Off a terminal, or with --json, --confirm NAME (the
publisher's value) or --confirm NAME=VALUE confirms one (repeatable); a
value left unconfirmed is named on stderr, and the servers that read it
do not start until 'berth confirm PLUGIN'.

An entry of an unsigned source (an MCP Registry or a marketplace.json,
berth marketplace add --registry or --unsigned) is installed from the
cached listing, with no network: berth builds its bundle (from the
registry's server.json, or the plugin's directory in a local marketplace)
and runs the path of berth trust --allow-unsigned --digest on it. It needs
--allow-unsigned and --digest equal to the digest berth show prints;
without them it refuses (exit 4) and prints the digest and the command.
Such a plugin cannot be pinned in a berth.lock. A registry entry can be
named by its registry name or the berth name it maps to.`

// installOptions are the inputs of berth install.
type installOptions struct {
	// Ref is NAME[@CONSTRAINT].
	Ref                        string
	Catalog, Workspace, Digest string
	// WorkspaceSet is true when --workspace was given.
	WorkspaceSet                                                    bool
	Yes, Enable, AllowStale, AllowSignerChange, AllowUnsigned, JSON bool
	// Without are servers of a Claude Code marketplace entry to leave
	// out (bundle.Options.Without).
	Without []string
	// Pin pins an unsigned entry's unpinned fetches (berth import --pin).
	Pin bool
	// Confirm are the NAME and NAME=VALUE of --confirm.
	Confirm []string
}

func newInstallCmd(a *app) *cobra.Command {
	opts := &installOptions{}
	cmd := &cobra.Command{
		Use:   "install NAME[@CONSTRAINT]",
		Short: "Install a plugin from a catalog: resolve, download, verify, review, stage",
		Long:  installLong,
		Example: `  berth install acme-notes
  berth install acme-notes@^1.4 --enable
  berth install io.github.acme/weather@1.2.0 --catalog mcp --allow-unsigned --digest sha256:<hex>
  berth install 'acme-notes@>=1.2 <2' --catalog acme --yes
  berth install acme-notes --allow-stale --yes --json`,
		Args: exactArgs(1, "NAME[@CONSTRAINT]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			opts.WorkspaceSet = cmd.Flags().Changed("workspace")
			return runInstall(cmd.Context(), a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Catalog, "catalog", "", "the catalog to install from (needed when several list the name)")
	f.BoolVarP(&opts.Yes, "yes", "y", false, "confirm without asking, a new signer included (required when not on a terminal)")
	f.BoolVar(&opts.Enable, "enable", false, "enable it in the workspace too, and update the workspace's berth.lock when there is one")
	workspaceFlag(cmd, &opts.Workspace)
	f.BoolVar(&opts.AllowStale, "allow-stale", false, "accept a catalog copy past its expiry (the trust record says so)")
	f.BoolVar(&opts.AllowSignerChange, "allow-signer-change", false, "accept a signer other than the one of the plugin's latest trusted version (still one the catalog allows)")
	f.BoolVar(&opts.AllowUnsigned, "allow-unsigned", false, "install an entry of an unsigned source (MCP Registry, marketplace.json), by --digest only; recorded as unsigned")
	f.StringVar(&opts.Digest, "digest", "", "with --allow-unsigned: the digest berth show printed (sha256:HEX)")
	f.StringArrayVar(&opts.Without, "without", nil, "for a Claude Code marketplace entry: leave out this server of the plugin (listed as not carried over; the digest is that of the rest); repeatable")
	f.BoolVar(&opts.Pin, "pin", false, "for an entry of an unsigned source: "+pinHelp+"; the digest to give is then the pinned bundle's")
	f.StringArrayVar(&opts.Confirm, "confirm", nil, confirmFlagUsage)
	a.jsonFlag(cmd, &opts.JSON, installJSON{})
	return cmd
}

// parse splits and checks opts.Ref and the flags that need no state:
// the name as given, its berth name, the constraint and the pinned
// digest.
func (opts *installOptions) parse() (given, name, constraint string, pin store.Digest, err error) {
	given, constraint, _ = strings.Cut(opts.Ref, "@")
	name, _, err = marketplace.LookupName(given)
	if err != nil {
		return "", "", "", pin, usagef("%v", err)
	}
	if err := store.CheckRef(name, ""); err != nil {
		return "", "", "", pin, usagef("%v", err)
	}
	if opts.Digest != "" {
		if pin, err = store.ParseDigest(opts.Digest); err != nil {
			return "", "", "", pin, usagef("--digest: %v", err)
		}
	}
	if opts.Catalog != "" {
		if err := marketplace.CheckName(opts.Catalog); err != nil {
			return "", "", "", pin, usagef("--catalog: %v", err)
		}
	}
	if opts.JSON && !opts.Yes {
		return "", "", "", pin, usagef("--json cannot ask for confirmation; add --yes")
	}
	if _, err := parseGiven(opts.Confirm); err != nil {
		return "", "", "", pin, err
	}
	return given, name, constraint, pin, nil
}

func runInstall(ctx context.Context, a *app, opts *installOptions) error {
	given, name, constraint, pin, err := opts.parse()
	if err != nil {
		return err
	}
	st, c, err := a.storeAndCatalogs()
	if err != nil {
		return err
	}
	ws := ""
	if opts.Enable {
		if ws, err = pool.Workspace(opts.Workspace); err != nil {
			return err
		}
	} else if opts.WorkspaceSet {
		return usagef("--workspace goes with --enable: install itself only stages the plugin")
	}
	catalog, err := findCatalog(c, name, opts.Catalog)
	if err != nil {
		return err
	}
	kind, err := c.Kind(catalog)
	if err != nil {
		return err
	}
	if kind != marketplace.KindTUF {
		return a.installUnsigned(ctx, st, c, unsignedInstall{catalog: catalog, builtin: kind == marketplace.KindBuiltin, name: given, constraint: constraint, digest: pin, allowUnsigned: opts.AllowUnsigned, yes: opts.Yes, json: opts.JSON, enable: opts.Enable, ws: ws, without: opts.Without, pin: opts.Pin, confirm: opts.Confirm})
	}
	if len(opts.Without) > 0 {
		return usagef("--without leaves out a server of a Claude Code marketplace entry; catalog %s is signed, and install takes its bundle as signed", catalog)
	}
	if opts.Pin {
		return usagef("--pin is for entries of unsigned sources (MCP Registry, marketplace.json); catalog %s is signed, and its bundles are pinned by their publisher", catalog)
	}
	if opts.AllowUnsigned || opts.Digest != "" {
		return usagef("--allow-unsigned and --digest are for entries of unsigned sources; catalog %s is signed, and install verifies the signature it lists", catalog)
	}
	if err := a.refreshCatalog(ctx, c, st, catalog, opts.AllowStale); err != nil {
		return err
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return err
	}
	req := marketplace.InstallRequest{Name: name, Catalog: catalog, Constraint: constraint, AllowStale: opts.AllowStale, AllowSignerChange: opts.AllowSignerChange, Resolve: ro}
	res, err := a.installOne(ctx, st, c, req, installShow{quiet: opts.JSON, stage: true}, func(ic *marketplace.InstallCandidate) error {
		if !opts.JSON {
			a.showCandidate(ic, true)
		}
		return a.confirmInstall(st, ic, opts.JSON, opts.Yes)
	})
	if err != nil {
		return err
	}
	if err := checkGiven(st, res.Trust.Record, opts.Confirm); err != nil {
		return err
	}
	out := installJSON{Catalog: res.Catalog, Name: name, Version: res.Version.Version, Digest: res.Version.Digest, URL: res.URL,
		Already: res.Trust.Already, Record: res.Trust.Record, Review: res.Trust.Review, NewSigner: res.Trust.NewSigner, Staged: res.Trust.Snapshot, Warnings: nonNilStrings(res.Warnings)}
	if opts.Enable {
		updated, err := a.enableAndLock(ctx, st, ws, res.Trust.Record, constraint, !opts.JSON)
		if err != nil {
			return err
		}
		out.Enabled, out.LockUpdated = ws, updated
	}
	a.offerSecrets(st, res.Trust.Record, opts.Yes, opts.JSON)
	if err := a.confirmAfterEnable(ctx, st, res.Trust.Record, opts.Confirm, opts.JSON); err != nil {
		return err
	}
	if !opts.JSON && !opts.Enable {
		fmt.Fprintf(a.stdout, "Enable it with: berth enable %s\n", name)
	}
	out.Sources = a.beforeFirstUse(res.Trust.Review, opts.JSON)
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	return nil
}

// installShow is what installOne draws and prints.
type installShow struct {
	// quiet draws and prints nothing (--json).
	quiet bool
	// stage draws a bar while a large bundle is staged.
	stage bool
}

// installOne is the one path by which install, upgrade and sync install
// a plugin from a catalog: Cache.Install of req, with a download bar
// that confirm's questions replace, and, unless quiet, the words for
// what was installed.
func (a *app) installOne(ctx context.Context, st *store.Store, c *marketplace.Cache, req marketplace.InstallRequest, show installShow, confirm func(*marketplace.InstallCandidate) error) (*marketplace.InstallResult, error) {
	bar := a.downloadBar(!show.quiet)
	req.Download = &marketplace.DownloadOptions{Progress: bar.progress(req.Name)}
	stopStaging := func() {}
	if show.stage {
		req.StageProgress, stopStaging = a.largeWork(!show.quiet, "staging "+req.Name)
	}
	req.Fetch = a.fetchOptions(!show.quiet)
	started := req.Fetch.Started
	req.Fetch.Started = func(pkg string) func() {
		bar.done() // the download is over; the fetch's spinner takes the line
		return started(pkg)
	}
	req.Confirm = func(ic *marketplace.InstallCandidate) error {
		bar.done()
		return confirm(ic)
	}
	res, err := c.Install(ctx, st, req)
	bar.done()
	stopStaging()
	if err != nil {
		return nil, err
	}
	if !show.quiet {
		a.printInstalled(res)
	}
	return res, nil
}

// storeAndCatalogs opens the store and the operator's catalog cache.
func (a *app) storeAndCatalogs() (*store.Store, *marketplace.Cache, error) {
	st, err := a.store()
	if err != nil {
		return nil, nil, err
	}
	c, err := a.catalogs()
	if err != nil {
		return nil, nil, err
	}
	return st, c, nil
}

// showCandidate prints what is about to be installed: the review (when
// full), the signer and whether it is new, and the warnings.
func (a *app) showCandidate(ic *marketplace.InstallCandidate, full bool) {
	w := a.stdout
	if full {
		ic.Review.LocateRuntimes()
		ic.Review.WriteText(w)
		review.WriteFetched(w, ic.Fetched)
		a.writeFetchSettings(w, ic.Fetched)
		fmt.Fprintln(w)
		fmt.Fprintf(w, "The review matches what catalog %s says about %s %s (digest %s).\n", ic.Catalog.Name, ic.Plugin.Name, ic.Version.Version, ic.Version.Digest)
	}
	if ns := ic.NewSigner; ns != nil {
		fmt.Fprintf(w, "NEW SIGNER: %s signed it, and your signer policy does not have it.\n", signerIdentity(ns))
		fmt.Fprintf(w, "  Catalog %s vouches for this signer for %s only. If you confirm, berth adds it to your policy\n  as %q, scoped to plugin %s: it will never verify another plugin's bundle.\n", ic.Catalog.Name, ic.Plugin.Name, ns.Name, ns.Plugin)
	} else if ic.Signer != nil {
		fmt.Fprintf(w, "Signed by %s, a signer in your policy that catalog %s allows for %s.\n", ic.Signer, ic.Catalog.Name, ic.Plugin.Name)
	}
	for _, warn := range ic.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", review.Printable(warn))
	}
}

// signerIdentity names a signer by what identifies it: the whole key
// fingerprint, or the certificate identity.
func signerIdentity(s *trust.Signer) string {
	if s.Kind == trust.KindKey {
		return "the key " + s.Fingerprint
	}
	return fmt.Sprintf("the identity %s (issuer %s)", review.Printable(s.SAN), review.Printable(s.Issuer))
}

func (a *app) printInstalled(res *marketplace.InstallResult) {
	r := res.Trust.Record
	if res.Trust.Already {
		fmt.Fprintf(a.stdout, "%s is already installed with this digest; nothing changed.\n", r.ID())
	} else {
		fmt.Fprintf(a.stdout, "Installed %s from catalog %s (targets version %d): %s, staged at %s.\n", r.ID(), r.Catalog.Name, r.Catalog.TargetsVersion, r.Digest, res.Trust.Snapshot)
	}
	if ns := res.Trust.NewSigner; ns != nil {
		fmt.Fprintf(a.stdout, "Added to your signer policy: %s.\n", ns)
	}
}

// enableAndLock enables rec in workspace ws and, when ws has a
// berth.lock, sets rec's entry in it, with the constraint it was
// installed for. It reports whether the lock was written.
func (a *app) enableAndLock(ctx context.Context, st *store.Store, ws string, rec *store.Record, constraint string, say bool) (bool, error) {
	en, err := pool.Enable(ctx, st, ws, rec.Name, rec.Version)
	if err != nil {
		return false, err
	}
	if say {
		switch {
		case en.Already:
			fmt.Fprintf(a.stdout, "%s is already enabled in %s.\n", rec.ID(), ws)
		case en.Replaced != "":
			fmt.Fprintf(a.stdout, "Enabled %s in %s (replacing %s).\n", rec.ID(), ws, en.Replaced)
		default:
			fmt.Fprintf(a.stdout, "Enabled %s in %s.\n", rec.ID(), ws)
		}
		if err := a.sayRulesOf(st, rec); err != nil {
			return false, err
		}
	}
	l, err := lock.Read(ws)
	if err != nil || l == nil {
		return false, err
	}
	entry, err := lock.Entry(rec)
	if err != nil {
		return false, err
	}
	entry.Constraint = constraint
	if old, ok := l.Plugin(rec.Name); ok && reflect.DeepEqual(old, entry) {
		return false, nil
	}
	l.Set(entry)
	if err := a.recordCatalogs(l, l); err != nil {
		return false, err
	}
	if err := lock.Write(ws, l); err != nil {
		return false, err
	}
	if say {
		fmt.Fprintf(a.stdout, "Updated %s/%s: %s.\n", ws, lock.File, rec.ID())
	}
	return true, nil
}

// refreshCatalog updates a catalog before install, sync or upgrade use
// it, and applies its statuses to what is trusted (a revocation disables
// the version everywhere, and says so). Offline, the verified copy is
// used, with a warning; an expired catalog the curator did not renew is
// accepted only with allowStale. Any other refusal is returned.
func (a *app) refreshCatalog(ctx context.Context, c *marketplace.Cache, st *store.Store, name string, allowStale bool) error {
	u, err := c.Update(ctx, st, name)
	if err == nil {
		a.reportSummaryChanges(name, u.SummaryChanges)
		a.reportInstalled(a.stderr, "berth: ", u.Installed, st, c)
		return nil
	}
	var ve *marketplace.VerifyError
	switch {
	case errors.Is(err, marketplace.ErrNetwork):
		fmt.Fprintf(a.stderr, "berth: warning: could not update catalog %s, so its verified copy is used: %s\n", name, strings.TrimRight(forCLI(err).Error(), "\n"))
	case errors.As(err, &ve) && ve.Kind == marketplace.KindExpired && allowStale:
		fmt.Fprintf(a.stderr, "berth: warning: catalog %s serves expired metadata; its verified copy is used (--allow-stale)\n", name)
	case errors.As(err, &ve) && ve.Kind == marketplace.KindExpired:
		return &rendered{strings.TrimRight(forCLI(err).Error(), "\n") + "\nTo use the stale verified copy anyway, pass --allow-stale (the trust record says so).", err}
	default:
		return err
	}
	is, err := c.ApplyStatus(ctx, st, name)
	if err != nil {
		return err
	}
	a.reportInstalled(a.stderr, "berth: ", is, st, c)
	return nil
}

// reportInstalled says what a refresh meant for what is trusted.
func (a *app) reportInstalled(w io.Writer, prefix string, is *marketplace.InstalledStatus, st *store.Store, c *marketplace.Cache) {
	if is == nil {
		return
	}
	for _, r := range is.Revoked {
		where := "it was not enabled anywhere"
		if len(r.Disabled) > 0 {
			where = fmt.Sprintf("disabled it in %d workspace(s): %s", len(r.Disabled), strings.Join(r.Disabled, ", "))
		}
		back := ""
		if cmd := a.wayBack(st, c, is.Catalog, r.Name, r.Version, r.Disabled); cmd != "" {
			back = "; to go back to a version that is not revoked: " + cmd
		}
		fmt.Fprintf(w, "%sREVOKED: catalog %s revoked %s@%s (%s); berth %s, and berth verify fails for it%s\n", prefix, is.Catalog, r.Name, r.Version, review.Printable(r.Reason), where, back)
	}
	for _, s := range is.Warnings {
		fmt.Fprintf(w, "%swarning: %s\n", prefix, review.Printable(s.String()))
	}
	for _, n := range is.Notices {
		fmt.Fprintf(w, "%swarning: %s\n", prefix, review.Printable(n.String()))
	}
	for _, l := range is.Lifted {
		fmt.Fprintf(w, "%scatalog %s lists %s@%s as active again, so its revocation is lifted; it stays disabled until you enable it (berth enable %s@%s)\n", prefix, is.Catalog, l.Name, l.Version, l.Name, l.Version)
	}
}

// findCatalog is marketplace.Cache.FindCatalog with several catalogs a
// usage error (exit 2) naming --catalog.
func findCatalog(c *marketplace.Cache, name, catalog string) (string, error) {
	got, err := c.FindCatalog(name, catalog)
	var ae *marketplace.AmbiguousError
	if errors.As(err, &ae) {
		return "", usagef("%s is in several catalogs (%s); berth does not guess: pass --catalog NAME", name, strings.Join(ae.Catalogs, ", "))
	}
	return got, err
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// downloadBar draws a download's progress on stderr (newProgress: a
// terminal only, not for --json, not with --no-progress); otherwise it
// does nothing. It is safe for use by the download's goroutine and the
// command's.
type downloadBar struct {
	a    *app
	draw bool
	mu   sync.Mutex
	bar  *progress
}

func (a *app) downloadBar(show bool) *downloadBar {
	return &downloadBar{a: a, draw: a.showProgress(show)}
}

// progress is the DownloadOptions.Progress of the download of name; nil
// when nothing is drawn.
func (b *downloadBar) progress(name string) func(done, total int64) {
	if !b.draw {
		return nil
	}
	return func(done, total int64) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.bar == nil {
			b.bar = b.a.progressBar(total, "downloading "+name, true)
		}
		b.bar.set(done)
	}
}

// done clears the bar.
func (b *downloadBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bar.done()
	b.bar = nil
}

type unsignedInstall struct {
	catalog, name, constraint, ws string
	// builtin is set for the built-in catalog, whose entries this berth
	// pins: no --allow-unsigned or --digest is needed.
	builtin                  bool
	digest                   store.Digest
	allowUnsigned, yes, json bool
	without                  []string
	enable                   bool
	// pin pins the entry's unpinned fetches (--pin).
	pin     bool
	confirm []string
}

// installUnsigned installs an entry of an unsigned source: pinned to the
// digest the operator gives, through store.Store.Trust, from the cache.
func (a *app) installUnsigned(ctx context.Context, st *store.Store, c *marketplace.Cache, u unsignedInstall) error {
	locked, err := a.unsignedLocked(u)
	if err != nil {
		return err
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return err
	}
	bopts := &bundle.Options{Without: u.without}
	if err := a.pinOptions(u.pin, bopts); err != nil {
		return err
	}
	res, err := c.InstallUnsigned(ctx, st, marketplace.UnsignedInstallRequest{
		Catalog: u.catalog, Name: u.name, Constraint: u.constraint, AllowUnsigned: u.allowUnsigned, Digest: u.digest, Resolve: ro, Bundle: bopts,
		Fetch:   a.fetchOptions(!u.json),
		Confirm: a.unsignedConfirm(u),
	})
	var pe *marketplace.UnsignedPinError
	if u.pin && errors.As(err, &pe) {
		return fmt.Errorf("%w\nThat digest is of the bundle pinned now (--pin): give --pin again with it; if the registry moves a tag before then, the digest no longer matches and nothing is installed", err)
	}
	if err != nil {
		return err
	}
	r := res.Trust.Record
	if err := checkGiven(st, r, u.confirm); err != nil {
		return err
	}
	out := installJSON{Catalog: res.Catalog, Name: res.Name, Version: res.Version.Version, Digest: r.Digest, URL: r.Source,
		Already: res.Trust.Already, Record: r, Review: res.Trust.Review, Staged: res.Trust.Snapshot, Warnings: nonNilStrings(res.Warnings),
		Unsigned: true, SourceName: res.SourceName}
	if !u.json {
		for _, w := range res.Warnings {
			fmt.Fprintf(a.stdout, "WARNING: %s\n", review.Printable(w))
		}
		if res.Trust.Already {
			fmt.Fprintf(a.stdout, "%s is already installed with this digest; nothing changed.\n", r.ID())
		} else {
			from := "catalog " + u.catalog + ", unsigned,"
			if u.builtin {
				from = "the built-in catalog,"
			}
			fmt.Fprintf(a.stdout, "Installed %s from %s pinned to %s: staged at %s.\n", r.ID(), from, r.Digest, res.Trust.Snapshot)
		}
	}
	if u.enable && locked {
		// A built-in entry: berth.lock records it (catalog source builtin).
		if _, err := a.enableAndLock(ctx, st, u.ws, r, "", !u.json); err != nil {
			return err
		}
		out.Enabled = u.ws
	} else if u.enable {
		en, err := pool.Enable(ctx, st, u.ws, r.Name, r.Version)
		if err != nil {
			return err
		}
		out.Enabled = u.ws
		if !u.json && !en.Already {
			fmt.Fprintf(a.stdout, "Enabled %s in %s.\n", r.ID(), u.ws)
		}
	}
	a.offerSecrets(st, r, u.yes, u.json)
	if err := a.confirmAfterEnable(ctx, st, r, u.confirm, u.json); err != nil {
		return err
	}
	if !u.json && !u.enable {
		fmt.Fprintf(a.stdout, "Enable it with: berth enable %s\n", r.Name)
	}
	out.Sources = a.beforeFirstUse(res.Trust.Review, u.json)
	if u.json {
		return writeJSON(a.stdout, out)
	}
	return nil
}

// unsignedLocked reports whether u enables in a workspace with a
// berth.lock, and refuses when it does for an entry that is not built in:
// a lock pins signed plugins and built-in ones only.
func (a *app) unsignedLocked(u unsignedInstall) (bool, error) {
	if !u.enable {
		return false, nil
	}
	l, err := lock.Read(u.ws)
	if err != nil {
		return false, err
	}
	if l != nil && !u.builtin {
		return false, usagef("%s has a %s, which pins signed plugins only; an entry of the unsigned catalog %s cannot be in it: install without --enable, or remove the lock", u.ws, lock.File, u.catalog)
	}
	return l != nil, nil
}

// unsignedConfirm shows an unsigned or built-in entry's review and asks.
func (a *app) unsignedConfirm(u unsignedInstall) func(*store.Candidate) error {
	return func(cand *store.Candidate) error {
		if !u.json {
			cand.Review.LocateRuntimes()
			cand.Review.WriteText(a.stdout)
			review.WriteFetched(a.stdout, cand.Fetched)
			a.writeFetchSettings(a.stdout, cand.Fetched)
			fmt.Fprintln(a.stdout)
			if u.builtin {
				fmt.Fprintf(a.stdout, "BUILT IN: this entry is pinned by the berth binary: its bundle's digest is %s, and its npm package's tarball integrity was checked as the registry served it.\n", cand.Bundle.Digest)
			} else {
				fmt.Fprintf(a.stdout, "UNSIGNED: nobody signed this entry of catalog %s; it is trusted only because its digest is %s, as you pinned.\n", u.catalog, cand.Bundle.Digest)
			}
		}
		if u.builtin {
			return a.confirm(fmt.Sprintf("Install %s %s from the built-in catalog?", cand.Bundle.Manifest.Name, cand.Bundle.Manifest.Version), u.yes, "--yes")
		}
		return a.confirm(fmt.Sprintf("Install %s %s from catalog %s, unsigned?", cand.Bundle.Manifest.Name, cand.Bundle.Manifest.Version, u.catalog), u.yes, "--yes")
	}
}
