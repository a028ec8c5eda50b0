//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/hostile"
	"github.com/berth-mcp/berth/internal/keyringtest"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/sandbox"
)

// The attack suite of docs/sandbox.md: berth-hostile (internal/hostile)
// is a plugin's local server, trusted, enabled and started by berth serve
// as any other, and its tool try makes one attack and says what it got.
// Each subtest is one attack that the confinement must stop; the attacks
// themselves are checked to work unconfined in internal/hostile.

var hostileBuild struct {
	once sync.Once
	prog string
	err  error
}

// hostileProgram builds berth-hostile once for the package's tests, into
// one directory per user and race mode that every run reuses (each lab
// copies the program, so no test needs it to outlive the run).
func hostileProgram(t *testing.T) string {
	t.Helper()
	hostileBuild.once.Do(func() {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("berth-hostile-build-%d-race-%v", os.Getuid(), testkit.Race))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			hostileBuild.err = err
			return
		}
		hostileBuild.err = testkit.GoBuild(dir, hostile.Package)
		hostileBuild.prog = filepath.Join(dir, "berth-hostile")
	})
	if hostileBuild.err != nil {
		t.Fatal(hostileBuild.err)
	}
	return hostileBuild.prog
}

// hostileOptions set up one run of berth with the hostile plugin.
type hostileOptions struct {
	// sandbox is the JSON of the "bad" server's sandbox declaration;
	// "" declares none (the default profile).
	sandbox string
	// nobody runs every berth command as user nobody (setpriv).
	nobody bool
	// env is added to berth's environment.
	env []string
	// serverEnv is the manifest's env of the "bad" server (name →
	// fromEnv source).
	serverEnv map[string]string
	// fetched is the JSON of a third server, "fetched", if not "".
	fetched string
	// path is put first on berth's PATH (and so the servers').
	path string
	// setup runs on BERTH_HOME before the plugin is trusted.
	setup func(berthHome string)
}

// hostileLab is one BERTH_HOME, HOME and workspace with the hostile
// plugin trusted and enabled, and berth serve running with an MCP client
// connected.
type hostileLab struct {
	t *testing.T
	// root holds it all; home is HOME, with BERTH_HOME at home/.berth.
	root, home, berthHome string
	// ws is the workspace; beside a directory next to it, with
	// beside/notes.txt; outside a directory outside both.
	ws, beside, outside string
	// rt is the servers' runtime prefix: rt/bin holds berth-hostile (and,
	// for nobody, rt/bin/euid-root, a setuid-root copy of it).
	rt string
	// staged is the plugin's staged snapshot in the store.
	staged string
	// sshKey is the planted ~/.ssh/id_ed25519, canary its content.
	sshKey string
	// berthPid is berth serve's pid; its environment holds envCanary.
	berthPid int
	prefix   []string // the command line prefix running berth
	env      []string
	cs       *mcp.ClientSession
	serveErr *syncBuffer
}

