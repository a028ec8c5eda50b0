package mcpexport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// allowDemo allows every tool of the demo plugin but the denied secret:
// a test that a tool is not offered must not pass because the policy
// happened to refuse it.
var allowDemo = []store.PolicyRule{
	{Pattern: "demo__*", Action: store.ActionAllow},
	{Pattern: secretTool, Action: store.ActionDeny},
}

func lazy(always ...string) *Options {
	return &Options{View: &View{Mode: store.ToolsLazy, Always: always}}
}

// setProfile writes (p nil: removes) the workspace's profile name.
func (e *env) setProfile(name string, p *store.Profile) {
	e.t.Helper()
	ws := e.pool.WorkspaceDir()
	_, err := e.store.Update(context.Background(), func(st *store.State) error {
		w := st.Workspaces[ws]
		if p == nil {
			delete(w.Profiles, name)
			return nil
		}
		if w.Profiles == nil {
			w.Profiles = map[string]*store.Profile{}
		}
		q := *p
		if q.Mode == "" {
			q.Mode = store.ToolsFull
		}
		q.CreatedAt = time.Now().UTC().Truncate(time.Second)
		w.Profiles[name] = &q
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// find calls berth_find_tools and returns its matches' names and
// result, checking that the text and the structured content agree.
func find(t *testing.T, cs *mcp.ClientSession, query string, limit int) ([]string, FindResult) {
	t.Helper()
	args := map[string]any{"query": query}
	if limit > 0 {
		args["limit"] = limit
	}
	res := callRaw(t, cs, MetaFindTools, args)
	if res.IsError {
		t.Fatalf("berth_find_tools %q: %s", query, textOf(res))
	}
	var fr FindResult
	if err := json.Unmarshal([]byte(textOf(res)), &fr); err != nil {
		t.Fatalf("berth_find_tools text is not its JSON result: %v\n%s", err, textOf(res))
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var sfr FindResult
	if err := json.Unmarshal(sc, &sfr); err != nil {
		t.Fatalf("structured content %s: %v", sc, err)
	}
	sc, _ = json.Marshal(sfr)
	if txt, _ := json.Marshal(fr); string(sc) != string(txt) {
		t.Fatalf("structured content %s differs from the text %s", sc, txt)
	}
	var names []string
	for _, f := range fr.Tools {
		names = append(names, f.Name)
	}
	return names, fr
}

func callRaw(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// callMeta calls name through berth_call_tool.
func callMeta(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	meta := map[string]any{"name": name}
	if args != nil {
		meta["arguments"] = args
	}
	res := callRaw(t, cs, MetaCallTool, meta)
	return textOf(res), res.IsError
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callQueued starts a call of name with args from cs and waits until it
// waits in e's approval queue: it returns the queue entry, and the
// channel of the call's text ("error: …" for a protocol error).
func (e *env) callQueued(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*Pending, <-chan string) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- textOf(res)
	}()
	var p *Pending
	testkit.Eventually(t, 20*time.Second, "the call of "+name+" to wait in the queue", func() bool {
		list, _ := e.srv.queue.List()
		if len(list) == 1 {
			p = list[0]
		}
		return p != nil
	})
	return p, done
}

func sorted(names []string) string {
	s := slices.Clone(names)
	sort.Strings(s)
	return strings.Join(s, " ")
}

// lastAudit is the last audit entry about tool.
func lastAudit(t *testing.T, e *env, tool string) AuditEntry {
	t.Helper()
	var last AuditEntry
	for _, a := range readAudit(t, e.paths) {
		if a.Tool == tool {
			last = a
		}
	}
	return last
}

// In lazy mode tools/list holds the two meta-tools, as MetaTools defines
// them, and the Always tools the policy lets through; prompts and
// resources are listed as in full mode.
func TestLazyListsMetaToolsAndAlways(t *testing.T) {
	e := newEnv(t, lazy(echoTool, secretTool), allowDemo...)
	cs := e.client(legacy, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		switch tl.Name {
		case MetaCallTool:
			if tl.Annotations != nil {
				t.Errorf("berth_call_tool carries annotations %+v; it must carry no readOnlyHint or idempotentHint", tl.Annotations)
			}
		case MetaFindTools:
			if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
				t.Errorf("berth_find_tools is not marked read-only: %+v", tl.Annotations)
			}
		}
	}
	if got, want := sorted(names), sorted([]string{MetaCallTool, MetaFindTools, echoTool}); got != want {
		t.Fatalf("lazy tools/list: %s, want %s", got, want)
	}
	for _, m := range MetaTools() {
		for _, tl := range res.Tools {
			if tl.Name == m.Name {
				got, _ := json.Marshal(tl)
				want, _ := json.Marshal(m)
				if string(got) != string(want) {
					t.Errorf("%s listed as %s, want %s", m.Name, got, want)
				}
			}
		}
	}
	prompts, err := cs.ListPrompts(context.Background(), nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "demo__up__note" {
		t.Fatalf("prompts in lazy mode: %+v %v", prompts, err)
	}
	rs, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(rs.Resources) != 1 {
		t.Fatalf("resources in lazy mode: %+v %v", rs, err)
	}
}

// berth_find_tools finds a tool by its words and returns it as full mode
// lists it; a denied tool is never found nor called; berth_call_tool runs
// the real tool, audited under its name and marked as coming through the
// meta-tool; a direct call of a tool lazy mode does not list is unknown.
func TestLazyFindAndCall(t *testing.T) {
	e := newEnv(t, lazy(), allowDemo...)
	cs := e.client(legacy, nil)
	names, fr := find(t, cs, "echo the text", 0)
	if len(names) == 0 || names[0] != echoTool {
		t.Fatalf("find \"echo the text\": %v", names)
	}
	got := fr.Tools[0]
	if got.Description != "echo the text" || got.Annotations == nil || !got.Annotations.ReadOnlyHint {
		t.Fatalf("found %+v", got)
	}
	if schema, _ := json.Marshal(got.InputSchema); !strings.Contains(string(schema), `"text"`) {
		t.Fatalf("found input schema %s has no text parameter", schema)
	}
	for _, q := range []string{"secret", "a tool the operator denies", secretTool} {
		if names, _ := find(t, cs, q, MaxFindLimit); slices.Contains(names, secretTool) {
			t.Fatalf("find %q found the denied %s: %v", q, secretTool, names)
		}
	}
	if names, _ := find(t, cs, "tool", 2); len(names) > 2 {
		t.Fatalf("limit 2 returned %d", len(names))
	}

	if text, isErr := callMeta(t, cs, echoTool, map[string]any{"text": "hi"}); isErr || text != "echo: hi" {
		t.Fatalf("berth_call_tool echo: %q %v", text, isErr)
	}
	if a := lastAudit(t, e, echoTool); a.Outcome != OutcomeRan || a.Via != MetaCallTool || a.Arguments.(map[string]any)["text"] != "string" {
		t.Fatalf("audit of the call through the meta-tool: %+v", a)
	}
	for _, name := range []string{secretTool, "demo__up__nothing", MetaCallTool, MetaFindTools, ""} {
		text, isErr := callMeta(t, cs, name, map[string]any{"text": "hi"})
		if !isErr || strings.Contains(text, "ran") || !strings.Contains(text, MetaFindTools) {
			t.Fatalf("berth_call_tool %q: %q %v", name, text, isErr)
		}
	}
	// Not listed in lazy mode: not callable directly.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: wipeTool, Arguments: map[string]any{"text": "x"}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("direct call of an unlisted tool: %v", err)
	}
	for _, a := range readAudit(t, e.paths) {
		if a.Tool == secretTool && a.Outcome == OutcomeRan || a.Tool == wipeTool {
			t.Fatalf("audit: %+v", a)
		}
	}
}

// The meta-tools' arguments are checked strictly: what is wrong is a tool
// error that says what to send.
func TestLazyMetaArgumentsStrict(t *testing.T) {
	e := newEnv(t, lazy(), allowDemo...)
	cs := e.client(legacy, nil)
	for _, tc := range []struct {
		tool string
		args any
		says string
	}{
		{MetaFindTools, map[string]any{}, "query must be a string"},
		{MetaFindTools, map[string]any{"query": 5}, "query must be a string"},
		{MetaFindTools, map[string]any{"query": "  "}, "no words"},
		{MetaFindTools, map[string]any{"query": "x", "limit": 0}, "limit must be from 1 to 20"},
		{MetaFindTools, map[string]any{"query": "x", "limit": MaxFindLimit + 1}, "limit must be from 1 to 20"},
		{MetaFindTools, map[string]any{"query": "x", "limit": 2.5}, "limit must be an integer"},
		{MetaFindTools, map[string]any{"query": "x", "limit": "3"}, "limit must be an integer"},
		{MetaFindTools, map[string]any{"query": "x", "max": 3}, `unknown argument "max"`},
		{MetaFindTools, map[string]any{"query": strings.Repeat("x ", 600)}, "a few words are enough"},
		{MetaCallTool, map[string]any{}, "name must be a string"},
		{MetaCallTool, map[string]any{"name": 5}, "name must be a string"},
		{MetaCallTool, map[string]any{"name": echoTool, "arguments": []any{"hi"}}, "arguments must be a JSON object"},
		{MetaCallTool, map[string]any{"name": echoTool, "arguments": nil}, "not null"},
		{MetaCallTool, map[string]any{"name": echoTool, "args": map[string]any{}}, `unknown argument "args"`},
	} {
		res := callRaw(t, cs, tc.tool, tc.args)
		text := textOf(res)
		if !res.IsError || !strings.Contains(text, tc.says) || !strings.Contains(text, "send {") || strings.Contains(text, "echo:") {
			t.Errorf("%s %v: %v %q, want a tool error saying %q and what to send", tc.tool, tc.args, res.IsError, text, tc.says)
		}
	}
	if a := lastAudit(t, e, echoTool); a.Outcome != "" {
		t.Fatalf("a refused meta-call reached the tool: %+v", a)
	}
}

// A call through berth_call_tool under the ask policy is asked about as
// the real tool: the person sees its name and arguments, never the
// meta-tool's; by elicitation (legacy) and by input requests (2026-07-28);
// a decline refuses it and nothing runs.
func TestLazyCallAsksAboutTheRealTool(t *testing.T) {
	for _, tc := range []struct {
		name, proto, decision string
		by                    DecidedBy
	}{
		{"elicitation", legacy, "allow-once", ByElicitation},
		{"elicitation deny", legacy, "deny", ByElicitation},
		{"input requests", "", "allow-once", ByInputRequests},
		{"input requests deny", "", "deny", ByInputRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, lazy())
			var mu sync.Mutex
			var asked []string
			cs := e.client(tc.proto, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": tc.decision}}, nil
			})
			text, isErr := callMeta(t, cs, wipeTool, map[string]any{"text": "hi"})
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 {
				t.Fatalf("asked %d times", len(asked))
			}
			if msg := asked[0]; !strings.Contains(msg, "Tool:        "+wipeTool) || !strings.Contains(msg, `"text": "hi"`) || !strings.Contains(msg, "DESTRUCTIVE") || strings.Contains(msg, MetaCallTool) {
				t.Fatalf("the approval form does not show the real tool and its arguments:\n%s", msg)
			}
			ran := tc.decision == "allow-once"
			if ran && (isErr || text != "wiped hi") || !ran && (!isErr || !strings.Contains(text, "berth refused to run "+wipeTool) || strings.Contains(text, "wiped")) {
				t.Fatalf("result %q %v", text, isErr)
			}
			a := lastAudit(t, e, wipeTool)
			if a.Via != MetaCallTool || a.DecidedBy != tc.by || (a.Outcome == OutcomeRan) != ran || a.Plugin != "demo" {
				t.Fatalf("audit %+v", a)
			}
		})
	}
}

