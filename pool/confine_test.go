package pool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/store"
)

// policyFixture lays out a home with a runtime (home/.rt/bin/node), a
// workspace and a sibling project under it, a staged bundle and the
// server's own directories.
type policyFixture struct {
	root, home, ws, sibling, bundleDir, node, cache, tmp string
}

func newPolicyFixture(t *testing.T) *policyFixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &policyFixture{root: root, home: filepath.Join(root, "home")}
	f.ws = filepath.Join(f.home, "proj")
	f.sibling = filepath.Join(f.home, "other")
	f.bundleDir = filepath.Join(root, "berth", "store", "abc")
	f.node = filepath.Join(f.home, ".rt", "bin", "node")
	f.cache = filepath.Join(root, "berth", "servers", "p", "s", "cache")
	f.tmp = filepath.Join(root, "berth", "servers", "p", "s", "tmp", "run-1")
	for _, d := range []string{f.ws, f.sibling, f.bundleDir, filepath.Dir(f.node), f.cache, f.tmp, filepath.Join(f.home, ".config", "tool")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.node, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *policyFixture) input(decl *bundle.Sandbox) *policyInput {
	return &policyInput{id: "p__s", decl: decl, bundleDir: f.bundleDir, workspace: f.ws, program: f.node,
		home: f.home, cache: f.cache, tmp: f.tmp}
}