const (
	sshCanary = "-----BEGIN OPENSSH PRIVATE KEY-----\nberth-hostile-canary-ssh-3b9e\n"
	envCanary = "berth-hostile-canary-env-71d2"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHostileLab(t *testing.T, o *hostileOptions) *hostileLab {
	t.Helper()
	if sup := sandbox.Probe(); sup.LandlockABI < 6 || !sup.Seccomp || !sup.UserNamespaces {
		msg := fmt.Sprintf("this host cannot confine what the attack suite attacks (Landlock ABI %d, want 6 or later; seccomp %v; user namespaces %v; %s)",
			sup.LandlockABI, sup.Seccomp, sup.UserNamespaces, strings.Join(sup.Notes, "; "))
		if os.Getenv(testkit.RequireRootEnv) != "" {
			t.Fatalf("%s; %s is set, which makes this a failure", msg, testkit.RequireRootEnv)
		}
		t.Skip(msg)
	}
	prog := hostileProgram(t)
	root, err := os.MkdirTemp("", "berth-h-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	root, _ = filepath.EvalSymlinks(root)
	os.Chmod(root, 0o755)
	l := &hostileLab{t: t, root: root, home: filepath.Join(root, "home"), rt: filepath.Join(root, "rt"),
		ws: filepath.Join(root, "projects", "ws"), beside: filepath.Join(root, "projects", "other"),
		outside: filepath.Join(root, "outside"), serveErr: &syncBuffer{}}
	l.berthHome = filepath.Join(l.home, ".berth")
	l.sshKey = filepath.Join(l.home, ".ssh", "id_ed25519")
	for _, d := range []string{filepath.Join(l.rt, "bin"), filepath.Dir(l.sshKey), l.ws, l.beside, l.outside} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, copyFile(prog, filepath.Join(l.rt, "bin", "berth-hostile"), 0o755))
	must(t, os.WriteFile(l.sshKey, []byte(sshCanary), 0o600))
	must(t, os.WriteFile(filepath.Join(l.beside, "notes.txt"), []byte("the operator's other project\n"), 0o644))

	bad := `{"stdio": {"command": "berth-hostile"`
	if o.serverEnv != nil {
		env := map[string]map[string]string{}
		for k, v := range o.serverEnv {
			env[k] = map[string]string{"fromEnv": v}
		}
		b, _ := json.Marshal(env)
		bad += `, "env": ` + string(b)
	}
	bad += `}`
	if o.sandbox != "" {
		bad += `, "sandbox": ` + o.sandbox
	}
	bad += `}`
	src := filepath.Join(root, "src", "hostile")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "berth.json"), []byte(`{"manifestVersion": 1, "name": "hostile", "version": "1.0.0",
  "description": "a plugin whose servers attack the host",
  "mcpServers": {
    "bad": `+bad+`,
    "peer": {"stdio": {"command": "berth-hostile"}}`+map[bool]string{true: `,
    "fetched": ` + o.fetched, false: ""}[o.fetched != ""]+`
  }}`), 0o644))

	berth, err := exec.LookPath("berth")
	if err != nil {
		t.Fatal(err)
	}
	l.prefix = []string{berth}
	if o.nobody {
		setpriv := testkit.NeedSetpriv(t)
		testkit.NeedRoot(t, "to run berth as user nobody")
		self := filepath.Join(root, "berthbin", "berth")
		must(t, os.MkdirAll(filepath.Dir(self), 0o755))
		must(t, copyFile(berth, self, 0o755))
		setuid := filepath.Join(l.rt, "bin", "euid-root")
		must(t, copyFile(prog, setuid, 0o755))
		must(t, os.Chown(setuid, 0, 0))
		must(t, os.Chmod(setuid, 0o755|os.ModeSetuid))
		for _, d := range []string{l.home, filepath.Join(root, "projects"), l.outside, filepath.Join(root, "src")} {
			if out, err := exec.Command("chown", "-R", "nobody:nogroup", d).CombinedOutput(); err != nil {
				t.Fatalf("chown %s: %v %s", d, err, out)
			}
		}
		l.prefix = []string{setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", self}
	}
	l.env = append([]string{
		"PATH=" + strings.TrimPrefix(o.path+":", ":") + filepath.Join(l.rt, "bin") + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + l.home, "BERTH_HOME=" + l.berthHome, "GORACE=" + os.Getenv("GORACE"),
		"LANG=C.UTF-8", "BERTH_HOSTILE_CANARY=" + envCanary,
		"DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(root, "no-bus"),
	}, o.env...)

	if o.setup != nil {
		o.setup(l.berthHome)
	}
	digest := strings.Fields(l.berth("digest", src))
	l.berth("trust", "--yes", "--allow-unsigned", "--digest", digest[len(digest)-1], src)
	l.berth("enable", "hostile", "--workspace", l.ws)
	l.berth("policy", "set", "hostile__*", "allow")
	l.staged = filepath.Join(l.berthHome, "store", "sha256", strings.TrimPrefix(digest[len(digest)-1], "sha256:"))
	if _, err := os.Stat(l.staged); err != nil {
		t.Fatalf("the staged snapshot: %v", err)
	}
	l.serve()
	return l
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(from, to string, mode os.FileMode) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, mode)
}

func (l *hostileLab) command(args ...string) *exec.Cmd {
	cmd := exec.Command(l.prefix[0], append(l.prefix[1:], args...)...)
	cmd.Env = l.env
	cmd.Dir = l.ws
	return cmd
}