// A client that cannot be asked waits in the approval queue, under the
// real tool's name; `berth approve` (Queue.Decide) runs it.
func TestLazyCallWaitsInTheQueue(t *testing.T) {
	e := newEnv(t, lazy())
	cs := e.client(legacy, nil)
	type result struct {
		text  string
		isErr bool
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: MetaCallTool, Arguments: map[string]any{"name": wipeTool, "arguments": map[string]any{"text": "hi"}}})
		if err != nil {
			done <- result{err.Error(), true}
			return
		}
		done <- result{textOf(res), res.IsError}
	}()
	var p *Pending
	testkit.Eventually(t, 20*time.Second, "the call to wait in the queue", func() bool {
		list, _ := e.srv.queue.List()
		if len(list) == 1 {
			p = list[0]
		}
		return p != nil
	})
	if p.Tool != wipeTool || p.Plugin != "demo" || !strings.Contains(string(p.Arguments), `"hi"`) {
		t.Fatalf("queued %+v", p)
	}
	if _, err := e.srv.queue.Decide(p.ID, true, false, "test"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.isErr || r.text != "wiped hi" {
		t.Fatalf("after approval: %+v", r)
	}
	if a := lastAudit(t, e, wipeTool); a.Via != MetaCallTool || a.DecidedBy != ByQueue || a.Approval != p.ID || a.Outcome != OutcomeRan {
		t.Fatalf("audit %+v", a)
	}
}

