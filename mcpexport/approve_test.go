package mcpexport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

const legacy = "2025-11-25"

// answer returns an elicitation handler that answers with action and
// decision, counting how often it was asked.
func answer(n *atomic.Int32, action, decision string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		n.Add(1)
		if !strings.Contains(req.Params.Message, "demo__up__") || !strings.Contains(req.Params.Message, `"text": "hi"`) {
			return nil, fmt.Errorf("unexpected approval message: %s", req.Params.Message)
		}
		res := &mcp.ElicitResult{Action: action}
		if decision != "" {
			res.Content = map[string]any{"decision": decision}
		}
		return res, nil
	}
}

func TestElicitation(t *testing.T) {
	for _, tc := range []struct {
		name, proto, action, decision string
		ran                           bool
		reason                        string
	}{
		{"legacy allow once", legacy, "accept", "allow-once", true, ""},
		{"legacy decline", legacy, "decline", "", false, "the user declined"},
		{"legacy cancel", legacy, "cancel", "", false, "the user dismissed the request"},
		{"legacy deny choice", legacy, "accept", "deny", false, "the user chose deny"},
		{"legacy invalid result", legacy, "accept", "maybe", false, "the client could not ask"},
		{"input requests allow once", "", "accept", "allow-once", true, ""},
		{"input requests decline", "", "decline", "", false, "the user declined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			var asked atomic.Int32
			cs := e.client(tc.proto, answer(&asked, tc.action, tc.decision))
			text, isErr := callTool(t, cs, echoTool, "hi")
			if asked.Load() != 1 {
				t.Fatalf("asked %d times, want once", asked.Load())
			}
			if tc.ran {
				if isErr || text != "echo: hi" {
					t.Fatalf("call did not run: %q", text)
				}
			} else {
				if !isErr || strings.Contains(text, "echo: hi") || !strings.Contains(text, tc.reason) || !strings.Contains(text, "berth policy set "+echoTool+" allow") {
					t.Fatalf("refusal %q should name the reason %q and the fix", text, tc.reason)
				}
			}
			a := readAudit(t, e.paths)
			if len(a) != 1 || a[0].Tool != echoTool || (a[0].Decision == "allow") != tc.ran || a[0].Arguments.(map[string]any)["text"] != "string" {
				t.Fatalf("audit %+v", a)
			}
		})
	}
}

// TestInputResponsesCannotBeForged drives the input-requests round trip by
// hand, as a client that does not follow the rules would: an invalid
// answer, an answer without the state berth issued, and a replayed state
// are all refused.
func TestInputResponsesCannotBeForged(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCPServer().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "manual", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declares elicitation, answers nothing: the test answers by hand.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, fmt.Errorf("unused") },
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"text": "hi"}
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: args})
	if err != nil || first.InputRequests == nil || first.RequestState == "" {
		t.Fatalf("first round: %+v %v", first, err)
	}
	retry := func(state string, content map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: args, RequestState: state,
			InputResponses: mcp.InputResponseMap{inputKey: &mcp.ElicitResult{Action: "accept", Content: content}}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			return "RAN"
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := retry(first.RequestState, map[string]any{"decision": "yes please"}); !strings.Contains(got, "is not one of allow-once") {
		t.Fatalf("invalid answer: %q", got)
	}
	if got := retry("", map[string]any{"decision": "allow-once"}); !strings.Contains(got, "approval state is invalid") {
		t.Fatalf("forged answer without state: %q", got)
	}
	second, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: args})
	if got := retry(second.RequestState, map[string]any{"decision": "allow-once"}); got != "RAN" {
		t.Fatalf("proper answer: %q", got)
	}
	if got := retry(second.RequestState, map[string]any{"decision": "allow-once"}); !strings.Contains(got, "approval state is invalid") {
		t.Fatalf("replayed state: %q", got)
	}
}

func TestAllowAlwaysWritesPolicy(t *testing.T) {
	for _, proto := range []string{legacy, ""} {
		e := newEnv(t, nil)
		var asked atomic.Int32
		cs := e.client(proto, answer(&asked, "accept", "allow-always"))
		for range 2 {
			if text, isErr := callTool(t, cs, echoTool, "hi"); isErr {
				t.Fatalf("%s: %q", proto, text)
			}
		}
		if asked.Load() != 1 {
			t.Fatalf("%q: asked %d times; allow-always should ask once", proto, asked.Load())
		}
		cfg, _ := e.store.Config()
		if !slices.Contains(cfg.ToolPolicy, store.PolicyRule{Plugin: "demo", Pattern: echoTool, Action: "allow", Signer: "unsigned"}) {
			t.Fatalf("policy %+v", cfg.ToolPolicy)
		}
	}
}

