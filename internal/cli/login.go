package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/signin"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

const loginLong = `Login signs berth in to a remote server of a trusted plugin that declares
"auth": {"oauth": {...}} (docs/signin.md): it finds the server's
authorization server from the server's own 401 answer (or the issuer the
manifest pins), registers berth as a client in the order the MCP
specification gives (your own client ID, from --client-id or the
manifest's clientId; then a client ID metadata document URL you
configured, where the authorization server supports those; then dynamic
registration), and runs the authorization-code flow with PKCE and a
redirect to http://127.0.0.1:PORT/callback on this machine. It opens the
system browser on the authorization page; --no-browser only prints the
URL on stderr ("Sign in at: URL"). berth waits for the redirect (--wait),
then keeps the tokens in berth's secret store, keyed by plugin, server,
authorization server, resource and client: never in config.json,
state.json, logs or output. berth refreshes them quietly before they
expire; berth status shows who is signed in and until when.

PLUGIN alone names the plugin's one server that signs in; a plugin with
several is refused with the command for each (PLUGIN__SERVER), since each
is its own consent. --scope asks for more scopes than the manifest's
(repeatable). --client-id, --client-secret-from SECRET (a secret in
berth's secret store bound to the plugin: berth secret set NAME --plugin
PLUGIN) and --client-metadata-url URL (https) record your own client
registration for the server in config.json ("oauthClients") before signing
in; --forget-client removes it. The registration is bound to one
authorization server (--client-issuer URL; by default the manifest's pin,
else the one the server names when it is recorded): berth uses it, and
sends its secret, nowhere else.

Exit codes: 0 signed in, 1 the sign-in failed (the error says where),
2 usage (no such server, no server of the plugin signs in, or several do
and PLUGIN__SERVER must say which), 4 the plugin is not trusted.`

const logoutLong = `Logout forgets the tokens berth keeps for a remote server of a plugin
(PLUGIN alone: for each of its servers that signs in) and revokes them at
the authorization server where it supports token revocation (RFC 7009);
it says which tokens the server confirmed revoked, and that a token it did
not revoke (an access token a server cannot revoke, such as a JWT) stays
valid at the server until it expires, and when that is. The next call to the server asks for
a sign-in again. Revoking a plugin's last trusted version, or disabling it
in the last workspace it is enabled in, forgets its sign-ins the same way.

Exit codes: 0 forgotten (revoked or not), 1 a failure, 2 usage.`

// loginJSON is what login --json prints: never a token.
type loginJSON struct {
	Server   string `json:"server"`
	Plugin   string `json:"plugin"`
	Resource string `json:"resource"`
	// Issuer is the authorization server signed in to.
	Issuer string `json:"issuer"`
	// Subject is who is signed in, when the token says; "" otherwise.
	Subject  string   `json:"subject,omitempty"`
	ClientID string   `json:"clientId"`
	Scopes   []string `json:"scopes"`
	// ExpiresAt is when the access token expires; absent when unknown.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Refreshable reports a refresh token: berth renews the access token
	// without asking.
	Refreshable bool `json:"refreshable"`
}

// logoutJSON is what logout --json prints.
type logoutJSON struct {
	Plugin  string         `json:"plugin"`
	Servers []logoutServer `json:"servers"`
}

type logoutServer struct {
	Server string `json:"server"`
	// Revoked reports that the authorization server confirmed the
	// revocation of every token berth held; false when it did not revoke
	// one of them, does not support revocation, did not answer, or there
	// was no sign-in (the tokens are forgotten either way).
	Revoked bool `json:"revoked"`
	// SignedIn reports that there was a sign-in to forget.
	SignedIn bool `json:"signedIn"`
	// Tokens are the tokens berth held and forgot, each with what the
	// authorization server did; never a token's value.
	Tokens []logoutToken `json:"tokens"`
}

