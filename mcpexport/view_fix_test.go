//lint:file-ignore SA1019 the relay carries MCP logging during its deprecation window

package mcpexport

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testrelay"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// Fixes of the attacks on issue 23 (attack23_test.go holds the attacks):
// the positive controls and the parts the attacks do not check.

// putProfile sets the profile name of the relay env's workspace to the
// plugins given (none: removes it).
func (e *relayEnv) putProfile(t *testing.T, name string, plugins ...string) {
	t.Helper()
	st := store.Open(e.paths, nil)
	if _, err := st.Update(context.Background(), func(s *store.State) error {
		w := s.Workspaces[e.pool.WorkspaceDir()]
		if len(plugins) == 0 {
			delete(w.Profiles, name)
			return nil
		}
		if w.Profiles == nil {
			w.Profiles = map[string]*store.Profile{}
		}
		w.Profiles[name] = &store.Profile{Plugins: plugins, Mode: store.ToolsFull, CreatedAt: time.Now().UTC().Truncate(time.Second)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sibling is the relay env seen through a sibling Server of view v.
func (e *relayEnv) sibling(t *testing.T, v *View) *relayEnv {
	t.Helper()
	sib, err := e.srv.WithView(v)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sib.Close() })
	pe := *e
	pe.srv = sib
	return &pe
}

// A profile that offers the plugin gets its log messages (the positive
// control of TestAttack23LogsOfPluginsOutsideTheProfile), until the
// profile is narrowed: from then on, none, without waiting for a list.
func TestProfileLogsFollowTheProfile(t *testing.T) {
	e := newRelayEnv(t, true)
	e.putProfile(t, "mine", "rly")
	mine := e.sibling(t, &View{Profile: "mine"}).client("2025-11-25", clientCaps{})
	if err := mine.cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	rc := e.client("2025-11-25", clientCaps{})
	rc.setLevel(t, "info")
	rc.call(t, "log", nil, nil)
	_ = testkit.Within(10*time.Second, func() bool { return lenOf(mine, &mine.logs) >= 3 })
	if n := lenOf(mine, &mine.logs); n < 3 {
		t.Fatalf("a client of the profile mine (rly) got %d of rly's 3 log messages", n)
	}
	e.putProfile(t, "mine", "other")
	before := lenOf(rc, &rc.logs)
	rc.call(t, "log", nil, nil)
	_ = testkit.Within(10*time.Second, func() bool { return lenOf(rc, &rc.logs) >= before+3 })
	time.Sleep(300 * time.Millisecond)
	if n := lenOf(mine, &mine.logs); n != 3 {
		t.Fatalf("after the profile mine stopped offering rly, its client got %d log messages, want the 3 from before", n)
	}
}

// When a boundary drops a resource from a profile's view, the profile's
// subscription to it ends in the pool too: berth unsubscribes upstream
// once no session of any view holds it, and not before (a session of
// the whole workspace keeps its own subscription and its updates).
func TestSubscriptionEndsUpstreamWithTheProfile(t *testing.T) {
	e := newRelayEnv(t, false)
	ctx := context.Background()
	e.putProfile(t, "p", "rly")
	sub := e.sibling(t, &View{Profile: "p"}).client("2025-11-25", clientCaps{})
	rc := e.client("2025-11-25", clientCaps{})
	// On 2026-07-28 the pool's subscription is a subscriptions/listen
	// stream, which the server sees a moment later: wait for the count.
	upstream := func(want string) string {
		var got string
		_ = testkit.Within(5*time.Second, func() bool { got = rc.call(t, "subscribed", nil, nil); return got == want })
		return got
	}
	if err := sub.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: testrelay.WatchedURI}); err != nil {
		t.Fatal(err)
	}
	if got := upstream("1"); got != "1" {
		t.Fatalf("berth holds %s subscriptions upstream after the profile's session subscribed, want 1", got)
	}
	// Positive control: the profile's session gets the update.
	rc.call(t, "touch", nil, nil)
	_ = testkit.Within(5*time.Second, func() bool { return lenOf(sub, &sub.updated) > 0 })
	if lenOf(sub, &sub.updated) == 0 {
		t.Fatal("the profile's session did not get the update of a resource it offers")
	}
	// Narrowed: the boundary of its next list ends the subscription, and
	// with no other subscriber berth's upstream one.
	e.putProfile(t, "p", "other")
	if _, err := sub.cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := upstream("0"); got != "0" {
		t.Fatalf("berth still holds %s subscriptions upstream after the only subscriber's profile dropped the resource", got)
	}
	// Widened again, subscribed again, and a session of the whole
	// workspace subscribes too: narrowing ends the profile's only.
	e.putProfile(t, "p", "rly")
	if _, err := sub.cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := sub.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: testrelay.WatchedURI}); err != nil {
		t.Fatal(err)
	}
	if err := rc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: testrelay.WatchedURI}); err != nil {
		t.Fatal(err)
	}
	e.putProfile(t, "p", "other")
	if _, err := sub.cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := upstream("1"); got != "1" {
		t.Fatalf("berth holds %s subscriptions upstream while a session of the whole workspace is subscribed, want 1", got)
	}
	had := lenOf(sub, &sub.updated)
	rc.call(t, "touch", nil, nil)
	_ = testkit.Within(5*time.Second, func() bool { return lenOf(rc, &rc.updated) > 0 })
	if lenOf(rc, &rc.updated) == 0 {
		t.Fatal("the whole workspace's session lost its subscription when the profile's ended")
	}
	time.Sleep(200 * time.Millisecond)
	if n := lenOf(sub, &sub.updated); n != had {
		t.Fatalf("the narrowed profile's session got %d more updates", n-had)
	}
	if err := rc.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: testrelay.WatchedURI}); err != nil {
		t.Fatal(err)
	}
	if got := upstream("0"); got != "0" {
		t.Fatalf("berth holds %s subscriptions upstream after the last subscriber left", got)
	}
}