// A tool the server added after its surface was pinned is withheld: not
// found, and berth_call_tool refuses it as a direct call does.
func TestLazySurfaceChangeWithheld(t *testing.T) {
	e := newEnv(t, lazy(echoTool), allowDemo...)
	cs := e.client(legacy, nil)
	const extra = "demo__up__extra"
	if text, isErr := callTool(t, cs, echoTool, "add a tool"); isErr {
		t.Fatal(text)
	}
	testkit.Eventually(t, 20*time.Second, "the added tool to be withheld", func() bool {
		e.srv.Sync(context.Background())
		for _, st := range e.pool.Status() {
			for _, c := range st.Changes {
				if c.Tool == "extra" {
					return true
				}
			}
		}
		return false
	})
	if names, _ := find(t, cs, "an extra tool added after the surface was pinned", MaxFindLimit); slices.Contains(names, extra) {
		t.Fatalf("found the withheld %s: %v", extra, names)
	}
	text, isErr := callMeta(t, cs, extra, nil)
	if !isErr || strings.Contains(text, "extra ran") || !strings.Contains(text, "berth accept demo") {
		t.Fatalf("berth_call_tool of a withheld tool: %q %v", text, isErr)
	}
	// The control: once the change is accepted, the same query finds the
	// tool and berth_call_tool runs it.
	acceptChanges(t, e, "demo")
	if names, _ := find(t, cs, "an extra tool added after the surface was pinned", MaxFindLimit); !slices.Contains(names, extra) {
		t.Fatalf("after berth accept, %s not found: %v", extra, names)
	}
	if text, isErr := callMeta(t, cs, extra, nil); isErr || text != "extra ran" {
		t.Fatalf("berth_call_tool of the accepted tool: %q %v", text, isErr)
	}
}

