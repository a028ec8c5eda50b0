//go:build unix

package pool

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

func TestExportName(t *testing.T) {
	long := strings.Repeat("x", 60)
	for _, tc := range []struct{ plugin, server, tool, want string }{
		{"acme-notes", "notes", "search", "acme-notes__notes__search"},
		{"a", "b", "read.file", "a__b__read_file-"},        // sanitized: hash suffix
		{"acme", "s", long, "acme__s__" + long[:46] + "-"}, // cut to 55 + "-" + 8 hex
		{"acme", "s", "ünï", "acme__s___n_-"},              // one '_' per rune
	} {
		got := ExportName(tc.plugin, tc.server, tc.tool)
		if !ValidName(got) || !strings.HasPrefix(got, tc.want) {
			t.Errorf("ExportName(%q, %q, %q) = %q, want prefix %q", tc.plugin, tc.server, tc.tool, got, tc.want)
		}
		if got != ExportName(tc.plugin, tc.server, tc.tool) {
			t.Error("not deterministic")
		}
		if strings.HasSuffix(tc.want, "-") && len(got) != len(tc.want)+8 {
			t.Errorf("%q: want an 8-hex suffix", got)
		}
	}
	// Two long names that differ only after the cut stay distinct.
	a, b := ExportName("p", "s", long+"a"), ExportName("p", "s", long+"b")
	if a == b || len(a) != 64 || len(b) != 64 {
		t.Fatalf("%q %q", a, b)
	}
	// "foo.bar" and "foo_bar" do not meet.
	if ExportName("p", "s", "foo.bar") == ExportName("p", "s", "foo_bar") {
		t.Fatal("sanitized name collides with a literal one")
	}
}

// The grammar leaves no doubt where a plugin's name ends: plugins "a" and
// "a-b" with servers "b-c" and "c", which used to export the same
// "a-b-c__x", export different names, and every name splits back into its
// plugin, provider and tool.
func TestNameBoundaries(t *testing.T) {
	if ExportName("a", "b-c", "x") == ExportName("a-b", "c", "x") {
		t.Fatal("two plugins export one name")
	}
	if ServerID("a", "b-c") == ServerID("a-b", "c") {
		t.Fatal("two servers share an ID")
	}
	for _, tc := range []struct{ plugin, provider, tool string }{
		{"a", "b-c", "x"}, {"a-b", "c", "x"}, {"acme-notes", "notes_v2", "search__all"}, {"p", "s", "_lead"}, {"p", "s-", "t"},
	} {
		plugin, provider, rest, ok := ParseName(ExportName(tc.plugin, tc.provider, tc.tool))
		if !ok || plugin != tc.plugin || provider != tc.provider || rest != tc.tool {
			t.Errorf("ParseName(ExportName(%q, %q, %q)) = %q %q %q %v", tc.plugin, tc.provider, tc.tool, plugin, provider, rest, ok)
		}
	}
	for _, bad := range []string{"acme-notes-notes", "_x__y", "acme_x"} {
		if _, _, _, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) found a plugin", bad)
		}
	}
}

// A provider's identity is "<plugin>__<provider>" for servers and native
// tool providers alike, valid and at most 64 characters for the longest
// names a manifest allows (plugin 64, provider 32); its pinned surface key
// never meets a server's.
func TestNativeProviderID(t *testing.T) {
	if got := NativeProviderID("acme-fmt", "fmt"); got != "acme-fmt__fmt" || got != ServerID("acme-fmt", "fmt") {
		t.Fatal(got)
	}
	plugin, entry := strings.Repeat("p", 64), strings.Repeat("e", 32)
	a, b := NativeProviderID(plugin, entry), NativeProviderID(plugin, entry[1:]+"f")
	if !ValidName(a) || !ValidName(b) || len(a) != 64 || a == b || a != NativeProviderID(plugin, entry) {
		t.Fatalf("%q %q", a, b)
	}
	if NativeSurfaceKey("fmt") != "native:fmt" || strings.ContainsRune(ServerID("a", "b"), ':') {
		t.Fatal(NativeSurfaceKey("fmt"))
	}
}