// berth runs a berth command to its end and returns its output.
func (l *hostileLab) berth(args ...string) string {
	l.t.Helper()
	out, err := l.command(args...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (l *hostileLab) serve() {
	t := l.t
	t.Helper()
	cmd := l.command("serve", "--workspace", l.ws)
	cmd.Stderr = l.serveErr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "hostile-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to berth serve: %v\n%s", err, l.serveErr)
	}
	t.Cleanup(func() { cs.Close() })
	l.cs = cs
	l.berthPid = cmd.Process.Pid
}

// diag is berth's status and the server's log, for a failure.
func (l *hostileLab) diag(server string) string {
	var b strings.Builder
	for _, args := range [][]string{{"status", "--workspace", l.ws}, {"logs", "hostile__" + server}} {
		out, _ := l.command(args...).CombinedOutput()
		fmt.Fprintf(&b, "berth %s:\n%s\n", strings.Join(args, " "), out)
	}
	return b.String()
}

// try calls server's tool try: the attack made from inside berth.
func (l *hostileLab) try(t *testing.T, server, attack, arg string) *hostile.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := l.cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostile__" + server + "__try", Arguments: map[string]any{"attack": attack, "arg": arg}})
	if err != nil {
		t.Fatalf("calling %s's try %s: %v\nberth serve's stderr:\n%s\n%s", server, attack, err, l.serveErr, l.diag(server))
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var r hostile.Result
	if res.IsError || json.Unmarshal([]byte(text.String()), &r) != nil {
		t.Fatalf("%s's try %s answered %q (error %v)\nberth serve's stderr:\n%s", server, attack, text.String(), res.IsError, l.serveErr)
	}
	return &r
}

// denied fails t unless the attack got nothing, and its error says so
// with one of want (the errno the confinement gives: "permission
// denied", "operation not permitted", ...).
func denied(t *testing.T, r *hostile.Result, want ...string) {
	t.Helper()
	if r.OK {
		t.Fatalf("the hostile server's %s %s got through: %q", r.Attack, r.Arg, r.Got)
	}
	for _, w := range want {
		if strings.Contains(r.Error, w) {
			return
		}
	}
	t.Fatalf("the hostile server's %s %s failed with %q, not for the confinement's reason (%s)", r.Attack, r.Arg, r.Error, strings.Join(want, " or "))
}

const (
	eacces = "permission denied"
	eperm  = "operation not permitted"
)