// A call allowed after its profile was removed is refused (the attack's
// test) and audited as refused by berth, with the reason; a call whose
// profile stays runs on the same approval (the positive control).
func TestProfileRemovedWhileWaitingIsAudited(t *testing.T) {
	e := newEnv(t, nil, allowDemo...)
	e.setProfile("p", &store.Profile{Tools: []string{wipeTool}})
	sib, err := e.srv.WithView(&View{Profile: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sib.Close() })
	ctx := context.Background()
	ct, stp := mcp.NewInMemoryTransports()
	if _, err := sib.Connect(ctx, stp); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "profile-client", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	approveAfter := func(change func()) string {
		t.Helper()
		p, done := e.callQueued(t, cs, wipeTool, map[string]any{"text": "hi"})
		change()
		if _, err := e.srv.queue.Decide(p.ID, true, false, "test"); err != nil {
			t.Fatal(err)
		}
		return <-done
	}
	if got := approveAfter(func() {}); got != "wiped hi" {
		t.Fatalf("an approved call of the profile's session: %q", got)
	}
	got := approveAfter(func() { e.setProfile("p", nil) })
	if !strings.Contains(got, "berth refused to run "+wipeTool) || !strings.Contains(got, "view changed while it waited") || !strings.Contains(got, "the profile p") || !strings.Contains(got, "Nothing was run") {
		t.Fatalf("the call of a removed profile's session, approved: %q", got)
	}
	var last AuditEntry
	_ = testkit.Within(5*time.Second, func() bool {
		a := readAudit(t, e.paths)
		if len(a) >= 2 {
			last = a[len(a)-1]
		}
		return len(a) >= 2
	})
	if last.Tool != wipeTool || last.Outcome != OutcomeRefused || last.Decision != VerdictDeny || last.DecidedBy != ByBerth || last.Profile != "p" || !strings.Contains(last.Reason, "view changed while it waited") || last.Approval == "" {
		t.Fatalf("the refused call is audited as %+v", last)
	}
}