func TestPolicyAllowRunsWithoutAsking(t *testing.T) {
	e := newEnv(t, nil, store.PolicyRule{Pattern: "demo__*", Action: "allow"})
	var asked atomic.Int32
	cs := e.client(legacy, answer(&asked, "accept", "deny"))
	if text, isErr := callTool(t, cs, echoTool, "hi"); isErr || text != "echo: hi" {
		t.Fatalf("%q", text)
	}
	if asked.Load() != 0 {
		t.Fatal("asked although the policy allows the tool")
	}
	// A destructive tool under the same glob still asks.
	if text, isErr := callTool(t, cs, wipeTool, "hi"); !isErr || !strings.Contains(text, "the user chose deny") {
		t.Fatalf("destructive tool under a glob allow: %q", text)
	}
	if asked.Load() != 1 {
		t.Fatalf("asked %d times for the destructive tool", asked.Load())
	}
	// Only an exact allow skips asking for it.
	e.store.SetPolicy(context.Background(), store.PolicyRule{Pattern: wipeTool, Action: "allow"})
	if text, isErr := callTool(t, cs, wipeTool, "hi"); isErr {
		t.Fatalf("exact allow: %q", text)
	}
	if asked.Load() != 1 {
		t.Fatal("asked although an exact rule allows the destructive tool")
	}
}

func TestDeniedToolNeitherListedNorCallable(t *testing.T) {
	e := newEnv(t, nil, store.PolicyRule{Pattern: secretTool, Action: "deny"})
	cs := e.client(legacy, nil)
	names := toolNames(t, cs)
	if slices.Contains(names, secretTool) || !slices.Contains(names, echoTool) {
		t.Fatalf("tools %v", names)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: secretTool, Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatalf("a denied tool ran: %+v", res)
	}
}

// approveNext settles the next pending call in the queue.
func approveNext(t *testing.T, q *Queue, allow, always bool) {
	t.Helper()
	if p := nextPending(t, q); p != nil {
		if _, err := q.Decide(p.ID, allow, always, "test"); err != nil {
			t.Error(err)
		}
	}
}

// nextPending waits for a call in the queue. It may run on any goroutine:
// when none comes it fails t with Error and returns nil.
func nextPending(t *testing.T, q *Queue) *Pending {
	t.Helper()
	var p *Pending
	if !testkit.Within(20*time.Second, func() bool {
		if list, _ := q.List(); len(list) > 0 {
			p = list[0]
		}
		return p != nil
	}) {
		t.Error("no call appeared in the approval queue")
	}
	return p
}

func TestQueue(t *testing.T) {
	for _, tc := range []struct {
		name        string
		allow, wait bool
		want        string
	}{
		{"approve", true, false, "echo: hi"},
		{"deny", false, false, "it was denied with `berth deny"},
		{"timeout", false, true, "no one approved it within 400ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, &Options{ApprovalTimeout: 400 * time.Millisecond})
			if !tc.wait {
				e.srv.timeout = 20 * time.Second
			}
			cs := e.client(legacy, nil) // no elicitation
			if !tc.wait {
				go approveNext(t, e.srv.queue, tc.allow, false)
			}
			text, isErr := callTool(t, cs, echoTool, "hi")
			if !strings.Contains(text, tc.want) || isErr == tc.allow {
				t.Fatalf("got %q (error %v), want %q", text, isErr, tc.want)
			}
			if list, _ := e.srv.queue.List(); len(list) != 0 {
				t.Fatalf("the queue kept %d entries", len(list))
			}
			a := readAudit(t, e.paths)
			if len(a) != 1 || a[0].Approval == "" {
				t.Fatalf("audit %+v", a)
			}
		})
	}
}

