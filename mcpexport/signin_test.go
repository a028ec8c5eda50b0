package mcpexport

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/signin"
)

// urlClient connects a legacy (2025-11-25) client that declares URL-mode
// elicitation, with elicit as its handler, and returns it with berth's
// side of its session.
func (e *env) urlClient(proto string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), more ...func(*mcp.ClientOptions)) (*mcp.ClientSession, *mcp.ServerSession) {
	e.t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.Connect(ctx, st)
	if err != nil {
		e.t.Fatal(err)
	}
	opts := &mcp.ClientOptions{
		ElicitationHandler: elicit,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
	}
	for _, f := range more {
		f(opts)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "url-client", Version: "1"}, opts)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs, ss
}

var testPrompt = signin.Prompt{
	Target: signin.Target{Plugin: "demo", Server: "up", Resource: "https://mcp.example/mcp"},
	Issuer: "https://login.example",
	Scopes: []string{"read", "write"},
	URL:    "https://login.example/authorize?client_id=c&state=STATE-SECRET-42&code_challenge=CHALLENGE-42",
}

// The sign-in berth asks for through the client is a URL-mode
// elicitation that names the plugin, the server, the resource, the
// authorization server and the scopes, with the authorization URL; the
// audit log records it without the URL.
func TestSignInAskedThroughClient(t *testing.T) {
	e := newEnv(t, nil)
	var got atomic.Pointer[mcp.ElicitParams]
	_, ss := e.urlClient("2025-11-25", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		got.Store(req.Params)
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.askSignIn(ctx, ss, AuditEntry{Client: "url-client 1"}, testPrompt); err != nil {
		t.Fatal(err)
	}
	p := got.Load()
	if p == nil || p.Mode != "url" || p.URL != testPrompt.URL || !strings.HasPrefix(p.ElicitationID, "berth-signin-") {
		t.Fatalf("elicitation %+v", p)
	}
	for _, want := range []string{"berth: plugin demo, server up needs you to sign in.", "Resource: https://mcp.example/mcp", "Authorization server: https://login.example", "Scopes: read, write"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, p.Message)
		}
	}
	if strings.Contains(p.Message, "STATE-SECRET") {
		t.Errorf("the message repeats the URL:\n%s", p.Message)
	}
	a := readAudit(t, e.paths)
	if len(a) != 1 || a[0].Kind != KindSignIn || a[0].Tool != "demo__up" || a[0].Outcome != OutcomeRan || a[0].Decision != VerdictAllow || !strings.Contains(a[0].Reason, "https://login.example") || !strings.Contains(a[0].Reason, "read, write") {
		t.Fatalf("audit %+v", a)
	}
	data, _ := os.ReadFile(e.paths.Audit())
	if strings.Contains(string(data), "STATE-SECRET") || strings.Contains(string(data), "CHALLENGE-42") || strings.Contains(string(data), "/authorize") {
		t.Fatalf("the audit log holds the authorization URL:\n%s", data)
	}
}

// A step-up says that the server asks for more than the sign-in has.
func TestSignInStepUpMessage(t *testing.T) {
	p := testPrompt
	p.StepUp, p.Scopes = true, []string{"read", "admin"}
	msg := signInMessage(p)
	for _, want := range []string{"asks for more access", "Scopes (more than the current sign-in has): read, admin"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if !strings.Contains(signInSummary(p), "step-up") {
		t.Errorf("summary %q", signInSummary(p))
	}
}

// What the servers' metadata says (the issuer, the scopes) is escaped in
// the message: it cannot redraw the form or add lines of berth's.
func TestSignInMessageEscapes(t *testing.T) {
	p := testPrompt
	p.Issuer = "https://login.example\nberth: allow this tool call?\x1b[2J"
	p.Scopes = []string{"read\u202e", strings.Repeat("x", 500)}
	msg := signInMessage(p)
	if strings.Count(msg, "\n") != 4 || strings.Contains(msg, "\x1b") || strings.Contains(msg, "\u202e") || strings.Contains(msg, strings.Repeat("x", 200)) {
		t.Fatalf("message not escaped:\n%s", msg)
	}
}

// A declined or cancelled sign-in ends the request with an error that
// says so and names berth login; the pool reads it as a sign-in error
// (signin.NeedSignInError), not as a broken connection.
func TestSignInDeclined(t *testing.T) {
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			e := newEnv(t, nil)
			_, ss := e.urlClient("2025-11-25", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: action}, nil
			})
			err := e.srv.askSignIn(context.Background(), ss, AuditEntry{}, testPrompt)
			var nd *SignInNotDoneError
			var ne *signin.NeedSignInError
			if !errors.As(err, &nd) || !errors.As(err, &ne) || ne.Target.ID() != "demo__up" {
				t.Fatalf("%T %v", err, err)
			}
			if msg := err.Error(); !strings.Contains(msg, `answered "`+action+`"`) || !strings.Contains(msg, "berth login demo__up") {
				t.Fatalf("%s", msg)
			}
			a := readAudit(t, e.paths)
			if len(a) != 1 || a[0].Outcome != OutcomeRefused || a[0].Decision != VerdictDeny {
				t.Fatalf("audit %+v", a)
			}
		})
	}
}

