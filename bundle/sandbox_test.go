package bundle

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// sandboxManifest is a manifest whose one stdio server (or, with native,
// whose one native tool provider) has sandbox sb.
func sandboxManifest(sb any, native bool) map[string]any {
	m := map[string]any{"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d"}
	if native {
		m["nativeTools"] = map[string]any{"t": map[string]any{"executable": "${bundle}/bin/t", "sandbox": sb}}
		return m
	}
	m["mcpServers"] = map[string]any{"s": map[string]any{"stdio": map[string]any{"command": "node", "args": []string{"server.js"}}, "sandbox": sb}}
	return m
}

// TestSandboxValidation: each rule of a sandbox declaration, at its own
// path, and the declarations berth accepts.
func TestSandboxValidation(t *testing.T) {
	fs := func(read, write []string) map[string]any {
		f := map[string]any{}
		if read != nil {
			f["read"] = read
		}
		if write != nil {
			f["write"] = write
		}
		return map[string]any{"filesystem": f}
	}
	net := func(n map[string]any) map[string]any { return map[string]any{"network": n} }
	hosts := func(h ...string) map[string]any { return net(map[string]any{"mode": "hosts", "hosts": h}) }
	const S = "mcpServers.s.sandbox"
	cases := []struct {
		name string
		sb   any
		rule string // "" for valid
		path string
	}{
		{"empty", map[string]any{}, "", ""},
		{"every variable", fs([]string{"${bundle}", "${bundle}/share", "${home}/.config/acme", "${workspace}/docs"}, []string{"${workspace}", "${cache}", "${tmp}/x", "${home}/.cache/acme"}), "", ""},
		{"network none", net(map[string]any{"mode": "none"}), "", ""},
		{"hosts", hosts("api.example.com:443", "*.files.example.com:8443", "10.0.0.1:80", "[::1]:9000", "xn--bcher-kva.example:443"), "", ""},
		{"unrestricted", net(map[string]any{"mode": "unrestricted", "reason": "fetches the pages the user asks for"}), "", ""},
		{"unknown field", map[string]any{"filesystem": map[string]any{"exec": []string{"${bundle}"}}}, RuleUnknownField, S + ".filesystem.exec"},
		{"unknown network field", net(map[string]any{"mode": "none", "ports": []int{1}}), RuleUnknownField, S + ".network.ports"},

		{"bundle in write", fs(nil, []string{"${bundle}/data"}), RuleSandboxPath, S + ".filesystem.write[0]"},
		{"bundle alone in write", fs(nil, []string{"${bundle}"}), RuleSandboxPath, S + ".filesystem.write[0]"},
		{"absolute", fs([]string{"/etc/ssl"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"home alone", fs([]string{"${home}"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"home slash", fs([]string{"${home}/"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"dotdot", fs([]string{"${home}/../other"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"inner dotdot", fs([]string{"${workspace}/a/../../b"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"glob", fs(nil, []string{"${workspace}/*.log"}), RuleSandboxPath, S + ".filesystem.write[0]"},
		{"brace", fs([]string{"${home}/{a,b}"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"other variable", fs([]string{"${HOME}/.config"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"second variable", fs([]string{"${workspace}/${home}"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"no slash", fs([]string{"${workspace}docs"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"trailing slash", fs([]string{"${workspace}/docs/"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"backslash", fs([]string{`${workspace}/a\b`}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"relative", fs([]string{"docs"}, nil), RuleSandboxPath, S + ".filesystem.read[0]"},
		{"twice", fs([]string{"${cache}"}, []string{"${cache}"}), RuleSandboxPath, S + ".filesystem.read[0]"},

		{"no mode", net(map[string]any{}), RuleSandboxNetworkMode, S + ".network.mode"},
		{"bad mode", net(map[string]any{"mode": "proxy"}), RuleSandboxNetworkMode, S + ".network.mode"},

		{"hosts without hosts", net(map[string]any{"mode": "hosts"}), RuleSandboxHost, S + ".network.hosts"},
		{"hosts empty", net(map[string]any{"mode": "hosts", "hosts": []string{}}), RuleSandboxHost, S + ".network.hosts"},
		{"hosts with none", net(map[string]any{"mode": "none", "hosts": []string{"a.example:443"}}), RuleSandboxHost, S + ".network.hosts"},
		{"hosts with unrestricted", net(map[string]any{"mode": "unrestricted", "reason": "r", "hosts": []string{"a.example:443"}}), RuleSandboxHost, S + ".network.hosts"},
		{"no port", hosts("api.example.com"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"port zero", hosts("api.example.com:0"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"port too big", hosts("api.example.com:65536"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"port leading zero", hosts("api.example.com:0443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"upper case", hosts("API.example.com:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"URL", hosts("https://api.example.com:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"wildcard TLD", hosts("*.com:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"inner wildcard", hosts("api.*.example.com:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"double wildcard", hosts("*.*.example.com:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"bare IPv6", hosts("::1:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"IPv6 zone", hosts("[fe80::1%eth0]:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"numeric TLD", hosts("1.2.3.999:443"), RuleSandboxHost, S + ".network.hosts[0]"},
		{"duplicate", hosts("a.example:443", "b.example:443", "a.example:443"), RuleSandboxHost, S + ".network.hosts[2]"},

		{"unrestricted without reason", net(map[string]any{"mode": "unrestricted"}), RuleSandboxReason, S + ".network.reason"},
		{"blank reason", net(map[string]any{"mode": "unrestricted", "reason": "   "}), RuleSandboxReason, S + ".network.reason"},
		{"long reason", net(map[string]any{"mode": "unrestricted", "reason": strings.Repeat("é", 201)}), RuleSandboxReason, S + ".network.reason"},
		{"invisible reason", net(map[string]any{"mode": "unrestricted", "reason": "ok\u202eevil"}), RuleSandboxReason, S + ".network.reason"},
		{"control reason", net(map[string]any{"mode": "unrestricted", "reason": "ok\x1b[2J"}), RuleControlCharacter, S + ".network.reason"},
		{"reason with none", net(map[string]any{"mode": "none", "reason": "x"}), RuleSandboxReason, S + ".network.reason"},
		{"reason with hosts", net(map[string]any{"mode": "hosts", "hosts": []string{"a.example:443"}, "reason": ""}), RuleSandboxReason, S + ".network.reason"},
	}
	for _, c := range cases {
		for _, native := range []bool{false, true} {
			name := c.name
			if native {
				name += "/native"
			}
			t.Run(name, func(t *testing.T) {
				m := sandboxManifest(c.sb, native)
				if native {
					m["nativeTools"].(map[string]any)["t"].(map[string]any)["executable"] = "${bundle}/t" // tree not checked: no file
				}
				_, err := openManifest(t, m)
				var ie *InvalidError
				errors.As(err, &ie)
				var got []*Problem
				if ie != nil {
					for _, p := range ie.Problems {
						if p.Rule != RuleBundlePathMissing {
							got = append(got, p)
						}
					}
				}
				want := c.path
				if native {
					want = strings.Replace(want, S, "nativeTools.t.sandbox", 1)
				}
				if c.rule == "" {
					if len(got) > 0 {
						t.Fatalf("a valid declaration is refused: %v", got)
					}
					return
				}
				if len(got) != 1 || got[0].Rule != c.rule || got[0].Path != want {
					t.Fatalf("Open = %v; want one %s at %s", err, c.rule, want)
				}
				if strings.ContainsFunc(got[0].Message, unicode.IsControl) {
					t.Errorf("the message prints a control character: %q", got[0].Message)
				}
			})
		}
	}
}

// TestSandboxRemote: a remote server cannot declare a sandbox.
func TestSandboxRemote(t *testing.T) {
	_, err := openManifest(t, map[string]any{
		"manifestVersion": 1, "name": "x", "version": "1.0.0", "description": "d",
		"mcpServers": map[string]any{"r": map[string]any{
			"remote":  map[string]any{"transport": "streamable-http", "url": "https://mcp.example.com/", "network": map[string]any{"hosts": []string{"mcp.example.com"}}},
			"sandbox": map[string]any{"network": map[string]any{"mode": "none"}},
		}},
	})
	var ie *InvalidError
	if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Rule != RuleSandboxRemote || ie.Problems[0].Path != "mcpServers.r.sandbox" {
		t.Fatalf("Open = %v; want one %s", err, RuleSandboxRemote)
	}
}

// TestSandboxResolve: the variables become the real directories, the
// default profile fills what is not declared, ${bundle} is always read,
// and a variable without a directory is an error, never a path dropped.
func TestSandboxResolve(t *testing.T) {
	v := SandboxVars{Bundle: "/store/b", Workspace: "/w", Cache: "/berth/cache/s", Tmp: "/berth/tmp/s", Home: "/home/u"}
	got, err := (*Sandbox)(nil).Resolve(v)
	if err != nil {
		t.Fatal(err)
	}
	want := SandboxPaths{Read: []string{"/store/b"}, Write: []string{"/w", "/berth/cache/s", "/berth/tmp/s"}}
	if !slices.Equal(got.Read, want.Read) || !slices.Equal(got.Write, want.Write) {
		t.Fatalf("default profile = %+v; want %+v", got, want)
	}
	sb := &Sandbox{Filesystem: &SandboxFilesystem{Read: []string{"${home}/.config/acme", "${workspace}"}, Write: []string{"${tmp}", "${workspace}/out"}}}
	got, err = sb.Resolve(v)
	if err != nil {
		t.Fatal(err)
	}
	want = SandboxPaths{Read: []string{"/store/b", "/home/u/.config/acme", "/w"}, Write: []string{"/berth/tmp/s", filepath.Join("/w", "out")}}
	if !slices.Equal(got.Read, want.Read) || !slices.Equal(got.Write, want.Write) {
		t.Fatalf("Resolve = %+v; want %+v", got, want)
	}
	if _, err := sb.Resolve(SandboxVars{Bundle: "/store/b", Workspace: "/w", Tmp: "/t"}); !errors.Is(err, ErrSandboxVar) {
		t.Fatalf("Resolve without ${home} = %v; want ErrSandboxVar", err)
	}
	if _, err := (*Sandbox)(nil).Resolve(SandboxVars{Bundle: "/b", Workspace: "rel", Cache: "/c", Tmp: "/t"}); !errors.Is(err, ErrSandboxVar) {
		t.Fatalf("Resolve with a relative workspace = %v; want ErrSandboxVar", err)
	}
	if _, err := (&Sandbox{Filesystem: &SandboxFilesystem{Read: []string{"/etc"}}}).Resolve(v); err == nil {
		t.Fatal("Resolve accepted an absolute path")
	}
	if n := (&Sandbox{Network: &SandboxNetwork{Mode: NetworkNone}}).Effective(); n.Filesystem == nil || !slices.Equal(n.Filesystem.Write, DefaultSandbox().Filesystem.Write) || n.NetworkMode() != NetworkNone {
		t.Fatalf("a network-only declaration's Effective = %+v", n)
	}
	if (*Sandbox)(nil).NetworkMode() != NetworkUndeclared {
		t.Fatal("no declaration's network is not undeclared")
	}
}

// TestSandboxDecodeRoundTrip: the exact field names of a declaration.
func TestSandboxDecodeRoundTrip(t *testing.T) {
	const doc = `{"filesystem":{"read":["${home}/.config/acme"],"write":["${cache}"]},"network":{"mode":"hosts","hosts":["api.example.com:443"]}}`
	var sb Sandbox
	if err := json.Unmarshal([]byte(doc), &sb); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(&sb)
	if string(out) != doc {
		t.Fatalf("round trip = %s", out)
	}
}

// FuzzParseSandboxHost: an entry berth accepts is host:port with a port
// in range and a host of a DNS name or an IP literal, whatever the input.
func FuzzParseSandboxHost(f *testing.F) {
	for _, s := range []string{"api.example.com:443", "*.x.example:1", "[::1]:80", "10.0.0.1:65535", "a:0", "A.b:1", "*.com:1", "[fe80::1%e]:1", "http://x:1", "x:01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, why := ParseSandboxHost(s)
		if why != "" {
			return
		}
		if port < 1 || port > 65535 || host == "" {
			t.Fatalf("ParseSandboxHost(%q) = %q, %d", s, host, port)
		}
		if strings.ContainsAny(host, "/@%?#_ \\") || strings.ToLower(host) != host && !strings.Contains(host, ":") {
			t.Fatalf("ParseSandboxHost(%q) accepted the host %q", s, host)
		}
		if strings.Count(host, "*") > 1 || strings.Contains(host, "*") && !strings.HasPrefix(host, "*.") {
			t.Fatalf("ParseSandboxHost(%q) accepted the wildcard %q", s, host)
		}
	})
}

// TestProgramPrefix: the runtime prefix is the parent of a bin directory,
// never "/"; under home the program's own directory only, unless in a
// runtime manager's install tree.
func TestProgramPrefix(t *testing.T) {
	for _, c := range []struct{ program, want string }{
		{"/usr/bin/node", "/usr"},
		{"/home/u/.nvm/versions/node/v22.1.0/bin/node", "/home/u/.nvm/versions/node/v22.1.0"},
		{"/home/u/.pyenv/versions/3.12.1/bin/python3.12", "/home/u/.pyenv/versions/3.12.1"},
		{"/opt/tool/node", "/opt/tool"},
		{"/bin/node", "/bin"},
		{"/home/u/bin/node", "/home/u/bin"},
		{"/home/u/.local/bin/uvx", "/home/u/.local/bin"},
		{"/home/u/.cargo/bin/cargo", "/home/u/.cargo/bin"},
		{"/home/u/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo", "/home/u/.rustup/toolchains/stable-x86_64-unknown-linux-gnu"},
		{"/home/u/.pyenv/shims/python3", "/home/u/.pyenv"},
		{"/home/u/.docker/bin/tool", "/home/u/.docker/bin"},
		{"/home/u/x/bin/tool", "/home/u/x/bin"},
	} {
		if got := ProgramPrefix(c.program, "/home/u"); got != c.want {
			t.Errorf("ProgramPrefix(%q) = %q; want %q", c.program, got, c.want)
		}
	}
}

// TestPathDirs: PATH directories under home are granted only inside a
// runtime manager's install tree (sandbox-home-prefix); never home, "/"
// or the base set.
func TestPathDirs(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	opt := filepath.Join(root, "opt", "bin")
	gobin := filepath.Join(home, "go", "bin")
	nvm := filepath.Join(home, ".nvm", "versions", "node", "v22.1.0")
	for _, d := range []string{opt, gobin, filepath.Join(nvm, "bin")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got := PathDirs(strings.Join([]string{opt, gobin, filepath.Join(nvm, "bin"), home, "/", "/usr/bin", "relative"}, string(os.PathListSeparator)), home)
	want := []string{opt, nvm}
	if !slices.Equal(got, want) {
		t.Fatalf("PathDirs = %v; want %v", got, want)
	}
}
