package pool

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/internal/mcpotel"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/signin"
	"github.com/berth-mcp/berth/store"
)

// Options tune a Pool. A nil *Options means the defaults.
type Options struct {
	// LookupEnv reads the host environment: the base environment of stdio
	// servers and native tool providers, and the fromEnv sources of
	// servers and remotes. nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Secrets resolves a fromEnv source that LookupEnv does not set for a
	// server of plugin, whose enabled version's trust record is signed by
	// signer (store.Record's SignerIdentity) (in the CLI: berth's secret
	// store, package secrets, which gives a value only to the plugins it is
	// bound to, signed by the signer it was bound for). It
	// is asked only for the sources a server declares, when that server
	// starts, and the value goes only into that server's environment or
	// headers. A secret held for other plugins only is an error that
	// implements NotBound: the server does not start, as when a source is
	// missing, and its status says how to bind it. nil means the host
	// environment alone.
	Secrets func(ctx context.Context, plugin, signer, name string) (value string, ok bool, err error)
	// BaseEnv, when non-nil, replaces the base environment of stdio
	// servers and native tool providers ("NAME=value" entries). By
	// default it is PATH, HOME, LANG and TMPDIR (and the Windows
	// equivalents) read through LookupEnv.
	BaseEnv []string
	// RestartBackoff is the delay before the first restart in a row; it
	// doubles with each further one (1s, 2s, 4s, 8s, 16s by default).
	RestartBackoff time.Duration
	// TerminateGrace is how long stopping a stdio server waits after
	// closing its stdin, and again after SIGTERM, before SIGKILL. Default
	// 400ms, so that a disabled server is gone within a second even when it
	// ignores both. (A native tool provider gets go-plugin's graceful shutdown
	// and 2 s; see nativetool.Client.Kill.)
	TerminateGrace time.Duration
	// PollInterval is how often the pool checks the state generation (and
	// drift) in the background, so that a disable or revoke stops calls
	// already running. Default 100ms; a negative value turns it off.
	PollInterval time.Duration
	// LegacyUpstream connects to MCP servers with the 2025-11-25 handshake
	// (no server/discover probe), so that a server's own requests during a
	// call (sampling, elicitation, roots) are requests berth can relay to
	// a legacy client. berth serve sets it when every listener serves the
	// legacy protocol only (stateful Streamable HTTP, SSE).
	LegacyUpstream bool
	// AwaitUpstreamEra leaves the era to the pool's one client: no
	// server connects until SetUpstreamEra names it (berth serve over
	// stdio, where the client names its era in its first message).
	AwaitUpstreamEra bool
	// Profile, when set, makes the pool run only the enabled plugins that
	// this profile of the workspace offers (store.Profile.IncludesPlugin):
	// the servers of every other plugin never start. The profile is read
	// from the state at every boundary, as enablement is, so a profile
	// changed or removed while the pool runs starts and stops plugins
	// at the next one; a profile the state does not have runs nothing.
	// berth serve --profile sets it (docs/pool.md §Profiles).
	Profile string
	// SignIns is the secret store whose sign-ins (package signin) the
	// remotes that declare auth.oauth use: berth's secret store. Without
	// it such a remote does not start.
	SignIns *secrets.Store
	// SignInClient returns the operator's own client registration for a
	// remote (config.json), nil for none; nil means none for every remote.
	SignInClient func(t signin.Target) (*signin.Client, error)
	// SignInAsk shows a sign-in page to a human from the pool itself (the
	// conformance client's test tooling follows it over HTTP). nil: a
	// remote that needs a sign-in fails its start or call with an error
	// that errors.As finds as a *signin.NeedSignInError, unless the call's
	// context carries an asker (signin.WithAsk); the server is not given
	// up on, and the next call after `berth login` connects again.
	SignInAsk func(ctx context.Context, p signin.Prompt) error
	// TracerProvider and MeterProvider, when either is set, turn on
	// OpenTelemetry for the requests berth sends to plugin servers: a
	// CLIENT span per request, whose W3C trace context goes to the
	// server in params._meta, and the mcp.client.operation.duration
	// histogram (docs/telemetry.md). nil for both adds nothing.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// TelemetryContentUnsafe also records what may hold secrets:
	// resource URIs and error messages.
	TelemetryContentUnsafe bool

	testNet *testNetwork
	// testBeforeLaunch, in tests only, runs just before a native tool
	// provider's executable is launched (after the drift check).
	testBeforeLaunch func(exe string)
}