// TestPendingApprovalBlocksNoOne: while one client's call waits in the
// queue, another client's allowed call runs.
func TestPendingApprovalBlocksNoOne(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: 20 * time.Second}, store.PolicyRule{Pattern: echoTool, Action: "allow"})
	waiting := e.client(legacy, nil)
	other := e.client(legacy, nil)
	done := make(chan string, 1)
	go func() {
		text, _ := callTool(t, waiting, wipeTool, "x")
		done <- text
	}()
	testkit.Eventually(t, 20*time.Second, "the destructive call to reach the queue", func() bool {
		list, _ := e.srv.queue.List()
		return len(list) == 1
	})
	if text, isErr := callTool(t, other, echoTool, "free"); isErr || text != "echo: free" {
		t.Fatalf("the other client's call: %q", text)
	}
	approveNext(t, e.srv.queue, true, false)
	if text := <-done; text != "wiped x" {
		t.Fatalf("the queued call: %q", text)
	}
}

func TestStateBoxRefusesReplay(t *testing.T) {
	b := newStateBox(time.Minute)
	now := time.Now()
	// The box binds the canonical encoding (CanonicalArguments), which is
	// what runs: the handler passes nothing else.
	args := []byte(`{"text":"hi"}`)
	st := b.issue("t", args, now)
	if err := b.redeem(st, "t", args, now); err != nil {
		t.Fatalf("redeem: %v", err)
	}
	if err := b.redeem(st, "t", args, now); err == nil {
		t.Fatal("a state was accepted twice")
	}
	st = b.issue("t", args, now)
	if b.redeem(st, "t", []byte(`{"text":"other"}`), now) == nil || b.redeem(st, "u", args, now) == nil {
		t.Fatal("a state was accepted for other arguments or another tool")
	}
	if b.redeem(b.issue("t", args, now), "t", args, now.Add(2*time.Minute)) == nil {
		t.Fatal("an expired state was accepted")
	}
	if b.redeem("AAAA", "t", args, now) == nil {
		t.Fatal("garbage was accepted")
	}
}

func TestChoiceOf(t *testing.T) {
	for _, tc := range []struct {
		res  *mcp.ElicitResult
		want string
	}{
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}, choiceOnce},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-always"}}, choiceAlways},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once", "extra": 1}}, choiceDeny},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, choiceDeny},
		{&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": true}}, choiceDeny},
		{&mcp.ElicitResult{Action: "ACCEPT", Content: map[string]any{"decision": "allow-once"}}, choiceDeny},
		{nil, choiceDeny},
	} {
		if got, _ := choiceOf(tc.res); got != tc.want {
			t.Errorf("choiceOf(%+v) = %s, want %s", tc.res, got, tc.want)
		}
	}
}

func TestPanicFailsOnlyThatRequest(t *testing.T) {
	e := newEnv(t, nil)
	h := e.srv.recoverMiddleware(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		panic("boom")
	})
	if _, err := h(context.Background(), "tools/list", nil); err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("err %v", err)
	}
	cs := e.client(legacy, nil)
	if names := toolNames(t, cs); len(names) == 0 {
		t.Fatal("the server stopped working after a panic")
	}
}

