package review

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// TestRuntimePrefix: a host program's runtime prefix is the parent of the
// bin directory it really is in (symlinks resolved), or its own
// directory; a command not on PATH has none; nothing is run.
func TestRuntimePrefix(t *testing.T) {
	root := t.TempDir()
	nvm := filepath.Join(root, "nvm", "versions", "node", "v22.1.0")
	if err := os.MkdirAll(filepath.Join(nvm, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A program that would leave a mark if it were run.
	mark := filepath.Join(root, "ran")
	if err := os.WriteFile(filepath.Join(nvm, "bin", "node"), []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shims := filepath.Join(root, "shims")
	if err := os.MkdirAll(shims, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(nvm, "bin", "node"), filepath.Join(shims, "node")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shims, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims)
	realNVM, _ := filepath.EvalSymlinks(nvm)
	realShims, _ := filepath.EvalSymlinks(shims)
	for cmd, want := range map[string]string{"node": realNVM, "tool": realShims} {
		got, ok := RuntimePrefix(cmd)
		if !ok || got != want {
			t.Errorf("RuntimePrefix(%q) = %q, %v; want %q", cmd, got, ok, want)
		}
	}
	for _, cmd := range []string{"python3", "", "../shims/node", "/bin/sh"} {
		if got, ok := RuntimePrefix(cmd); ok {
			t.Errorf("RuntimePrefix(%q) = %q; want not found", cmd, got)
		}
	}

	d := &Disclosure{Servers: []Server{{Name: "s", Kind: KindStdio, Stdio: &Stdio{Program: ProgramHost, Command: "node", Sandbox: NewSandbox(nil)}}}}
	before := d.Hash()
	if !strings.Contains(string(text(t, d)), "the program's runtime prefix, found when it starts") {
		t.Errorf("an unlocated runtime is not said to be found at start:\n%s", string(text(t, d)))
	}
	d.LocateRuntimes()
	if d.Servers[0].Stdio.Sandbox.RuntimePrefix != realNVM {
		t.Fatalf("LocateRuntimes set %q; want %q", d.Servers[0].Stdio.Sandbox.RuntimePrefix, realNVM)
	}
	if !strings.Contains(string(text(t, d)), "the program's runtime prefix (here: "+realNVM+")") {
		t.Errorf("the review does not show the prefix:\n%s", string(text(t, d)))
	}
	if d.Hash() != before {
		t.Error("the runtime prefix of the reviewer's machine changes the review's hash")
	}
	if d.Servers[0].Stdio.Sandbox.RuntimePrefix == "" {
		t.Error("Hash cleared the disclosure's own runtime prefix")
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("locating the runtime ran the program")
	}
}

// TestSandboxDisclosure: the review states the declared authority, or the
// default profile, in place of "runs as you", and never says a server
// writes nothing: berth always grants its own ${cache} and ${tmp}.
func TestSandboxDisclosure(t *testing.T) {
	for _, c := range []struct {
		sb   *bundle.Sandbox
		want []string
	}{
		{nil, []string{"default profile", "reads        ${bundle} (read-only)", "writes       ${workspace}, ${cache}, ${tmp}", "nothing else under your home", "network      not declared: any host (default profile)", "never the workspace"}},
		{&bundle.Sandbox{Network: &bundle.SandboxNetwork{Mode: bundle.NetworkNone}, Filesystem: &bundle.SandboxFilesystem{}}, []string{"authority it declares", "reads        ${bundle} (read-only)\n", "writes       ${cache}, ${tmp} (its own cache and temp, always granted); nothing else\n", "network      none: no network at all"}},
		{&bundle.Sandbox{Network: &bundle.SandboxNetwork{Mode: bundle.NetworkHosts, Hosts: []string{"api.example.com:443"}}}, []string{"network      only api.example.com:443, through berth's egress proxy"}},
		{&bundle.Sandbox{Network: &bundle.SandboxNetwork{Mode: bundle.NetworkUnrestricted, Reason: "crawls"}}, []string{`network      any host, because "crawls"`}},
		{&bundle.Sandbox{Filesystem: &bundle.SandboxFilesystem{Read: []string{"${home}/.config/a"}, Write: []string{"${cache}"}}}, []string{"reads        ${bundle} (read-only), ${home}/.config/a", "writes       ${cache}, ${tmp} (its own cache and temp, always granted); nothing else\n", "network      not declared"}},
	} {
		d := &Disclosure{Servers: []Server{{Name: "s", Kind: KindStdio, Stdio: &Stdio{Program: ProgramBundled, Command: "${bundle}/s", Sandbox: NewSandbox(c.sb)}}}}
		d.Servers[0].Stdio.Authority = d.Servers[0].Stdio.Sandbox.Authority()
		got := string(text(t, d))
		if strings.Contains(got, "runs as you") {
			t.Errorf("the review still says it runs as you:\n%s", got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("the review of %+v lacks %q:\n%s", c.sb, w, got)
			}
		}
	}
}