// Pool runs the servers of the plugins enabled in one workspace and
// offers their tools, prompts and resources under namespaced names. Open
// one per workspace and process.
//
// Every method is safe for concurrent use. Each server has a supervisor
// goroutine that owns its process and connection; the catalog is rebuilt
// from the servers' last listings when something changed. Before every
// catalog assembly (Tools, Prompts, Resources) and every dispatch (Call,
// GetPrompt, ReadResource) the pool checks the state generation and
// reconciles, and checks the staged snapshots for drift.
type Pool struct {
	paths     store.Paths
	store     *store.Store
	workspace string
	opts      Options
	tel       *mcpotel.Instruments // nil: telemetry off (telemetry.go)
	lookupEnv func(string) (string, bool)
	baseEnv   []string
	backoff   time.Duration
	grace     time.Duration
	watch     *store.GenerationWatch

	reconcileMu sync.Mutex // serializes boundary generation checks and reconciles
	// reconcileDue is set while the last reconcile failed: the watch has
	// seen the generation move, so the next boundary must reconcile anyway.
	// Guarded by reconcileMu.
	reconcileDue bool

	mu      sync.Mutex // guards the fields below; taken before any server's mu
	plugins map[string]*plugin
	retired []*plugin // replaced, possibly still stopping; Close waits for them
	policy  []store.PolicyRule
	sandbox store.SandboxSettings // the operator's, as the last reconcile read them
	idx     *index
	closed  bool

	ver       atomic.Uint64 // bumped whenever the catalog may have changed
	changedCh chan struct{}
	stopBg    chan struct{}
	bg        sync.WaitGroup

	era upstreamEra // era.go

	relayMu sync.Mutex // guards logSink and logLevel (relay.go)
	logSink func(context.Context, *LogMessage)
	//lint:ignore SA1019 the level asked of legacy plugin servers (docs/relay.md)
	logLevel mcp.LoggingLevel
	// updatedSink gets the updates of subscribed resources.
	updatedSink func(ctx context.Context, uri string, who []any)

	tasks taskTable // the clients' tasks at plugin servers (tasks.go)

	subMu   sync.Mutex // guards subs and nextSub
	subs    map[int]func()
	nextSub int
}

// plugin is one enabled plugin: its staged snapshot, drift checker and
// servers.
type plugin struct {
	p         *Pool
	name      string
	version   string
	digest    string
	d         store.Digest // digest, parsed
	enabledAt time.Time
	dir       string
	listing   *bundle.Listing // the staged listing: checksums of native tool executables
	drift     *store.DriftChecker
	// fetched are the record's locks of runtime-fetched servers and
	// trees their staged trees' drift checkers, in the same order
	// (fetched.go).
	fetched []*fetched.Lock
	trees   []*store.DriftChecker
	servers []*server // MCP servers, then native tool providers
	// signer is the identity of the signer of the enabled version's trust
	// record (store.Record.SignerIdentity): an allow rule applies only
	// to versions from the signer it was set for.
	signer string
	// confirmSource is the enabled version's store.Record.ConfirmSource:
	// the source an unsigned version's confirmed values are bound to.
	confirmSource string
	// confirm are the inputs whose value the operator confirms, by their
	// fromEnv name (sources.go).
	confirm map[string]bundle.ImportInput
	err     error // the plugin could not be set up at all
	gone    bool  // disabled or revoked; kept for Status until enabled again

	mu      sync.Mutex
	drifted error
}

// Workspace returns dir made absolute and symlink-resolved: the key of a
// workspace in the state.
func Workspace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", dir, err)
	}
	return real, nil
}

