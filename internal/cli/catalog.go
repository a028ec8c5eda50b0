package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// The curator's side of a marketplace: berth catalog.

func newCatalogCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "catalog",
		Example: `  berth catalog init ./catalog --keys ~/catalog-keys
  berth catalog add ./catalog ./acme-notes-1.4.2.tar.gz --keys ~/catalog-keys
  berth catalog lint ./catalog`,
		Short: "Make and sign a catalog of plugins (a TUF repository of static files)",
		Long: `A catalog is a TUF repository of static files that any web server, a
directory or a file:// URL can serve. berth catalog makes one (init), adds
signed bundles to it (add), changes a version's status (status), re-signs
its timestamp as a cron job would (refresh), publishes hand edits of its
catalog.json (sign), checks it (lint), publishes it to an OCI registry
(push) and writes it as static MCP Registry files for other clients
(export-registry). Every change publishes a new
consistent version: new files first, timestamp.json last. docs/marketplace.md
describes the layout.`,
		Args: exactArgs(0, "a subcommand: init, add, status, refresh, sign, lint, push or export-registry"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCatalogInitCmd(a), newCatalogAddCmd(a), newCatalogStatusCmd(a),
		newCatalogRefreshCmd(a), newCatalogSignCmd(a), newCatalogLintCmd(a), newCatalogPushCmd(a), newCatalogExportRegistryCmd(a))
	return cmd
}