func TestAllowedByPolicy(t *testing.T) {
	yes, no := true, false
	req := func(action store.Action, exact bool, destructive *bool) *ApprovalRequest {
		r := &ApprovalRequest{Policy: store.PolicyMatch{Action: action, Exact: exact, Pattern: "p"}}
		if destructive != nil {
			r.Annotations = annotations(destructive)
		}
		return r
	}
	for _, tc := range []struct {
		r    *ApprovalRequest
		want bool
	}{
		{req("allow", false, nil), true},
		{req("allow", false, &no), true},
		{req("allow", false, &yes), false},
		{req("allow", true, &yes), true},
		{req("ask", true, nil), false},
		{req("deny", true, nil), false},
		{nil, false},
	} {
		if got := AllowedByPolicy(tc.r); got != tc.want {
			t.Errorf("AllowedByPolicy(%+v) = %v", tc.r, got)
		}
	}
}

func TestRefusedAddr(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true}, {"127.8.9.10", true}, {"::1", true}, {"10.1.2.3", true}, {"172.16.0.1", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"100.100.100.200", true}, {"192.0.0.192", true}, {"fd00:ec2::254", true}, {"fe80::1", true},
		{"0.0.0.0", true}, {"::", true}, {"::ffff:127.0.0.1", true}, {"64:ff9b::a00:1", true}, {"2002:7f00:1::", true}, {"224.0.0.1", true},
		{"203.0.113.7", false}, {"8.8.8.8", false}, {"2606:4700::1111", false}, {"172.32.0.1", false}, {"64:ff9b::808:808", false},
	} {
		if got := refusedAddr(netip.MustParseAddr(tc.addr)) != ""; got != tc.refused {
			t.Errorf("refusedAddr(%s) refused=%v", tc.addr, got)
		}
	}
}