// Open opens the pool of a workspace on the state of st, and starts the
// enabled plugins' servers in the background, concurrently; it does not
// wait for them (WaitStarted does). Every change the pool makes (a pinned
// surface, an accepted change) goes through st. It fails when the state
// directory is not the operator's alone (store.Paths.CheckPrivate) or the
// state or the configuration cannot be read.
func Open(ctx context.Context, st *store.Store, workspace string, opts *Options) (*Pool, error) {
	ws, err := Workspace(workspace)
	if err != nil {
		return nil, err
	}
	if err := st.Paths().CheckPrivate(); err != nil {
		return nil, err
	}
	p := &Pool{paths: st.Paths(), store: st, workspace: ws, plugins: map[string]*plugin{},
		stopBg: make(chan struct{}), changedCh: make(chan struct{}, 1), subs: map[int]func(){}}
	if opts != nil {
		p.opts = *opts
	}
	if p.tel, err = mcpotel.New(p.opts.TracerProvider, p.opts.MeterProvider, p.opts.TelemetryContentUnsafe); err != nil {
		return nil, fmt.Errorf("berth: telemetry: %w", err)
	}
	p.lookupEnv = p.opts.LookupEnv
	if p.lookupEnv == nil {
		p.lookupEnv = os.LookupEnv
	}
	p.baseEnv = p.opts.BaseEnv
	if p.baseEnv == nil {
		for _, k := range baseEnvNames() {
			if v, ok := p.lookupEnv(k); ok {
				p.baseEnv = append(p.baseEnv, k+"="+v)
			} else if k == "PATH" {
				p.baseEnv = append(p.baseEnv, "PATH="+defaultPath)
			}
		}
	}
	p.era.init()
	p.backoff = cmpOr(p.opts.RestartBackoff, time.Second)
	p.grace = cmpOr(p.opts.TerminateGrace, 400*time.Millisecond)
	p.watch = p.store.WatchGeneration()
	p.bg.Add(1)
	go p.notifier()
	p.reconcileMu.Lock()
	state, _, err := p.watch.Check()
	if err == nil {
		err = p.reconcile(ctx, state)
	}
	p.reconcileMu.Unlock()
	if err != nil {
		p.Close()
		return nil, err
	}
	if iv := cmpOr(p.opts.PollInterval, 100*time.Millisecond); iv > 0 {
		p.bg.Add(1)
		go p.poll(iv)
	}
	return p, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// WorkspaceDir is the pool's workspace, absolute and symlink-resolved.
func (p *Pool) WorkspaceDir() string { return p.workspace }

// Store is the store the pool works on.
func (p *Pool) Store() *store.Store { return p.store }

// OnChange registers f to be called when the catalog may have changed (a
// server started or stopped, a server announced list_changed, a reconcile
// happened), until remove is called or the pool is closed. The calls come
// from one goroutine of the pool, never under a lock, and a burst of
// changes is coalesced into one call; f should return quickly.
func (p *Pool) OnChange(f func()) (remove func()) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	id := p.nextSub
	p.nextSub++
	p.subs[id] = f
	return func() {
		p.subMu.Lock()
		defer p.subMu.Unlock()
		delete(p.subs, id)
	}
}

func (p *Pool) invalidate() { p.ver.Add(1) }

// changed signals the OnChange subscribers.
func (p *Pool) changed() {
	select {
	case p.changedCh <- struct{}{}:
	default:
	}
}

func (p *Pool) notifier() {
	defer p.bg.Done()
	for {
		select {
		case <-p.changedCh:
			p.subMu.Lock()
			subs := slices.Collect(maps.Values(p.subs))
			p.subMu.Unlock()
			for _, f := range subs {
				f()
			}
		case <-p.stopBg:
			return
		}
	}
}

// poll runs the boundary checks in the background.
func (p *Pool) poll(iv time.Duration) {
	defer p.bg.Done()
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if p.generation(ctx) == nil {
				for _, pl := range p.activePlugins() {
					pl.checkDrift(ctx)
				}
			}
			cancel()
		case <-p.stopBg:
			return
		}
	}
}

// generation is boundary step 1: a cheap check of the state generation
// and, when it moved, a reconcile.
func (p *Pool) generation(ctx context.Context) error {
	p.reconcileMu.Lock()
	defer p.reconcileMu.Unlock()
	st, moved, err := p.watch.Check()
	if err != nil {
		return fmt.Errorf("reading the berth state %s: %w; fix or restore it (berth refuses to run tools it cannot check)", p.paths.State(), err)
	}
	if !moved && !p.reconcileDue {
		return nil
	}
	err = p.reconcile(ctx, st)
	p.reconcileDue = err != nil
	return err
}

// boundary runs both boundary checks for the given plugins (all when nil).
func (p *Pool) boundary(ctx context.Context, only *plugin) error {
	if err := p.generation(ctx); err != nil {
		return err
	}
	if only != nil {
		return only.checkDrift(ctx)
	}
	for _, pl := range p.activePlugins() {
		pl.checkDrift(ctx) // a drifted plugin leaves the catalog; others stay
	}
	return nil
}