// acceptChanges does what berth accept plugin does: it records the live
// surface the pool withholds as the pinned one.
func acceptChanges(t *testing.T, e *env, plugin string) {
	t.Helper()
	var changes []pool.ToolChange
	for _, st := range e.pool.Status() {
		if st.Plugin == plugin {
			changes = append(changes, st.Changes...)
		}
	}
	if len(changes) == 0 {
		t.Fatalf("%s has no change to accept", plugin)
	}
	if err := e.pool.Accept(context.Background(), plugin, changes); err != nil {
		t.Fatal(err)
	}
}

// A tool of a plugin disabled or revoked leaves berth_find_tools at the
// same boundary as tools/list: the next request, without waiting for the
// sync worker.
func TestLazySearchFollowsTheCatalog(t *testing.T) {
	for _, how := range []string{"disable", "revoke"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t, lazy(echoTool), allowDemo...)
			cs := e.client(legacy, nil)
			if names, _ := find(t, cs, "wipe everything", 1); !slices.Equal(names, []string{wipeTool}) {
				t.Fatalf("find before: %v", names)
			}
			ctx := context.Background()
			switch how {
			case "disable":
				if _, err := pool.Disable(ctx, e.store, e.pool.WorkspaceDir(), "demo"); err != nil {
					t.Fatal(err)
				}
			case "revoke":
				recs, err := e.store.Find("demo", "1.0.0")
				if err != nil || len(recs) != 1 {
					t.Fatal(recs, err)
				}
				if _, err := e.store.MarkRevoked(ctx, store.Revocation{Name: "demo", Version: "1.0.0", Digest: recs[0].Digest, Catalog: "test", Reason: "test"}); err != nil {
					t.Fatal(err)
				}
			}
			if names, _ := find(t, cs, "wipe everything", 1); len(names) != 0 {
				t.Fatalf("find after %s: %v", how, names)
			}
			if names := toolNames(t, cs); sorted(names) != sorted([]string{MetaCallTool, MetaFindTools}) {
				t.Fatalf("tools/list after %s: %v", how, names)
			}
			if text, isErr := callMeta(t, cs, wipeTool, map[string]any{"text": "x"}); !isErr || strings.Contains(text, "wiped") {
				t.Fatalf("call after %s: %q", how, text)
			}
		})
	}
}