// TestQueueDecisionIsFinal: the first decision settles a call; a later
// `berth approve` cannot turn a `berth deny` into a yes before the waiting
// call reads it (nor the other way round).
func TestQueueDecisionIsFinal(t *testing.T) {
	q := NewQueue(t.TempDir())
	now := time.Now()
	p, err := q.Add(Pending{Tool: echoTool, Arguments: json.RawMessage("{}"), Client: "c", CreatedAt: now, Deadline: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Decide(p.ID, false, false, "first"); err != nil {
		t.Fatal(err)
	}
	_, err = q.Decide(p.ID, true, true, "second")
	if !errors.Is(err, ErrSettled) || !strings.Contains(err.Error(), "already denied by first") {
		t.Fatalf("a second decision: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := q.Wait(ctx, p)
	if err != nil || d.Allow || d.By != "first" {
		t.Fatalf("the waiting call read %+v %v, want the first decision (deny)", d, err)
	}
}

// TestQueueForgetsCallsThatNoLongerWait: a pending file whose deadline has
// passed (its call failed closed) or whose process is gone is neither
// listed nor settled, even when its PID now names another process.
func TestQueueForgetsCallsThatNoLongerWait(t *testing.T) {
	q := NewQueue(t.TempDir())
	now := time.Now()
	expired, err := q.Add(Pending{Tool: echoTool, Arguments: json.RawMessage("{}"), Client: "c", CreatedAt: now.Add(-time.Hour), Deadline: now.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	live, err := q.Add(Pending{Tool: echoTool, Arguments: json.RawMessage("{}"), Client: "c", CreatedAt: now, Deadline: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	list, err := q.List()
	if err != nil || len(list) != 1 || list[0].ID != live.ID {
		t.Fatalf("List = %+v %v, want only %s", list, err, live.ID)
	}
	if _, err := q.Decide(expired.ID, true, false, "late"); !errors.Is(err, ErrNoSuchApproval) {
		t.Fatalf("an expired call was settled: %v", err)
	}
	if _, err := os.Stat(q.pendingPath(expired.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the expired pending file was kept: %v", err)
	}
}

// TestApprovalsShowHiddenCharacters: what a person reads before approving
// cannot be rewritten by terminal escapes in the client's name, nor
// reordered by bidi overrides in the arguments.
func TestApprovalsShowHiddenCharacters(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCPServer().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "evil\x1b[2K\rtrusted-client\tx", Version: "1"}, nil)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	seen := make(chan *Pending, 1)
	go func() { seen <- nextPending(t, e.srv.queue) }()
	callTool(t, cs, echoTool, "gpj.\u202eexe\x7f")
	p := <-seen
	if p == nil {
		t.Fatal("the call never reached the queue")
	}
	shown := PrettyArguments(p.Arguments)
	for _, s := range []string{p.Client, string(p.Arguments), shown} {
		if strings.ContainsAny(s, "\x1b\r\t\x7f\u202e") {
			t.Errorf("hidden characters reach the approval: %q", s)
		}
	}
	if !strings.Contains(shown, `gpj.\u202eexe\u007f`) || !strings.Contains(p.Client, `evil\x1b[2K\rtrusted-client x`) {
		t.Errorf("the approval does not show the escaped characters: %q, %q", p.Client, p.Arguments)
	}
	if got := review.PrintableLines("tag \U000E0041 é\n"); got != `tag \U000e0041 é`+"\n" {
		t.Errorf("PrintableLines = %q", got)
	}
}

// TestLegacyInputResponsesApproveNothing: a legacy session whose client
// sends input responses (which only 2026-07-28 sessions use) with a made-up
// state is not approved by them; the call goes to the queue and fails
// closed there.
func TestLegacyInputResponsesApproveNothing(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: 300 * time.Millisecond})
	cs := e.client(legacy, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forged := e.srv.states.issue(echoTool, []byte(`{"text":"hi"}`), time.Now())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "hi"}, RequestState: forged,
		InputResponses: mcp.InputResponseMap{inputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow-once"}}}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "no one approved it within") {
		t.Fatalf("a legacy client's input responses approved a call: %q", text)
	}
}

// TestListChangedWhenCatalogChanges: disabling the plugin while a client
// is connected removes its tools and tells the client (list_changed).
func TestListChangedWhenCatalogChanges(t *testing.T) {
	e := newEnv(t, nil)
	changed := make(chan struct{}, 10)
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCPServer().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := toolNames(t, cs); !slices.Contains(names, echoTool) {
		t.Fatalf("tools %v", names)
	}
	// Let the notifications of the first catalog arrive (go-sdk sends them
	// a little later), then forget them.
	for quiet := false; !quiet; {
		select {
		case <-changed:
		case <-time.After(500 * time.Millisecond):
			quiet = true
		}
	}
	if _, err := pool.Disable(ctx, e.store, e.pool.WorkspaceDir(), "demo"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no tools/list_changed after the plugin was disabled")
	}
	if names := toolNames(t, cs); slices.Contains(names, echoTool) {
		t.Fatalf("tools of a disabled plugin still listed: %v", names)
	}
}

// TestQueueTellsTheClientWhileItWaits: a call waiting in the queue sends a
// log message naming the command that approves it, and progress
// notifications when the client gave a progress token.
func TestQueueTellsTheClientWhileItWaits(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCPServer().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 10)
	progress := make(chan *mcp.ProgressNotificationParams, 100)
	c := mcp.NewClient(&mcp.Implementation{Name: "patient", Version: "1"}, &mcp.ClientOptions{
		//lint:ignore SA1019 the test checks the legacy sessions' logging
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			s, _ := r.Params.Data.(string)
			logs <- s
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params
		},
	})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	//lint:ignore SA1019 the test checks the legacy sessions' logging
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "hi"}}
		params.SetProgressToken("tok-1")
		res, err := cs.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = fmt.Errorf("%v", res.Content)
		}
		done <- err
	}()
	var msg string
	select {
	case msg = <-logs:
	case <-ctx.Done():
		t.Fatal("no log message while the call waited")
	}
	var id string
	if i := strings.Index(msg, "berth approve "); i >= 0 {
		id, _, _ = strings.Cut(msg[i+len("berth approve "):], "`")
	}
	if !ValidID(id) {
		t.Fatalf("the log message does not name the command that approves the call: %q", msg)
	}
	select {
	case p := <-progress:
		if p.ProgressToken != "tok-1" || !strings.Contains(p.Message, "berth approve "+id) {
			t.Fatalf("progress %+v", p)
		}
	case <-ctx.Done():
		t.Fatal("no progress notification while the call waited")
	}
	if _, err := e.srv.queue.Decide(id, true, false, "test"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the approved call: %v", err)
	}
}