// TestHostileDefaultProfile: a server that declares nothing gets the
// default profile (docs/sandbox.md): no file under $HOME but its own, no
// other project, nothing writable but the workspace and its own
// directories, nothing executable that it wrote, and nothing of berth or
// of a sibling server's process, nor the session bus.
func TestHostileDefaultProfile(t *testing.T) {
	bus, noBus := hostile.StartBus(t)
	o := &hostileOptions{}
	if bus != "" {
		o.env = []string{"DBUS_SESSION_BUS_ADDRESS=" + bus}
		o.serverEnv = map[string]string{"DBUS_SESSION_BUS_ADDRESS": "DBUS_SESSION_BUS_ADDRESS"}
	}
	l := newHostileLab(t, o)
	t.Run("ssh-key", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Read, l.sshKey), eacces)
		denied(t, l.try(t, "bad", hostile.Read, filepath.Dir(l.sshKey)), eacces)
	})
	t.Run("beside-workspace", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Read, filepath.Join(l.beside, "notes.txt")), eacces)
		denied(t, l.try(t, "bad", hostile.Read, l.beside), eacces)
	})
	t.Run("workspace-readable", func(t *testing.T) {
		// The benign side: what the profile grants works.
		if r := l.try(t, "bad", hostile.Write, filepath.Join(l.ws, "out.txt")); !r.OK {
			t.Fatalf("writing in the workspace: %+v", r)
		}
		if r := l.try(t, "bad", hostile.Read, filepath.Join(l.ws, "out.txt")); !r.OK {
			t.Fatalf("reading the workspace: %+v", r)
		}
	})
	t.Run("write-outside", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Write, filepath.Join(l.outside, "planted")), eacces)
		denied(t, l.try(t, "bad", hostile.Write, filepath.Join(l.home, ".bashrc")), eacces)
	})
	t.Run("exec-workspace", func(t *testing.T) {
		r := l.try(t, "bad", hostile.ExecWritten, l.ws)
		denied(t, r, eacces)
		if _, err := os.Stat(filepath.Join(l.ws, "payload")); err != nil {
			t.Fatalf("the server could not even write its payload into the workspace (%v): the test proves nothing", err)
		}
	})
	peer := l.try(t, "peer", hostile.Whoami, "")
	var peerPid int
	if _, err := fmt.Sscanf(peer.Got, "pid=%d", &peerPid); err != nil {
		t.Fatalf("the sibling server's pid: %q", peer.Got)
	}
	berthPid := fmt.Sprint(l.berthPid)
	t.Run("ptrace-berth", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Ptrace, berthPid), eperm)
	})
	t.Run("ptrace-sibling", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Ptrace, fmt.Sprint(peerPid)), eperm)
	})
	t.Run("kill-berth", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Kill, berthPid), eperm)
	})
	t.Run("kill-sibling", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Kill, fmt.Sprint(peerPid)), eperm)
	})
	t.Run("environ-berth", func(t *testing.T) {
		r := l.try(t, "bad", hostile.Environ, berthPid)
		if strings.Contains(r.Got, envCanary) {
			t.Fatalf("the hostile server read berth's environment: %q", r.Got)
		}
		denied(t, r, eacces)
	})
	t.Run("session-bus", func(t *testing.T) {
		if bus == "" {
			keyringtest.Unavailable(t, noBus)
		}
		denied(t, l.try(t, "bad", hostile.DBus, ""), eperm, eacces)
	})
	// The sibling is alive and berth still answers.
	if r := l.try(t, "peer", hostile.Whoami, ""); !strings.Contains(r.Got, fmt.Sprintf("pid=%d ", peerPid)) {
		t.Fatalf("the sibling server is not the one it was: %q", r.Got)
	}
	// Last: a write that got through would make the plugin drift, or
	// break berth's own state, and fail every later call.
	t.Run("write-bundle", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Write, filepath.Join(l.staged, "planted")), eacces, "read-only file system")
		denied(t, l.try(t, "bad", hostile.Write, filepath.Join(l.staged, "berth.json")), eacces, "read-only file system")
	})
	t.Run("write-store", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.Write, filepath.Join(l.berthHome, "config.json")), eacces)
		denied(t, l.try(t, "bad", hostile.Write, filepath.Join(l.berthHome, "state.json")), eacces)
		denied(t, l.try(t, "bad", hostile.Write, filepath.Join(l.berthHome, "store", "sha256", "planted")), eacces)
	})
}

// hostileAPI is the declared network of TestHostileDeclaredNetwork: a
// plain HTTP service on the host's loopback, the one host:port the
// server may reach.
func hostileAPI(t *testing.T, log *hostile.Log) string {
	t.Helper()
	return hostile.ListenHTTP(t, "127.0.0.1:0", log)
}