type logoutToken struct {
	// Token is "refresh" or "access".
	Token string `json:"token"`
	// Revoked reports that the authorization server confirmed (RFC 7009).
	Revoked bool `json:"revoked"`
	// Why it was not revoked: the server's answer, or no revocation endpoint.
	Why string `json:"why,omitempty"`
	// ExpiresAt is when the access token expires; a token not revoked
	// stays valid at the server until then.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

func newLoginCmd(a *app) *cobra.Command {
	opts := &loginOptions{}
	cmd := &cobra.Command{
		Use:   "login PLUGIN[__SERVER]",
		Short: "Sign in to a plugin's remote server (OAuth)",
		Long:  loginLong,
		Example: `  berth login acme-notes
  berth login acme-notes__notes --no-browser
  berth login acme-notes__notes --client-id berth-at-acme --client-secret-from ACME_CLIENT_SECRET`,
		Args: exactArgs(1, "one PLUGIN[__SERVER]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return runLogin(cmd.Context(), a, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.NoBrowser, "no-browser", false, "print the authorization URL on stderr instead of opening a browser")
	f.StringArrayVar(&opts.Scopes, "scope", nil, "ask for this `SCOPE` too, beyond the manifest's (repeatable)")
	f.DurationVar(&opts.Wait, "wait", 5*time.Minute, "how long to wait for the browser's redirect")
	f.StringVar(&opts.Client.ClientID, "client-id", "", "record your own client `ID` registered with the authorization server")
	f.StringVar(&opts.Client.ClientSecretName, "client-secret-from", "", "the client's secret is the secret `NAME` in berth's secret store (bound to the plugin)")
	f.StringVar(&opts.Client.ClientMetadataURL, "client-metadata-url", "", "record your client ID metadata document `URL` (https)")
	f.StringVar(&opts.Client.Issuer, "client-issuer", "", "your client is registered with the authorization server of this issuer `URL` (https); default: the manifest's pin, else the one the server names now")
	f.BoolVar(&opts.ForgetClient, "forget-client", false, "remove your recorded client registration for the server first")
	a.jsonFlag(cmd, &opts.JSON, loginJSON{})
	return cmd
}

func newLogoutCmd(a *app) *cobra.Command {
	opts := &logoutOptions{}
	cmd := &cobra.Command{
		Use:     "logout PLUGIN[__SERVER]",
		Short:   "Forget (and revoke) the sign-in to a plugin's remote server",
		Long:    logoutLong,
		Example: "  berth logout acme-notes\n  berth logout acme-notes__notes --json",
		Args:    exactArgs(1, "one PLUGIN[__SERVER]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return runLogout(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, logoutJSON{})
	return cmd
}

// loginOptions are the inputs of berth login.
type loginOptions struct {
	Ref          string
	NoBrowser    bool
	JSON         bool
	ForgetClient bool
	Scopes       []string
	Wait         time.Duration
	Client       store.OAuthClient
}

// logoutOptions are the inputs of berth logout.
type logoutOptions struct {
	Ref  string
	JSON bool
}

// signinTarget is a server that signs in, with the signers of the trusted
// versions that declare it (whose bindings a client secret must match).
type signinTarget struct {
	signin.Target
	signers []string
}

// parseServerRef splits PLUGIN[__SERVER].
func parseServerRef(ref string) (plugin, server string, err error) {
	plugin, server, _ = strings.Cut(ref, "__")
	if !bundle.IsValidName(plugin) || (strings.Contains(ref, "__") && !bundle.IsValidServerName(server)) {
		return "", "", usagef("%q is not PLUGIN or PLUGIN__SERVER (a plugin name, optionally two underscores and one of its server names); berth status lists the servers", ref)
	}
	return plugin, server, nil
}

// oauthTargets finds the servers of plugin's trusted versions that sign in
// with OAuth, by server name: the versions enabled in a workspace when
// there are some, otherwise every trusted version. Two versions declaring
// one server differently are refused.
func oauthTargets(st *store.Store, plugin string) (map[string]*signinTarget, error) {
	recs, err := st.Records()
	if err != nil {
		return nil, err
	}
	state, err := st.State()
	if err != nil {
		return nil, err
	}
	enabled := map[string]bool{}
	for _, w := range state.Workspaces {
		if en := w.Plugins[plugin]; en != nil {
			enabled[en.Digest] = true
		}
	}
	var mine []*store.Record
	for _, r := range recs {
		if r.Name == plugin && st.CheckNotRevoked(r.Name, r.Version, r.Digest) == nil {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return nil, store.NotTrustedf("no version of %s is trusted; trust or install it first (berth list shows what is trusted)", plugin)
	}
	if slices.ContainsFunc(mine, func(r *store.Record) bool { return enabled[r.Digest] }) {
		mine = slices.DeleteFunc(mine, func(r *store.Record) bool { return !enabled[r.Digest] })
	}
	out := map[string]*signinTarget{}
	from := map[string]string{}
	for _, r := range mine {
		m, err := stagedManifest(st, &store.Enablement{Version: r.Version, Digest: r.Digest})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.ID(), err)
		}
		for name, s := range m.MCPServers {
			if s.Remote == nil || s.Remote.Auth == nil || s.Remote.Auth.OAuth == nil {
				continue
			}
			t := signin.Target{Plugin: plugin, Server: name, Resource: s.Remote.URL, OAuth: *s.Remote.Auth.OAuth}
			if have := out[name]; have != nil {
				if !reflect.DeepEqual(have.Target, t) {
					return nil, fmt.Errorf("%s and %s declare the server %s differently (URL or auth.oauth), so berth cannot tell which to sign in to; disable one of them, or revoke the one you do not use", from[name], r.ID(), t.ID())
				}
				if sg := r.SignerIdentity(); !slices.Contains(have.signers, sg) {
					have.signers = append(have.signers, sg)
				}
				continue
			}
			out[name], from[name] = &signinTarget{Target: t, signers: []string{r.SignerIdentity()}}, r.ID()
		}
	}
	return out, nil
}

// pickTargets resolves PLUGIN[__SERVER] to the servers it names that sign
// in; all says that PLUGIN alone may name several (logout).
func pickTargets(st *store.Store, plugin, server string, all bool) ([]*signinTarget, error) {
	ts, err := oauthTargets(st, plugin)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(ts))
	switch {
	case server != "" && ts[server] != nil:
		return []*signinTarget{ts[server]}, nil
	case len(ts) == 0:
		return nil, usagef("no server of %s signs in with OAuth (none declares \"auth\": {\"oauth\": ...}); berth review %s shows how its servers authenticate", plugin, plugin)
	case server != "":
		return nil, usagef("%s has no server %s that signs in with OAuth; the ones that do: %s", plugin, server, strings.Join(loginCommands(ts, names), ", "))
	case len(ts) > 1 && !all:
		return nil, usagef("%s has %d servers that sign in, each with its own consent; name one: %s", plugin, len(ts), strings.Join(loginCommands(ts, names), ", "))
	}
	var out []*signinTarget
	for _, n := range names {
		out = append(out, ts[n])
	}
	return out, nil
}

func loginCommands(ts map[string]*signinTarget, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, ts[n].LoginCommand())
	}
	return out
}

func runLogin(ctx context.Context, a *app, opts *loginOptions) error {
	plugin, server, err := parseServerRef(opts.Ref)
	if err != nil {
		return err
	}
	if opts.ForgetClient && !opts.Client.IsZero() {
		return usagef("--forget-client removes your client registration; it cannot be given with --client-id, --client-secret-from, --client-metadata-url or --client-issuer")
	}
	if opts.Client.Issuer != "" && opts.Client.ClientID == "" && opts.Client.ClientMetadataURL == "" {
		return usagef("--client-issuer names where your client is registered; give it with --client-id (or --client-metadata-url)")
	}
	for _, sc := range opts.Scopes {
		if !signin.IsScopeToken(sc) {
			return usagef("--scope %q is not a scope (RFC 6749: one or more printable ASCII characters, no space, '\"' or '\\'); give one --scope per scope", sc)
		}
	}
	if opts.Wait <= 0 {
		return usagef("--wait %s: give a positive duration, for example 5m", opts.Wait)
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	picked, err := pickTargets(st, plugin, server, false)
	if err != nil {
		return err
	}
	t := picked[0]
	sec, err := a.secrets()
	if err != nil {
		return err
	}
	if err := a.recordClient(ctx, st, sec, t, opts); err != nil {
		return err
	}
	client, err := operatorClient(ctx, st, sec, t.Target, t.signers)
	if err != nil {
		return err
	}
	out := a.stdout
	if opts.JSON {
		out = io.Discard
	}
	describeLogin(out, t.Target, client, opts.Scopes)
	paths, err := a.paths()
	if err != nil {
		return err
	}
	ask, closeAsk := a.loginAsk(out, opts.NoBrowser, paths.Root)
	so := signin.Options{Secrets: sec, Client: client, Wait: opts.Wait, Ask: ask}
	state, err := signin.Login(ctx, t.Target, so, opts.Scopes...)
	closeAsk()
	if err != nil {
		if strings.HasPrefix(err.Error(), "server "+t.ID()+": ") {
			return err // it names the server already
		}
		return fmt.Errorf("signing in to %s: %w", t.ID(), err)
	}
	if opts.JSON {
		return writeJSON(a.stdout, loginJSON{Server: t.ID(), Plugin: plugin, Resource: t.Resource, Issuer: state.Issuer, Subject: state.Subject,
			ClientID: state.ClientID, Scopes: nonNilStrings(state.Scopes), ExpiresAt: state.ExpiresAt, Refreshable: state.Refreshable})
	}
	fmt.Fprintf(out, "Signed in to %s%s at %s.\n", t.ID(), asSubject(state.Subject), review.Printable(state.Issuer))
	fmt.Fprintf(out, "  scopes: %s\n  %s\n", scopeList(state.Scopes), expiry(state, time.Now()))
	return nil
}

// recordClient applies --client-id, --client-secret-from,
// --client-metadata-url and --forget-client to config.json.
func (a *app) recordClient(ctx context.Context, st *store.Store, sec *secrets.Store, t *signinTarget, opts *loginOptions) error {
	if opts.ForgetClient {
		return st.SetOAuthClient(ctx, t.ID(), store.OAuthClient{})
	}
	if opts.Client.IsZero() {
		return nil
	}
	// Everything but the issuer first (before any network): an issuer
	// not given yet is found below.
	pre := opts.Client
	if pre.Issuer == "" {
		pre.Issuer = "https://issuer.invalid"
	}
	if err := pre.Check(); err != nil {
		return usagef("%v", err)
	}
	if t.OAuth.ClientID != "" {
		return usagef("%s's manifest names its own client %s, which berth signs in as; a client registration of yours would not be used for it", t.ID(), review.Printable(t.OAuth.ClientID))
	}
	if n := opts.Client.ClientSecretName; n != "" {
		if err := checkClientSecret(sec, t.Plugin, n, t.signers); err != nil {
			return err
		}
	}
	// The registration is bound to one authorization server: the one
	// named, else the manifest's pin, else the one the server names now.
	switch {
	case opts.Client.Issuer != "":
	case t.OAuth.Issuer != "":
		opts.Client.Issuer = t.OAuth.Issuer
	default:
		iss, err := signin.DiscoverIssuer(ctx, t.Target)
		if err != nil {
			if opts.Client.ClientSecretName != "" {
				return fmt.Errorf("%s: finding the authorization server to bind your client registration to: %w; name it with --client-issuer URL", t.ID(), err)
			}
			break // a public client: recorded unbound
		}
		opts.Client.Issuer = iss
	}
	if opts.Client.Issuer != "" && t.OAuth.Issuer != "" && strings.TrimSuffix(opts.Client.Issuer, "/") != strings.TrimSuffix(t.OAuth.Issuer, "/") {
		return usagef("--client-issuer %s: %s's manifest pins the authorization server %s; berth signs in nowhere else, so a client registered elsewhere would not be used", review.Printable(opts.Client.Issuer), t.ID(), review.Printable(t.OAuth.Issuer))
	}
	if err := opts.Client.Check(); err != nil {
		return usagef("%v", err)
	}
	return st.SetOAuthClient(ctx, t.ID(), opts.Client)
}

// checkClientSecret checks, without reading the value, that the store
// holds name bound to plugin for one of signers.
func checkClientSecret(sec *secrets.Store, plugin, name string, signers []string) error {
	e, ok, err := sec.Lookup(name)
	switch {
	case err != nil:
		return err
	case !ok:
		return usagef("--client-secret-from %s: berth's secret store does not hold %s; store it first: berth secret set %s --plugin %s", name, name, name, plugin)
	case !slices.ContainsFunc(signers, func(sg string) bool { return e.Binds(plugin, sg) }):
		return usagef("--client-secret-from %s: the secret is not bound to %s (as its trusted versions are signed); bind it: %s", name, plugin, secrets.BindCommand(name, plugin))
	}
	return nil
}

// operatorClient is the operator's registration for t from config.json,
// with its secret read from the secret store (bound to t's plugin for one
// of signers); nil when there is none.
func operatorClient(ctx context.Context, st *store.Store, sec *secrets.Store, t signin.Target, signers []string) (*signin.Client, error) {
	c, err := st.Config()
	if err != nil {
		return nil, err
	}
	oc, ok := c.OAuthClientFor(t.ID())
	if !ok {
		return nil, nil
	}
	cl := &signin.Client{ClientID: oc.ClientID, MetadataDocumentURL: oc.ClientMetadataURL, Issuer: oc.Issuer}
	if oc.ClientSecretName == "" {
		return cl, nil
	}
	var errs []error
	for _, sg := range signers {
		v, ok, err := sec.For(ctx, t.Plugin, sg, oc.ClientSecretName)
		switch {
		case err == nil && ok:
			cl.ClientSecret = v
			return cl, nil
		case err == nil:
			return nil, fmt.Errorf("%s: config.json's oauthClients names the client secret %s, which berth's secret store does not hold; store it (berth secret set %s --plugin %s) or remove the registration (berth login %s --forget-client)", t.ID(), oc.ClientSecretName, oc.ClientSecretName, t.Plugin, t.ID())
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%s: reading its client secret %s: %w", t.ID(), oc.ClientSecretName, errors.Join(errs...))
}

// signinClients is the pool's hook for the operator's registrations: the
// signers are those of the plugin's trusted versions.
func signinClients(st *store.Store, sec *secrets.Store) func(signin.Target) (*signin.Client, error) {
	return func(t signin.Target) (*signin.Client, error) {
		recs, err := st.Records()
		if err != nil {
			return nil, err
		}
		var signers []string
		for _, r := range recs {
			if r.Name == t.Plugin && !slices.Contains(signers, r.SignerIdentity()) {
				signers = append(signers, r.SignerIdentity())
			}
		}
		return operatorClient(context.Background(), st, sec, t, signers)
	}
}

// describeLogin says what the sign-in will do, before it starts.
func describeLogin(w io.Writer, t signin.Target, c *signin.Client, extra []string) {
	fmt.Fprintf(w, "Signing in to %s (plugin %s, server %s).\n", review.Printable(t.Resource), t.Plugin, t.Server)
	if t.OAuth.Issuer != "" {
		fmt.Fprintf(w, "  authorization server: %s (pinned by the manifest%s)\n", review.Printable(t.OAuth.Issuer), elsewhere(", ", t.Resource, t.OAuth.Issuer))
	} else {
		fmt.Fprintln(w, "  authorization server: the one the server names (shown before the browser opens)")
	}
	scopes := append(slices.Clone(t.OAuth.Scopes), extra...)
	if len(scopes) == 0 {
		fmt.Fprintln(w, "  scopes: those the server asks for")
	} else {
		fmt.Fprintf(w, "  scopes: %s\n", scopeList(scopes))
	}
	switch {
	case t.OAuth.ClientID != "":
		fmt.Fprintf(w, "  client: %s (the manifest's)\n", review.Printable(t.OAuth.ClientID))
	case c != nil && c.ClientID != "" && c.Issuer != "":
		fmt.Fprintf(w, "  client: your registration %s (config.json), used only at %s\n", review.Printable(c.ClientID), review.Printable(c.Issuer))
	case c != nil && c.ClientID != "":
		fmt.Fprintf(w, "  client: your registration %s (config.json)\n", review.Printable(c.ClientID))
	case c != nil:
		fmt.Fprintf(w, "  client: your client ID metadata document %s (config.json), or dynamic registration\n", review.Printable(c.MetadataDocumentURL))
	default:
		fmt.Fprintln(w, "  client: registered dynamically with the authorization server")
	}
	fmt.Fprintf(w, "  The tokens are kept in berth's secret store and sent only to %s.\n", review.Printable(origin(t.Resource)))
}

// elsewhere says "another host than HOST" (after sep) when the
// authorization server is on another host than the resource, "" when not.
func elsewhere(sep, resource, issuer string) string {
	if h := signin.OtherHost(resource, issuer); h != "" {
		return sep + "another host than " + review.Printable(h)
	}
	return ""
}

// loginAsk shows the authorization URL: on stderr, always, and in the
// system browser unless noBrowser, through a stand-in that keeps the URL
// out of every command line (privateOpen, under dir: berth's own). The
// returned close removes the stand-ins once the sign-in is over.
func (a *app) loginAsk(out io.Writer, noBrowser bool, dir string) (ask func(context.Context, signin.Prompt) error, close func()) {
	var mu sync.Mutex
	var closers []func()
	ask = func(ctx context.Context, p signin.Prompt) error {
		if err := checkAuthURL(p.URL); err != nil {
			return err
		}
		what := "Signing in"
		if p.StepUp {
			what = "Asking for more scopes"
		}
		issuer := review.Printable(p.Issuer)
		if e := elsewhere("", p.Target.Resource, p.Issuer); e != "" {
			issuer += " (" + e + ")"
		}
		fmt.Fprintf(out, "%s at %s; scopes: %s.\n", what, issuer, scopeList(p.Scopes))
		if p.PreviousIssuer != "" {
			fmt.Fprintf(out, "  Note: the server now names the authorization server %s; you signed in at %s before. Sign in only if you expect it to have moved.\n", review.Printable(p.Issuer), review.Printable(p.PreviousIssuer))
		}
		fmt.Fprintf(a.stderr, "Sign in at: %s\n", p.URL)
		if noBrowser {
			return nil
		}
		target, done, err := privateOpen(dir, p.URL)
		if err != nil {
			fmt.Fprintf(a.stderr, "berth did not open a browser: it could not hide the sign-in URL from other users' view of the command line (%v); open the URL above yourself.\n", err)
			return nil
		}
		mu.Lock()
		closers = append(closers, done)
		mu.Unlock()
		open := a.openBrowser
		if open == nil {
			open = openBrowser
		}
		if err := open(target); err != nil {
			fmt.Fprintf(a.stderr, "berth could not open a browser (%v); open the URL above yourself.\n", err)
		}
		return nil
	}
	close = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range closers {
			c()
		}
		closers = nil
	}
	return ask, close
}

// browserArgv is the command line that opens target in the system
// browser: every local user can read it.
func browserArgv(target string) []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"open", target}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler", target}
	}
	return []string{"xdg-open", target}
}

