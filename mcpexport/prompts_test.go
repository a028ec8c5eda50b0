package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

const (
	notePrompt = "demo__up__note"
	staticURI  = "demo://up/static"
)

func getNote(cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: notePrompt, Arguments: map[string]string{"topic": "berth"}})
}

func readURI(cs *mcp.ClientSession, uri string) (*mcp.ReadResourceResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

// A deny on every name of a plugin reaches its prompts and resources too:
// they are not listed, prompts/get and resources/read are refused with the
// reason, nothing reaches the plugin's server, and both refusals are in
// the audit log.
func TestDenyHidesAndRefusesPromptsAndResources(t *testing.T) {
	e := newEnv(t, nil, store.PolicyRule{Pattern: "demo__*", Action: store.ActionDeny})
	cs := e.client("2025-11-25", nil)
	if _, err := getNote(cs); err == nil || !strings.Contains(err.Error(), `policy denies the prompt demo__up__note (rule "demo__*")`) {
		t.Fatalf("prompts/get of a denied prompt: %v", err)
	}
	if _, err := readURI(cs, staticURI); err == nil || !strings.Contains(err.Error(), `denies the resources of demo__up (rule "demo__*")`) {
		t.Fatalf("resources/read of a denied resource: %v", err)
	}
	if _, err := readURI(cs, "demo://up/item/7"); err == nil || !strings.Contains(err.Error(), "berth refused reading demo://up/item/7") {
		t.Fatalf("resources/read through a denied template: %v", err)
	}
	ctx := context.Background()
	if ps, err := cs.ListPrompts(ctx, nil); err != nil || len(ps.Prompts) != 0 {
		t.Fatalf("denied prompts listed: %+v %v", ps, err)
	}
	if rs, err := cs.ListResources(ctx, nil); err != nil || len(rs.Resources) != 0 {
		t.Fatalf("denied resources listed: %+v %v", rs, err)
	}
	if ts, err := cs.ListResourceTemplates(ctx, nil); err != nil || len(ts.ResourceTemplates) != 0 {
		t.Fatalf("denied templates listed: %+v %v", ts, err)
	}
	var got []string
	for _, a := range readAudit(t, e.paths) {
		got = append(got, string(a.Kind)+" "+a.Tool+" "+a.URI+" "+string(a.Decision)+" "+string(a.DecidedBy)+" "+string(a.Outcome)+" "+a.Policy)
	}
	want := []string{
		"prompt demo__up__note  deny policy refused deny (demo__*)",
		"resource demo__up demo://up/static deny policy refused deny (demo__*)",
		"resource demo__up demo://up/item/7 deny policy refused deny (demo__*)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// ask asks, as for a tool call (here by elicitation): the form says what is
// asked for, allow-once runs it, deny refuses it; allow-always writes an
// exact rule for the prompt or the resource's server. All of it is audited.
func TestAskAsksForPromptsAndResources(t *testing.T) {
	e := newEnv(t, nil)
	var asked []string
	answer := "allow-once"
	cs := e.client("2025-11-25", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
	})
	// A fresh connection: no list first.
	res, err := getNote(cs)
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "a note on berth" {
		t.Fatalf("an approved prompt: %+v %v", res, err)
	}
	answer = "deny"
	if _, err := readURI(cs, staticURI); err == nil || !strings.Contains(err.Error(), "berth refused reading demo://up/static: the user chose deny") {
		t.Fatalf("a refused resource: %v", err)
	}
	answer = "allow-always"
	rr, err := readURI(cs, "demo://up/item/42")
	if err != nil || rr.Contents[0].Text != "contents of demo://up/item/42" {
		t.Fatalf("an approved template read: %+v %v", rr, err)
	}
	if len(asked) != 3 || !strings.Contains(asked[0], "allow getting this prompt?") || !strings.Contains(asked[0], "Prompt:      demo__up__note") ||
		!strings.Contains(asked[1], "allow reading this resource?") || !strings.Contains(asked[1], "Resource:    demo://up/static") || !strings.Contains(asked[1], `"uri": "demo://up/static"`) {
		t.Fatalf("the forms:\n%s", strings.Join(asked, "\n---\n"))
	}
	cfg, _ := e.store.Config()
	if len(cfg.ToolPolicy) != 1 || cfg.ToolPolicy[0].Pattern != "demo__up" || cfg.ToolPolicy[0].Plugin != "demo" || cfg.ToolPolicy[0].Action != store.ActionAllow {
		t.Fatalf("allow-always wrote %+v", cfg.ToolPolicy)
	}
	// Now the server's resources run without asking.
	if _, err := readURI(cs, staticURI); err != nil || len(asked) != 3 {
		t.Fatalf("after allow-always: %v (asked %d times)", err, len(asked))
	}
	var got []string
	for _, a := range readAudit(t, e.paths) {
		got = append(got, string(a.Kind)+" "+a.Tool+" "+string(a.Decision)+" "+string(a.DecidedBy)+" "+string(a.Outcome))
	}
	want := "prompt demo__up__note allow elicitation ran\nresource demo__up deny elicitation refused\nresource demo__up allow elicitation ran\nresource demo__up allow policy ran"
	if strings.Join(got, "\n") != want {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}

// On a fresh connection prompts/get and resources/read work before any
// list request, on both protocol eras; an unknown name stays a protocol
// error.
func TestPromptsAndResourcesBeforeAnyList(t *testing.T) {
	for _, proto := range []string{"2025-11-25", ""} {
		t.Run("protocol "+proto, func(t *testing.T) {
			e := newEnv(t, nil, store.PolicyRule{Pattern: notePrompt, Action: store.ActionAllow}, store.PolicyRule{Pattern: "demo__up", Action: store.ActionAllow})
			cs := e.client(proto, nil)
			if res, err := getNote(cs); err != nil || len(res.Messages) != 1 {
				t.Fatalf("prompts/get first: %+v %v", res, err)
			}
			cs2 := e.client(proto, nil)
			if rr, err := readURI(cs2, "demo://up/item/1"); err != nil || rr.Contents[0].Text != "contents of demo://up/item/1" {
				t.Fatalf("resources/read first: %+v %v", rr, err)
			}
			if _, err := readURI(e.client(proto, nil), "demo://nowhere"); err == nil {
				t.Fatal("an unknown resource was read")
			}
			if _, err := e.client(proto, nil).GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "demo__up__nope"}); err == nil {
				t.Fatal("an unknown prompt was got")
			}
		})
	}
}

// A prompt or resource that waits in the queue is like a tool call there:
// the entry says what it is, how its client reached berth and that it was
// authenticated, and when the client's connection goes away it is
// withdrawn within 2 s (it cannot be approved any more), audited as such.
func TestQueuedPromptsAndResourcesAreWithdrawnWithTheirRequest(t *testing.T) {
	for _, tc := range []struct {
		kind pool.RequestKind
		body string
		what string
	}{
		{pool.RequestPrompt, `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"demo__up__note","arguments":{"topic":"x"}}}`, "demo__up__note"},
		{pool.RequestResource, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"demo://up/static"}}`, "demo__up"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			e := newEnv(t, &Options{ApprovalTimeout: time.Minute})
			o := &HTTPOptions{Token: testToken}
			base := "http://" + serveEnv(t, e, o)
			sid := rawInit(t, base+"/mcp")
			rctx, gone := context.WithCancel(context.Background())
			go func() {
				if res, err := rawPost(rctx, base+"/mcp", sid, legacy, tc.body); err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}()
			p := nextPending(t, e.srv.queue)
			if p == nil {
				t.FailNow()
			}
			if p.Kind != tc.kind || p.Tool != tc.what || p.Transport != TransportHTTP || !p.Authenticated {
				t.Fatalf("pending %+v", p)
			}
			if tc.kind == pool.RequestResource && p.URI != staticURI {
				t.Fatalf("pending resource URI %q", p.URI)
			}
			gone()
			testkit.Eventually(t, 2*time.Second, "the approval "+p.ID+" to leave the queue after its client went away", func() bool {
				list, _ := e.srv.queue.List()
				return len(list) == 0
			})
			if _, err := e.srv.queue.Decide(p.ID, true, false, "late"); !errors.Is(err, ErrWithdrawn) {
				t.Fatalf("approving the withdrawn request: %v", err)
			}
			var a []AuditEntry
			testkit.Within(5*time.Second, func() bool { a = readAudit(t, e.paths); return len(a) > 0 })
			if len(a) != 1 || a[0].Kind != tc.kind || a[0].Outcome != OutcomeWithdrawn || a[0].Decision != VerdictNone ||
				a[0].Transport != TransportHTTP || !a[0].Authenticated || !strings.HasPrefix(a[0].ArgumentsDigest, "sha256:") {
				t.Fatalf("audit %+v, want one withdrawn %s entry", a, tc.kind)
			}
		})
	}
}

// TestAskAsksForPromptsAndResourcesByInputRequests is
// TestAskAsksForPromptsAndResources on the 2026-07-28 protocol: "ask"
// for a prompt and a resource is an input request in the result (no
// elicitation request is sent), the answer comes back with the retry,
// and the audit says input-requests. A first round answered by nobody
// runs nothing.
func TestAskAsksForPromptsAndResourcesByInputRequests(t *testing.T) {
	e := newEnv(t, nil)
	var asked []string
	answer := "allow-once"
	cs := e.client(modernProtocol, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
	})
	if got := cs.InitializeResult().ProtocolVersion; got != modernProtocol {
		t.Fatalf("the session speaks %s, want %s", got, modernProtocol)
	}
	res, err := getNote(cs)
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "a note on berth" {
		t.Fatalf("an approved prompt: %+v %v", res, err)
	}
	answer = "deny"
	if _, err := readURI(cs, staticURI); err == nil || !strings.Contains(err.Error(), "berth refused reading demo://up/static: the user chose deny") {
		t.Fatalf("a refused resource: %v", err)
	}
	answer = "allow-once"
	rr, err := readURI(cs, "demo://up/item/42")
	if err != nil || rr.Contents[0].Text != "contents of demo://up/item/42" {
		t.Fatalf("an approved template read: %+v %v", rr, err)
	}
	if len(asked) != 3 || !strings.Contains(asked[0], "allow getting this prompt?") || !strings.Contains(asked[0], "Prompt:      demo__up__note") ||
		!strings.Contains(asked[1], "allow reading this resource?") || !strings.Contains(asked[1], "Resource:    demo://up/static") {
		t.Fatalf("the forms:\n%s", strings.Join(asked, "\n---\n"))
	}
	var got []string
	for _, a := range readAudit(t, e.paths) {
		got = append(got, string(a.Kind)+" "+a.Tool+" "+string(a.Decision)+" "+string(a.DecidedBy)+" "+string(a.Outcome))
	}
	want := "prompt demo__up__note allow input-requests ran\nresource demo__up deny input-requests refused\nresource demo__up allow input-requests ran"
	if strings.Join(got, "\n") != want {
		t.Fatalf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}

	// By hand: the first round is an input request and nothing more.
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCPServer().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "manual", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, fmt.Errorf("unused") },
	})
	manual, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: modernProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	first, err := getNote(manual)
	if err != nil || first.InputRequests == nil || first.RequestState == "" || len(first.Messages) != 0 {
		t.Fatalf("a prompt's first round: %+v %v", first, err)
	}
	firstRead, err := readURI(manual, staticURI)
	if err != nil || firstRead.InputRequests == nil || firstRead.RequestState == "" || len(firstRead.Contents) != 0 {
		t.Fatalf("a resource's first round: %+v %v", firstRead, err)
	}
	if n := len(readAudit(t, e.paths)); n != 3 {
		t.Fatalf("unanswered first rounds were audited as decided: %d entries", n)
	}
}