// TestHostileDeclaredNetwork: a server that declares one host reaches it
// through berth's egress proxy, and nothing else: no other loopback port
// (its loopback is its own), no other host or port through the proxy, no
// address of a network the test made, and no datagram (UDP, DNS) leaves.
func TestHostileDeclaredNetwork(t *testing.T) {
	ns := hostile.NewNetNS(t)
	var log hostile.Log
	api := hostileAPI(t, &log)
	other := hostile.ListenTCP(t, "127.0.0.1:0", &log)
	otherHost := hostile.ListenTCP(t, "127.0.0.2:0", &log)
	udp := hostile.ListenUDP(t, "127.0.0.1:0", &log)
	_, apiPort, _ := strings.Cut(api, ":")
	l := newHostileLab(t, &hostileOptions{sandbox: `{"network": {"mode": "hosts", "hosts": ["` + api + `"]}}`})

	t.Run("declared-host", func(t *testing.T) {
		r := l.try(t, "bad", hostile.ProxyGet, "http://"+api+"/")
		if !r.OK || !strings.Contains(r.Got, "the declared API") {
			t.Fatalf("the declared host %s through the proxy: %+v\nberth serve's stderr:\n%s", api, r, l.serveErr)
		}
		r = l.try(t, "bad", hostile.ProxyConnect, api)
		if !r.OK {
			t.Fatalf("CONNECT to the declared host %s: %+v", api, r)
		}
	})
	log.Reset()
	ns.Log.Reset()
	t.Run("loopback-port", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.TCP, other), "connection refused", eacces)
		denied(t, l.try(t, "bad", hostile.TCP, api), "connection refused", eacces)
	})
	t.Run("proxy-undeclared-host", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.ProxyConnect, otherHost), "403")
		denied(t, l.try(t, "bad", hostile.ProxyGet, "http://127.0.0.2:"+apiPort+"/"), "403")
		denied(t, l.try(t, "bad", hostile.ProxyConnect, ns.TCP), "403")
	})
	t.Run("proxy-other-port", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.ProxyConnect, other), "403")
		denied(t, l.try(t, "bad", hostile.ProxyGet, "http://"+other+"/"), "403")
	})
	t.Run("other-network", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.TCP, ns.TCP), "network is unreachable", eacces)
	})
	t.Run("udp", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.UDP, ns.UDP), "network is unreachable")
		denied(t, l.try(t, "bad", hostile.UDP, udp), "connection refused", "i/o timeout")
	})
	t.Run("dns", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.DNS, ns.DNS), "network is unreachable")
	})
	if got := append(log.Got(), ns.Log.Got()...); len(got) > 0 {
		t.Errorf("the test's listeners heard from the hostile server: %q", got)
	}
}

// TestHostileNetworkNone: a server that declares network none reaches
// nothing: no proxy, no loopback of the host, no other network, no
// datagram.
func TestHostileNetworkNone(t *testing.T) {
	ns := hostile.NewNetNS(t)
	var log hostile.Log
	api := hostileAPI(t, &log)
	udp := hostile.ListenUDP(t, "127.0.0.1:0", &log)
	l := newHostileLab(t, &hostileOptions{sandbox: `{"network": {"mode": "none"}}`})
	t.Run("no-proxy", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.ProxyGet, "http://"+api+"/"), "no proxy in the environment")
	})
	t.Run("loopback", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.TCP, api), "connection refused", eacces)
	})
	t.Run("other-network", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.TCP, ns.TCP), "network is unreachable", eacces)
	})
	t.Run("udp-dns", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.UDP, ns.UDP), "network is unreachable")
		denied(t, l.try(t, "bad", hostile.UDP, udp), "connection refused", "i/o timeout")
		denied(t, l.try(t, "bad", hostile.DNS, ns.DNS), "network is unreachable")
	})
	if got := append(log.Got(), ns.Log.Got()...); len(got) > 0 {
		t.Errorf("the test's listeners heard from the hostile server: %q", got)
	}
}

// TestHostileAsNobody: run by a user who is not root, the server cannot
// regain rights: a setuid-root program runs with the user's (no_new_privs),
// and it cannot make a user namespace (where it would be root).
func TestHostileAsNobody(t *testing.T) {
	l := newHostileLab(t, &hostileOptions{nobody: true})
	if r := l.try(t, "bad", hostile.Whoami, ""); !strings.Contains(r.Got, "euid=65534") {
		t.Fatalf("the server does not run as nobody: %q", r.Got)
	}
	t.Run("setuid", func(t *testing.T) {
		r := l.try(t, "bad", hostile.Setuid, filepath.Join(l.rt, "bin", "euid-root"))
		if r.OK {
			t.Fatalf("the setuid-root program ran as root: %q", r.Got)
		}
		if !strings.Contains(r.Got, "euid=65534") {
			t.Fatalf("the setuid-root program did not run, so the test proves nothing: %+v", r)
		}
		if fi, err := os.Stat(filepath.Join(l.rt, "bin", "euid-root")); err != nil || fi.Mode()&os.ModeSetuid == 0 {
			t.Fatalf("the program is not setuid (%v), so the test proves nothing", err)
		}
	})
	t.Run("user-namespace", func(t *testing.T) {
		denied(t, l.try(t, "bad", hostile.UserNS, ""), eperm)
	})
}