// checkAuthURL refuses to show or open anything but an http(s) URL: the
// authorization endpoint comes from a server's metadata.
func checkAuthURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("the authorization URL %q is not an http(s) URL, so berth neither shows nor opens it", review.Printable(s))
	}
	return nil
}

// openBrowser opens target (privateOpen's stand-in, never a URL carrying
// a secret) in the system browser, without a shell: target is one argument
// of a fixed program (browserArgv).
func openBrowser(target string) error {
	argv := browserArgv(target)
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() //nolint:errcheck // the opener's exit says nothing about the sign-in
	return nil
}

func runLogout(ctx context.Context, a *app, opts *logoutOptions) error {
	plugin, server, err := parseServerRef(opts.Ref)
	if err != nil {
		return err
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	sec, err := a.secrets()
	if err != nil {
		return err
	}
	picked, err := pickTargets(st, plugin, server, true)
	if errors.Is(err, trust.ErrUntrusted) && server == "" {
		// Nothing of the plugin is trusted: forget whatever is left.
		if err := signin.ForgetPlugin(ctx, sec, plugin); err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(a.stdout, logoutJSON{Plugin: plugin, Servers: []logoutServer{}})
		}
		fmt.Fprintf(a.stdout, "No version of %s is trusted; any sign-in berth kept for it is forgotten.\n", plugin)
		return nil
	}
	if err != nil {
		return err
	}
	res := logoutJSON{Plugin: plugin, Servers: []logoutServer{}}
	var errs []error
	for _, t := range picked {
		client, err := operatorClient(ctx, st, sec, t.Target, t.signers)
		if err != nil {
			fmt.Fprintf(a.stderr, "warning: %v; logging out without it\n", err)
			client = nil
		}
		out, err := signin.SignOut(ctx, t.Target, signin.Options{Secrets: sec, Client: client})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.ID(), err))
			continue
		}
		res.Servers = append(res.Servers, logoutServerOf(t.ID(), out))
		if !opts.JSON {
			fmt.Fprintln(a.stdout, logoutText(t.ID(), t.Resource, out, time.Now()))
		}
	}
	if opts.JSON {
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

func logoutServerOf(id string, r *signin.LogoutResult) logoutServer {
	ls := logoutServer{Server: id, Revoked: r.Revoked(), SignedIn: r.SignedIn, Tokens: []logoutToken{}}
	for _, tk := range r.Tokens {
		lt := logoutToken{Token: strings.TrimSuffix(tk.Kind, " token"), Revoked: tk.Revoked, Why: tk.Why}
		switch {
		case r.Problem != "":
			lt.Why = r.Problem
		case !r.RevocationEndpoint:
			lt.Why = "the authorization server names no revocation endpoint"
		}
		if !tk.ExpiresAt.IsZero() {
			at := tk.ExpiresAt.UTC()
			lt.ExpiresAt = &at
		}
		ls.Tokens = append(ls.Tokens, lt)
	}
	return ls
}

// logoutText says what berth logout did for one server: which tokens the
// authorization server confirmed revoked, and until when each one it did
// not revoke stays valid at the server.
func logoutText(id, resource string, r *signin.LogoutResult, now time.Time) string {
	if !r.SignedIn {
		return fmt.Sprintf("%s: not signed in; berth kept no tokens for it, so there was nothing to forget or revoke.", id)
	}
	resource, issuer := review.Printable(resource), review.Printable(r.Issuer)
	var b strings.Builder
	fmt.Fprintf(&b, "Signed out of %s: berth forgot its tokens.", id)
	var done, left []signin.TokenRevocation
	for _, tk := range r.Tokens {
		if tk.Revoked {
			done = append(done, tk)
		} else {
			left = append(left, tk)
		}
	}
	switch {
	case r.Problem != "":
		fmt.Fprintf(&b, " berth did not ask %s to revoke them: %s.", issuer, r.Problem)
	case !r.RevocationEndpoint:
		fmt.Fprintf(&b, " The authorization server %s names no revocation endpoint (RFC 7009), so it revoked none of them.", issuer)
	case len(done) > 0:
		kinds := make([]string, len(done))
		for i, tk := range done {
			kinds[i] = "the " + tk.Kind
		}
		fmt.Fprintf(&b, " The authorization server %s confirmed it revoked %s.", issuer, strings.Join(kinds, " and "))
	}
	for _, tk := range left {
		if r.RevocationEndpoint && r.Problem == "" {
			fmt.Fprintf(&b, " It did not revoke the %s (%s), which", tk.Kind, tk.Why)
		} else {
			fmt.Fprintf(&b, " The %s", tk.Kind)
		}
		switch {
		case tk.Kind != "access token":
			b.WriteString(" stays valid at the authorization server until it expires or the server ends the grant.")
		case tk.ExpiresAt.IsZero():
			fmt.Fprintf(&b, " stays valid at %s until it expires (the server did not say when).", resource)
		case !tk.ExpiresAt.After(now):
			fmt.Fprintf(&b, " expired at %s.", tk.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"))
		default:
			fmt.Fprintf(&b, " stays valid at %s until it expires at %s (in %s).", resource, tk.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"), tk.ExpiresAt.Sub(now).Round(time.Second))
		}
	}
	return b.String()
}

// forgetUnusedSignins forgets plugin's sign-ins once it is enabled in no
// workspace (berth disable in its last workspace, berth revoke), and the
// operator's client registrations for it once no version of it is trusted
// (as its confirmed values): a plugin of that name trusted later, perhaps
// another publisher's, signs in anew. A failure is a warning naming the
// command that does it.
func (a *app) forgetUnusedSignins(ctx context.Context, st *store.Store, plugin string) {
	state, err := st.State()
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: berth cannot read its state (%v), so it did not check whether %s is still enabled somewhere; berth logout %s forgets its sign-ins\n", err, plugin, plugin)
		return
	}
	for _, w := range state.Workspaces {
		if w.Plugins[plugin] != nil {
			return
		}
	}
	sec, err := a.secrets()
	if err == nil {
		err = signin.ForgetPlugin(ctx, sec, plugin)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: %s is enabled nowhere now, but berth could not forget its sign-ins (%v); run berth logout %s\n", plugin, err, plugin)
	}
	recs, err := st.Records()
	if err != nil || slices.ContainsFunc(recs, func(r *store.Record) bool { return r.Name == plugin }) {
		return
	}
	gone, err := st.ForgetOAuthClients(ctx, plugin)
	switch {
	case err != nil:
		fmt.Fprintf(a.stderr, "warning: your client registrations for %s are still in berth's config (%v); remove its entries of \"oauthClients\" from config.json by hand\n", plugin, err)
	case len(gone) > 0:
		fmt.Fprintf(a.stderr, "No version of %s is trusted any more, so your client registrations for it are forgotten: %s.\n", plugin, strings.Join(gone, ", "))
	}
}

// asSubject is " as SUBJECT", or "" when the token does not say.
func asSubject(sub string) string {
	if sub == "" {
		return ""
	}
	return " as " + review.Printable(sub)
}

// scopeList names scopes for a sentence.
func scopeList(s []string) string {
	if len(s) == 0 {
		return "none named"
	}
	return review.Printable(strings.Join(s, " "))
}

// expiry says when a sign-in's access token expires and what then.
func expiry(s *signin.State, now time.Time) string {
	var b strings.Builder
	if s.ExpiresAt.IsZero() {
		b.WriteString("expiry not stated by the server")
	} else if d := s.ExpiresAt.Sub(now); d > 0 {
		fmt.Fprintf(&b, "expires in %s", d.Round(time.Second))
	} else {
		fmt.Fprintf(&b, "expired %s ago", (-d).Round(time.Second))
	}
	if s.Refreshable {
		b.WriteString("; berth refreshes it quietly")
	} else {
		b.WriteString("; no refresh token, so berth asks you to sign in again then")
	}
	return b.String()
}

// origin is the scheme://host[:port] of a URL.
func origin(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Scheme + "://" + u.Host
}