func TestPolicyDefaultProfile(t *testing.T) {
	f := newPolicyFixture(t)
	p, err := buildPolicy(f.input(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := &sandbox.Policy{
		Exec:    []string{f.bundleDir, filepath.Join(f.home, ".rt", "bin")}, // under home: the program's own directory
		Write:   []string{f.cache, f.tmp, f.ws},
		Network: sandbox.NetworkOpen,
	}
	slices.Sort(want.Exec)
	slices.Sort(want.Write)
	if !equalPolicy(p, want) {
		t.Fatalf("default profile:\n got %+v\nwant %+v", p, want)
	}
	for _, l := range [][]string{p.Exec, p.Read, p.Write} {
		for _, d := range l {
			if d == f.home || d == f.sibling || within(f.sibling, d) || within(f.home, d) {
				t.Errorf("the default profile reaches %s (home %s)", d, f.home)
			}
		}
	}
}

func equalPolicy(a, b *sandbox.Policy) bool {
	return slices.Equal(a.Exec, b.Exec) && slices.Equal(a.Read, b.Read) && slices.Equal(a.Write, b.Write) &&
		a.Network == b.Network && slices.Equal(a.Hosts, b.Hosts) && a.UnixSockets == b.UnixSockets
}

func TestPolicyDeclared(t *testing.T) {
	f := newPolicyFixture(t)
	decl := &bundle.Sandbox{
		Filesystem: &bundle.SandboxFilesystem{Read: []string{"${bundle}", "${home}/.config/tool", "${home}/.missing"}, Write: []string{"${cache}", "${tmp}"}},
		Network:    &bundle.SandboxNetwork{Mode: bundle.NetworkHosts, Hosts: []string{"api.example.com:443"}},
	}
	p, err := buildPolicy(f.input(decl))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Write, f.ws) || slices.Contains(p.Read, f.ws) {
		t.Errorf("the workspace is in a policy that does not declare it: %+v", p)
	}
	if !slices.Equal(p.Read, []string{filepath.Join(f.home, ".config", "tool")}) {
		t.Errorf("Read = %v, want only the declared home path", p.Read)
	}
	if p.Network != sandbox.NetworkHosts || !slices.Equal(p.Hosts, []string{"api.example.com:443"}) {
		t.Errorf("network = %s %v", p.Network, p.Hosts)
	}
	decl.Network.Mode = bundle.NetworkNone
	if p, _ = buildPolicy(f.input(decl)); p.Network != sandbox.NetworkNone {
		t.Errorf("declared none: %s", p.Network)
	}
	decl.Network.Mode = bundle.NetworkUnrestricted
	if p, _ = buildPolicy(f.input(decl)); p.Network != sandbox.NetworkOpen {
		t.Errorf("declared unrestricted: %s", p.Network)
	}
	for _, bad := range []string{"${home}", "${home}/../x", "/etc", "${workspace}/../other", "${nope}/x"} {
		decl.Filesystem.Read = []string{bad}
		if _, err := buildPolicy(f.input(decl)); err == nil {
			t.Errorf("declared path %q accepted", bad)
		}
	}
	decl.Filesystem.Read = nil
	decl.Filesystem.Write = []string{"${bundle}"}
	if _, err := buildPolicy(f.input(decl)); err == nil {
		t.Error("a writable bundle accepted")
	}
}

func TestPolicyUndeclaredNetwork(t *testing.T) {
	f := newPolicyFixture(t)
	in := f.input(nil)
	in.undeclaredNone = true
	if p, err := buildPolicy(in); err != nil || p.Network != sandbox.NetworkNone {
		t.Fatalf("sandbox-undeclared-network none: %v %v", p, err)
	}
	in.decl = &bundle.Sandbox{Network: &bundle.SandboxNetwork{Mode: bundle.NetworkUnrestricted, Reason: "it calls any URL it is given"}}
	if p, err := buildPolicy(in); err != nil || p.Network != sandbox.NetworkOpen {
		t.Fatalf("declared unrestricted under undeclared none: %v %v", p, err)
	}
}

func TestPolicyWorkspaceNeverExecutable(t *testing.T) {
	f := newPolicyFixture(t)
	prog := filepath.Join(f.ws, "bin", "server")
	if err := os.MkdirAll(filepath.Dir(prog), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := f.input(nil)
	in.program = prog
	_, err := buildPolicy(in)
	if err == nil || !strings.Contains(err.Error(), "never executable") {
		t.Fatalf("a program in the workspace: %v", err)
	}
	// A symlink outside the workspace to a program inside it is refused too.
	link := filepath.Join(f.root, "link")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	in.program = link
	if _, err := buildPolicy(in); err == nil {
		t.Fatal("a symlink to a program in the workspace was accepted")
	}
}

func TestPolicyPrefixNeverHoldsWorkspaceOrHome(t *testing.T) {
	f := newPolicyFixture(t)
	prog := filepath.Join(f.home, "bin", "tool") // prefix would be the home itself
	if err := os.MkdirAll(filepath.Dir(prog), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := f.input(nil)
	in.program = prog
	p, err := buildPolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Exec, filepath.Dir(prog)) || slices.Contains(p.Exec, f.home) {
		t.Fatalf("Exec = %v: want the program's own directory, never the home", p.Exec)
	}
}

func TestScriptInterpreter(t *testing.T) {
	f := newPolicyFixture(t)
	script := filepath.Join(f.bundleDir, "server.js")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env -S node --no-warnings\nconsole.log(1)\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := scriptInterpreter(script, filepath.Dir(f.node)); got != f.node {
		t.Fatalf("scriptInterpreter = %q, want %q", got, f.node)
	}
	in := f.input(nil)
	in.program, in.interpreter = script, f.node
	p, err := buildPolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Exec, filepath.Join(f.home, ".rt", "bin")) { // under home: its own directory (sandbox-home-prefix)
		t.Fatalf("the interpreter's prefix is not executable: %v", p.Exec)
	}
}

func TestServerDirs(t *testing.T) {
	paths, err := store.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(paths.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	cache, tmp, cleanup, err := serverDirs(paths, "p", "s")
	if err != nil {
		t.Fatal(err)
	}
	if cache != paths.ServerCache("p", "s") || filepath.Dir(tmp) != paths.ServerTmp("p", "s") {
		t.Fatalf("dirs %s %s", cache, tmp)
	}
	os.WriteFile(filepath.Join(tmp, "left"), nil, 0o600)
	_, tmp2, cleanup2, err := serverDirs(paths, "p", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup2()
	if ents, _ := os.ReadDir(tmp2); len(ents) != 0 || tmp2 == tmp {
		t.Fatalf("a second start's temp directory is not new and empty: %s %v", tmp2, ents)
	}
	for _, d := range []string{cache, tmp, paths.Servers()} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
	cleanup()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temp directory outlived its start: %v", err)
	}
}

func TestSandboxRequireRefusesUndeclared(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"srv": testServer("-tools", "echo")})
	if _, err := f.store.SetSandbox(context.Background(), store.SandboxKeyRequire, "on"); err != nil {
		t.Fatal(err)
	}
	p := f.open(nil)
	st := status(t, p, "demo__srv")
	if st.State != StateFailed || !st.GaveUp {
		t.Fatalf("a server without a declaration under sandbox-require: %s (gave up %v), want failed for good", st.State, st.GaveUp)
	}
	for _, want := range []string{"demo__srv", "declares no sandbox", RuleSandboxRequired, "sandbox-unconfined demo__srv", "sandbox-require off"} {
		if !strings.Contains(st.LastError, want) {
			t.Errorf("the refusal %q does not say %q", st.LastError, want)
		}
	}
	if st.PID != 0 {
		t.Errorf("the refused server runs as pid %d", st.PID)
	}
	// berth status says it was refused and why, never a previous start's
	// confinement.
	if st.Sandbox == nil || st.Sandbox.Confined || !strings.Contains(st.Sandbox.Refused, RuleSandboxRequired) || !strings.HasPrefix(st.Sandbox.Unconfined, "refused: ") {
		t.Errorf("the refused server's sandbox status: %+v, want refused naming %s", st.Sandbox, RuleSandboxRequired)
	}
}