// A profile's tool patterns and plugins narrow what is listed, found and
// callable, directly or through the meta-tool; a change to the profile
// applies at the next call, even of a tool still registered.
func TestProfileNarrowsTheView(t *testing.T) {
	t.Run("full", func(t *testing.T) {
		e := newEnv(t, &Options{View: &View{Profile: "narrow"}}, allowDemo...)
		e.setProfile("narrow", &store.Profile{Tools: []string{echoTool, wipeTool}})
		cs := e.client(legacy, nil)
		if names := toolNames(t, cs); sorted(names) != sorted([]string{echoTool, wipeTool}) {
			t.Fatalf("tools/list of the profile: %v", names)
		}
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "demo__up__raw", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Fatalf("direct call outside the profile: %v", err)
		}
		// Narrowed while wipe is still registered: refused at once.
		e.setProfile("narrow", &store.Profile{Tools: []string{echoTool}})
		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: wipeTool, Arguments: map[string]any{"text": "x"}})
		if err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Fatalf("direct call of a tool the profile no longer offers: %v", err)
		}
		if names := toolNames(t, cs); !slices.Equal(names, []string{echoTool}) {
			t.Fatalf("tools/list after the change: %v", names)
		}
		if text, isErr := callTool(t, cs, echoTool, "hi"); isErr || text != "echo: hi" {
			t.Fatalf("echo: %q", text)
		}
		for _, a := range readAudit(t, e.paths) {
			if a.Tool != echoTool {
				t.Fatalf("audit: %+v", a)
			}
		}
	})
	t.Run("lazy", func(t *testing.T) {
		e := newEnv(t, &Options{View: &View{Profile: "narrow"}}, allowDemo...)
		e.setProfile("narrow", &store.Profile{Tools: []string{echoTool}, Mode: store.ToolsLazy})
		cs := e.client(legacy, nil)
		if names := toolNames(t, cs); sorted(names) != sorted([]string{MetaCallTool, MetaFindTools}) {
			t.Fatalf("tools/list of the lazy profile: %v", names)
		}
		if names, _ := find(t, cs, "wipe everything", MaxFindLimit); slices.Contains(names, wipeTool) {
			t.Fatalf("found a tool outside the profile: %v", names)
		}
		if text, isErr := callMeta(t, cs, wipeTool, map[string]any{"text": "x"}); !isErr || strings.Contains(text, "wiped") || !strings.Contains(text, MetaFindTools) {
			t.Fatalf("berth_call_tool outside the profile: %q", text)
		}
		if text, isErr := callMeta(t, cs, echoTool, map[string]any{"text": "hi"}); isErr || text != "echo: hi" {
			t.Fatalf("berth_call_tool in the profile: %q", text)
		}
		// Narrowed after the search: the call is refused.
		e.setProfile("narrow", &store.Profile{Tools: []string{wipeTool}, Mode: store.ToolsLazy})
		if text, isErr := callMeta(t, cs, echoTool, map[string]any{"text": "hi"}); !isErr || strings.Contains(text, "echo: hi") {
			t.Fatalf("berth_call_tool of a tool the profile no longer offers: %q", text)
		}
	})
	t.Run("plugins", func(t *testing.T) {
		e := newEnv(t, &Options{View: &View{Profile: "other"}}, allowDemo...)
		e.setProfile("other", &store.Profile{Plugins: []string{"other"}})
		cs := e.client(legacy, nil)
		ctx := context.Background()
		if names := toolNames(t, cs); len(names) != 0 {
			t.Fatalf("tools of a profile of another plugin: %v", names)
		}
		if ps, err := cs.ListPrompts(ctx, nil); err != nil || len(ps.Prompts) != 0 {
			t.Fatalf("prompts: %+v %v", ps, err)
		}
		if rs, err := cs.ListResources(ctx, nil); err != nil || len(rs.Resources) != 0 {
			t.Fatalf("resources: %+v %v", rs, err)
		}
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "demo__up__note", Arguments: map[string]string{"topic": "x"}}); err == nil {
			t.Fatal("got a prompt of a plugin outside the profile")
		}
		for _, uri := range []string{"demo://up/static", "demo://up/item/1"} {
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Fatalf("read %s of a plugin outside the profile", uri)
			}
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: map[string]any{"text": "x"}}); err == nil {
			t.Fatal("called a tool of a plugin outside the profile")
		}
		if a := readAudit(t, e.paths); len(a) != 0 {
			t.Fatalf("audit: %+v", a)
		}
	})
	t.Run("removed", func(t *testing.T) {
		e := newEnv(t, &Options{View: &View{Profile: "gone", Mode: store.ToolsLazy}}, allowDemo...)
		cs := e.client(legacy, nil)
		if names := toolNames(t, cs); len(names) != 0 {
			t.Fatalf("tools of a removed profile: %v", names)
		}
		text, isErr := callTool(t, cs, echoTool, "hi")
		if !isErr || !strings.Contains(text, "profile gone") || !strings.Contains(text, "berth profile create gone") {
			t.Fatalf("call of a removed profile: %q", text)
		}
	})
}

