package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/signin"
	"github.com/berth-mcp/berth/store"
)

const (
	whoamiTool = "demo__up__whoami"
	adminTool  = "demo__up__admin"
)

// oauthEnv is an env whose plugin "demo" has one remote server "up": the
// fake OAuth-protected MCP server f, declared with "auth": {"oauth": {}}.
type oauthEnv struct {
	*env
	f      *fakeOAuth
	sec    *secrets.Store
	target signin.Target
}

// newOAuthEnv trusts and enables the plugin, and signs in first (as
// `berth login` does, the test's browser following the authorization URL)
// when login is set; then it opens the pool and berth's server.
func newOAuthEnv(t *testing.T, login bool) *oauthEnv {
	t.Helper()
	ctx := context.Background()
	f := newFakeOAuth(t)
	home, ws := t.TempDir(), t.TempDir()
	dir := filepath.Join(t.TempDir(), "demo")
	os.MkdirAll(dir, 0o755)
	manifest := fmt.Sprintf(`{"manifestVersion":1,"name":"demo","version":"1.0.0","description":"signs in",
	  "mcpServers":{"up":{"remote":{"transport":"streamable-http","url":%q,"network":{"hosts":["127.0.0.1"]},"auth":{"oauth":{}}}}}}`, f.resource())
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(manifest), 0o644)
	paths, _ := store.NewPaths(home)
	st := store.Open(paths, nil)
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := store.ParseDigest(b.Digest)
	b.Close()
	if _, err := st.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digest}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Enable(ctx, st, ws, "demo", ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SetPolicy(ctx, store.PolicyRule{Pattern: "demo__*", Action: "allow"}); err != nil {
		t.Fatal(err)
	}
	sec := secrets.Open(paths.Secrets(), nil)
	o := &oauthEnv{f: f, sec: sec, target: signin.Target{Plugin: "demo", Server: "up", Resource: f.resource()}}
	if login {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := signin.Login(lctx, o.target, signin.Options{Secrets: sec, Ask: func(ctx context.Context, p signin.Prompt) error {
			go openInBrowser(ctx, p.URL)
			return nil
		}})
		if err != nil {
			t.Fatalf("berth login: %v", err)
		}
		// The secret store stamps a change to the second, and a handler
		// reads a sign-in again only when the stamp moved: a sign-in
		// stored within the second of the last one would go unseen by a
		// running connection (reported to helper B). A human takes longer.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	}
	e := &env{t: t, paths: paths, store: st}
	e.pool, err = pool.Open(ctx, st, ws, signInPoolOptions(sec))
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.srv = New(e.pool, nil)
	e.mu.Unlock()
	t.Cleanup(func() { e.pool.Close() })
	t.Cleanup(func() {
		e.waitHandlers()
		e.srv.Close()
	})
	o.env = e
	return o
}

// browserClient connects a legacy client that declares URL-mode
// elicitation and answers every sign-in with answer; on "accept" it
// opens the URL as a browser would (the authorization server redirects to
// berth's loopback listener). It records the elicitations it got.
type browserClient struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	asked    []*mcp.ElicitParams
	opened   []int    // the loopback listener's status for each URL opened
	complete []string // the elicitations berth said were complete
}

func (o *oauthEnv) browserClient(answer string) *browserClient {
	return o.browserClientOn("2025-11-25", answer)
}

// browserClientOn is browserClient on the protocol proto ("": 2026-07-28,
// where berth asks with input requests, which go-sdk's client fulfills
// with the same handler and retries).
func (o *oauthEnv) browserClientOn(proto, answer string) *browserClient {
	bc := &browserClient{}
	bc.cs, _ = o.urlClient(proto, func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		bc.mu.Lock()
		bc.asked = append(bc.asked, req.Params)
		bc.mu.Unlock()
		if answer == "accept" {
			go func() {
				octx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				status, _, err := openInBrowser(octx, req.Params.URL)
				if err != nil {
					status = -1
				}
				bc.mu.Lock()
				bc.opened = append(bc.opened, status)
				bc.mu.Unlock()
			}()
		}
		return &mcp.ElicitResult{Action: answer}, nil
	}, func(opts *mcp.ClientOptions) {
		opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			bc.mu.Lock()
			bc.complete = append(bc.complete, req.Params.ElicitationID)
			bc.mu.Unlock()
		}
	})
	return bc
}