func TestSandboxUnconfinedByOperator(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{"srv": testServer("-tools", "echo")})
	ctx := context.Background()
	for k, v := range map[string]string{store.SandboxKeyRequire: "on", store.SandboxKeyUnconfined: "demo__srv"} {
		if _, err := f.store.SetSandbox(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	p := f.open(nil)
	st := status(t, p, "demo__srv")
	if st.State != StateRunning {
		t.Fatalf("a server the operator runs unconfined: %s %s", st.State, st.LastError)
	}
	if st.Sandbox == nil || st.Sandbox.Confined || !strings.Contains(st.Sandbox.Unconfined, "sandbox-unconfined") {
		t.Fatalf("its status: %+v, want unconfined by the operator", st.Sandbox)
	}
}

func TestPolicyRefusesStateInWorkspace(t *testing.T) {
	f := newPolicyFixture(t)
	in := f.input(nil)
	in.state = filepath.Join(f.ws, ".berth-home")
	if err := os.MkdirAll(in.state, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := buildPolicy(in)
	if err == nil || !strings.Contains(err.Error(), RuleSandboxStateWritable) || !strings.Contains(err.Error(), "BERTH_HOME") {
		t.Fatalf("BERTH_HOME inside the workspace: %v, want refused", err)
	}
	in.state = filepath.Join(f.root, "berth")
	if _, err := buildPolicy(in); err != nil {
		t.Fatalf("BERTH_HOME beside the workspace: %v", err)
	}
}

func TestPolicyPrefixNeverDotLocal(t *testing.T) {
	f := newPolicyFixture(t)
	prog := filepath.Join(f.home, ".local", "bin", "uvx")
	if err := os.MkdirAll(filepath.Dir(prog), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := f.input(nil)
	in.program = prog
	p, err := buildPolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Exec, filepath.Join(f.home, ".local")) || !slices.Contains(p.Exec, filepath.Dir(prog)) {
		t.Fatalf("Exec = %v: want ~/.local/bin only, never ~/.local", p.Exec)
	}
}

// TestPolicyHomePrefix: under home the runtime prefix is the program's own
// directory, except in a runtime manager's install tree; PATH directories
// under home outside such a tree are not granted (sandbox-home-prefix).
func TestPolicyHomePrefix(t *testing.T) {
	f := newPolicyFixture(t)
	nvm := filepath.Join(f.home, ".nvm", "versions", "node", "v22.1.0")
	gobin := filepath.Join(f.home, "go", "bin")
	shims := filepath.Join(f.home, ".pyenv", "shims")
	for _, d := range []string{filepath.Join(nvm, "bin"), gobin, shims} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	node := filepath.Join(nvm, "bin", "node")
	if err := os.WriteFile(node, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := f.input(nil)
	in.program = node
	in.pathList = gobin + ":" + shims + ":/usr/bin"
	p, err := buildPolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Exec, nvm) || !slices.Contains(p.Exec, filepath.Join(f.home, ".pyenv")) {
		t.Fatalf("Exec = %v: want nvm's version tree and pyenv's root", p.Exec)
	}
	if slices.Contains(p.Exec, gobin) {
		t.Fatalf("Exec = %v: ~/go/bin on PATH is granted", p.Exec)
	}
}

// TestPolicyStateReadableDeclared: a ${home}/ read path that holds
// BERTH_HOME is refused (sandbox-state-readable), without any symlink.
func TestPolicyStateReadableDeclared(t *testing.T) {
	f := newPolicyFixture(t)
	state := filepath.Join(f.home, ".config", "tool", "berth")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	in := f.input(&bundle.Sandbox{Filesystem: &bundle.SandboxFilesystem{Read: []string{"${home}/.config/tool"}}})
	in.state = state
	if _, err := buildPolicy(in); err == nil || !strings.Contains(err.Error(), RuleSandboxStateReadable) {
		t.Fatalf("buildPolicy = %v; want a refusal naming %s", err, RuleSandboxStateReadable)
	}
}

// TestScriptInterpreterLines: only "env NAME" and "env -S NAME args" name
// an interpreter.
func TestScriptInterpreterLines(t *testing.T) {
	f := newPolicyFixture(t)
	dir := filepath.Dir(f.node)
	for line, want := range map[string]string{
		"#!/usr/bin/env node":               f.node,
		"#!/usr/bin/env -S node --x":        f.node,
		"#!/usr/bin/env -S -u X node":       "",
		"#!/usr/bin/env -u X node":          "",
		"#!/usr/bin/env -C /tmp node":       "",
		"#!/usr/bin/env --chdir=/tmp node":  "",
		"#!/usr/bin/env ../bin/node":        "",
		"#!/usr/bin/env -S ../.rt/bin/node": "",
		"#!/usr/bin/env A=1 node":           "",
		"#!/usr/bin/env node extra":         "",
		"#!/bin/sh":                         "/bin/sh",
		"#!" + f.node:                       "",
		"#!relative/env node":               "",
	} {
		script := filepath.Join(f.bundleDir, "s")
		if err := os.WriteFile(script, []byte(line+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := scriptInterpreter(script, dir); got != want {
			t.Errorf("%q: scriptInterpreter = %q; want %q", line, got, want)
		}
	}
}

// TestPolicyRefusalsNameRuleAndFix: each path buildPolicy cannot resolve
// is refused naming the thing, the rule and the fix, and a program whose
// directory holds the home directory names sandbox-home-prefix.
func TestPolicyRefusalsNameRuleAndFix(t *testing.T) {
	f := newPolicyFixture(t)
	missing := filepath.Join(f.root, "gone")
	for _, c := range []struct {
		name  string
		set   func(*policyInput)
		thing string
		fix   string
	}{
		{"workspace", func(in *policyInput) { in.workspace = missing }, "its workspace " + missing, "--workspace"},
		{"bundle", func(in *policyInput) { in.bundleDir = missing }, "its staged bundle " + missing, "run berth verify, then re-trust"},
		{"tree", func(in *policyInput) { in.fetched = []string{missing} }, "its staged fetched tree " + missing, "run berth verify, then re-trust"},
		{"own dir", func(in *policyInput) { in.cache = missing }, "its own directory " + missing, "check the permissions of"},
		{"program", func(in *policyInput) { in.program = filepath.Join(missing, "node") }, "its program " + filepath.Join(missing, "node"), "check that it exists"},
	} {
		in := f.input(nil)
		c.set(in)
		_, err := buildPolicy(in)
		if err == nil {
			t.Fatalf("%s missing: accepted", c.name)
		}
		for _, w := range []string{"p__s", c.thing, "[" + RuleSandboxPathUnresolved + "]", c.fix} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s missing: %q does not say %q", c.name, err, w)
			}
		}
	}
	prog := filepath.Join(f.root, "tool") // its directory holds the home
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := f.input(nil)
	in.program = prog
	if _, err := buildPolicy(in); err == nil || !strings.Contains(err.Error(), "["+RuleSandboxHomePrefix+"]") {
		t.Fatalf("a program whose directory holds home: %v, want [%s]", err, RuleSandboxHomePrefix)
	}
}

// A confined server of an ecosystem berth does not stage at trust (go
// run) would fetch at start: it is refused, and the refusal says it is
// not staged (re-trusting would not help) and names the operator's way on.
func TestFetchAtStartUnstagedRefused(t *testing.T) {
	f := newFixture(t)
	// A stand-in go on the servers' PATH: the refusal comes before any run.
	if err := os.WriteFile(filepath.Join(f.bin, "go"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.plugin("demo", map[string]any{"srv": map[string]any{"stdio": map[string]any{
		"command": "go", "args": []string{"run", "golang.org/x/tools/gopls@v0.16.0"},
	}}})
	p := f.open(nil)
	st := status(t, p, "demo__srv")
	if st.State != StateFailed {
		t.Fatalf("a confined go run server: %s %s, want failed", st.State, st.LastError)
	}
	for _, want := range []string{RuleSandboxFetchAtStart, "berth does not stage go run packages", "sandbox-unconfined demo__srv"} {
		if !strings.Contains(st.LastError, want) {
			t.Errorf("the refusal %q does not say %q", st.LastError, want)
		}
	}
	if strings.Contains(st.LastError, "re-trust") {
		t.Errorf("the refusal %q tells the operator to re-trust, which cannot stage go run", st.LastError)
	}
}