// Progress a plugin server sends during a call through berth_call_tool
// reaches the client under the token of its berth_call_tool request.
func TestLazyCallRelaysProgress(t *testing.T) {
	e := newRelayEnv(t, false)
	e.srv.Close() // the relay env's Server is replaced by a lazy one
	e.srv = New(e.pool, lazy())
	rc := e.client("2025-11-25", clientCaps{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: MetaCallTool, Arguments: map[string]any{"name": "rly__up__progress", "arguments": map[string]any{"n": 3}}}
	p.SetProgressToken("meta-token")
	res, err := rc.cs.CallTool(ctx, p)
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	rc.waitProgress(3)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var steps []string
	for _, p := range rc.progress {
		steps = append(steps, fmt.Sprintf("%v %g/%g", p.ProgressToken, p.Progress, p.Total))
	}
	if want := "meta-token 1/3,meta-token 2/3,meta-token 3/3"; strings.Join(steps, ",") != want {
		t.Fatalf("progress relayed: %q, want %q", strings.Join(steps, ","), want)
	}
}

// A drifted plugin's tool is refused through berth_call_tool with the
// words of a direct call; a tool outside the profile stays unknown, its
// plugin's drift not even named.
func TestLazyDriftAndTheView(t *testing.T) {
	e := newEnv(t, &Options{View: &View{Profile: "p", Mode: store.ToolsLazy}}, allowDemo...)
	e.setProfile("p", &store.Profile{Tools: []string{echoTool}})
	cs := e.client(legacy, nil)
	if text, isErr := callMeta(t, cs, echoTool, map[string]any{"text": "hi"}); isErr {
		t.Fatal(text)
	}
	recs, err := e.store.Find("demo", "1.0.0")
	if err != nil || len(recs) != 1 {
		t.Fatal(recs, err)
	}
	d, _ := store.ParseDigest(recs[0].Digest)
	snap := e.paths.Snapshot(d)
	os.Chmod(snap, 0o755)
	if err := os.WriteFile(filepath.Join(snap, "added.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the drift to be noticed", func() bool {
		text, _ := callMeta(t, cs, echoTool, map[string]any{"text": "hi"})
		return strings.Contains(text, "added added.txt")
	})
	text, isErr := callMeta(t, cs, echoTool, map[string]any{"text": "hi"})
	if !isErr || !strings.HasPrefix(text, "berth refused to run "+echoTool+": ") || !strings.Contains(text, "berth verify") {
		t.Fatalf("berth_call_tool of a drifted tool: %q", text)
	}
	text, isErr = callMeta(t, cs, wipeTool, map[string]any{"text": "hi"})
	if !isErr || strings.Contains(text, "added.txt") || !strings.Contains(text, MetaFindTools) {
		t.Fatalf("berth_call_tool of a tool outside the profile, its plugin drifted: %q", text)
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: wipeTool, Arguments: map[string]any{"text": "x"}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("direct call of a tool outside the profile, its plugin drifted: %v", err)
	}
}

// lazyOAuthEnv is newOAuthEnv served in lazy mode.
func lazyOAuthEnv(t *testing.T, login bool) *oauthEnv {
	o := newOAuthEnv(t, login)
	o.srv.Close() // replaced by a lazy one
	o.mu.Lock()
	o.srv = New(o.pool, lazy())
	o.mu.Unlock()
	return o
}

// A call through berth_call_tool whose server waits for a sign-in signs
// in as a direct call does: the error naming berth login for a client
// that cannot open a link, the URL elicitation on a legacy session, the
// input request and its retry (requestState) on a 2026-07-28 session.
func TestLazyCallSignsIn(t *testing.T) {
	t.Run("never signed in", func(t *testing.T) {
		o := lazyOAuthEnv(t, false)
		form := o.client(legacy, nil)
		text, isErr := callMeta(t, form, whoamiTool, nil)
		if !isErr || !strings.Contains(text, "berth login demo__up") || !strings.Contains(text, "did not declare URL-mode elicitation") {
			t.Fatalf("%q %v", text, isErr)
		}
		for _, proto := range []string{legacy, ""} {
			bc := o.browserClientOn(proto, "accept")
			if text, isErr := callMeta(t, bc.cs, whoamiTool, nil); isErr || text != "signed in as alice" {
				t.Fatalf("%s: %q %v (status %+v)", proto, text, isErr, o.pool.Status())
			}
		}
	})
	t.Run("expired, modern", func(t *testing.T) {
		o := lazyOAuthEnv(t, true)
		o.waitRunning()
		o.f.revokeAll()
		bc := o.browserClientOn("", "accept")
		if text, isErr := callMeta(t, bc.cs, whoamiTool, nil); isErr || text != "signed in as alice" {
			t.Fatalf("%q %v", text, isErr)
		}
		if asked := bc.elicitations(); len(asked) != 1 || asked[0].Mode != "url" {
			t.Fatalf("elicitations %+v", asked)
		}
		var via []string
		for _, a := range readAudit(t, o.paths) {
			via = append(via, string(a.Kind)+":"+a.Via)
		}
		if !slices.Contains(via, string(KindSignIn)+":"+MetaCallTool) || !slices.Contains(via, ":"+MetaCallTool) {
			t.Fatalf("audit kinds and via: %v", via)
		}
	})
}

// The meta-tools' argument parsers never panic, and what they accept is
// what their schemas say: a non-empty query and a limit in range; a
// non-empty name and arguments absent or one JSON object.
func FuzzMetaArgs(f *testing.F) {
	for _, s := range []string{`{"query":"read a file","limit":3}`, `{"query":"x"}`, `{"query":"x","limit":1e1}`, `{"name":"a__b__c","arguments":{"x":[1,{"y":null}]}}`,
		`{"name":"a","arguments":null}`, `{"name":"a","name":"b"}`, `{"query":"\ud800"}`, `[]`, `{"limit":-0}`, ` {"name":"a", "arguments" : {} } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if q, limit, err := findArgs(raw); err == nil {
			if strings.TrimSpace(q) == "" || len(q) > maxQuery || limit < 1 || limit > MaxFindLimit {
				t.Fatalf("findArgs accepted %q: %q %d", raw, q, limit)
			}
		} else if !strings.Contains(err.Error(), "send {") {
			t.Fatalf("findArgs error does not say what to send: %v", err)
		}
		if name, args, err := callArgs(raw); err == nil {
			if name == "" || args != nil && (!json.Valid(args) || args[0] != '{') {
				t.Fatalf("callArgs accepted %q: %q %q", raw, name, args)
			}
		} else if !strings.Contains(err.Error(), "send {") {
			t.Fatalf("callArgs error does not say what to send: %v", err)
		}
	})
}

// The search index is kept while the offered tools stay the same, and
// made afresh when they change.
func TestLazyIndexRebuiltOnlyOnChange(t *testing.T) {
	e := newEnv(t, lazy(), allowDemo...)
	cs := e.client(legacy, nil)
	find(t, cs, "echo", 1)
	offered := func() *offeredTools {
		e.srv.syncMu.Lock()
		defer e.srv.syncMu.Unlock()
		return e.srv.offered
	}
	first := offered()
	find(t, cs, "wipe", 1)
	toolNames(t, cs)
	if offered() != first || first.index == nil {
		t.Fatal("the index was made again, or not at all, with nothing changed")
	}
	if err := e.store.SetPolicy(context.Background(), store.PolicyRule{Pattern: wipeTool, Action: store.ActionDeny}); err != nil {
		t.Fatal(err)
	}
	if names, _ := find(t, cs, "wipe everything", 1); len(names) != 0 || offered() == first {
		t.Fatalf("after denying wipe: %v, index kept: %v", names, offered() == first)
	}
}
