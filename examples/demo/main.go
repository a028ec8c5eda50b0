// Command demo runs berth's main job end to end on the example in this
// directory, in a temporary BERTH_HOME and workspace, and prints each step:
// it builds the example bundle and berth itself from source (a stdio MCP
// server and a native tool provider), validates and reviews the bundle,
// signs it with the example signer key and verifies that signature, trusts
// and stages it, enables it, starts berth serve, connects an MCP client,
// lists the tools, calls one (approved through the approval queue, so you
// see that step), then tampers with a staged file and shows the next call
// fail closed with the drift error. No network is used.
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
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/mcpexport"
)

// The demo's tools, as berth exports them.
const (
	demoSearch = "demo-notes__notes__search_notes"
	demoHash   = "demo-notes__fmt__hash_file"
)

// berth's exit codes that the demo expects (docs/cli.md).
const (
	exitOK        = 0
	exitUntrusted = 4
	exitDrift     = 5
)

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
	stdout                   io.Writer
	keep                     bool
	repo, tmp                string
	home, ws, bundle, signer string
	berthExe                 string
	step                     int
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
		home: filepath.Join(tmp, "berth-home"), ws: filepath.Join(tmp, "workspace"), bundle: filepath.Join(tmp, "demo-notes"),
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

// berth runs a berth command with the demo's BERTH_HOME, prints it and
// its output, and checks its exit code.
func (d *demo) berth(ctx context.Context, want int, args ...string) (string, error) {
	fmt.Fprintf(d.stdout, "   $ berth %s\n", strings.Join(quoteAll(args), " "))
	out, code, err := d.runBerth(ctx, args...)
	if err != nil {
		return "", err
	}
	fmt.Fprint(d.stdout, indent(out, "     "))
	if code != want {
		return out, fmt.Errorf("berth %s exited %d, expected %d", strings.Join(args, " "), code, want)
	}
	return out, nil
}

// runBerth runs the berth that the demo built, with the demo's BERTH_HOME
// and no standard input, and returns its output and exit code.
func (d *demo) runBerth(ctx context.Context, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, d.berthExe, args...)
	cmd.Env = append(os.Environ(), "BERTH_HOME="+d.home)
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
	fmt.Fprintf(d.stdout, "berth demo: the main job on a built-in example, in a temporary BERTH_HOME (%s)\nand workspace (%s). Nothing leaves this machine.\n", d.home, d.ws)

	d.title("build the example bundle from source")
	if err := d.build(ctx); err != nil {
		return err
	}

	d.title("validate and review it, as a person deciding whether to trust it")
	if _, err := d.berth(ctx, exitOK, "validate", d.bundle); err != nil {
		return err
	}
	if _, err := d.berth(ctx, exitOK, "review", d.bundle); err != nil {
		return err
	}

	d.title("the publisher signs the canonical listing with the example signer key")
	if _, err := d.berth(ctx, exitOK, "sign", d.bundle, "--key", d.signer+".key"); err != nil {
		return err
	}

	d.title("the operator trusts that signer; berth verifies the signature, then trusts and stages the bundle")
	if _, err := d.berth(ctx, exitUntrusted, "trust", "--yes", d.bundle); err != nil {
		return fmt.Errorf("with no signer configured, trust must be refused: %w", err)
	}
	if _, err := d.berth(ctx, exitOK, "signers", "add-key", "example", d.signer+".pub"); err != nil {
		return err
	}
	out, err := d.berth(ctx, exitOK, "trust", "--yes", d.bundle)
	if err != nil {
		return err
	}
	if !strings.Contains(out, `Signed by key "example"`) {
		return fmt.Errorf("trust did not name the example signer")
	}
	if _, err := d.berth(ctx, exitOK, "verify"); err != nil {
		return err
	}

	d.title("enable it for the workspace")
	if _, err := d.berth(ctx, exitOK, "enable", "demo-notes", "--workspace", d.ws); err != nil {
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
	for _, want := range []string{demoSearch, demoHash} {
		if !names[want] {
			return fmt.Errorf("the tool %s is missing from the catalog", want)
		}
	}

	d.title("call %s: the policy says ask, so the call waits for approval", demoSearch)
	res, err := d.callApproved(ctx, cs, demoSearch, map[string]any{"query": "drift"})
	if err != nil {
		return err
	}
	d.say("result: %s", short(resultText(res)))
	if res.IsError || !strings.Contains(resultText(res), "ideas.md") {
		return fmt.Errorf("the approved call did not return the note")
	}

	d.title("call the native tool %s (a go-plugin provider), approved the same way", demoHash)
	res, err = d.callApproved(ctx, cs, demoHash, map[string]any{"path": "settings.json"})
	if err != nil {
		return err
	}
	d.say("result: %s", short(resultText(res)))
	settings, err := os.ReadFile(filepath.Join(d.ws, "settings.json"))
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(settings); res.IsError || !strings.Contains(resultText(res), hex.EncodeToString(sum[:])) {
		return fmt.Errorf("the native tool did not return the SHA-256 of settings.json")
	}

	d.title("tamper with a staged file, then call again: berth fails closed")
	staged, err := d.stagedFile("berth.json")
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
	d.say("result: %s", short(resultText(res)))
	if !res.IsError || !strings.Contains(resultText(res), "no longer matches what was reviewed") || !strings.Contains(resultText(res), "berth.json") {
		return fmt.Errorf("the call after tampering did not fail with the drift error")
	}
	if _, err := d.berth(ctx, exitDrift, "verify"); err != nil {
		return err
	}

	fmt.Fprintf(d.stdout, "\nDemo complete: every step behaved as expected.\nNext: make test, then see README.md for installing berth and `berth connect claude-desktop`.\n")
	return nil
}

// build assembles the bundle: the manifest, and the two programs built
// from the repository's source.
func (d *demo) build(ctx context.Context) error {
	bin := filepath.Join(d.bundle, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for _, b := range []struct{ out, pkg string }{
		{filepath.Join(bin, "notes-server"), "./examples/notesserver"},
		{filepath.Join(bin, "fmt-tools"), "./examples/fmttools"},
		{d.berthExe, "./cmd/berth"},
	} {
		rel, _ := filepath.Rel(d.tmp, b.out)
		d.say("$ go build -o %s %s", rel, b.pkg)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Dir = d.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
		}
	}
	src := filepath.Join(d.repo, "examples", "demo")
	if err := copyFile(filepath.Join(src, "berth.json"), filepath.Join(d.bundle, "berth.json")); err != nil {
		return err
	}
	d.say("the bundle is %s: berth.json, bin/notes-server (stdio MCP server), bin/fmt-tools (native tools)", d.bundle)
	return copyDir(filepath.Join(src, "workspace"), d.ws)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
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
		return copyFile(p, filepath.Join(to, rel))
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

func (d *demo) stagedFile(rel string) (string, error) {
	var list []struct {
		Staged string `json:"staged"`
	}
	out, code, err := d.runBerth(context.Background(), "list", "--json")
	if err != nil || code != 0 {
		return "", fmt.Errorf("berth list failed: %v", err)
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		return "", fmt.Errorf("berth list --json: %v", err)
	}
	return filepath.Join(list[0].Staged, filepath.FromSlash(rel)), nil
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

// short keeps a result readable in the demo's output.
func short(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
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