// Prompts and resources are exposed, prompts namespaced, resource reads
// routed by URI; a URI two servers share is refused.
func TestPromptsAndResources(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{
		"one": testServer("-tools", "echo", "-extras", "-name", "one"),
		"two": testServer("-tools", "echo", "-extras", "-name", "two"),
		"dup": testServer("-tools", "echo", "-extras", "-name", "two"),
	})
	p := f.open(nil)
	ctx := context.Background()
	prompts, err := p.Prompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pr := range prompts {
		names = append(names, pr.Name)
	}
	if strings.Join(names, " ") != "demo__dup__greet demo__one__greet demo__two__greet" {
		t.Fatalf("prompts %v", names)
	}
	res, err := p.GetPrompt(ctx, "demo__one__greet", map[string]string{"who": "berth"}, allow)
	if err != nil || len(res.Messages) != 1 || !strings.Contains(mustJSON(res.Messages[0].Content), "Hello, berth") {
		t.Fatalf("prompt: %v %v", res, err)
	}
	rs, err := p.Resources(ctx)
	if err != nil || len(rs) != 6 {
		t.Fatalf("resources %d %v", len(rs), err)
	}
	rr, err := p.ReadResource(ctx, "test://one/static", allow)
	if err != nil || rr.Contents[0].Text != "static from one" {
		t.Fatalf("read: %+v %v", rr, err)
	}
	rr, err = p.ReadResource(ctx, "test://one/item/42", allow)
	if err != nil || rr.Contents[0].Text != "item test://one/item/42" {
		t.Fatalf("template read: %+v %v", rr, err)
	}
	if _, err := p.ReadResource(ctx, "test://two/static", allow); err == nil || !strings.Contains(err.Error(), "several servers") {
		t.Fatalf("shared URI: %v", err)
	}
	if _, err := p.ReadResource(ctx, "test://nobody/x", allow); err == nil {
		t.Fatal("read of an unknown URI")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func annotations(destructive *bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{DestructiveHint: destructive}
}

// Prompts and resources are under the operator's policy like tools: deny
// hides and refuses them, ask goes to the approver (which sees what is
// asked for), allow runs without one. A resource is decided by its
// server's identity, a prompt by its exported name.
func TestPromptAndResourcePolicy(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{
		"one": testServer("-tools", "echo", "-extras", "-name", "one"),
		"two": testServer("-tools", "echo", "-extras", "-name", "two"),
	})
	ctx := context.Background()
	for _, r := range []store.PolicyRule{
		{Pattern: "demo__one__greet", Action: store.ActionDeny},
		{Pattern: "demo__one", Action: store.ActionDeny},
		{Pattern: "demo__two", Action: store.ActionAllow},
	} {
		if err := f.store.SetPolicy(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	p := f.open(nil)
	prompts, err := p.Prompts(ctx)
	if err != nil || len(prompts) != 1 || prompts[0].Name != "demo__two__greet" || prompts[0].Policy.Action != store.ActionAsk {
		t.Fatalf("prompts %+v %v", prompts, err)
	}
	rs, err := p.Resources(ctx)
	if err != nil || len(rs) != 2 {
		t.Fatalf("resources %d %v", len(rs), err)
	}
	for _, r := range rs {
		if r.Server != "two" || r.Policy.Action != store.ActionAllow || r.Policy.Pattern != "demo__two" {
			t.Fatalf("resource %+v", r)
		}
	}
	never := ApproverFunc(func(context.Context, *ApprovalRequest) (Decision, error) {
		t.Error("the approver was asked about a denied request")
		return Decision{Allow: true}, nil
	})
	if _, err := p.GetPrompt(ctx, "demo__one__greet", nil, never); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), `policy denies the prompt demo__one__greet (rule "demo__one__greet")`) {
		t.Fatalf("a denied prompt: %v", err)
	}
	if _, err := p.ReadResource(ctx, "test://one/static", never); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), `denies the resources of demo__one (rule "demo__one")`) {
		t.Fatalf("a denied resource: %v", err)
	}
	if _, err := p.ReadResource(ctx, "test://one/item/7", never); !errors.Is(err, ErrDenied) {
		t.Fatalf("a denied template: %v", err)
	}
	// ask: the approver decides, and sees what is asked for.
	var seen []*ApprovalRequest
	record := func(ok bool) Approver {
		return ApproverFunc(func(_ context.Context, r *ApprovalRequest) (Decision, error) {
			seen = append(seen, r)
			return Decision{Allow: ok, By: "test"}, nil
		})
	}
	if _, err := p.GetPrompt(ctx, "demo__two__greet", map[string]string{"who": "x"}, record(false)); !errors.Is(err, ErrDenied) {
		t.Fatalf("a refused prompt: %v", err)
	}
	if _, err := p.GetPrompt(ctx, "demo__two__greet", map[string]string{"who": "x"}, nil); !errors.Is(err, ErrDenied) {
		t.Fatalf("an ask prompt without an approver: %v", err)
	}
	res, err := p.GetPrompt(ctx, "demo__two__greet", map[string]string{"who": "berth"}, record(true))
	if err != nil || !strings.Contains(mustJSON(res.Messages[0].Content), "Hello, berth") {
		t.Fatalf("an approved prompt: %v %v", res, err)
	}
	if len(seen) != 2 || seen[1].Kind != RequestPrompt || seen[1].Tool != "demo__two__greet" || seen[1].UpstreamTool != "greet" || string(seen[1].Arguments) != `{"who":"berth"}` || seen[1].Policy.Action != store.ActionAsk {
		t.Fatalf("approval requests %+v", seen)
	}
	// allow: runs without an approver.
	rr, err := p.ReadResource(ctx, "test://two/item/9", nil)
	if err != nil || rr.Contents[0].Text != "item test://two/item/9" {
		t.Fatalf("an allowed resource: %+v %v", rr, err)
	}
	seen = nil
	if _, err := p.ReadResource(ctx, "test://two/static", record(true)); err != nil || len(seen) != 1 || seen[0].Kind != RequestResource || seen[0].URI != "test://two/static" || seen[0].Tool != "demo__two" || !AllowedByPolicy(seen[0]) {
		t.Fatalf("the approval request of a resource: %+v %v", seen, err)
	}
	// A rule of demo does not reach another plugin's prompts.
	if _, err := p.GetPrompt(ctx, "demo__nope__greet", nil, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown prompt: %v", err)
	}
}
