// Command demo runs berth's main job end to end on the example catalog in
// examples/catalog, in a temporary BERTH_HOME and workspace, and prints
// each step: it builds the catalog's bundles and berth itself from source,
// validates and reviews the demo bundle, signs every bundle with the
// example signer key, builds and signs a TUF catalog of them with berth
// catalog (as a curator would, with a berth home of its own), adds it
// with berth marketplace add (its root pinned by sha256), browses it with
// search and show, installs two plugins with berth install --enable (each
// new signer scoped to its plugin), locks the workspace, starts berth
// serve, connects an MCP client, lists the tools, calls two (approved
// through the approval queue, so you see that step), revokes one plugin in
// the catalog and shows the running server drop it after berth
// marketplace update, then tampers with a staged file and shows the next
// call fail closed with the drift error. No network is used: the bundle
// that wraps an npm server is catalogued and shown, not started.
//
// Run it from the berth repository, with the Go toolchain (make demo, or
// go run ./examples/demo [-keep]). It exits 0 only if every step behaved
// as expected.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/mcpexport"
)

// The demo's tools, as berth exports them.
const (
	demoSearch = "demo-notes__notes__search_notes"
	fmtHash    = "demo-fmt__fmt__hash_file"
)

// everythingPackage is the npm server the everything bundle wraps, at the
// version of testdata/peers/package.json.
const everythingPackage = "@modelcontextprotocol/server-everything@2026.8.31"

// berth's exit codes that the demo expects (docs/cli.md).
const (
	exitOK        = 0
	exitUntrusted = 4
	exitDrift     = 5
)

// The bundles of the example catalog, in examples/catalog.
var catalogBundles = []string{"demo-notes", "demo-fmt", "everything"}

// bundlePrograms are the programs each bundle ships in bin/: each
// program in one bundle only, so no tool is listed twice.
var bundlePrograms = map[string][]string{"demo-notes": {"notes-server"}, "demo-fmt": {"fmt-tools"}}

func main() {
	keep := flag.Bool("keep", false, "keep the temporary BERTH_HOME and workspace, and print where they are")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Stdout, *keep))
}

// run runs the demo and returns its exit code.
func run(ctx context.Context, stdout io.Writer, keep bool) int {
	d, err := newDemo(stdout, keep)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	defer d.cleanup()
	if err := d.run(ctx); err != nil {
		fmt.Fprintf(stdout, "\nDEMO FAILED: %v\n", err)
		return 1
	}
	return 0
}

type demo struct {
	stdout    io.Writer
	keep      bool
	repo, tmp string
	// home is the operator's BERTH_HOME, curator the curator's.
	home, curator, ws string
	// bundles holds the built bundles (one directory each), catalog the
	// catalog repository and keys its role keys.
	bundles, catalog, keys string
	signer, berthExe       string
	step                   int
	// token is what berth serve's HTTP listener wants in
	// "Authorization: Bearer", from the file it made on first use.
	token string
}

func newDemo(stdout io.Writer, keep bool) (*demo, error) {
	repo, err := findRepo()
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("the demo builds its example from source and needs the go command on PATH (install Go 1.26)")
	}
	tmp, err := os.MkdirTemp("", "berth-demo-")
	if err != nil {
		return nil, err
	}
	d := &demo{stdout: stdout, keep: keep, repo: repo, tmp: tmp,
		home: filepath.Join(tmp, "berth-home"), curator: filepath.Join(tmp, "curator-home"), ws: filepath.Join(tmp, "workspace"),
		bundles: filepath.Join(tmp, "bundles"), catalog: filepath.Join(tmp, "catalog"), keys: filepath.Join(tmp, "catalog-keys"),
		signer: filepath.Join(repo, "examples", "demo", "example-signer"), berthExe: filepath.Join(tmp, "bin", "berth")}
	return d, nil
}

// findRepo walks up from the working directory to berth's module root.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/berth-mcp/berth\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("the demo builds its example from source: run it inside the berth repository (make demo)")
		}
		dir = parent
	}
}

func (d *demo) cleanup() {
	if d.keep {
		fmt.Fprintf(d.stdout, "\nKept: BERTH_HOME=%s, workspace %s\n", d.home, d.ws)
		return
	}
	atomicfile.RemoveTree(d.tmp)
}

func (d *demo) title(format string, args ...any) {
	d.step++
	fmt.Fprintf(d.stdout, "\n== Step %d: %s\n", d.step, fmt.Sprintf(format, args...))
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.stdout, "   "+format+"\n", args...)
}