// The view is resolved from the state once per state generation: the
// same *viewNow while the state stands, a new one at once after a change
// made through the store.
func TestViewCachedPerGeneration(t *testing.T) {
	e := newEnv(t, nil, allowDemo...)
	e.setProfile("p", &store.Profile{Tools: []string{wipeTool}})
	sib, err := e.srv.WithView(&View{Profile: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sib.Close() })
	v1, err := sib.current()
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := sib.current()
	if v1 != v2 {
		t.Fatal("the view was resolved again though the state did not move")
	}
	if !v1.offersTool("demo", wipeTool) {
		t.Fatal("the profile p does not offer wipe")
	}
	e.setProfile("p", nil)
	v3, _ := sib.current()
	if v3 == v1 || !v3.removed {
		t.Fatalf("the removal of the profile was not seen at the next read: %+v", v3)
	}
	if _, err := sib.viewRefusalErr(wipeTool); err == nil {
		t.Fatal("a call of the removed profile's tool is not refused")
	}
}

// viewRefusalErr is viewRefusal of the tool name (a test helper).
func (s *Server) viewRefusalErr(name string) (string, error) {
	plugin, _, _, _ := pool.ParseName(name)
	return plugin, s.viewRefusal(pool.RequestTool, plugin, name)
}

// New keeps its own copy of the view's Always patterns.
func TestNewClonesAlways(t *testing.T) {
	always := []string{echoTool}
	e := newEnv(t, &Options{View: &View{Mode: store.ToolsLazy, Always: always}})
	always[0] = "demo__*"
	if got := e.srv.view.Always; len(got) != 1 || got[0] != echoTool {
		t.Fatalf("the caller's slice changed the Server's Always: %v", got)
	}
}

// The refusal of a removed profile quotes the workspace and names it in
// the commands it gives.
func TestRemovedProfileErrorQuotesTheWorkspace(t *testing.T) {
	msg := (&RemovedProfileError{Profile: "desk", Workspace: "/home/a b/proj"}).Error()
	for _, want := range []string{"workspace '/home/a b/proj'", "berth profile create desk --workspace '/home/a b/proj'", "berth profile list --workspace '/home/a b/proj'"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}

// A tool berth cannot list is warned of once per change of the offered
// set, not again by the registration.
func TestNotOfferingWarnedOnce(t *testing.T) {
	var buf bytes.Buffer
	s := &Server{ms: mcp.NewServer(&mcp.Implementation{Name: "berth", Version: "test"}, nil), tools: map[string]string{},
		log: slog.New(slog.NewTextHandler(&buf, nil))}
	v := &viewNow{}
	s.applyTools(v, costTools())
	s.applyTools(v, costTools())
	if n := strings.Count(buf.String(), "not offering a tool"); n != 1 {
		t.Fatalf("warned %d times of the tool berth cannot list, want once:\n%s", n, buf.String())
	}
	if _, ok := s.tools["beta__up__notobject"]; ok {
		t.Fatal("listed a tool whose input schema is not an object")
	}
}

// A profile's session is told of completions and resource subscriptions
// only when a plugin the profile offers declares them.
func TestCapsOfTheProfile(t *testing.T) {
	e := newRelayEnv(t, false)
	e.putProfile(t, "mine", "rly")
	e.putProfile(t, "other", "other")
	mine := e.sibling(t, &View{Profile: "mine"}).client("2025-11-25", clientCaps{})
	if c := mine.cs.InitializeResult().Capabilities; c.Completions == nil || c.Resources == nil || !c.Resources.Subscribe {
		t.Fatalf("a profile offering rly is not told of its completions and subscriptions: %+v", c)
	}
	other := e.sibling(t, &View{Profile: "other"}).client("2025-11-25", clientCaps{})
	if c := other.cs.InitializeResult().Capabilities; c.Completions != nil || c.Resources != nil && c.Resources.Subscribe {
		t.Fatalf("a profile without rly is told of rly's completions or subscriptions: %+v %+v", c.Completions, c.Resources)
	}
}
