package marketplace

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
)

// TestDiffAuthoritySandbox: authority that grows in a sandbox (a new read
// or write path, network none to hosts to unrestricted, a new host, a
// declaration removed, a summary that no longer states it) counts as
// grown; one that narrows does not.
func TestDiffAuthoritySandbox(t *testing.T) {
	stdio := func(sb *catalog.SummarySandbox) *catalog.Summary {
		return &catalog.Summary{Servers: []catalog.SummaryServer{{Name: "s", Kind: "stdio", Sandbox: sb,
			Stdio: &catalog.SummaryStdio{Program: "bundled", Command: "${bundle}/s", Argv: []string{"${bundle}/s"}, Cwd: "${bundle}", Env: []catalog.EnvSource{}}}}}
	}
	native := func(sb *catalog.SummarySandbox) *catalog.Summary {
		return &catalog.Summary{NativeTools: []catalog.SummaryNativeTool{{Name: "t", Executable: "${bundle}/t", SHA256: "ab", Size: 1, Sandbox: sb}}}
	}
	decl := func(read, write []string, mode string, hosts ...string) *catalog.SummarySandbox {
		sb := &bundle.Sandbox{Filesystem: &bundle.SandboxFilesystem{Read: read, Write: write}, Network: &bundle.SandboxNetwork{Mode: mode, Hosts: hosts}}
		if mode == bundle.NetworkUnrestricted {
			sb.Network.Reason = "crawls"
		}
		return &catalog.SummarySandbox{Declared: sb}
	}
	none := decl(nil, []string{"${cache}"}, bundle.NetworkNone)
	hosts := decl(nil, []string{"${cache}"}, bundle.NetworkHosts, "api.example.com:443")
	def := &catalog.SummarySandbox{Default: true}
	for _, c := range []struct {
		name     string
		from, to *catalog.SummarySandbox
		grows    bool
	}{
		{"same", hosts, hosts, false},
		{"a new read path", none, decl([]string{"${home}/.config/a"}, []string{"${cache}"}, bundle.NetworkNone), true},
		{"a new write path", none, decl(nil, []string{"${cache}", "${workspace}"}, bundle.NetworkNone), true},
		{"a read path becomes written", decl([]string{"${workspace}"}, nil, bundle.NetworkNone), decl(nil, []string{"${workspace}"}, bundle.NetworkNone), true},
		{"a written path becomes read only", decl(nil, []string{"${workspace}"}, bundle.NetworkNone), decl([]string{"${workspace}"}, nil, bundle.NetworkNone), false},
		{"none to hosts", none, hosts, true},
		{"hosts to unrestricted", hosts, decl(nil, []string{"${cache}"}, bundle.NetworkUnrestricted), true},
		{"a new host", hosts, decl(nil, []string{"${cache}"}, bundle.NetworkHosts, "api.example.com:443", "evil.example.com:443"), true},
		{"another port", hosts, decl(nil, []string{"${cache}"}, bundle.NetworkHosts, "api.example.com:8443"), true},
		{"declaration removed", none, def, true},
		{"hosts to none", hosts, none, false},
		{"unrestricted to hosts", decl(nil, []string{"${cache}"}, bundle.NetworkUnrestricted), hosts, false},
		{"default to a declaration", def, none, false},
		{"no longer stated", none, nil, true},
	} {
		for _, mk := range []func(*catalog.SummarySandbox) *catalog.Summary{stdio, native} {
			d := DiffAuthority("1.0.0", mk(c.from), "2.0.0", mk(c.to))
			if d.Grows() != c.grows {
				t.Errorf("%s: grows %v, want %v: %+v", c.name, d.Grows(), c.grows, d.Changes)
			}
			if c.from != c.to && d.Empty() {
				t.Errorf("%s: no change shown", c.name)
			}
		}
	}
}

