package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/signin"
	"github.com/berth-mcp/berth/store"
)

func newStatusCmd(a *app) *cobra.Command {
	opts := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Start the workspace's servers and report their state",
		Long: `Status opens the pool of a workspace (default: the current directory),
starts every enabled server, waits for each one's first start, and reports
its state (starting, running, failed, drifted, changed, stopped),
transport, tool count, uptime, restarts and last error, with the stderr
tail of failed servers, withheld tool changes and name collisions, and
for each variable a server reads (fromEnv) whether it was set when the
server started and where from (the environment or berth's secret store),
never its value, and for each remote that signs in with OAuth who is
signed in, at which authorization server, with which scopes and until
when (never a token), and for each local server the confinement in effect
(Landlock ABI, seccomp, namespaces, the proxy's hosts, or "UNCONFINED" and
why) with the operator's sandbox settings (docs/sandbox.md). A remote that asked for a sign-in berth could not
give it waits for one and shows "needs sign-in: berth login
PLUGIN__SERVER"; one that has not asked (a server that may ask, as
registry remotes imported with "oauth": {}, and works without a token)
shows "not signed in; the server has not asked for a sign-in".

A Context section gives what the tools cost in a model's context: per
plugin, the bytes of its tools' tools/list entries as berth lists them and
the tokens estimated from them (bytes / 4, rounded up), with the catalog's
own contextTokens estimate beside it for a plugin installed from a catalog;
the workspace in full mode and in lazy mode (berth serve --tools lazy);
and each profile in its mode (docs/profiles.md §Context cost).

Exit codes: 0 every enabled server runs, 1 a server failed or waits for
a sign-in, 5 a plugin drifted from what was reviewed (drift wins over a
failure). --json prints the state of every server either way (signIn.
needsSignIn is true for a server that waits for a sign-in).`,
		Example: `  berth status
  berth status --workspace ~/src/project --json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	a.jsonFlag(cmd, &opts.JSON, statusJSON{})
	return cmd
}

// statusOptions are the inputs of berth status.
type statusOptions struct {
	JSON      bool
	Workspace string
}

func runStatus(ctx context.Context, a *app, opts *statusOptions) error {
	p, err := a.openPool(ctx, opts.Workspace, !opts.JSON)
	if err != nil {
		return err
	}
	defer p.Close()
	sts := p.Status()
	verdict := statusVerdict(sts)
	sessions, serveErr := serveSessions(p.Store().Paths(), p.WorkspaceDir())
	cost, costErr := statusContext(ctx, p)
	if opts.JSON {
		if sts == nil {
			sts = []pool.ServerStatus{}
		}
		out := statusJSON{Servers: sts, Workspace: p.WorkspaceDir(), Sandbox: newStatusSandbox(p.SandboxSettings()), Sessions: sessions, Context: cost}
		if costErr != nil {
			out.ContextError = costErr.Error()
		}
		if serveErr != nil {
			out.SessionsError = serveErr.Error()
		}
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
		return verdict
	}
	if len(sts) == 0 {
		fmt.Fprintf(a.stdout, "Nothing is enabled in %s. Enable a trusted plugin with: berth enable NAME\n", p.WorkspaceDir())
		a.statusSessions(sessions, serveErr)
		fmt.Fprintf(a.stdout, "\n%s\n", serveListenersNote())
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tTOOLS\tUPTIME\tRESTARTS\tLAST ERROR")
	for _, s := range sts {
		up := "-"
		if !s.StartedAt.IsZero() {
			up = time.Since(s.StartedAt).Round(time.Second).String()
		}
		last := "-"
		if s.LastError != "" {
			last = oneLine(review.PrintableLines(s.LastError), 60)
		}
		state := string(s.State)
		if s.SignIn != nil && s.SignIn.NeedsSignIn {
			state = "needs sign-in"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", s.ID, state, orDash(string(s.Transport)), s.Tools, up, s.Restarts, last)
	}
	tw.Flush()
	for _, s := range sts {
		a.statusDetail(s)
	}
	a.statusSources(sts)
	a.statusFetched(sts)
	a.statusSignIns(sts, time.Now())
	a.statusSandbox(sts, p.SandboxSettings())
	if costErr != nil {
		fmt.Fprintf(a.stdout, "\nContext: not measured: %s\n", review.PrintableLines(costErr.Error()))
	} else {
		writeContext(a.stdout, *cost)
	}
	a.statusSessions(sessions, serveErr)
	fmt.Fprintf(a.stdout, "\n%s\n", serveListenersNote())
	return verdict
}

// serveSessions are the sessions of every berth serve of the workspace ws
// that runs now, from the registry in $BERTH_HOME/serving (the oldest
// first). A registry that cannot be read gives none and the error.
func serveSessions(paths store.Paths, ws string) ([]mcpexport.ServeSession, error) {
	recs, err := mcpexport.ReadServing(paths.Serving())
	out := []mcpexport.ServeSession{}
	for _, r := range recs {
		if r.Workspace == ws {
			out = append(out, r.Sessions...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out, err
}

// statusSessions prints which profile each session of a running berth
// serve of the workspace uses, and why that list is incomplete, if it is.
func (a *app) statusSessions(sessions []mcpexport.ServeSession, err error) {
	w := a.stdout
	if err != nil {
		fmt.Fprintf(w, "\nSessions: cannot read all the sessions of berth serve: %s\n", review.PrintableLines(err.Error()))
		if len(sessions) == 0 {
			return
		}
	}
	switch {
	case len(sessions) == 0:
		fmt.Fprintln(w, "\nSessions: no client is connected to a berth serve of this workspace.")
		return
	}
	fmt.Fprintln(w, "\nSessions of berth serve (the client names itself; nothing checks it):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROFILE\tMODE\tTRANSPORT\tCLIENT\tSINCE\tPID")
	for _, s := range sessions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\n", review.Printable(s.Profile), review.Printable(string(s.Mode)), review.Printable(s.Transport), oneLine(review.Printable(s.Client), 40), s.Since.Local().Format(time.DateTime), s.PID)
	}
	tw.Flush()
}

// statusDetail prints what the table cuts: whole errors, stderr tails,
// withheld changes and collisions.
func (a *app) statusDetail(s pool.ServerStatus) {
	w := a.stdout
	if s.LastError != "" && s.State != pool.StateRunning {
		state := string(s.State)
		if s.SignIn != nil && s.SignIn.NeedsSignIn {
			state = "needs sign-in"
		}
		fmt.Fprintf(w, "\n%s %s: %s\n", s.ID, state, review.PrintableLines(s.LastError))
		switch {
		case s.SignIn != nil && s.SignIn.NeedsSignIn:
			fmt.Fprintf(w, "  it waits for a sign-in: %s. A running berth serve connects again once signed in, at the next call to one of its tools or when it next looks at its secret store (every %s).\n", s.SignIn.Login, pool.SignInRecheck)
		case s.State == pool.StateFailed && !s.GaveUp:
			fmt.Fprintf(w, "  berth restarts it in %s (restart %d of %d).\n", time.Until(s.NextRestart).Round(100*time.Millisecond), s.RestartsInRow, pool.MaxRestarts)
		case s.State == pool.StateFailed:
			fmt.Fprintf(w, "  berth gave up; fix the cause, then run berth again. berth logs %s shows its stderr.\n", s.ID)
		}
		if len(s.StderrTail) > 0 && s.State == pool.StateFailed {
			tail := s.StderrTail
			if len(tail) > 10 {
				tail = tail[len(tail)-10:]
			}
			fmt.Fprintln(w, "  stderr (last lines):")
			for _, l := range tail {
				fmt.Fprintf(w, "    %s\n", review.PrintableLines(l))
			}
		}
	}
	if len(s.Changes) > 0 {
		tools := 0
		for _, c := range s.Changes {
			if c.URI == "" {
				tools++
			}
		}
		what := fmt.Sprintf("%d tool(s)", tools)
		if n := len(s.Changes) - tools; n > 0 {
			what += fmt.Sprintf(" and %d UI template(s)", n)
		}
		fmt.Fprintf(w, "\n%s changed: %s differ from the pinned surface and are withheld; review them with: berth accept %s\n", s.ID, what, s.Plugin)
		for _, c := range s.Changes {
			if c.URI != "" {
				fmt.Fprintf(w, "  UI template %s (%s)\n", review.PrintableLines(c.URI), c.Kind)
				continue
			}
			fmt.Fprintf(w, "  %s (%s)\n", review.PrintableLines(c.Tool), c.Kind)
		}
	}
	for _, n := range s.Collisions {
		fmt.Fprintf(w, "\n%s: the tool name %s is also another server's, so neither is offered; disable one of the plugins\n", s.ID, n)
	}
}

// statusVerdict is the exit of berth status: drift (5) wins over a failed
// server (1); nil when every server runs.
func statusVerdict(sts []pool.ServerStatus) error {
	var failed, drifted, signIn []string
	for _, s := range sts {
		switch {
		case s.State == pool.StateDrifted:
			drifted = append(drifted, s.ID)
		case s.SignIn != nil && s.SignIn.NeedsSignIn:
			signIn = append(signIn, s.SignIn.Login)
		case s.State == pool.StateFailed:
			failed = append(failed, s.ID)
		}
	}
	switch {
	case len(drifted) > 0:
		return store.Driftf("%s drifted from what was reviewed; the error above names the file (re-trust the bundle, or disable the plugin)", strings.Join(drifted, ", "))
	case len(failed) > 0 && len(signIn) > 0:
		return fmt.Errorf("%d of %d servers failed: %s; the errors are above; and %d wait(s) for a sign-in: %s", len(failed), len(sts), strings.Join(failed, ", "), len(signIn), strings.Join(signIn, "; "))
	case len(failed) > 0:
		return fmt.Errorf("%d of %d servers failed: %s; the errors are above", len(failed), len(sts), strings.Join(failed, ", "))
	case len(signIn) > 0:
		return fmt.Errorf("%d of %d servers wait for a sign-in and do not run until then: %s", len(signIn), len(sts), strings.Join(signIn, "; "))
	}
	return nil
}

// statusSources prints, per server, each variable it reads and where its
// last start found it.
func (a *app) statusSources(sts []pool.ServerStatus) {
	var rows [][3]string
	for _, s := range sts {
		for _, src := range s.Sources {
			state := "set, from the environment"
			switch {
			case !src.Set && src.NotBound:
				state = "not set: berth's secret store holds it for other plugins only; to let this one use it: " + review.PrintableLines(src.Bind)
			case !src.Set && src.Error != "":
				state = "not set: berth's secret store could not answer: " + review.PrintableLines(src.Error)
			case !src.Set:
				state = "not set: berth secret set " + src.Name
			case src.From == pool.FromStore:
				state = "set, from berth's secret store"
			}
			rows = append(rows, [3]string{s.ID, src.Name + " (for " + src.For + ")", state})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(a.stdout, "\nVariables the servers read, as their last start found them (values are never shown):")
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r[0], r[1], r[2])
	}
	tw.Flush()
}

// statusSignIns prints, per remote that signs in with OAuth, who is
// signed in and until when, or the command that signs in. Never a token.
func (a *app) statusSignIns(sts []pool.ServerStatus, now time.Time) {
	var rows [][2]string
	for _, s := range sts {
		si := s.SignIn
		if si == nil {
			continue
		}
		var state string
		switch {
		case si.Error != "":
			state = "unknown: berth's secret store could not answer: " + review.PrintableLines(si.Error)
		case si.NeedsSignIn:
			// The server asked for a token berth could not give it, and
			// it does not run until someone signs in.
			state = "needs sign-in: " + si.Login
			if si.Reason != "" {
				state += " (" + review.Printable(si.Reason) + ")"
			}
			if si.SignedIn {
				state += "; the current sign-in" + asSubject(si.Subject) + " at " + review.Printable(si.Issuer) + " has the scopes: " + scopeList(si.Scopes)
			}
		case !si.SignedIn:
			// "oauth": {} (a registry remote, a Claude Code remote without
			// credentials) may never ask: berth knows a sign-in is needed
			// only once the server asked for one.
			state = "not signed in; the server has not asked for a sign-in (" + si.Login + " signs in ahead)"
		default:
			st := &signin.State{ExpiresAt: si.ExpiresAt, Refreshable: si.Refreshable}
			state = "signed in" + asSubject(si.Subject) + " at " + review.Printable(si.Issuer) + "; scopes: " + scopeList(si.Scopes) + "; " + expiry(st, now)
		}
		rows = append(rows, [2]string{s.ID, state})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(a.stdout, "\nSign-ins (tokens are never shown; berth logout forgets one):")
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// statusJSON is what status --json prints.
type statusJSON struct {
	Servers   []pool.ServerStatus `json:"servers"`
	Workspace string              `json:"workspace"`
	// Sandbox are the operator's sandbox settings and what this host can
	// enforce (docs/sandbox.md §Status).
	Sandbox statusSandboxJSON `json:"sandbox"`
	// Sessions are the sessions of every berth serve of the workspace that
	// runs now, the oldest first: which profile each uses
	// (docs/profiles.md §Serving profiles over HTTP).
	Sessions []mcpexport.ServeSession `json:"sessions"`
	// SessionsError says why the sessions are incomplete: the registry
	// could not be read (Sessions is then empty), or some of its files
	// were skipped.
	SessionsError string `json:"sessionsError,omitempty"`
	// Context is the context cost of the tools the workspace lists, per
	// plugin, in full and lazy mode and per profile (docs/profiles.md
	// §Context cost); nil when the tools could not be listed, and
	// ContextError says why.
	Context      *contextJSON `json:"context,omitempty"`
	ContextError string       `json:"contextError,omitempty"`
}

// statusContext measures the context cost of the pool's tools; an error
// (the catalog cannot be assembled, a plugin drifted) is reported beside
// the servers' states, never instead of them.
func statusContext(ctx context.Context, p *pool.Pool) (*contextJSON, error) {
	tools, err := p.Tools(ctx)
	if err != nil {
		return nil, err
	}
	c, err := workspaceContext(p.Store(), p.WorkspaceDir(), tools)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// statusSandboxJSON is the "sandbox" object of status --json.
type statusSandboxJSON struct {
	UndeclaredNetwork string           `json:"undeclaredNetwork"`
	Require           bool             `json:"require"`
	Unconfined        []string         `json:"unconfined"`
	UpstreamProxy     string           `json:"upstreamProxy"`
	Host              *sandbox.Support `json:"host"`
}

func newStatusSandbox(sb store.SandboxSettings) statusSandboxJSON {
	un := sb.Unconfined
	if un == nil {
		un = []string{}
	}
	return statusSandboxJSON{UndeclaredNetwork: sb.Value(store.SandboxKeyUndeclaredNetwork), Require: sb.Require,
		Unconfined: un, UpstreamProxy: sb.UpstreamProxy, Host: sandbox.Probe()}
}

// statusSandbox prints the confinement of every local server and the
// operator's sandbox settings.
func (a *app) statusSandbox(sts []pool.ServerStatus, sb store.SandboxSettings) {
	w := a.stdout
	sup := sandbox.Probe()
	fmt.Fprintf(w, "\nConfinement (docs/sandbox.md). This host: %s.\n", hostSupport(sup))
	fmt.Fprintf(w, "  settings: sandbox-undeclared-network %s, sandbox-require %s, sandbox-unconfined %s, sandbox-upstream-proxy %s\n",
		sb.Value(store.SandboxKeyUndeclaredNetwork), sb.Value(store.SandboxKeyRequire), orQuoted(sb.Value(store.SandboxKeyUnconfined)), orQuoted(sb.UpstreamProxy))
	for _, s := range sts {
		if s.Transport != pool.TransportStdio && s.Transport != pool.TransportNative {
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", s.ID, enforcementLine(s.Sandbox))
	}
}

func orQuoted(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// hostSupport says what this host can enforce, for a person.
func hostSupport(s *sandbox.Support) string {
	var parts []string
	if s.LandlockABI > 0 {
		parts = append(parts, fmt.Sprintf("Landlock ABI %d", s.LandlockABI))
	}
	if s.Seccomp {
		parts = append(parts, "seccomp")
	}
	if s.UserNamespaces {
		parts = append(parts, "user and network namespaces")
	}
	if s.Seatbelt {
		parts = append(parts, "Seatbelt")
	}
	if len(parts) == 0 {
		parts = append(parts, "no confinement ("+s.OS+")")
	}
	out := strings.Join(parts, ", ")
	if len(s.Notes) > 0 {
		out += "; " + strings.Join(s.Notes, "; ")
	}
	return out
}

// enforcementLine is one server's confinement, for a person.
func enforcementLine(e *pool.SandboxStatus) string {
	if e == nil {
		return "not started yet"
	}
	if e.Refused != "" {
		return "REFUSED (not running): " + e.Refused
	}
	if !e.Confined {
		return "UNCONFINED (runs with your rights): " + e.Unconfined
	}
	var parts []string
	switch {
	case e.Mechanism == "landlock":
		parts = append(parts, fmt.Sprintf("landlock ABI %d", e.LandlockABI))
	default:
		parts = append(parts, e.Mechanism)
	}
	if e.Seccomp {
		parts = append(parts, "seccomp")
	}
	if e.NoNewPrivs {
		parts = append(parts, "no_new_privs")
	}
	profile := "declared"
	if !e.Declared {
		profile = "default profile"
	}
	net := "network " + e.Network
	switch {
	case e.Network == sandbox.NetworkHosts:
		net = "network through berth's proxy to " + strings.Join(e.ProxyHosts, ", ")
	case e.Network == sandbox.NetworkNone:
		net = "no network"
	case !e.NetworkDeclared:
		net = "network open (undeclared)"
	}
	line := fmt.Sprintf("confined (%s): %s; %s", profile, strings.Join(parts, ", "), net)
	if len(e.NotEnforced) > 0 {
		line += "; NOT ENFORCED on this host: " + strings.Join(e.NotEnforced, "; ")
	}
	return line
}

// statusFetched prints, per runtime-fetched server, whether it runs from
// the tree staged at trust or fetches when it starts, and why.
func (a *app) statusFetched(sts []pool.ServerStatus) {
	var lines []string
	for _, s := range sts {
		f := s.Fetched
		switch {
		case f == nil:
		case f.Staged:
			lines = append(lines, fmt.Sprintf("  %s  %s: staged at trust, starts offline (lock %s)", s.ID, review.Printable(f.Package), f.Lock))
		default:
			lines = append(lines, fmt.Sprintf("  %s  %s: %s", s.ID, review.Printable(f.Package), review.Printable(f.Note)))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(a.stdout, "\nFetched servers:")
	for _, l := range lines {
		fmt.Fprintln(a.stdout, l)
	}
	// Today's settings, not those the staged trees were resolved with
	// (the lock records packages, not settings), and only for the
	// ecosystems those trees come from.
	if ecos := a.stagedEcosystems(sts); len(ecos) > 0 {
		fmt.Fprintln(a.stdout, "  a fetch now (berth trust, install, upgrade) would use:")
		a.writeSettingsLines(a.stdout, "    ", ecos)
	}
}

// stagedEcosystems are the ecosystems ("npm", "pypi") of the trees staged
// for the servers of sts, from their plugins' trust records.
func (a *app) stagedEcosystems(sts []pool.ServerStatus) map[string]bool {
	ecos := map[string]bool{}
	st, err := a.store()
	if err != nil {
		return ecos
	}
	recs, err := st.Records()
	if err != nil {
		return ecos
	}
	ids := map[string]bool{}
	for _, s := range sts {
		if s.Fetched != nil && s.Fetched.Staged {
			ids[s.Plugin+"@"+s.Version] = true
		}
	}
	for _, r := range recs {
		if ids[r.ID()] {
			for _, l := range r.Fetched {
				ecos[l.Ecosystem] = true
			}
		}
	}
	return ecos
}