func (bc *browserClient) completed() []string {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return append([]string(nil), bc.complete...)
}

func (bc *browserClient) elicitations() []*mcp.ElicitParams {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), bc.asked...)
}

// waitRunning waits until the remote server is connected and its tools
// are in the catalog.
func (o *oauthEnv) waitRunning() {
	o.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, st := range o.pool.Status() {
			if st.ID == "demo__up" && st.State == pool.StateRunning {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	o.t.Fatalf("demo__up did not start: %+v", o.pool.Status())
}

// A signed-in server whose sign-in then expired (the access token
// refused, the refresh token revoked) asks the client to sign in during
// the call; the elicitation names the plugin, the server, the
// authorization server and the scopes, with the authorization URL; the
// test's browser follows it, and the call goes on with a new token.
func TestSignInEndToEndExpired(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	bc := o.browserClient("accept")
	if text, isErr := callTool(t, bc.cs, whoamiTool, "x"); isErr || text != "signed in as alice" {
		t.Fatalf("first call: %q %v", text, isErr)
	}
	if n := len(bc.elicitations()); n != 0 {
		t.Fatalf("asked %d times with a good token", n)
	}
	before := len(o.f.authorizations())
	o.f.revokeAll()
	text, isErr := callTool(t, bc.cs, whoamiTool, "x")
	if isErr || text != "signed in as alice" {
		t.Fatalf("call after the sign-in expired: %q %v", text, isErr)
	}
	asked := bc.elicitations()
	if len(asked) != 1 {
		t.Fatalf("%d elicitations", len(asked))
	}
	p := asked[0]
	if p.Mode != "url" || !strings.HasPrefix(p.URL, o.f.issuer()+"/authorize?") {
		t.Fatalf("elicitation %+v", p)
	}
	for _, want := range []string{"plugin demo, server up needs you to sign in", "Authorization server: " + o.f.issuer(), "Resource: " + o.f.resource(), "Scopes: ", "read"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, p.Message)
		}
	}
	if got := len(o.f.authorizations()); got != before+1 {
		t.Fatalf("%d authorization requests after the sign-in, want %d", got, before+1)
	}
	// The client is told that the sign-in it opened is done.
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(bc.completed(), []string{p.ElicitationID}) {
		if time.Now().After(deadline) {
			t.Fatalf("elicitation/complete: %v, want [%s]", bc.completed(), p.ElicitationID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The call ran once, audited once; the sign-in has its own line; the
	// audit log holds no token and nothing of the authorization URL.
	checkAuditClean(t, o)
}

// A step-up (403 insufficient_scope) always asks, saying that the server
// asks for more; the new token has the scopes, and the call goes on.
func TestSignInEndToEndStepUp(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	bc := o.browserClient("accept")
	text, isErr := callTool(t, bc.cs, adminTool, "x")
	if isErr || text != "admin done" {
		t.Fatalf("step-up call: %q %v", text, isErr)
	}
	asked := bc.elicitations()
	if len(asked) != 1 || !strings.Contains(asked[0].Message, "asks for more access") || !strings.Contains(asked[0].Message, "admin") {
		t.Fatalf("elicitations %+v", asked)
	}
	a := o.f.authorizations()
	if last := a[len(a)-1]; !strings.Contains(" "+last.Get("scope")+" ", " admin ") {
		t.Fatalf("step-up asked for %q", last.Get("scope"))
	}
	checkAuditClean(t, o)
}

// A declined sign-in ends the call with a tool error that says so and
// names berth login; nothing reaches the tool.
func TestSignInEndToEndDeclined(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	o.f.revokeAll()
	bc := o.browserClient("decline")
	text, isErr := callTool(t, bc.cs, whoamiTool, "x")
	if !isErr || !strings.Contains(text, `answered "decline"`) || !strings.Contains(text, "berth login demo__up") {
		t.Fatalf("%q %v", text, isErr)
	}
	// The connection stays: a sign-in declined is not a dead server.
	for _, st := range o.pool.Status() {
		if st.ID == "demo__up" && st.State != pool.StateRunning {
			t.Fatalf("server %+v after a declined sign-in", st)
		}
	}
}

// A client without URL-mode elicitation gets a tool error naming berth
// login and why, at once (no hang), on either protocol.
func TestSignInEndToEndNoURLElicitation(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	o.f.revokeAll()
	form := o.client("2025-11-25", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, errors.New("no form expected")
	})
	text, isErr := callTool(t, form, whoamiTool, "x")
	if !isErr || !strings.Contains(text, "berth login demo__up") || !strings.Contains(text, "did not declare URL-mode elicitation") || !strings.Contains(text, "expired") {
		t.Fatalf("%q %v", text, isErr)
	}
	modern := o.client("", nil)
	text, isErr = callTool(t, modern, whoamiTool, "x")
	if !isErr || !strings.Contains(text, "berth login demo__up") || !strings.Contains(text, "did not declare URL-mode elicitation") {
		t.Fatalf("%q %v", text, isErr)
	}
	stepUp := o.client("2025-11-25", nil)
	text, isErr = callTool(t, stepUp, adminTool, "x")
	if !isErr || !strings.Contains(text, "berth login demo__up") {
		t.Fatalf("%q %v", text, isErr)
	}
	var failed int
	for _, e := range readAudit(t, o.paths) {
		if e.Outcome == OutcomeFailed && strings.Contains(e.Reason, "needs sign-in") && strings.Contains(e.Reason, "berth login demo__up") {
			failed++
		}
	}
	if failed != 3 {
		t.Fatalf("%d calls audited as needing a sign-in: %+v", failed, readAudit(t, o.paths))
	}
}

// Without any sign-in, the server cannot start and lists no tools. A
// call by name (a client that knew the tool from an earlier session) from
// a client without URL-mode elicitation gets the error naming berth
// login; one from a client that has it asks for the sign-in, the server
// starts, and the call runs.
func TestSignInEndToEndNeverSignedIn(t *testing.T) {
	o := newOAuthEnv(t, false)
	form := o.client("2025-11-25", nil)
	text, isErr := callTool(t, form, whoamiTool, "x")
	if !isErr || !strings.Contains(text, "berth login demo__up") || !strings.Contains(text, "did not declare URL-mode elicitation") {
		t.Fatalf("%q %v", text, isErr)
	}
	bc := o.browserClient("accept")
	text, isErr = callTool(t, bc.cs, whoamiTool, "x")
	if isErr || text != "signed in as alice" {
		t.Fatalf("%q %v (status %+v)", text, isErr, o.pool.Status())
	}
	asked := bc.elicitations()
	if len(asked) != 1 || asked[0].Mode != "url" || !strings.Contains(asked[0].Message, "plugin demo, server up needs you to sign in") {
		t.Fatalf("elicitations %+v", asked)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(bc.completed(), []string{asked[0].ElicitationID}) {
		if time.Now().After(deadline) {
			t.Fatalf("elicitation/complete: %v, want [%s]", bc.completed(), asked[0].ElicitationID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if names := toolNames(t, bc.cs); !slices.Contains(names, whoamiTool) {
		t.Fatalf("tools after the sign-in: %v", names)
	}
	checkAuditClean(t, o)
}

// checkAuditClean: no token the authorization server issued, no code,
// state or code challenge of an authorization request is in the audit
// log, nor the authorization endpoint's URL.
func checkAuditClean(t *testing.T, o *oauthEnv) {
	t.Helper()
	data, err := os.ReadFile(o.paths.Audit())
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	var secretsSeen []string
	secretsSeen = append(secretsSeen, o.f.tokens()...)
	for _, a := range o.f.authorizations() {
		secretsSeen = append(secretsSeen, a.Get("state"), a.Get("code_challenge"))
	}
	for _, s := range secretsSeen {
		if s != "" && strings.Contains(log, s) {
			t.Fatalf("the audit log holds %q:\n%s", s, log)
		}
	}
	if strings.Contains(log, "/authorize") || strings.Contains(log, "code=") {
		t.Fatalf("the audit log holds the authorization URL:\n%s", log)
	}
	var signins, ran int
	for _, e := range readAudit(t, o.paths) {
		switch {
		case e.Kind == KindSignIn:
			signins++
		case e.Outcome == OutcomeRan:
			ran++
		}
	}
	if signins == 0 || ran == 0 {
		t.Fatalf("audit %s", log)
	}
}

// signInPoolOptions are the pool options of berth serve with the secret
// store that keeps the sign-ins.
func signInPoolOptions(sec *secrets.Store) *pool.Options {
	return &pool.Options{PollInterval: 50 * time.Millisecond, SignIns: sec}
}

// A client that goes away while its human is asked to sign in (here: it
// accepted, never opened the page, and cancelled the call) leaves nothing
// behind: the call ends, berth's loopback listener for the redirect
// closes, and the next call asks again.
func TestSignInEndToEndClientGone(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	o.f.revokeAll()
	urls := make(chan string, 1)
	cs, _ := o.urlClient("2025-11-25", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		urls <- req.Params.URL
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: whoamiTool, Arguments: map[string]any{}})
		done <- err
	}()
	var authURL string
	select {
	case authURL = <-urls:
	case <-time.After(20 * time.Second):
		t.Fatal("no sign-in asked")
	}
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	redirect := u.Query().Get("redirect_uri")
	if !strings.HasPrefix(redirect, "http://127.0.0.1:") {
		t.Fatalf("redirect_uri %q", redirect)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled call still waits")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(redirect + "?code=x&state=y")
		if err != nil {
			break // the listener is gone
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the loopback listener %s still answers after the client went away", redirect)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// go-sdk fails the connection of a request cancelled during its
	// Authorize (go-sdk #882: no second prompt for an abandoned request);
	// the pool restarts it, and without a token it waits for a sign-in.
	deadline = time.Now().Add(20 * time.Second)
	for !o.waitsForSignIn() {
		if time.Now().After(deadline) {
			t.Fatalf("status %+v", o.pool.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The next sign-in can be asked (the first one no longer holds it).
	bc := o.browserClient("accept")
	if text, isErr := callTool(t, bc.cs, whoamiTool, "x"); isErr || text != "signed in as alice" {
		t.Fatalf("%q %v", text, isErr)
	}
}

// waitsForSignIn reports whether the remote server is down for want of a
// sign-in.
func (o *oauthEnv) waitsForSignIn() bool {
	for _, st := range o.pool.Status() {
		if st.ID == "demo__up" && st.State == pool.StateFailed && strings.Contains(st.LastError, "needs a sign-in") {
			return true
		}
	}
	return false
}

// On a 2026-07-28 session the sign-in is an input request: go-sdk's client
// shows it (the same URL-mode elicitation, the same message), retries, and
// berth's retry waits for the sign-in and runs the call. Expired, step-up,
// never signed in, and declined.
func TestSignInEndToEndModern(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		o := newOAuthEnv(t, true)
		o.waitRunning()
		o.f.revokeAll()
		bc := o.browserClientOn("", "accept")
		if text, isErr := callTool(t, bc.cs, whoamiTool, "x"); isErr || text != "signed in as alice" {
			t.Fatalf("%q %v", text, isErr)
		}
		asked := bc.elicitations()
		if len(asked) != 1 || asked[0].Mode != "url" || !strings.HasPrefix(asked[0].URL, o.f.issuer()+"/authorize?") || !strings.Contains(asked[0].Message, "plugin demo, server up needs you to sign in") {
			t.Fatalf("elicitations %+v", asked)
		}
		checkAuditClean(t, o)
	})
	t.Run("step-up", func(t *testing.T) {
		o := newOAuthEnv(t, true)
		o.waitRunning()
		bc := o.browserClientOn("", "accept")
		if text, isErr := callTool(t, bc.cs, adminTool, "x"); isErr || text != "admin done" {
			t.Fatalf("%q %v", text, isErr)
		}
		asked := bc.elicitations()
		if len(asked) != 1 || !strings.Contains(asked[0].Message, "asks for more access") {
			t.Fatalf("elicitations %+v", asked)
		}
	})
	t.Run("never signed in", func(t *testing.T) {
		o := newOAuthEnv(t, false)
		bc := o.browserClientOn("", "accept")
		if text, isErr := callTool(t, bc.cs, whoamiTool, "x"); isErr || text != "signed in as alice" {
			t.Fatalf("%q %v (status %+v)", text, isErr, o.pool.Status())
		}
		if n := len(bc.elicitations()); n != 1 {
			t.Fatalf("%d elicitations", n)
		}
	})
	t.Run("declined", func(t *testing.T) {
		o := newOAuthEnv(t, true)
		o.waitRunning()
		o.f.revokeAll()
		bc := o.browserClientOn("", "decline")
		text, isErr := callTool(t, bc.cs, whoamiTool, "x")
		if !isErr || !strings.Contains(text, `answered "decline"`) || !strings.Contains(text, "berth login demo__up") {
			t.Fatalf("%q %v", text, isErr)
		}
	})
}

// Two calls that need the same sign-in at once open one sign-in page:
// while the first call's human is asked, the second fails at once with
// an error that says a sign-in is already waiting; the first completes.
func TestSignInEndToEndConcurrent(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	o.f.revokeAll()
	asked := make(chan string, 4)
	release := make(chan struct{})
	cs, _ := o.urlClient("2025-11-25", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params.URL
		<-release
		go openInBrowser(context.Background(), req.Params.URL)
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	first := make(chan string, 1)
	go func() {
		text, isErr := callTool(t, cs, whoamiTool, "a")
		first <- fmt.Sprint(text, " ", isErr)
	}()
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("no sign-in asked")
	}
	text, isErr := callTool(t, cs, whoamiTool, "b")
	if !isErr || !strings.Contains(text, "already waiting for a human") || !strings.Contains(text, "berth login demo__up") {
		t.Fatalf("second call: %q %v", text, isErr)
	}
	close(release)
	select {
	case got := <-first:
		if got != "signed in as alice false" {
			t.Fatalf("first call: %s", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first call did not finish")
	}
	if n := len(asked); n != 0 {
		t.Fatalf("%d more sign-ins asked", n)
	}
}

// prompts/get and resources/read that need a sign-in ask as a tool call
// does: in the request on a legacy session, with an input request on a
// 2026-07-28 one.
func TestSignInEndToEndPromptsResources(t *testing.T) {
	for _, proto := range []string{"2025-11-25", ""} {
		t.Run("protocol "+proto, func(t *testing.T) {
			o := newOAuthEnv(t, true)
			o.waitRunning()
			bc := o.browserClientOn(proto, "accept")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var prompt string
			for deadline := time.Now().Add(20 * time.Second); ; {
				ps, err := bc.cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(ps.Prompts) == 1 {
					prompt = ps.Prompts[0].Name
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("prompts %+v", ps.Prompts)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := o.store.SetPolicy(ctx, store.PolicyRule{Pattern: "demo__up", Action: "allow"}); err != nil {
				t.Fatal(err)
			}
			o.f.revokeAll()
			pr, err := bc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt})
			if err != nil {
				t.Fatalf("prompts/get: %v", err)
			}
			if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "hello alice" {
				t.Fatalf("prompt %+v", pr.Messages[0].Content)
			}
			o.f.revokeAll()
			rr, err := bc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://profile"})
			if err != nil {
				t.Fatalf("resources/read: %v", err)
			}
			if rr.Contents[0].Text != "alice's profile" {
				t.Fatalf("resource %+v", rr.Contents[0])
			}
			if n := len(bc.elicitations()); n != 2 {
				t.Fatalf("%d sign-ins asked, want 2", n)
			}
			checkAuditClean(t, o)
		})
	}
}