// TestCheckSummarySandbox: a catalog summary that does not state the
// sandbox (written before berth stated it) is not refused for that; one
// that states less or other than the bundle declares is refused.
func TestCheckSummarySandbox(t *testing.T) {
	b, err := bundle.Open(context.Background(), filepath.Join("..", "testdata", "bundles", "good", "sandboxed"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := review.New(b)
	v := &catalog.Version{Version: "2.0.0", Summary: catalog.NewSummary(d)}
	if err := CheckSummary("acme-search", v, d); err != nil {
		t.Fatalf("the bundle's own summary is refused: %v", err)
	}
	for i := range v.Summary.Servers {
		if v.Summary.Servers[i].Sandbox == nil || v.Summary.Servers[i].Sandbox.Declared == nil {
			t.Fatalf("NewSummary does not state the sandbox of %s", v.Summary.Servers[i].Name)
		}
	}

	unstated := &catalog.Version{Version: "2.0.0", Summary: catalog.NewSummary(d)}
	for i := range unstated.Summary.Servers {
		unstated.Summary.Servers[i].Sandbox = nil
	}
	unstated.Summary.NativeTools[0].Sandbox = nil
	if err := CheckSummary("acme-search", unstated, d); err != nil {
		t.Fatalf("a summary that does not state the sandbox is refused: %v", err)
	}
	shown := unstated.Summary.Disclosure(&catalog.Plugin{Name: "acme-search"}, unstated)
	var text strings.Builder
	shown.WriteText(&text)
	if !strings.Contains(text.String(), "not stated by the catalog") {
		t.Errorf("berth show does not say the sandbox is not stated:\n%s", text.String())
	}

	for name, edit := range map[string]func(s *catalog.Summary){
		"fewer hosts": func(s *catalog.Summary) {
			for i := range s.Servers {
				if s.Servers[i].Name == "search" {
					s.Servers[i].Sandbox.Declared.Network.Hosts = s.Servers[i].Sandbox.Declared.Network.Hosts[:1]
				}
			}
		},
		"network none": func(s *catalog.Summary) {
			s.NativeTools[0].Sandbox = &catalog.SummarySandbox{Declared: &bundle.Sandbox{Network: &bundle.SandboxNetwork{Mode: bundle.NetworkNone}}}
		},
		"default profile": func(s *catalog.Summary) {
			for i := range s.Servers {
				s.Servers[i].Sandbox = &catalog.SummarySandbox{Default: true}
			}
		},
	} {
		wrong := &catalog.Version{Version: "2.0.0", Summary: catalog.NewSummary(d)}
		edit(&wrong.Summary)
		var me *SummaryMismatchError
		if err := CheckSummary("acme-search", wrong, d); !errors.As(err, &me) || !strings.Contains(strings.Join(me.Differences, "\n"), "sandbox") {
			t.Errorf("%s: CheckSummary = %v; want a sandbox difference", name, err)
		}
	}
}

// TestCatalogSummarySandbox: a summary states a sandbox as exactly one of
// "default": true and "declared", strictly; an entry that states both, or
// a field berth does not define, is malformed and skipped.
func TestCatalogSummarySandbox(t *testing.T) {
	s := (&testEnv{t: t}).catalogSigner()
	entry := func(name, sandbox string) string {
		data, _ := json.Marshal(genPlugin(name, "Fine", catalog.TierCommunity, nil, s, "1.0.0"))
		var m map[string]any
		json.Unmarshal(data, &m)
		sum := m["versions"].([]any)[0].(map[string]any)["summary"].(map[string]any)
		var server map[string]any
		if err := json.Unmarshal([]byte(`{"name": "local", "kind": "stdio", "stdio": {"program": "host", "command": "node", "argv": ["node"], "cwd": "${bundle}", "env": []}, "sandbox": `+sandbox+`, "tools": {"allow": [], "deny": []}, "timeouts": {"startup": "30s", "call": "1m0s"}}`), &server); err != nil {
			t.Fatal(err)
		}
		sum["servers"] = append(sum["servers"].([]any), server)
		out, _ := json.Marshal(m)
		return string(out)
	}
	doc := `{"catalogVersion": 1, "plugins": [` +
		entry("declared", `{"declared": {"network": {"mode": "hosts", "hosts": ["api.example.com:443"]}}}`) + `,` +
		entry("default", `{"default": true}`) + `,` +
		entry("both", `{"default": true, "declared": {}}`) + `,` +
		entry("neither", `{}`) + `,` +
		entry("unknown", `{"declared": {"network": {"mode": "none", "ports": [1]}}}`) + `]}`
	cat, ps, err := catalog.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range cat.Plugins {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "declared,default" {
		t.Fatalf("plugins %v; want declared and default only (problems %v)", names, ps)
	}
	var local *catalog.SummaryServer
	for i, sv := range cat.Plugins[0].Versions[0].Summary.Servers {
		if sv.Name == "local" {
			local = &cat.Plugins[0].Versions[0].Summary.Servers[i]
		}
	}
	if local == nil || local.Sandbox == nil || local.Sandbox.Declared == nil || local.Sandbox.Declared.Network.Hosts[0] != "api.example.com:443" {
		t.Errorf("the declared sandbox did not decode: %+v", local)
	}
}