func (p *Pool) activePlugins() []*plugin {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*plugin, 0, len(p.plugins))
	for _, pl := range p.plugins {
		out = append(out, pl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// reconcile makes the pool match the state: plugins disabled, revoked or
// replaced are stopped (their calls cancelled, their children
// terminated), newly enabled ones are started, pinned surfaces and the
// tool policy are refreshed. The caller holds reconcileMu.
func (p *Pool) reconcile(ctx context.Context, st *store.State) error {
	cfg, err := p.store.Config()
	if err != nil {
		return fmt.Errorf("reading the berth configuration: %w", err)
	}
	for _, r := range cfg.ToolPolicy {
		// A damaged rule is never skipped: it may be the deny that matters.
		if err := store.CheckPolicyRule(r); err != nil {
			if errors.Is(err, store.ErrOldPolicyRule) {
				return fmt.Errorf("the tool policy in %s has a rule berth no longer uses: %w (berth runs no tool under a policy it cannot apply as written)", p.paths.Config(), err)
			}
			return fmt.Errorf("the tool policy in %s has an unusable rule: %w; fix it with `berth policy set`, or remove it with `berth policy unset` (berth runs no tool under a policy it cannot read)", p.paths.Config(), err)
		}
	}
	enabled, outside := p.runnable(st)
	type stopping struct {
		pl      *plugin
		replace bool
		version string
	}
	var stops []stopping
	var create []string
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errClosed
	}
	p.policy = slices.Clone(cfg.ToolPolicy)
	p.sandbox = cfg.SandboxOf()
	for name, pl := range p.plugins {
		en := enabled[name]
		switch {
		case !pl.gone && pl.err == nil && en != nil && en.Digest == pl.digest && en.EnabledAt.Equal(pl.enabledAt) && pl.driftErr() == nil:
			for _, s := range pl.servers {
				if sf := en.Surfaces[s.pinKey]; sf != nil {
					s.setPinned(sf.Tools)
					s.setPinnedUI(sf.UI)
				}
			}
		case en == nil && pl.gone:
		case en == nil:
			pl.gone = true
			stops = append(stops, stopping{pl: pl})
		default:
			stops = append(stops, stopping{pl: pl, replace: true, version: en.Version})
			create = append(create, name)
			p.retired = append(p.retired, pl)
		}
	}
	p.retired = slices.DeleteFunc(p.retired, (*plugin).finished)
	for name := range enabled {
		if p.plugins[name] == nil {
			create = append(create, name)
		}
	}
	p.mu.Unlock()

	for _, x := range stops {
		why := fmt.Errorf("%s was replaced by %s@%s in %s", x.pl.name, x.pl.name, x.version, p.workspace)
		if !x.replace {
			why = fmt.Errorf("%s was disabled in %s", x.pl.name, p.workspace)
			if outside[x.pl.name] {
				why = fmt.Errorf("%s is not offered by profile %s of %s, which this berth serves", x.pl.name, p.opts.Profile, p.workspace)
			} else if _, err := p.store.Find(x.pl.name, x.pl.version); errors.Is(err, store.ErrNotTrusted) {
				why = fmt.Errorf("%s@%s was revoked (berth revoke)", x.pl.name, x.pl.version)
			}
		}
		x.pl.stop(why)
	}
	var started []*plugin
	for _, name := range create {
		started = append(started, p.newPlugin(ctx, name, enabled[name]))
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		for _, pl := range started {
			p.plugins[pl.name] = pl
		}
	}
	p.mu.Unlock()
	for _, pl := range started {
		if closed {
			pl.stop(errClosed)
			for _, s := range pl.servers {
				close(s.done)
				close(s.settled)
			}
			continue
		}
		for _, s := range pl.servers {
			go s.supervise()
		}
	}
	p.invalidate()
	p.changed()
	// A plugin set up while ctx ended may have failed for that reason
	// alone: the error makes the next boundary reconcile (and set it up)
	// again.
	return ctx.Err()
}

var errClosed = errors.New("the pool is closed")

// runnable are the enabled plugins of the workspace in st that the pool
// runs: all of them, or with Options.Profile those the profile offers
// (none when the state has no such profile). outside are the enabled
// plugins the profile leaves out.
func (p *Pool) runnable(st *store.State) (enabled map[string]*store.Enablement, outside map[string]bool) {
	enabled = map[string]*store.Enablement{}
	if w := st.Workspaces[p.workspace]; w != nil {
		enabled = w.Plugins
	}
	if p.opts.Profile == "" {
		return enabled, nil
	}
	prof := st.ProfileOf(p.workspace, p.opts.Profile)
	kept := map[string]*store.Enablement{}
	outside = map[string]bool{}
	for name, en := range enabled {
		if prof != nil && prof.IncludesPlugin(name) {
			kept[name] = en
		} else {
			outside[name] = true
		}
	}
	return kept, outside
}

// newPlugin sets up an enabled plugin: its trust record, drift checker
// and manifest (read from the staged snapshot once it passed the drift
// check). Problems are kept in the plugin, not returned: one broken
// plugin never holds up the others.
func (p *Pool) newPlugin(ctx context.Context, name string, en *store.Enablement) *plugin {
	pl := &plugin{p: p, name: name, version: en.Version, digest: en.Digest, enabledAt: en.EnabledAt}
	fail := func(err error) *plugin {
		pl.err = err
		return pl
	}
	recs, err := p.store.Find(name, en.Version)
	if err != nil {
		return fail(fmt.Errorf("%s@%s is enabled in %s but %w", name, en.Version, p.workspace, err))
	}
	if recs[0].Digest != en.Digest {
		return fail(store.Untrustedf("%s@%s is enabled with digest %s, but its trust record says %s; run `berth enable %s@%s` again", name, en.Version, en.Digest, recs[0].Digest, name, en.Version))
	}
	d, err := store.ParseDigest(en.Digest)
	if err != nil {
		return fail(err)
	}
	pl.d = d
	pl.dir = p.paths.Snapshot(d)
	dc, err := p.store.DriftChecker(d)
	if err != nil {
		return fail(fmt.Errorf("%s@%s: %w", name, en.Version, err))
	}
	pl.drift = dc
	if err := pl.openTrees(recs[0]); err != nil {
		return fail(err)
	}
	m, err := pl.manifest(ctx)
	if err != nil {
		return fail(err)
	}
	pl.signer = recs[0].SignerIdentity()
	pl.confirmSource = recs[0].ConfirmSource()
	pl.confirm = confirmInputs(m)
	if err := checkProviderNames(m); err != nil {
		return fail(fmt.Errorf("%s@%s was trusted by an older berth and %w; update it and trust it again", name, en.Version, err))
	}
	for _, sname := range slices.Sorted(maps.Keys(m.MCPServers)) {
		pl.servers = append(pl.servers, newServer(p, pl, sname, m.MCPServers[sname], en.Surfaces[sname]))
	}
	for _, name := range slices.Sorted(maps.Keys(m.NativeTools)) {
		pl.servers = append(pl.servers, newNativeServer(p, pl, name, m.NativeTools[name], en.Surfaces[NativeSurfaceKey(name)]))
	}
	return pl
}

// checkProviderNames applies the rules that keep exported names
// unambiguous to a manifest that an older berth accepted: no "__" in a
// server's or native tool provider's name, and no name used for both.
func checkProviderNames(m *bundle.Manifest) error {
	for _, name := range slices.Sorted(maps.Keys(m.MCPServers)) {
		if strings.Contains(name, Sep) {
			return fmt.Errorf("its server %q has \"__\" in its name, which separates the server from the tool in exported names (%s)", name, bundle.RuleServerNameFormat)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.NativeTools)) {
		if strings.Contains(name, Sep) {
			return fmt.Errorf("its native tool provider %q has \"__\" in its name, which separates the provider from the tool in exported names (%s)", name, bundle.RuleNativeToolNameFormat)
		}
		if m.MCPServers[name] != nil {
			return fmt.Errorf("a server and a native tool provider are both named %q, so their tools would share names (%s)", name, bundle.RuleNativeToolNameTaken)
		}
	}
	return nil
}

// manifest reads berth.json from the staged snapshot, after a drift check,
// and checks it against the staged listing.
func (pl *plugin) manifest(ctx context.Context) (*bundle.Manifest, error) {
	if err := pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	listing, err := pl.p.store.Listing(pl.d)
	if err != nil {
		return nil, err
	}
	pl.listing = listing
	e, ok := listing.Lookup(bundle.ManifestFile)
	if !ok {
		return nil, fmt.Errorf("%s@%s: the staged snapshot has no %s; re-trust the bundle", pl.name, pl.version, bundle.ManifestFile)
	}
	data, err := os.ReadFile(filepath.Join(pl.dir, bundle.ManifestFile))
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(data) != e.SHA256 {
		return nil, store.Driftf("%s@%s: the staged %s does not match its listing; run `berth verify`, then re-trust the bundle", pl.name, pl.version, bundle.ManifestFile)
	}
	m, problems := bundle.DecodeManifest(data)
	if len(problems) > 0 || m == nil {
		return nil, fmt.Errorf("%s@%s: the staged manifest does not decode (%v); re-trust the bundle", pl.name, pl.version, errors.Join(problemErrs(problems)...))
	}
	return m, nil
}

func problemErrs(ps []*bundle.Problem) []error {
	out := make([]error, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

func (pl *plugin) driftErr() error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.drifted
}

// checkDrift is boundary step 2 for one plugin. On drift the plugin's
// servers are killed at once and the error (wrapping store.ErrDrift)
// names the file and says to run berth verify and re-trust.
func (pl *plugin) checkDrift(ctx context.Context) error {
	if pl.err != nil {
		return pl.err
	}
	if err := pl.driftErr(); err != nil {
		return err
	}
	err := pl.drift.Check(ctx)
	if err == nil {
		return pl.checkTrees(ctx)
	}
	if !errors.Is(err, store.ErrDrift) {
		return fmt.Errorf("checking the staged copy of %s@%s for drift: %w", pl.name, pl.version, err)
	}
	return pl.markDrifted(fmt.Errorf("%s@%s drifted: %w", pl.name, pl.version, err))
}

// markDrifted records that the plugin drifted (err wraps store.ErrDrift)
// and kills its servers at once. The first error recorded stays, and is
// returned.
func (pl *plugin) markDrifted(err error) error {
	pl.mu.Lock()
	first := pl.drifted == nil
	if first {
		pl.drifted = err
	}
	err = pl.drifted
	pl.mu.Unlock()
	if first {
		for _, s := range pl.servers {
			s.out.event("%v", err)
			s.stop(StateDrifted, err, true)
		}
		pl.p.changed()
	}
	return err
}

// finished reports whether every server's supervisor has exited.
func (pl *plugin) finished() bool {
	for _, s := range pl.servers {
		select {
		case <-s.done:
		default:
			return false
		}
	}
	return true
}

// stop stops every server of the plugin, gracefully, with a cause.
func (pl *plugin) stop(why error) {
	for _, s := range pl.servers {
		s.stop(StateStopped, why, false)
	}
	if pl.drift != nil {
		pl.drift.Close()
	}
	pl.closeTrees()
}

// recordSurface pins a server's surface in the state, unless another
// process pinned it first (then that one is returned).
func (p *Pool) recordSurface(ctx context.Context, s *server, hashes, ui map[string]string) (map[string]string, map[string]string, error) {
	var pinned, pinnedUI map[string]string
	_, err := p.store.Update(ctx, func(st *store.State) error {
		w := st.Workspaces[p.workspace]
		if w == nil || w.Plugins[s.pl.name] == nil {
			return fmt.Errorf("%s is no longer enabled in %s", s.pl.name, p.workspace)
		}
		en := w.Plugins[s.pl.name]
		if en.Digest != s.pl.digest || !en.EnabledAt.Equal(s.pl.enabledAt) {
			return fmt.Errorf("%s was re-enabled in %s meanwhile", s.pl.name, p.workspace)
		}
		if sf := en.Surfaces[s.pinKey]; sf != nil {
			pinned, pinnedUI = sf.Tools, sf.UI
			return store.ErrNoChange
		}
		if en.Surfaces == nil {
			en.Surfaces = map[string]*store.Surface{}
		}
		pinned, pinnedUI = hashes, ui
		en.Surfaces[s.pinKey] = &store.Surface{Tools: hashes, UI: ui, RecordedAt: time.Now().UTC().Truncate(time.Second)}
		return nil
	})
	if pinned == nil && err == nil {
		pinned = map[string]string{}
	}
	if pinnedUI == nil {
		pinnedUI = map[string]string{}
	}
	return pinned, pinnedUI, err
}

// WaitStarted waits until every server's first start attempt is over
// (running, changed, failed, drifted or stopped), or ctx is done. Servers
// that are enabled later are not waited for.
func (p *Pool) WaitStarted(ctx context.Context) error {
	for _, pl := range p.activePlugins() {
		for _, s := range pl.servers {
			select {
			case <-s.settled:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// Close stops every server (gracefully: stdin closed, SIGTERM, SIGKILL to
// the process group) and waits for them. Calls in flight are cancelled.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stopBg)
	p.bg.Wait() // the poller may be in a reconcile
	if p.watch != nil {
		p.watch.Close()
	}
	p.reconcileMu.Lock()
	p.mu.Lock()
	plugins := slices.Clone(p.retired)
	for _, pl := range p.plugins {
		plugins = append(plugins, pl)
	}
	p.mu.Unlock()
	p.reconcileMu.Unlock()
	for _, pl := range plugins {
		pl.stop(errClosed)
	}
	for _, pl := range plugins {
		for _, s := range pl.servers {
			<-s.done
			s.out.close()
		}
	}
	return nil
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// ServerStatus is the state of one server or native tool provider of the
// pool.
type ServerStatus struct {
	// ID is "<plugin>__<server>" for a server, "<plugin>__<entry>" for a
	// native tool provider (NativeProviderID); for a plugin that could
	// not be set up at all, the plugin's name.
	ID     string `json:"id"`
	Plugin string `json:"plugin"`
	// Server is the manifest's key: under mcpServers, or under
	// nativeTools for a native tool provider.
	Server  string `json:"server"`
	Version string `json:"version"`
	// Kind is KindServer or KindNative; empty for a plugin that could not
	// be set up.
	Kind  Kind  `json:"kind,omitempty"`
	State State `json:"state"`
	// Transport is "stdio", "streamable-http" or "sse" for a server,
	// "native" for a native tool provider.
	Transport Transport `json:"transport"`
	// Protocol is the negotiated MCP version while connected; for a
	// native tool provider, "nativetool/" and its protocol version.
	Protocol string `json:"protocol,omitempty"`
	PID      int    `json:"pid,omitempty"`
	// Tools is how many of its tools are in the catalog.
	Tools int `json:"tools"`
	// StartedAt is when the current connection was made; zero unless
	// running or changed.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Restarts counts every restart in this pool; RestartsInRow those
	// since the last successful call.
	Restarts      int `json:"restarts"`
	RestartsInRow int `json:"restartsInRow"`
	// NextRestart is when a failed server is restarted; zero when it
	// will not be (GaveUp).
	NextRestart time.Time `json:"nextRestart,omitzero"`
	GaveUp      bool      `json:"gaveUp,omitempty"`
	LastError   string    `json:"lastError,omitempty"`
	// StderrTail is the last lines of its stderr (stdio servers; native
	// tool providers, with go-plugin's log lines).
	StderrTail []string `json:"stderrTail,omitempty"`
	// Changes are the tools withheld because they differ from the pinned
	// surface.
	Changes []ToolChange `json:"changes,omitempty"`
	// Collisions are exported names this server shares with another
	// server; those tools are withheld from both.
	Collisions []string `json:"collisions,omitempty"`
	// Sources are its fromEnv sources as its last start resolved them:
	// whether each was set and where from, never a value.
	Sources []SourceStatus `json:"sources,omitempty"`
	// Sandbox is the confinement of a local server's last start
	// (docs/sandbox.md §Status); nil for a remote or before a start.
	Sandbox *SandboxStatus `json:"sandbox,omitempty"`
	// SignIn is, for a remote that signs in with OAuth (auth.oauth),
	// who is signed in and until when, or the command that signs in.
	SignIn *SignInStatus `json:"signIn,omitempty"`
	// Fetched is set for a runtime-fetched server: whether it runs from
	// the tree staged at trust (fetched.go).
	Fetched *FetchStatus `json:"fetched,omitempty"`
	// Err is LastError as an error.
	Err error `json:"-"`
}

// Status reports every server of the enabled plugins, sorted by ID.
func (p *Pool) Status() []ServerStatus {
	idx := p.index()
	var out []ServerStatus
	for _, pl := range p.activePlugins() {
		if pl.err != nil {
			state := StateFailed
			if errors.Is(pl.err, store.ErrDrift) {
				state = StateDrifted
			}
			out = append(out, ServerStatus{ID: pl.name, Plugin: pl.name, Version: pl.version, State: state, GaveUp: true, LastError: pl.err.Error(), Err: pl.err})
			continue
		}
		for _, s := range pl.servers {
			s.mu.Lock()
			st := ServerStatus{ID: s.id, Plugin: pl.name, Server: s.name, Version: pl.version, Kind: KindServer, State: s.state, Transport: s.kind,
				Restarts: s.restarts, RestartsInRow: s.inRow, GaveUp: s.gaveUp, Err: s.lastErr,
				Changes: slices.Concat(s.changes, s.ui.changes), Tools: idx.perServer[s], Collisions: idx.collisions[s], Sources: slices.Clone(s.sources), Sandbox: s.sandboxStatusLocked()}
			if s.native != nil {
				st.Kind = KindNative
			} else {
				st.Fetched = pl.fetchStatus(s.name, s.spec)
			}
			if s.lastErr != nil {
				st.LastError = s.lastErr.Error()
			}
			if s.conn != nil {
				st.StartedAt, st.Protocol = s.conn.started, s.conn.protocol
				if s.conn.proc != nil {
					st.PID = s.conn.proc.pid()
				}
				if s.conn.native != nil {
					st.PID = s.conn.native.c.Pid()
				}
			}
			if s.state == StateFailed && !s.gaveUp {
				st.NextRestart = s.nextStart
			}
			need := s.waitingSignInLocked()
			s.mu.Unlock()
			st.SignIn = p.signInStatus(s, need)
			if s.kind == TransportStdio || s.kind == TransportNative {
				st.StderrTail = s.out.tail()
			}
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// plugin returns the enabled plugin name, or nil.
func (p *Pool) plugin(name string) *plugin {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.plugins[name]
}

// Accept records the live tool surface of a plugin's changed servers as
// the new pinned surface, after the operator reviewed the differences.
// seen must be the changes the operator was shown (from Status); if the
// surface changed again since, nothing is recorded and the error says to
// look again.
func (p *Pool) Accept(ctx context.Context, plugin string, seen []ToolChange) error {
	if err := p.generation(ctx); err != nil {
		return err
	}
	pl := p.plugin(plugin)
	if pl == nil || pl.err != nil {
		return fmt.Errorf("%s is not enabled in %s, so there is nothing to accept (berth enable %s)", plugin, p.workspace, plugin)
	}
	if err := pl.checkDrift(ctx); err != nil {
		return err
	}
	var live []ToolChange
	surfaces := map[string]*store.Surface{}
	for _, s := range pl.servers {
		s.refreshTools(ctx)
		s.mu.Lock()
		if (len(s.changes) > 0 || len(s.ui.changes) > 0) && s.conn != nil {
			live = append(live, s.changes...)
			live = append(live, s.ui.changes...)
			surfaces[s.pinKey] = &store.Surface{Tools: s.hashes, UI: maps.Clone(s.ui.live)}
		}
		s.mu.Unlock()
	}
	if !sameChanges(live, seen) {
		return fmt.Errorf("the tool surface of %s changed again while you looked; run berth accept %s again to see the current differences", plugin, plugin)
	}
	if len(live) == 0 {
		return nil
	}
	_, err := p.store.Update(ctx, func(st *store.State) error {
		w := st.Workspaces[p.workspace]
		if w == nil || w.Plugins[plugin] == nil {
			return fmt.Errorf("%s is no longer enabled in %s", plugin, p.workspace)
		}
		en := w.Plugins[plugin]
		if en.Digest != pl.digest || !en.EnabledAt.Equal(pl.enabledAt) {
			return fmt.Errorf("%s was re-enabled in %s meanwhile; run berth accept %s again", plugin, p.workspace, plugin)
		}
		if en.Surfaces == nil {
			en.Surfaces = map[string]*store.Surface{}
		}
		now := time.Now().UTC().Truncate(time.Second)
		for name, sf := range surfaces {
			sf.RecordedAt = now
			en.Surfaces[name] = sf
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range pl.servers {
		if sf := surfaces[s.pinKey]; sf != nil {
			s.setPinned(sf.Tools)
			s.setPinnedUI(sf.UI)
		}
	}
	p.invalidate()
	p.changed()
	return nil
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
