package mcpexport

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// On a 2026-07-28 session a tool whose policy is ask, whose server asks
// for a sign-in only after the human approved the call (the token was
// refused), is approved once: the retry after the sign-in runs on that
// approval. The approval covers that call only: the next call (other
// arguments) is asked again.
func TestSignInModernApprovedOnce(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	if err := o.store.SetPolicy(context.Background(), store.PolicyRule{Plugin: "demo", Pattern: whoamiTool, Action: store.ActionAsk}); err != nil {
		t.Fatal(err)
	}
	o.f.revokeAll() // the next request is refused: 401, the refresh fails
	var mu sync.Mutex
	var approvals, signIns int
	cs, _ := o.urlClient("", func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if req.Params.Mode == "url" {
			signIns++
			go func() {
				octx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				openInBrowser(octx, req.Params.URL)
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		approvals++
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choiceOnce}}, nil
	})
	if text, isErr := callTool(t, cs, whoamiTool, "x"); isErr || text != "signed in as alice" {
		t.Fatalf("%q %v", text, isErr)
	}
	mu.Lock()
	a, s := approvals, signIns
	mu.Unlock()
	if s != 1 || a != 1 {
		t.Fatalf("the call asked for %d approval(s) and %d sign-in(s); want 1 and 1", a, s)
	}
	var ran []AuditEntry
	for _, e := range readAudit(t, o.paths) {
		if e.Kind != KindSignIn && e.Tool == whoamiTool {
			ran = append(ran, e)
		}
	}
	if len(ran) != 1 || ran[0].Outcome != OutcomeRan || ran[0].Decision != VerdictAllow || ran[0].DecidedBy != ByInputRequests || !strings.Contains(ran[0].Reason, "approved before the sign-in") {
		t.Fatalf("audit of the call: %+v", ran)
	}

	// Another call is asked again.
	if text, isErr := callTool(t, cs, whoamiTool, "y"); isErr || text != "signed in as alice" {
		t.Fatalf("%q %v", text, isErr)
	}
	mu.Lock()
	a = approvals
	mu.Unlock()
	if a != 2 {
		t.Fatalf("the second call was approved %d time(s) in all; want 2", a)
	}
}

// The approval remembered for a retry is bound to the call: another
// session, other arguments, another tool surface or another version are
// asked again; it is used once.
func TestSignInApprovalBinding(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	cs1, ss1 := o.urlClient("", nil)
	_, ss2 := o.urlClient("", nil)
	_ = cs1
	mk := func(ss *mcp.ServerSession) *call {
		return &call{s: o.srv, req: &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Name: whoamiTool}}, tool: whoamiTool, entry: AuditEntry{Client: "c"}}
	}
	r := func() *pool.ApprovalRequest {
		return &pool.ApprovalRequest{Tool: whoamiTool, Plugin: "demo", Version: "1.0.0", Server: "up", UpstreamTool: "whoami",
			Arguments: []byte(`{"text":"x"}`), Surface: "sha256:pinned", Policy: store.PolicyMatch{Action: store.ActionAsk, Exact: true, Pattern: whoamiTool}}
	}
	base := mk(ss1).approvalBinding(r())
	if base != mk(ss1).approvalBinding(r()) {
		t.Fatal("the same call binds differently")
	}
	for name, other := range map[string]string{
		"session":   mk(ss2).approvalBinding(r()),
		"arguments": mk(ss1).approvalBinding(func() *pool.ApprovalRequest { x := r(); x.Arguments = []byte(`{"text":"y"}`); return x }()),
		"surface":   mk(ss1).approvalBinding(func() *pool.ApprovalRequest { x := r(); x.Surface = "sha256:other"; return x }()),
		"version":   mk(ss1).approvalBinding(func() *pool.ApprovalRequest { x := r(); x.Version = "2.0.0"; return x }()),
		"tool":      mk(ss1).approvalBinding(func() *pool.ApprovalRequest { x := r(); x.UpstreamTool = "admin"; return x }()),
	} {
		if other == base {
			t.Errorf("another %s binds the same", name)
		}
	}
	// Without sessions (stateless Streamable HTTP) each request has its
	// own: the binding holds across them, and still not across
	// arguments.
	st1, st2 := mk(ss1), mk(ss2)
	st1.origin.Transport, st2.origin.Transport = TransportStateless, TransportStateless
	if st1.approvalBinding(r()) != st2.approvalBinding(r()) || st1.approvalBinding(r()) == base {
		t.Error("a stateless retry binds to its per-request session")
	}
	// Used once, and only when bound to this call.
	c := mk(ss1)
	c.preApproved = &signInApproval{binding: base, by: ByInputRequests}
	if d, err := c.Approve(context.Background(), r()); err != nil || !d.Allow {
		t.Fatalf("the remembered approval was not used: %+v %v", d, err)
	}
	if c.preApproved != nil {
		t.Fatal("the remembered approval was not used up")
	}
	c = mk(ss1)
	c.preApproved = &signInApproval{binding: base, by: ByInputRequests}
	x := r()
	x.Arguments = []byte(`{"text":"other"}`)
	if d, _ := c.Approve(context.Background(), x); d.Allow {
		t.Fatalf("an approval of other arguments ran this call: %+v", d)
	}
}

// The same for a resources/read whose server policy is ask: one approval,
// one sign-in, the resource is read.
func TestSignInModernApprovedOnceResource(t *testing.T) {
	o := newOAuthEnv(t, true)
	o.waitRunning()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.store.SetPolicy(ctx, store.PolicyRule{Plugin: "demo", Pattern: "demo__up", Action: store.ActionAsk}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var approvals, signIns int
	cs, _ := o.urlClient("", func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if req.Params.Mode == "url" {
			signIns++
			go func() {
				octx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				openInBrowser(octx, req.Params.URL)
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		approvals++
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choiceOnce}}, nil
	})
	// berth routes a resources/read by the catalog of the server's
	// resources, which it reads once the server runs: wait until it lists
	// the resource (as a client would have seen it listed) before the
	// sign-in expires.
	for deadline := time.Now().Add(20 * time.Second); ; {
		rs, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		if slices.ContainsFunc(rs.Resources, func(r *mcp.Resource) bool { return r.URI == "demo://profile" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("resources %+v", rs.Resources)
		}
		time.Sleep(20 * time.Millisecond)
	}
	o.f.revokeAll()
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://profile"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if rr.Contents[0].Text != "alice's profile" {
		t.Fatalf("resource %+v", rr.Contents[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if signIns != 1 || approvals != 1 {
		t.Fatalf("the read asked for %d approval(s) and %d sign-in(s); want 1 and 1", approvals, signIns)
	}
}