// expect says, before it runs, that a command is meant to fail, and why,
// so a reader does not take the error that follows for a broken demo.
func (d *demo) expect(why string) {
	fmt.Fprint(d.stdout, indent("EXPECTED FAILURE: "+why, "   "))
}

// berth runs a berth command with the operator's BERTH_HOME, prints it
// and its output, and checks its exit code.
func (d *demo) berth(ctx context.Context, want int, args ...string) (string, error) {
	return d.berthAt(ctx, d.home, want, args...)
}

// curate is berth for the curator, with the curator's BERTH_HOME.
func (d *demo) curate(ctx context.Context, want int, args ...string) (string, error) {
	return d.berthAt(ctx, d.curator, want, args...)
}

func (d *demo) berthAt(ctx context.Context, home string, want int, args ...string) (string, error) {
	who := ""
	if home == d.curator {
		who = "(curator) "
	}
	fmt.Fprintf(d.stdout, "   %s$ berth %s\n", who, strings.Join(quoteAll(d.short(args)), " "))
	out, code, err := d.runBerthAt(ctx, home, args...)
	if err != nil {
		return "", err
	}
	fmt.Fprint(d.stdout, indent(out, "     "))
	if code != want {
		return out, fmt.Errorf("berth %s exited %d, expected %d", strings.Join(args, " "), code, want)
	}
	if want != exitOK {
		fmt.Fprintf(d.stdout, "     (exit %d, as expected)\n", code)
	}
	return out, nil
}

// runBerth runs the berth that the demo built, with the demo's BERTH_HOME
// and no standard input, and returns its output and exit code.
func (d *demo) runBerth(ctx context.Context, args ...string) (string, int, error) {
	return d.runBerthAt(ctx, d.home, args...)
}

func (d *demo) runBerthAt(ctx context.Context, home string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, d.berthExe, args...)
	cmd.Env = append(os.Environ(), "BERTH_HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("running berth %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), 0, nil
}

// short shows the demo's temporary paths relative to its directory.
func (d *demo) short(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if rel, err := filepath.Rel(d.tmp, a); err == nil && filepath.IsAbs(a) && !strings.HasPrefix(rel, "..") {
			a = "$DEMO/" + rel
		}
		out[i] = a
	}
	return out
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'{}*") {
			out[i] = "'" + a + "'"
		} else {
			out[i] = a
		}
	}
	return out
}

func indent(s, pre string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre) + "\n"
}