func newCatalogInitCmd(a *app) *cobra.Command {
	opts := &catalogInitOptions{}
	cmd := &cobra.Command{
		Use: "init DIR --keys KEYDIR",
		Example: `  berth catalog init ./catalog --keys ~/catalog-keys
  berth catalog init ./catalog --keys ~/catalog-keys --name acme`,
		Short: "Create a catalog repository and its signing keys",
		Long: `Init creates the catalog repository in DIR and one Ed25519 key per TUF
role (root, targets, snapshot, timestamp) in KEYDIR, mode 0700 with files
of mode 0600. KEYDIR may not be inside DIR: DIR is what you publish. The
initial root is DIR/1.root.json (and DIR/root.json); init prints its path
and sha256, which users pin with berth marketplace add --root-sha256.

Expiries are Go durations (24h, 2s) or days (7d); the defaults are
timestamp 1d, snapshot 7d, targets 90d, root 365d. They are kept in DIR
and used by every later command. root.key and targets.key can be kept
offline: berth catalog refresh needs only timestamp.key, and snapshot.key
when the snapshot is due.`,
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			return runCatalogInit(cmd.Context(), a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Keys, "keys", "", "the directory for the role keys (created with mode 0700; not inside DIR)")
	f.StringVar(&opts.Name, "name", "", "the catalog's name, written into the catalog")
	f.StringVar(&opts.Expires[0], "timestamp-expires", "", "how long a timestamp stays valid (default 1d)")
	f.StringVar(&opts.Expires[1], "snapshot-expires", "", "how long a snapshot stays valid (default 7d)")
	f.StringVar(&opts.Expires[2], "targets-expires", "", "how long the targets metadata stays valid (default 90d)")
	f.StringVar(&opts.Expires[3], "root-expires", "", "how long the root stays valid (default 365d)")
	a.jsonFlag(cmd, &opts.JSON, catalogInitJSON{})
	return cmd
}

// catalogInitOptions are the inputs of berth catalog init.
type catalogInitOptions struct {
	// Dir is the positional argument.
	Dir        string
	JSON       bool
	Expires    [4]string
	Keys, Name string
}

func runCatalogInit(ctx context.Context, a *app, opts *catalogInitOptions) error {
	if opts.Keys == "" {
		return usagef("--keys KEYDIR is required: the directory for the catalog's private keys (outside DIR)")
	}
	ro := &repo.Options{Name: opts.Name}
	for i, d := range []*time.Duration{&ro.Expiries.Timestamp, &ro.Expiries.Snapshot, &ro.Expiries.Targets, &ro.Expiries.Root} {
		if opts.Expires[i] == "" {
			continue
		}
		v, err := repo.ParseDuration(opts.Expires[i])
		if err != nil {
			return usagef("--%s-expires: %v", []string{"timestamp", "snapshot", "targets", "root"}[i], err)
		}
		*d = v
	}
	if opts.Name != "" {
		if err := marketplace.CheckName(opts.Name); err != nil {
			return usagef("--name: %v", err)
		}
	}
	res, err := repo.Init(ctx, opts.Dir, opts.Keys, ro)
	if err != nil {
		return err
	}
	label := opts.Name
	if label == "" {
		label = "NAME"
	}
	addCmd := fmt.Sprintf("berth marketplace add %s SOURCE --root-sha256 %s", label, res.RootSHA256)
	ts := ro.Expiries.Timestamp
	if ts == 0 {
		ts = repo.DefaultExpiries.Timestamp
	}
	refresh := refreshCommand(opts.Dir, opts.Keys)
	if opts.JSON {
		return writeJSON(a.stdout, catalogInitJSON{Dir: opts.Dir, Keys: res.Keys, Root: res.RootPath, RootSHA256: res.RootSHA256, AddCommand: addCmd,
			TimestampExpires: ts.String(), RefreshCommand: refresh})
	}
	fmt.Fprintf(a.stdout, "Created a catalog in %s, with its keys in %s.\n", opts.Dir, opts.Keys)
	fmt.Fprintf(a.stdout, "Root of trust: %s\n  sha256 %s\n", res.RootPath, res.RootSHA256)
	fmt.Fprintf(a.stdout, "Users add the catalog, once it is served, with:\n  %s\n", addCmd)
	fmt.Fprintf(a.stdout, "Keep %s private and out of what you publish; root.key and targets.key can stay offline.\n", opts.Keys)
	fmt.Fprintf(a.stdout, "The timestamp expires %s after it is signed; then users' berth refuses the catalog as expired (exit 4) until it is re-signed. Run, %s (a cron job, a systemd timer or a scheduled CI job: docs/marketplace.md, \"Keeping a catalog fresh\"), and publish %s after it:\n  %s\n",
		expiryWords(ts), refreshCadence(ts), opts.Dir, refresh)
	return nil
}

// refreshCommand is the command that keeps the catalog in dir fresh,
// with absolute paths so that it runs as well from cron or a timer.
func refreshCommand(dir, keys string) string {
	if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	if k, err := filepath.Abs(keys); err == nil {
		keys = k
	}
	return "berth catalog refresh " + fsx.ShellQuote(dir) + " --keys " + fsx.ShellQuote(keys)
}

// expiryWords says a role's lifetime: whole days as days, else as a Go
// duration.
func expiryWords(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}

// refreshCadence says how often refresh must run for a timestamp that
// lives d: daily for a day or more, else more often than d.
func refreshCadence(d time.Duration) string {
	if d >= 24*time.Hour {
		return "at least daily"
	}
	return "more often than every " + d.String()
}

// catalogInitJSON is what catalog init --json prints.
type catalogInitJSON struct {
	// Dir is the catalog repository, as given.
	Dir string `json:"dir"`
	// Keys are the paths of the role keys, by role (root, targets,
	// snapshot, timestamp).
	Keys map[string]string `json:"keys"`
	// Root is DIR/1.root.json, the initial root that users pin.
	Root string `json:"root"`
	// RootSHA256 is the hex sha256 of Root, for --root-sha256.
	RootSHA256 string `json:"rootSha256"`
	// AddCommand is the command users add the catalog with, once it is
	// served (SOURCE stands for where; NAME for the name when --name was
	// not given).
	AddCommand string `json:"addCommand"`
	// TimestampExpires is how long a signed timestamp stays valid (a Go
	// duration): the catalog expires unless RefreshCommand runs more
	// often than that.
	TimestampExpires string `json:"timestampExpires"`
	// RefreshCommand re-signs the timestamp (and the snapshot when due),
	// with absolute paths: the daily job of docs/marketplace.md.
	RefreshCommand string `json:"refreshCommand"`
}

// catalogPublishJSON is what catalog refresh --json and catalog sign
// --json print.
type catalogPublishJSON struct {
	// Dir is the catalog repository, as given.
	Dir string `json:"dir"`
	// Publish is the new published version of the catalog.
	Publish *repo.PublishResult `json:"publish"`
}

// openRepo opens a catalog repository, requiring --keys.
func openRepo(dir, keys string) (*repo.Repository, error) {
	if keys == "" {
		return nil, usagef("--keys KEYDIR is required: the directory berth catalog init wrote the keys to")
	}
	return repo.Open(dir, keys, nil)
}

func newCatalogAddCmd(a *app) *cobra.Command {
	opts := &catalogAddOptions{}
	cmd := &cobra.Command{
		Use:     "add DIR BUNDLE --keys KEYDIR",
		Example: `  berth catalog add ./catalog ./acme-notes-1.4.2.tar.gz --keys ~/catalog-keys`,
		Short:   "Publish a signed bundle in the catalog",
		Long: `Add validates BUNDLE (a directory or a .tar.gz/.tgz/.zip; exit 3 on any
problem), verifies its signature against the signers of this berth (those
added with berth signers add-key or add-identity, as for berth trust; exit
4 when none accepts it), and records that signer as the plugin's allowed
signer the first time, or checks it against the allowed signers later
(exit 4 when it is another). It computes the digest and the review summary
from the real bundle, copies the archive and signature into DIR (a
directory is packed as .tar.gz; with --url only the signature is copied
and the archive is listed at URL), and publishes a new signed version of
the catalog. The signature defaults to BUNDLE.sigstore.json. A version
is immutable: the same version with another digest is refused.

The bundle's README.md (at most 64 KiB of UTF-8) becomes the plugin's
README when the version is its highest; the marketplace page shows it,
sanitized. --icon gives the plugin a PNG icon (at most 64 KiB, 16 to 512
pixels; no SVG).`,
		Args: exactArgs(2, "DIR and BUNDLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.Bundle = args[0], args[1]
			opts.TagsSet = cmd.Flags().Changed("tag")
			return runCatalogAdd(cmd.Context(), a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Keys, "keys", "", "the catalog's key directory")
	f.StringVar(&opts.URL, "url", "", "the https URL the archive BUNDLE is served at (default: copy it into DIR)")
	f.StringVar(&opts.SigFile, "signature", "", "the bundle's Sigstore signature (default BUNDLE.sigstore.json)")
	f.StringVar(&opts.Tier, "tier", "", "official, verified or community (default: keep; community for a new plugin)")
	f.StringArrayVar(&opts.Tags, "tag", nil, "a search tag; repeat for more (replaces the plugin's tags)")
	f.StringVar(&opts.IconFile, "icon", "", "a PNG icon `FILE` for the plugin (default: keep the one it has)")
	f.BoolVar(&opts.NoReadme, "no-readme", false, "leave the bundle's README.md out of the catalog")
	a.jsonFlag(cmd, &opts.JSON, catalogAddJSON{})
	return cmd
}

// catalogAddOptions are the inputs of berth catalog add.
type catalogAddOptions struct {
	// TagsSet is true when --tag was given (even to no tags).
	TagsSet bool
	// Dir and Bundle are the positional arguments.
	Dir, Bundle                        string
	Keys, URL, SigFile, Tier, IconFile string
	NoReadme, JSON                     bool
	Tags                               []string
}

func runCatalogAdd(ctx context.Context, a *app, opts *catalogAddOptions) error {
	dir, source := opts.Dir, opts.Bundle
	t, err := parseTier(opts.Tier)
	if err != nil {
		return err
	}
	if opts.URL != "" {
		if fi, err := os.Stat(source); err == nil && fi.IsDir() {
			return usagef("--url names where the archive is served, but %s is a directory: give the archive file itself", source)
		}
		if err := catalog.CheckLocation(opts.URL); err != nil || !strings.HasPrefix(opts.URL, "https://") {
			return usagef("--url %q: give the absolute https URL where the archive will be served", opts.URL)
		}
	}
	r, err := openRepo(dir, opts.Keys)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	signers, err := st.Signers()
	if err != nil {
		return err
	}
	v, err := trust.NewVerifier(signers, nil)
	if err != nil {
		return err
	}
	if len(signers) == 0 {
		return store.Untrustedf("no signer is configured, so berth cannot verify %s for the catalog; add the publisher's key with `berth signers add-key NAME PUBKEY.pem` (or an identity with `berth signers add-identity`)", source)
	}
	if opts.SigFile == "" {
		opts.SigFile = store.DefaultSignatureFile(source)
	}
	sig, err := fsx.ReadFile(opts.SigFile, trust.MaxSignatureSize)
	if err != nil {
		return store.Untrustedf("no usable signature for %s (%v); get the signature from the publisher and pass it with --signature FILE", source, err)
	}
	req := repo.AddRequest{Source: source, Signature: sig, Verifier: v, URL: opts.URL, Tier: t, OmitReadme: opts.NoReadme}
	if opts.IconFile != "" {
		if req.Icon, err = fsx.ReadFile(opts.IconFile, catalog.MaxIcon); err != nil {
			return fmt.Errorf("--icon: %w; give a PNG file of at most %d bytes", err, catalog.MaxIcon)
		}
		if err := catalog.CheckIcon(req.Icon); err != nil {
			return usagef("--icon %s: %v", opts.IconFile, err)
		}
	}
	if opts.TagsSet {
		req.Tags = opts.Tags
	}
	res, err := r.Add(ctx, req)
	if err != nil {
		return err
	}
	if opts.JSON {
		a.publishWarnings(res.Publish)
		return writeJSON(a.stdout, catalogAddJSON{Plugin: res.Plugin, Version: res.Version, Digest: res.Digest, Signer: res.SignerRef, AllowedSigner: res.Signer,
			NewPlugin: res.NewPlugin, Already: res.Already, Archive: res.Archive, Publish: res.Publish})
	}
	if res.Already {
		fmt.Fprintf(a.stdout, "%s %s is already in the catalog with digest %s; nothing changed.\n", res.Plugin, res.Version, res.Digest)
		return nil
	}
	fmt.Fprintf(a.stdout, "Added %s %s (%s), signed by %s.\n", res.Plugin, res.Version, res.Digest, res.SignerRef)
	if res.NewPlugin {
		fmt.Fprintf(a.stdout, "%s is new in the catalog; only %s may publish it from now on.\n", res.Plugin, res.Signer)
	}
	if res.Archive != "" {
		fmt.Fprintf(a.stdout, "Copied the archive to %s.\n", res.Archive)
	}
	a.printPublish(res.Publish)
	return nil
}

// catalogAddJSON is what catalog add --json prints.
type catalogAddJSON struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	// Digest is the bundle's digest, "sha256:" and hex.
	Digest string `json:"digest"`
	// Signer is the entry of this berth's signers that verified the
	// bundle.
	Signer *store.SignerRef `json:"signer"`
	// AllowedSigner is the signer the catalog allows for the plugin, as
	// catalog.json lists it.
	AllowedSigner *catalog.Signer `json:"allowedSigner"`
	// NewPlugin is true when the plugin was not in the catalog before:
	// only AllowedSigner may publish it from now on.
	NewPlugin bool `json:"newPlugin"`
	// Already is true when this version with this digest was in the
	// catalog already; nothing changed and publish is null.
	Already bool `json:"already"`
	// Archive is where the archive was copied in DIR; empty with --url.
	Archive string `json:"archive,omitempty"`
	// Publish is the new published version of the catalog.
	Publish *repo.PublishResult `json:"publish"`
}

func parseTier(s string) (catalog.Tier, error) {
	if s == "" {
		return "", nil
	}
	for _, t := range catalog.Tiers {
		if string(t) == s {
			return t, nil
		}
	}
	return "", usagef("--tier %q: write official, verified or community", s)
}

func (a *app) printPublish(p *repo.PublishResult) {
	fmt.Fprintf(a.stdout, "Published catalog version: targets %d, snapshot %d, timestamp %d (fresh until %s).\n",
		p.TargetsVersion, p.SnapshotVersion, p.TimestampVersion, p.TimestampExpires.Format(time.RFC3339))
	a.publishWarnings(p)
}

// publishWarnings prints a publication's warnings on stderr, also with
// --json (where the payload carries them too).
func (a *app) publishWarnings(p *repo.PublishResult) {
	if p == nil {
		return
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(a.stderr, "berth: warning: %s\n", w)
	}
}

func newCatalogStatusCmd(a *app) *cobra.Command {
	opts := &catalogStatusOptions{}
	cmd := &cobra.Command{
		Use: "status DIR NAME@VERSION active|deprecated|yanked|revoked --keys KEYDIR",
		Example: `  berth catalog status ./catalog acme-notes@1.4.1 deprecated --reason "use 1.4.2" --keys ~/catalog-keys
  berth catalog status ./catalog acme-notes@1.4.0 revoked --reason "leaked key" --keys ~/catalog-keys`,
		Short: "Set a published version's status",
		Long: `Status sets the status of one version and publishes the catalog.
deprecated (with --reason and, optionally, --replacement NAME) only warns;
yanked (with --reason) is skipped when berth resolves a version; revoked
(with --reason) is never installed, and berth disables it where it is
enabled when a refresh finds it revoked. active clears the status.`,
		Args: exactArgs(3, "DIR, NAME@VERSION and a status"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.Ref, opts.Status = args[0], args[1], args[2]
			return runCatalogStatus(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Keys, "keys", "", "the catalog's key directory")
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why (required for deprecated, yanked and revoked)")
	cmd.Flags().StringVar(&opts.Replacement, "replacement", "", "the plugin to use instead (deprecated only)")
	a.jsonFlag(cmd, &opts.JSON, catalogStatusJSON{})
	return cmd
}

// catalogStatusOptions are the inputs of berth catalog status.
type catalogStatusOptions struct {
	// Dir, Ref and Status are the positional arguments.
	Dir, Ref, Status          string
	JSON                      bool
	Keys, Reason, Replacement string
}

func runCatalogStatus(ctx context.Context, a *app, opts *catalogStatusOptions) error {
	name, version, err := parseRef(opts.Ref)
	if err != nil {
		return err
	}
	if version == "" {
		return usagef("give the version as NAME@VERSION (a status belongs to one version)")
	}
	status := catalog.Status(opts.Status)
	switch status {
	case catalog.StatusActive:
		if opts.Reason != "" || opts.Replacement != "" {
			return usagef("an active version has no reason or replacement: drop --reason and --replacement")
		}
	case catalog.StatusDeprecated, catalog.StatusYanked, catalog.StatusRevoked:
		if strings.TrimSpace(opts.Reason) == "" {
			return usagef("a %s version needs --reason TEXT: users see it when they look at the plugin", status)
		}
		if opts.Replacement != "" && status != catalog.StatusDeprecated {
			return usagef("--replacement goes only with deprecated")
		}
	default:
		return usagef("the status %q is not active, deprecated, yanked or revoked", opts.Status)
	}
	r, err := openRepo(opts.Dir, opts.Keys)
	if err != nil {
		return err
	}
	res, err := r.SetStatus(ctx, name, version, status, opts.Reason, opts.Replacement)
	if err != nil {
		return err
	}
	if opts.JSON {
		a.publishWarnings(res)
		return writeJSON(a.stdout, catalogStatusJSON{Plugin: name, Version: version, Status: status, Reason: opts.Reason, Replacement: opts.Replacement, Publish: res})
	}
	line := fmt.Sprintf("%s@%s is now %s", name, version, status)
	if opts.Reason != "" {
		line += ": " + opts.Reason
	}
	if opts.Replacement != "" {
		line += " (use " + opts.Replacement + " instead)"
	}
	fmt.Fprintln(a.stdout, line+".")
	a.printPublish(res)
	return nil
}

// catalogStatusJSON is what catalog status --json prints.
type catalogStatusJSON struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	// Status is the version's new status: active, deprecated, yanked or
	// revoked.
	Status catalog.Status `json:"status"`
	// Reason is why, as users see it.
	Reason string `json:"reason,omitempty"`
	// Replacement is the plugin to use instead (deprecated only).
	Replacement string `json:"replacement,omitempty"`
	// Publish is the new published version of the catalog.
	Publish *repo.PublishResult `json:"publish"`
}

func newCatalogRefreshCmd(a *app) *cobra.Command {
	opts := &catalogRefreshOptions{}
	cmd := &cobra.Command{
		Use: "refresh DIR --keys KEYDIR",
		Example: `  berth catalog refresh ./catalog --keys ~/catalog-keys
  berth catalog refresh ./catalog --keys ~/catalog-keys --timestamp-expires 6h`,
		Short: "Re-sign the timestamp, and the snapshot when it is due (a curator's cron job)",
		Long: `Refresh signs a new timestamp, and a new snapshot when less than half of
its lifetime is left, so clients keep seeing the catalog as fresh. Run it
more often than the timestamp expires. It needs only timestamp.key (and
snapshot.key when the snapshot is due); it warns when the targets
metadata or the root expire soon, which need berth catalog sign and a new
catalog.

--timestamp-expires signs this timestamp for another lifetime (a Go
duration like 6h, or days like 2d; the same form as catalog init's). It
applies to this refresh only: later commands keep the lifetime that init
kept in DIR.`,
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			return runCatalogRefresh(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Keys, "keys", "", "the catalog's key directory")
	cmd.Flags().StringVar(&opts.TimestampExpires, "timestamp-expires", "", "how long this timestamp stays valid (default: the lifetime kept in DIR)")
	a.jsonFlag(cmd, &opts.JSON, catalogPublishJSON{})
	return cmd
}

// catalogRefreshOptions are the inputs of berth catalog refresh.
type catalogRefreshOptions struct {
	// Dir is the positional argument.
	Dir  string
	JSON bool
	Keys string
	// TimestampExpires is --timestamp-expires, "" for DIR's lifetime.
	TimestampExpires string
}

func runCatalogRefresh(ctx context.Context, a *app, opts *catalogRefreshOptions) error {
	if opts.Keys == "" {
		return usagef("--keys KEYDIR is required: the directory berth catalog init wrote the keys to")
	}
	ro := &repo.Options{}
	if opts.TimestampExpires != "" {
		d, err := repo.ParseDuration(opts.TimestampExpires)
		if err != nil {
			return usagef("--timestamp-expires: %v", err)
		}
		ro.Expiries.Timestamp = d
	}
	r, err := repo.Open(opts.Dir, opts.Keys, ro)
	if err != nil {
		return err
	}
	res, err := r.Refresh(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		a.publishWarnings(res)
		return writeJSON(a.stdout, catalogPublishJSON{Dir: opts.Dir, Publish: res})
	}
	what := "the timestamp"
	if res.SnapshotSigned {
		what = "the timestamp and the snapshot"
	}
	fmt.Fprintf(a.stdout, "Re-signed %s.\n", what)
	a.printPublish(res)
	return nil
}

func newCatalogSignCmd(a *app) *cobra.Command {
	opts := &catalogSignOptions{}
	cmd := &cobra.Command{
		Use:     "sign DIR --keys KEYDIR",
		Example: `  berth catalog sign ./catalog --keys ~/catalog-keys`,
		Short:   "Publish hand edits of DIR/catalog.json as a new signed version",
		Long: `Sign publishes DIR/catalog.json after you edited it by hand (a
description, tags, the tools a server offers): it must pass berth catalog
lint (it refuses otherwise, naming each problem), contextTokens are
recomputed from the listed tools, and the result is published as a new
signed version. It also renews the targets metadata's expiry. berth never
trusts a review summary because it is signed: install compares it with
the real bundle.`,
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			return runCatalogSign(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Keys, "keys", "", "the catalog's key directory")
	a.jsonFlag(cmd, &opts.JSON, catalogPublishJSON{})
	return cmd
}

// catalogSignOptions are the inputs of berth catalog sign.
type catalogSignOptions struct {
	// Dir is the positional argument.
	Dir  string
	JSON bool
	Keys string
}

func runCatalogSign(ctx context.Context, a *app, opts *catalogSignOptions) error {
	r, err := openRepo(opts.Dir, opts.Keys)
	if err != nil {
		return err
	}
	res, err := r.Sign(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		a.publishWarnings(res)
		return writeJSON(a.stdout, catalogPublishJSON{Dir: opts.Dir, Publish: res})
	}
	fmt.Fprintf(a.stdout, "Published %s/catalog.json.\n", opts.Dir)
	a.printPublish(res)
	return nil
}

func newCatalogLintCmd(a *app) *cobra.Command {
	opts := &catalogLintOptions{}
	cmd := &cobra.Command{
		Use: "lint DIR",
		Example: `  berth catalog lint ./catalog
  berth catalog lint ./catalog --json`,
		Short: "Check a catalog repository (no keys needed)",
		Long: `Lint checks DIR/catalog.json against every catalog rule (docs/marketplace.md),
the archives and signatures it lists inside DIR (size and sha256), the
published metadata (signatures, links between the roles, expiry), and
whether the working copy has changes not yet published. It exits 1 when
there is an error; warnings alone exit 0.`,
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			return runCatalogLint(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, repo.LintReport{})
	return cmd
}

// catalogLintOptions are the inputs of berth catalog lint.
type catalogLintOptions struct {
	// Dir is the positional argument.
	Dir  string
	JSON bool
}

func runCatalogLint(_ context.Context, a *app, opts *catalogLintOptions) error {
	rep, err := repo.Lint(opts.Dir, nil)
	if err != nil {
		return err
	}
	var errs, warns int
	for _, p := range rep.Problems {
		if p.Warning {
			warns++
		} else {
			errs++
		}
	}
	if opts.JSON {
		if err := writeJSON(a.stdout, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(a.stdout, review.Printable(p.String()))
		}
		published := "published"
		if !rep.Published {
			published = "NOT published (berth catalog sign publishes it)"
		}
		fmt.Fprintf(a.stdout, "%s: %d plugin(s), %d error(s), %d warning(s); the working copy is %s.\n", opts.Dir, rep.Plugins, errs, warns, published)
	}
	if errs > 0 {
		return &reported{fmt.Errorf("%s has %d error(s)", opts.Dir, errs)}
	}
	return nil
}
