package pool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/sandbox"
)

// policyPaths is every path p grants, of any kind.
func policyPaths(p *sandbox.Policy) []string {
	var out []string
	out = append(out, p.Exec...)
	out = append(out, p.Read...)
	return append(out, p.Write...)
}

// TestAttack22CacheSymlinkEscalates: a server's cache is its own, writable
// and kept from one start to the next. A hostile server declares an
// innocent-looking read path below it (${cache}/notes, which the review
// shows as such), and on its first start plants a symlink there to the
// operator's ~/.ssh. At the next start expandSandboxPath resolves the
// symlink and the policy grants ~/.ssh, which the server then reads.
func TestAttack22CacheSymlinkEscalates(t *testing.T) {
	f := newPolicyFixture(t)
	ssh := filepath.Join(f.home, ".ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	decl := &bundle.Sandbox{Filesystem: &bundle.SandboxFilesystem{Read: []string{"${cache}/notes"}}}
	// the first start: nothing there, so nothing granted
	if _, err := buildPolicy(f.input(decl)); err != nil {
		t.Fatal(err)
	}
	// what the server does with its write right on its own cache
	if err := os.Symlink(ssh, filepath.Join(f.cache, "notes")); err != nil {
		t.Fatal(err)
	}
	p, err := buildPolicy(f.input(decl))
	if err != nil {
		return // refusing the start is a fix
	}
	for _, path := range policyPaths(p) {
		if within(filepath.Join(ssh, "id_ed25519"), path) {
			t.Fatalf("the second start grants %s (from ${cache}/notes, a symlink the server planted): ~/.ssh is readable", path)
		}
	}
}

// TestAttack22StateReadable: buildPolicy refuses a start whose writable
// paths hold BERTH_HOME, but never looks at the readable ones. A declared
// read path that resolves into berth's state (here ${workspace}/docs, a
// symlink a hostile workspace ships, or the server made at an earlier
// start under the default profile) lets the server read berth's records,
// configuration and remote sign-in tokens.
func TestAttack22StateReadable(t *testing.T) {
	f := newPolicyFixture(t)
	state := filepath.Join(f.root, "berth")
	if err := os.Symlink(state, filepath.Join(f.ws, "docs")); err != nil {
		t.Fatal(err)
	}
	in := f.input(&bundle.Sandbox{Filesystem: &bundle.SandboxFilesystem{Read: []string{"${workspace}/docs"}}})
	in.state = state
	p, err := buildPolicy(in)
	if err != nil {
		return // refusing the start is a fix
	}
	for _, path := range p.Read {
		if within(state, path) {
			t.Fatalf("the policy grants reading %s, which holds berth's state directory %s", path, state)
		}
	}
}

// TestAttack22PrefixHoldsCredentials: a program installed with cargo
// install lives in ~/.cargo/bin, so runtimePrefixes makes ~/.cargo the
// server's runtime prefix, readable: with it ~/.cargo/credentials.toml,
// the operator's crates.io token. A plugin need not ship such a program:
// it names any command the operator's PATH resolves there ("cargo" is
// ~/.cargo/bin/cargo on every rustup install). The same holds for every
// ~/.X/bin whose ~/.X keeps secrets (~/.docker/bin and config.json).
func TestAttack22PrefixHoldsCredentials(t *testing.T) {
	f := newPolicyFixture(t)
	bin := filepath.Join(f.home, ".cargo", "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(bin, "mcp-tool")
	if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(f.home, ".cargo", "credentials.toml")
	if err := os.WriteFile(token, []byte("[registry]\ntoken = \"cio-secret\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := f.input(nil)
	in.program = prog
	p, err := buildPolicy(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range policyPaths(p) {
		if within(token, path) {
			t.Fatalf("the runtime prefix %s of %s grants %s (crates.io token)", path, prog, token)
		}
	}
}

// TestAttack22GitHooksWritable: the default profile makes the whole
// workspace writable, its .git included. A confined server writes
// .git/hooks/pre-commit (or core.hooksPath / core.fsmonitor in
// .git/config) and the operator's next git command runs it unconfined,
// with every right the sandbox withheld. Anthropic's sandbox-runtime keeps
// such files read-only inside a writable directory; berth's policy has no
// way to (Landlock rules only add rights).
func TestAttack22GitHooksWritable(t *testing.T) {
	f := newPolicyFixture(t)
	hooks := filepath.Join(f.ws, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := buildPolicy(f.input(nil))
	if err != nil {
		t.Fatal(err)
	}
	// The workspace stays a write path; its .git must then be a read-only
	// path inside it (sandbox.Policy.ReadOnly, held by a mount namespace:
	// sandbox TestReadOnlyInsideWrite shows the kernel refusing the write).
	readOnly := func(target string) bool {
		for _, ro := range p.ReadOnly {
			if within(target, ro) {
				return true
			}
		}
		return false
	}
	for _, path := range p.Write {
		for _, target := range []string{filepath.Join(hooks, "pre-commit"), filepath.Join(f.ws, ".git", "config")} {
			if within(target, path) && !readOnly(target) {
				t.Fatalf("the default profile makes %s writable, so %s is: a server plants a hook the operator's git runs unconfined", path, target)
			}
		}
	}
}

// TestAttack22WorkspaceIsHome: the default profile makes the workspace
// writable, and nothing refuses a workspace that is the home directory
// (or holds it: /, /home), which is what berth gets when a client starts
// it from ~ with no --workspace. The promised "nothing else under $HOME"
// becomes all of it, writable: ~/.ssh, ~/.bashrc, the browser profiles.
// (With the default BERTH_HOME, ~/.local/share/berth, the state check
// refuses it by accident; with BERTH_HOME elsewhere, as here, nothing
// does.)
func TestAttack22WorkspaceIsHome(t *testing.T) {
	f := newPolicyFixture(t)
	in := f.input(nil)
	in.workspace = f.home
	in.state = filepath.Join(f.root, "berth")
	in.program = "/bin/sh"
	p, err := buildPolicy(in)
	if err != nil {
		return // refusing the start (or narrowing the workspace) is a fix
	}
	for _, path := range policyPaths(p) {
		if within(f.home, path) {
			t.Fatalf("the default profile grants %s, which holds the home directory %s (the workspace is home)", path, f.home)
		}
	}
}

// TestAttack22HomeUnknownFailsOpen: when berth's HOME is unset or not
// absolute (a client or service manager that starts berth with a bare
// environment), confine passes home "" and every "never the home
// directory" rule of runtimePrefixes and pathExec is skipped: a program
// in ~/bin makes the whole home directory the runtime prefix, readable
// and executable, ~/.ssh included. The account's home (getpwuid) is known
// all the same.
func TestAttack22HomeUnknownFailsOpen(t *testing.T) {
	f := newPolicyFixture(t)
	bin := filepath.Join(f.home, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(bin, "mcp-tool")
	if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(f.root, "srv", "proj") // a workspace outside home
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	in := f.input(nil)
	in.workspace = ws
	in.program = prog
	in.home = "" // HOME unset in berth's environment
	in.pathList = bin + ":/usr/bin:/bin"
	p, err := buildPolicy(in)
	if err != nil {
		return // refusing the start is a fix
	}
	for _, path := range policyPaths(p) {
		if within(f.home, path) {
			t.Fatalf("with HOME unset the policy grants %s, which is the home directory %s itself", path, f.home)
		}
	}
}

// TestAttack22ShebangNamesAnyDirectory: scriptInterpreter takes the first
// word after "#!/usr/bin/env" that does not start with "-" as the
// interpreter and lookPath joins it to each PATH directory, "../" and all.
// A bundle script whose line is "#!/usr/bin/env -S -u ../../.aws/helper
// node" runs node (env's -u takes the next word as a variable to unset),
// but berth grants the runtime prefix of ~/.aws/helper, found from a PATH
// directory under home (~/go/bin) without knowing the user's name: the
// server reads ~/.aws/credentials. Any executable file makes its
// directory readable this way.
func TestAttack22ShebangNamesAnyDirectory(t *testing.T) {
	f := newPolicyFixture(t)
	aws := filepath.Join(f.home, ".aws")
	gobin := filepath.Join(f.home, "go", "bin")
	for _, d := range []string{aws, gobin} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(aws, "helper"), []byte("#!/bin/sh\n"), 0o700); err != nil { // a credential_process script
		t.Fatal(err)
	}
	creds := filepath.Join(aws, "credentials")
	if err := os.WriteFile(creds, []byte("aws_secret_access_key = SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(f.bundleDir, "server.js")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env -S -u ../../.aws/helper node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pathList := gobin + ":/usr/bin:/bin"
	in := f.input(nil)
	in.program = script
	in.pathList = pathList
	in.interpreter = scriptInterpreter(script, pathList)
	p, err := buildPolicy(in)
	if err != nil {
		return // refusing the start is a fix
	}
	for _, path := range policyPaths(p) {
		if within(creds, path) {
			t.Fatalf("the script's line makes berth grant %s (interpreter %q), so ~/.aws/credentials is readable", path, in.interpreter)
		}
	}
}