func (d *demo) run(ctx context.Context) error {
	fmt.Fprintf(d.stdout, "berth demo: the main job on the example catalog, in a temporary directory $DEMO (%s):\nthe operator's BERTH_HOME, a curator's, the catalog and a workspace. Nothing leaves this machine.\n", d.tmp)

	d.title("build the example catalog's bundles (examples/catalog) and berth from source")
	if err := d.build(ctx); err != nil {
		return err
	}
	notes := filepath.Join(d.bundles, "demo-notes")

	d.title("validate and review the demo bundle, as a person deciding whether to trust it")
	if _, err := d.berth(ctx, exitOK, "validate", notes); err != nil {
		return err
	}
	if _, err := d.berth(ctx, exitOK, "review", notes); err != nil {
		return err
	}

	d.title("the publisher signs each bundle's canonical listing with the example signer key")
	for _, b := range catalogBundles {
		if _, err := d.berth(ctx, exitOK, "sign", filepath.Join(d.bundles, b), "--key", d.signer+".key"); err != nil {
			return err
		}
	}

	d.title("the curator builds a catalog of them: a TUF repository, signed with the curator's role keys")
	if _, err := d.curate(ctx, exitOK, "signers", "add-key", "example", d.signer+".pub"); err != nil {
		return err
	}
	out, err := d.curate(ctx, exitOK, "catalog", "init", d.catalog, "--keys", d.keys, "--name", "demo")
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`sha256 ([0-9a-f]{64})`).FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("berth catalog init did not print the sha256 of 1.root.json")
	}
	rootSHA := m[1]
	for _, add := range [][]string{
		{"demo-notes", "--tier", "verified", "--tag", "notes"},
		{"demo-fmt", "--tier", "verified", "--tag", "json"},
		{"everything", "--tag", "reference", "--tag", "npm"},
	} {
		args := append([]string{"catalog", "add", d.catalog, filepath.Join(d.bundles, add[0]), "--keys", d.keys}, add[1:]...)
		if _, err := d.curate(ctx, exitOK, args...); err != nil {
			return err
		}
	}
	if _, err := d.curate(ctx, exitOK, "catalog", "lint", d.catalog); err != nil {
		return err
	}

	d.title("the operator adds the catalog, its root pinned by the sha256 that catalog init printed")
	if _, err := d.berth(ctx, exitOK, "marketplace", "add", "demo", d.catalog, "--root-sha256", rootSHA); err != nil {
		return err
	}

	d.title("browse it, offline: search, and show what each plugin would do")
	if out, err = d.berth(ctx, exitOK, "search", "workspace"); err != nil {
		return err
	}
	if !strings.Contains(out, "demo-notes") || !strings.Contains(out, "demo-fmt") {
		return fmt.Errorf("search workspace did not find both plugins")
	}
	if _, err := d.berth(ctx, exitOK, "show", "demo-notes"); err != nil {
		return err
	}
	// The built-in catalog lists an "everything" too: name the demo's.
	if out, err = d.berth(ctx, exitOK, "show", "everything", "--catalog", "demo"); err != nil {
		return err
	}
	if !strings.Contains(out, "downloads    "+everythingPackage+" at trust (berth trust, berth install), staged; the server starts offline") {
		return fmt.Errorf("show everything does not say what npx downloads")
	}
	d.say("(everything is catalogued and shown, not installed: starting it would need the npm registry)")

	d.title("install two plugins: downloaded, checked against the catalog, verified, reviewed, staged, enabled")
	d.expect("The first command is meant to fail: this berth home has no signer yet, so trusting a bundle by hand is refused\n(exit 4). berth install then adds the signer that the catalog vouches for, scoped to the one plugin.")
	if _, err := d.berth(ctx, exitUntrusted, "trust", "--yes", notes); err != nil {
		return fmt.Errorf("with no signer configured, trust by hand must be refused: %w", err)
	}
	for _, p := range []string{"demo-notes", "demo-fmt"} {
		out, err := d.berth(ctx, exitOK, "install", p, "--enable", "--workspace", d.ws, "--yes")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "NEW SIGNER") || !strings.Contains(out, "Catalog demo vouches for this signer for "+p+" only") || !strings.Contains(out, "Enabled "+p+"@1.0.0") {
			return fmt.Errorf("install %s did not show its new signer, scoped to it, and enable it", p)
		}
	}
	if out, err = d.berth(ctx, exitOK, "signers", "list"); err != nil {
		return err
	}
	if !strings.Contains(out, "for plugin demo-notes only") || !strings.Contains(out, "for plugin demo-fmt only") {
		return fmt.Errorf("the signers are not scoped to their plugins")
	}
	if _, err := d.berth(ctx, exitOK, "verify"); err != nil {
		return err
	}

	d.title("lock the workspace (berth.lock, for a team to commit), and check it is in step")
	if _, err := d.berth(ctx, exitOK, "lock", "--workspace", d.ws); err != nil {
		return err
	}
	if _, err := d.berth(ctx, exitOK, "sync", "--check", "--workspace", d.ws); err != nil {
		return err
	}

	d.title("start berth serve (Streamable HTTP on loopback) and connect an MCP client")
	url, stop, err := d.serve(ctx)
	if err != nil {
		return err
	}
	defer stop()
	cs, err := d.connect(ctx, url)
	if err != nil {
		return err
	}
	defer cs.Close()

	d.title("list the tools")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	names := map[string]bool{}
	for _, t := range tools.Tools {
		d.say("%-36s %s", t.Name, firstLine(t.Description))
		names[t.Name] = true
	}
	for _, want := range []string{demoSearch, fmtHash} {
		if !names[want] {
			return fmt.Errorf("the tool %s is missing from the catalog", want)
		}
	}
	if len(names) != len(tools.Tools) {
		return fmt.Errorf("berth serve listed a tool name twice")
	}

	d.title("call %s: the policy says ask, so the call waits for approval", demoSearch)
	res, err := d.callApproved(ctx, cs, demoSearch, map[string]any{"query": "drift"})
	if err != nil {
		return err
	}
	d.result(res)
	if res.IsError || !strings.Contains(resultText(res), "ideas.md") {
		return fmt.Errorf("the approved call did not return the note")
	}

	d.title("call the native tool %s (a go-plugin provider), approved the same way", fmtHash)
	res, err = d.callApproved(ctx, cs, fmtHash, map[string]any{"path": "settings.json"})
	if err != nil {
		return err
	}
	d.result(res)
	settings, err := os.ReadFile(filepath.Join(d.ws, "settings.json"))
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(settings); res.IsError || !strings.Contains(resultText(res), hex.EncodeToString(sum[:])) {
		return fmt.Errorf("the native tool did not return the SHA-256 of settings.json")
	}

	d.title("the curator revokes demo-fmt; one catalog update and the running berth serve drops it")
	if _, err := d.curate(ctx, exitOK, "catalog", "status", d.catalog, "demo-fmt@1.0.0", "revoked", "--keys", d.keys, "--reason", "demo: pretend its key leaked"); err != nil {
		return err
	}
	if out, err = d.berth(ctx, exitOK, "marketplace", "update"); err != nil {
		return err
	}
	if !strings.Contains(out, "REVOKED: catalog demo revoked demo-fmt@1.0.0") {
		return fmt.Errorf("marketplace update did not report the revocation")
	}
	gone := false
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			return fmt.Errorf("listing tools: %w", err)
		}
		names := map[string]bool{}
		for _, t := range tools.Tools {
			names[t.Name] = true
		}
		if !names[fmtHash] && names[demoSearch] {
			gone = true
			break
		}
	}
	if !gone {
		return fmt.Errorf("berth serve still lists %s after the revocation", fmtHash)
	}
	d.say("berth serve no longer lists %s; %s is still there", fmtHash, demoSearch)
	d.expect("The next two commands are meant to fail: berth verify refuses the revoked demo-fmt (exit 4), and the workspace\nno longer matches its berth.lock, which still names demo-fmt (exit 5).")
	if _, err := d.berth(ctx, exitUntrusted, "verify", "demo-fmt"); err != nil {
		return err
	}
	if _, err := d.berth(ctx, exitDrift, "sync", "--check", "--workspace", d.ws); err != nil {
		return err
	}

	d.title("tamper with a staged file, then call again: berth fails closed")
	staged, err := d.stagedFile("demo-notes", "berth.json")
	if err != nil {
		return err
	}
	d.say("appending one byte to %s (the reviewed copy)", staged)
	if err := os.Chmod(staged, 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(staged, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	f.Write([]byte(" "))
	f.Close()
	time.Sleep(200 * time.Millisecond) // let the file-system watch see it
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: demoSearch, Arguments: map[string]any{"query": "drift"}})
	if err != nil {
		return fmt.Errorf("the call after tampering: %w", err)
	}
	d.result(res)
	if !res.IsError || !strings.Contains(resultText(res), "no longer matches what was reviewed") || !strings.Contains(resultText(res), "berth.json") {
		return fmt.Errorf("the call after tampering did not fail with the drift error")
	}
	d.expect("berth verify is meant to fail too (exit 5): it names the changed file, and still reports the revoked demo-fmt.")
	if _, err := d.berth(ctx, exitDrift, "verify"); err != nil {
		return err
	}

	fmt.Fprintf(d.stdout, "\nDemo complete: every step behaved as expected.\nNext: make test, then see README.md for installing berth and `berth connect claude-desktop`.\n")
	return nil
}