// TestQueueApproveAlways: `berth approve --always` runs the call and
// writes exactly one rule, allow for that exact tool name, so the next
// call of the tool runs without waiting and other tools still ask.
func TestQueueApproveAlways(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: 20 * time.Second})
	cs := e.client(legacy, nil)
	go approveNext(t, e.srv.queue, true, true)
	if text, isErr := callTool(t, cs, wipeTool, "a"); isErr || text != "wiped a" {
		t.Fatalf("the approved call: %q", text)
	}
	cfg, err := e.store.Config()
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.PolicyRule{{Plugin: "demo", Pattern: wipeTool, Action: "allow", Signer: "unsigned"}}; !slices.Equal(cfg.ToolPolicy, want) {
		t.Fatalf("policy %+v, want %+v", cfg.ToolPolicy, want)
	}
	e.srv.timeout = 300 * time.Millisecond
	if text, isErr := callTool(t, cs, wipeTool, "b"); isErr || text != "wiped b" {
		t.Fatalf("the next call of the tool allowed always: %q", text)
	}
	if text, isErr := callTool(t, cs, echoTool, "c"); !isErr || !strings.Contains(text, "no one approved it within") {
		t.Fatalf("another tool ran without approval: %q", text)
	}
	a := readAudit(t, e.paths)
	if len(a) != 3 || !a[0].Always || a[0].DecidedBy != "queue" || a[1].DecidedBy != "policy" || a[2].Decision != "deny" {
		t.Fatalf("audit %+v", a)
	}
}

// TestListIsNotHeldByAServerThatHangs: a plugin's server that announced
// a change of its tools and then answers no tools/list holds no list
// request of a client for longer than the catch-up wait (its call timeout,
// 60 s by default, is as long as clients wait for any answer): the list
// is answered from the catalog as it is, again for the next request while
// the sync worker still waits for the server, and calls still run.
func TestListIsNotHeldByAServerThatHangs(t *testing.T) {
	e := newEnv(t, nil, store.PolicyRule{Pattern: "demo__*", Action: "allow"})
	e.srv.catchUp = 2 * time.Second
	cs := e.client(legacy, nil)
	if names := toolNames(t, cs); !slices.Contains(names, echoTool) {
		t.Fatalf("tools %v", names)
	}
	if text, isErr := callTool(t, cs, echoTool, "stall tools/list"); isErr {
		t.Fatalf("%q", text)
	}
	// The sync worker heard list_changed and now waits for the server.
	testkit.Eventually(t, 20*time.Second, "the server's tools/list to be asked for after its list_changed", func() bool {
		// In the server's own temp directory (TMPDIR), under BERTH_HOME.
		m, _ := filepath.Glob(filepath.Join(e.paths.Servers(), "demo", "*", "tmp", "*", "tools-list-stalled"))
		return len(m) > 0
	})
	for i := range 2 {
		start := time.Now()
		names := toolNames(t, cs)
		if d := time.Since(start); d > 2*time.Second+5*time.Second {
			t.Fatalf("list %d took %v with a server that hangs on tools/list", i, d)
		}
		if !slices.Contains(names, echoTool) {
			t.Fatalf("list %d: tools %v, want the catalog as it was", i, names)
		}
	}
	if text, isErr := callTool(t, cs, echoTool, "still here"); isErr || text != "echo: still here" {
		t.Fatalf("%q", text)
	}
}
