package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// On 2026-07-28 a sign-in running in the background belongs to the
// session that started it: while its human is asked, another session's
// call that needs the same sign-in is not shown its URL (whose state and
// PKCE challenge would let that session's user sign berth in with their
// own account); it gets an error that says a sign-in is in progress in
// another session.
func TestSignInBoundToSession(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	o.f.revokeAll()
	shown := make(chan string, 4)
	release := make(chan struct{})
	a, _ := o.urlClient("", func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		shown <- req.Params.URL
		<-release
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	var mu sync.Mutex
	var seenByB []string
	b, _ := o.urlClient("", func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		seenByB = append(seenByB, req.Params.URL)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	var wg sync.WaitGroup
	wg.Add(1)
	var textA string
	go func() {
		defer wg.Done()
		textA, _ = callTool(t, a, whoamiTool, "x")
	}()
	var urlA string
	select {
	case urlA = <-shown:
	case <-time.After(20 * time.Second):
		t.Fatal("session A was never asked to sign in")
	}
	textB, isErr := callTool(t, b, whoamiTool, "y")
	close(release)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, u := range seenByB {
		if u == urlA {
			t.Errorf("session B was shown session A's sign-in URL %s", u)
		}
	}
	if len(seenByB) > 0 {
		t.Errorf("session B was asked %d time(s) while A's sign-in ran: %q", len(seenByB), seenByB)
	}
	if !isErr || !strings.Contains(textB, "in progress in another session") {
		t.Errorf("session B's call answered %q (error %v)", textB, isErr)
	}
	if !strings.Contains(textA, `answered "decline"`) {
		t.Errorf("session A's call answered %q", textA)
	}
}

// A sign-in whose scopes berth's message cannot list whole (more than
// 20) is not asked in the client: the human would consent to scopes berth
// did not show. The error says how many and names berth login; the audit
// records the refusal.
func TestSignInTooManyScopesNotAsked(t *testing.T) {
	e := newEnv(t, nil)
	var asked atomic.Int32
	_, ss := e.urlClient("2025-11-25", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	p := testPrompt
	p.StepUp, p.Scopes = true, nil
	for i := range 23 {
		p.Scopes = append(p.Scopes, fmt.Sprintf("s%d", i))
	}
	err := e.srv.askSignIn(context.Background(), ss, AuditEntry{Client: "url-client 1"}, p)
	var nd *SignInNotDoneError
	if !errors.As(err, &nd) || !strings.Contains(err.Error(), "23 scopes, 3 more than berth lists") || !strings.Contains(err.Error(), "berth login demo__up") {
		t.Fatalf("err %v", err)
	}
	if asked.Load() != 0 {
		t.Errorf("the client was asked %d time(s)", asked.Load())
	}
	a := readAudit(t, e.paths)
	if len(a) != 1 || a[0].Outcome != OutcomeRefused || !strings.Contains(a[0].Reason, "23 scopes") {
		t.Errorf("audit %+v", a)
	}
	// Twenty are listed whole.
	p.Scopes = p.Scopes[:20]
	if err := tooManyScopes(p); err != nil || strings.Contains(signInMessage(p), "more") && !strings.Contains(signInMessage(p), "more access") {
		t.Errorf("20 scopes: %v\n%s", err, signInMessage(p))
	}
}