// build assembles the example catalog's bundles: each manifest of
// examples/catalog, and the programs built from the repository's source.
func (d *demo) build(ctx context.Context) error {
	bin := filepath.Join(d.tmp, "build")
	for _, b := range []struct{ out, pkg string }{
		{filepath.Join(bin, "notes-server"), "./examples/notesserver"},
		{filepath.Join(bin, "fmt-tools"), "./examples/fmttools"},
		{d.berthExe, "./cmd/berth"},
	} {
		d.say("$ go build -o %s %s", d.short([]string{b.out})[0], b.pkg)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Dir = d.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
		}
	}
	src := filepath.Join(d.repo, "examples", "catalog")
	programs := bundlePrograms
	for _, name := range catalogBundles {
		dir := filepath.Join(d.bundles, name)
		if err := copyFile(filepath.Join(src, name, "berth.json"), filepath.Join(dir, "berth.json"), 0o644); err != nil {
			return err
		}
		for _, p := range programs[name] {
			if err := copyFile(filepath.Join(bin, p), filepath.Join(dir, "bin", p), 0o755); err != nil {
				return err
			}
		}
		what := "berth.json"
		for _, p := range programs[name] {
			what += ", bin/" + p
		}
		d.say("bundle %s: %s", name, what)
	}
	return copyDir(filepath.Join(d.repo, "examples", "demo", "workspace"), d.ws)
}