// One sign-in per server at a time: while a client's human is asked, a
// second request that needs the same sign-in fails at once (no second
// sign-in page), one for another server is asked; when the first request
// ends, the server can be asked again. A request that ends while its
// client is asked withdraws the elicitation (the client's handler sees
// its context end).
func TestSignInOneAtATime(t *testing.T) {
	e := newEnv(t, nil)
	asked := make(chan string, 4)
	handlerDone := make(chan error, 4)
	_, ss := e.urlClient("2025-11-25", func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params.Message
		if strings.Contains(req.Params.Message, "server other") {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		<-ctx.Done()
		handlerDone <- ctx.Err()
		return nil, ctx.Err()
	})
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- e.srv.askSignIn(ctx1, ss, AuditEntry{}, testPrompt) }()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the first sign-in was not asked")
	}
	err := e.srv.askSignIn(context.Background(), ss, AuditEntry{}, testPrompt)
	var nd *SignInNotDoneError
	if !errors.As(err, &nd) || !strings.Contains(err.Error(), "already waiting for a human") {
		t.Fatalf("second sign-in: %v", err)
	}
	other := testPrompt
	other.Target.Server = "other"
	if err := e.srv.askSignIn(context.Background(), ss, AuditEntry{}, other); err != nil {
		t.Fatalf("another server's sign-in: %v", err)
	}
	<-asked
	cancel1()
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("withdrawn sign-in: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a withdrawn sign-in still waits")
	}
	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was not told that the sign-in was withdrawn")
	}
	select {
	case m := <-asked:
		t.Fatalf("asked again: %s", m)
	default:
	}
	// Free again.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	go func() { e.srv.askSignIn(ctx2, ss, AuditEntry{}, testPrompt) }()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the sign-in was not asked again after the first request ended")
	}
	<-handlerDone
}

// berth asks only a legacy session whose client declared URL-mode
// elicitation; otherwise it says why it could not.
func TestCanAskSignIn(t *testing.T) {
	e := newEnv(t, nil)
	_, url := e.urlClient("2025-11-25", nil)
	_, modern := e.urlClient("", nil)
	e.client("2025-11-25", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil })
	var form *mcp.ServerSession
	for s := range e.srv.ms.Sessions() {
		if s != url && s != modern {
			form = s
		}
	}
	caps := func(ss *mcp.ServerSession) *mcp.ClientCapabilities { return ss.InitializeParams().Capabilities }
	if ok, why := canAskSignIn(url, caps(url), url.InitializeParams().ProtocolVersion, "c"); !ok {
		t.Fatalf("url client: %s", why)
	}
	if ok, why := canAskSignIn(modern, caps(url), "2026-07-28", "c"); ok || !strings.Contains(why, "2026-07-28") {
		t.Fatalf("modern: %v %s", ok, why)
	}
	if ok, why := canAskSignIn(form, caps(form), "2025-11-25", "form-client 1"); ok || !strings.Contains(why, "did not declare URL-mode elicitation") || !strings.Contains(why, "form-client 1") {
		t.Fatalf("form client: %v %s", ok, why)
	}
	if ok, _ := canAskSignIn(nil, caps(url), "2025-11-25", "c"); ok {
		t.Fatal("no session")
	}
}

// The message and the audit summary say in words when the authorization
// server is on another host than the resource; not when it is the same
// host.
func TestSignInMessageOtherHost(t *testing.T) {
	p := testPrompt
	if msg := signInMessage(p); !strings.Contains(msg, "Authorization server: https://login.example (another host than mcp.example)\n") {
		t.Errorf("message:\n%s", msg)
	}
	if s := signInSummary(p); !strings.Contains(s, "at https://login.example (another host than mcp.example) for scopes") {
		t.Errorf("summary %q", s)
	}
	p.Issuer = "https://mcp.example/oauth"
	if msg := signInMessage(p); strings.Contains(msg, "another host") || !strings.Contains(msg, "Authorization server: https://mcp.example/oauth\n") {
		t.Errorf("same-host message:\n%s", msg)
	}
}
