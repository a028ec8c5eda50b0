//lint:file-ignore SA1019 the relay carries MCP logging during its deprecation window

package mcpexport

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testrelay"
	"github.com/berth-mcp/berth/store"
)

// Attacks on issue 23 (profiles, lazy mode, the serve-session registry).
// Each test fails while the hole is open.

// A profile is what one client is offered: a plugin outside it must not
// reach that client by any path. A plugin server's log messages are
// relayed to every legacy session of the family that set a level
// (relayLog over the shared logLevels), so a client of a profile that
// leaves the plugin out reads what that plugin logs while another client
// uses it: the profile leaks.
func TestAttack23LogsOfPluginsOutsideTheProfile(t *testing.T) {
	e := newRelayEnv(t, true)
	st := store.Open(e.paths, nil)
	ws := e.pool.WorkspaceDir()
	// The profile "other" offers the plugin "other" only: nothing of rly.
	if _, err := st.Update(context.Background(), func(s *store.State) error {
		w := s.Workspaces[ws]
		w.Profiles = map[string]*store.Profile{"other": {Plugins: []string{"other"}, Mode: store.ToolsFull, CreatedAt: time.Now().UTC().Truncate(time.Second)}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sib, err := e.srv.WithView(&View{Profile: "other"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sib.Close() })
	pe := *e
	pe.srv = sib
	outside := pe.client("2025-11-25", clientCaps{})
	if err := outside.cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	// The profile's client is offered nothing of rly.
	tools, err := outside.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 0 {
		t.Fatalf("the profile other lists %d tools, want none", len(tools.Tools))
	}
	// Another client, of the whole workspace, uses rly, which logs.
	rc := e.client("2025-11-25", clientCaps{})
	rc.setLevel(t, "info")
	rc.call(t, "log", nil, nil)
	_ = testkit.Within(10*time.Second, func() bool { return lenOf(rc, &rc.logs) >= 3 })
	time.Sleep(300 * time.Millisecond)
	outside.mu.Lock()
	defer outside.mu.Unlock()
	if n := len(outside.logs); n != 0 {
		raw, _ := json.Marshal(outside.logs[0])
		t.Fatalf("a client of the profile other (no rly) got %d log messages of rly, e.g. %s", n, raw)
	}
}

// ReadServing trusts a registry file as long as some process has its
// PID: a berth serve that was killed (SIGKILL, OOM, power loss) cannot
// remove its file, and once the PID is reused (after a reboot PIDs are
// reused at once) berth status shows the dead serve's clients and
// profiles as connected, for as long as that other process lives. Here
// the PID is the test's parent (go test), which is no berth serve.
func TestAttack23ServingRecordOfReusedPID(t *testing.T) {
	dir := t.TempDir()
	pid := os.Getppid()
	rec := ServeRecord{PID: pid, Workspace: "/w", StartedAt: time.Now().UTC().Add(-time.Hour),
		Sessions: []ServeSession{{Profile: "desktop", Mode: store.ToolsLazy, Transport: TransportStdio, Client: "claude-ai 1", Since: time.Now().UTC().Add(-time.Hour), PID: pid}}}
	data, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadServing(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Fatalf("ReadServing reports %d berth serve(s) with %d session(s) from the file of a serve that no longer runs (its PID %d is another process now)", len(recs), len(recs[0].Sessions), pid)
	}
}

// A profile is read at every boundary, "a change to it applies as a
// policy change does". A session of a profile that subscribed to a
// resource of a plugin keeps getting that plugin's updates after the
// profile stops offering the plugin (and after the catalog boundary that
// removed the resource from its list): the subscription, checked only
// when it was made, outlives the profile it was made under, and berth
// stays subscribed upstream for it.
func TestAttack23SubscriptionOutlivesTheProfile(t *testing.T) {
	e := newRelayEnv(t, false)
	st := store.Open(e.paths, nil)
	ws := e.pool.WorkspaceDir()
	put := func(plugins ...string) {
		t.Helper()
		if _, err := st.Update(context.Background(), func(s *store.State) error {
			s.Workspaces[ws].Profiles = map[string]*store.Profile{"p": {Plugins: plugins, Mode: store.ToolsFull, CreatedAt: time.Now().UTC().Truncate(time.Second)}}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("rly")
	sib, err := e.srv.WithView(&View{Profile: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sib.Close() })
	pe := *e
	pe.srv = sib
	sub := pe.client("2025-11-25", clientCaps{})
	ctx := context.Background()
	if err := sub.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: testrelay.WatchedURI}); err != nil {
		t.Fatal(err)
	}
	// The profile no longer offers rly; the session's next list is a
	// boundary that applies it.
	put("other")
	res, err := sub.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 0 {
		t.Fatalf("the narrowed profile still lists %d resources", len(res.Resources))
	}
	if _, err := sub.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: testrelay.WatchedURI}); err == nil {
		t.Fatal("the narrowed profile still reads rly's resource")
	}
	// Another client, of the whole workspace, has rly update it.
	rc := e.client("2025-11-25", clientCaps{})
	rc.call(t, "touch", nil, nil)
	_ = testkit.Within(3*time.Second, func() bool { return lenOf(sub, &sub.updated) > 0 })
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if len(sub.updated) != 0 {
		t.Fatalf("a session of profile p, which no longer offers rly, got rly's updates: %v", sub.updated)
	}
}

// A profile is read "before every call", and the pool checks its own
// state again once an approval came ("Approval may have taken a while:
// check again": a tool denied meanwhile does not run). The view is not
// checked again: a call of a profile's session that waits in the queue
// runs after `berth approve` although the profile was removed meanwhile
// (the operator removed it to cut that client off, or narrowed it to
// leave the tool out). Nothing outside the view may run.
func TestAttack23ProfileRemovedWhileTheCallWaits(t *testing.T) {
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
	p, done := e.callQueued(t, cs, wipeTool, map[string]any{"text": "hi"})
	// The operator removes the profile, then the entry is approved.
	e.setProfile("p", nil)
	if _, err := e.srv.queue.Decide(p.ID, true, false, "test"); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got == "wiped hi" {
		t.Fatalf("the call of a removed profile's session ran after the approval: %q", got)
	}
}