func copyFile(from, to string, mode os.FileMode) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		return err
	}
	return os.Chmod(to, mode)
}

func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		return copyFile(p, filepath.Join(to, rel), 0o644)
	})
}

// serve starts `berth serve --http` as a child process of this berth.
func (d *demo) serve(ctx context.Context) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	d.say("$ berth serve --workspace %s --http %s", d.ws, addr)
	cmd := exec.Command(d.berthExe, "serve", "--workspace", d.ws, "--http", addr)
	cmd.Env = append(os.Environ(), "BERTH_HOME="+d.home)
	logf, err := os.Create(filepath.Join(d.tmp, "serve.log"))
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}
	url := "http://" + addr + "/mcp"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logf.Name())
			return "", nil, fmt.Errorf("berth serve did not start:\n%s", log)
		}
	}
	tok, err := os.ReadFile(filepath.Join(d.home, "serve.token"))
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("berth serve made no token file: %w", err)
	}
	d.token = strings.TrimSpace(string(tok))
	d.say("serving %s; clients send Authorization: Bearer $(cat $BERTH_HOME/serve.token)", url)
	return url, stop, nil
}

func (d *demo) connect(ctx context.Context, url string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "berth-demo-client", Version: "1.0.0"}, nil)
	hc := &http.Client{Transport: bearer{d.token, http.DefaultTransport}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", url, err)
	}
	d.say("connected (protocol %s); this client cannot show approval forms, so approvals go through the queue", cs.InitializeResult().ProtocolVersion)
	return cs, nil
}

// callApproved calls a tool and, while it waits in the approval queue,
// approves it the way an operator would: berth approvals, berth approve ID.
func (d *demo) callApproved(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
		done <- result{res, err}
	}()
	q := mcpexport.NewQueue(filepath.Join(d.home, "approvals"))
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return nil, fmt.Errorf("calling %s: %w", name, r.err)
			}
			return nil, fmt.Errorf("%s returned before anyone approved it: %s", name, resultText(r.res))
		case <-time.After(50 * time.Millisecond):
		}
		list, _ := q.List()
		if len(list) == 0 {
			continue
		}
		if len(list) != 1 || list[0].Tool != name {
			return nil, fmt.Errorf("the approval queue holds %d calls, the first of %s; want the one call of %s", len(list), list[0].Tool, name)
		}
		if _, err := d.berth(ctx, exitOK, "approvals"); err != nil {
			return nil, err
		}
		if _, err := d.berth(ctx, exitOK, "approve", list[0].ID); err != nil {
			return nil, err
		}
		r := <-done
		if r.err != nil {
			return nil, fmt.Errorf("calling %s: %w", name, r.err)
		}
		return r.res, nil
	}
}

func (d *demo) stagedFile(name, rel string) (string, error) {
	var list []struct {
		Name   string `json:"name"`
		Staged string `json:"staged"`
	}
	out, code, err := d.runBerth(context.Background(), "list", "--json")
	if err != nil || code != 0 {
		return "", fmt.Errorf("berth list failed: %v", err)
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return "", fmt.Errorf("berth list --json: %v", err)
	}
	for _, r := range list {
		if r.Name == name {
			return filepath.Join(r.Staged, filepath.FromSlash(rel)), nil
		}
	}
	return "", fmt.Errorf("berth list --json does not list %s", name)
}

// resultText joins the text of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// result prints a tool result as the tool wrote it: JSON indented on its
// own lines (compact JSON is indented), cut after 30 lines.
func (d *demo) result(res *mcp.CallToolResult) {
	fmt.Fprint(d.stdout, indent("result"+errorNote(res)+":\n"+resultBody(resultText(res)), "   "))
}

func errorNote(res *mcp.CallToolResult) string {
	if res.IsError {
		return " (an error, as expected)"
	}
	return ""
}

// resultBody is a result's text for the demo's output: valid JSON
// indented, other text as it is, at most 30 lines.
func resultBody(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		if b, err := json.MarshalIndent(v, "", "  "); err == nil {
			s = string(b)
		}
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = append(lines[:30], "…")
	}
	return "  " + strings.Join(lines, "\n  ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 70 {
		s = s[:70] + "…"
	}
	return s
}

// bearer sends "Authorization: Bearer token" with every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
