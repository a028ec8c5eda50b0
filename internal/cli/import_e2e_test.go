//go:build unix

package cli

import (
	"archive/zip"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/peers"
)

// An MCP Bundle goes the whole way: a .mcpb whose node server is the real
// @modelcontextprotocol/server-everything (the pinned npm peer, copied
// into the bundle with its dependencies) is validated, trusted by its
// digest, enabled, listed by berth tools, and called through berth serve.
func TestImportedMCPBEndToEnd(t *testing.T) {
	peersDir := peers.Require(t)
	node, err := peers.Node22()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	home, src := t.TempDir(), t.TempDir()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { makeWritable(home) })
	const entry = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	copyNodePackage(t, peersDir, "@modelcontextprotocol/server-everything", src)
	manifest := map[string]any{
		"manifest_version": "0.3", "name": "everything-mcpb", "display_name": "Everything",
		"version": "2026.8.31", "description": "server-everything, packed as an MCP Bundle",
		"author": map[string]any{"name": "Model Context Protocol"},
		"server": map[string]any{"type": "node", "entry_point": entry, "mcp_config": map[string]any{
			"command": "node", "args": []string{"${__dirname}/" + entry, "stdio"}}},
		"tools":         []any{map[string]any{"name": "echo", "description": "Echoes back the input"}},
		"compatibility": map[string]any{"platforms": []string{"darwin", "linux"}, "runtimes": map[string]any{"node": ">=18.0.0"}},
	}
	data, _ := json.MarshalIndent(manifest, "", "  ")
	if err := os.WriteFile(filepath.Join(src, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mcpb := filepath.Join(t.TempDir(), "everything.mcpb")
	zipDir(t, src, mcpb)

	// node 22 first on PATH: for berth's runtime check and for the server.
	env := []string{"PATH=" + filepath.Dir(node) + string(os.PathListSeparator) + os.Getenv("PATH")}
	run := func(args ...string) string {
		t.Helper()
		out, err := berthCmd(home, env, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("validate", mcpb); !strings.Contains(out, "everything-mcpb 2026.8.31, imported from mcpb 0.3") {
		t.Fatalf("validate: %s", out)
	}
	digest := strings.TrimSpace(run("digest", mcpb))
	run("trust", "--yes", "--allow-unsigned", "--digest", digest, mcpb)
	run("enable", "everything-mcpb", "--workspace", ws)
	if out := run("tools", "everything-mcpb", "--workspace", ws); !strings.Contains(out, "everything-mcpb__server__echo") {
		t.Fatalf("berth tools lacks the echo tool:\n%s", out)
	}
	run("policy", "set", "everything-mcpb__server__echo", "allow")

	cmd := berthCmd(home, env, "serve", "--workspace", ws)
	logf, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	t.Cleanup(func() {
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("berth serve's stderr:\n%s", b)
		}
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "import-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "everything-mcpb__server__echo", Arguments: map[string]any{"message": "hello from an MCP Bundle"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("echo: %+v", res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "Echo: hello from an MCP Bundle" {
		t.Fatalf("echo answered %q", text)
	}
	// The staged snapshot is the imported tree: the generated berth.json
	// beside the source's manifest.json, re-hashed by verify.
	if out := run("verify", "everything-mcpb"); !strings.Contains(out, "ok      everything-mcpb@2026.8.31") {
		t.Fatalf("verify: %s", out)
	}
}

// copyNodePackage copies the package name and its dependency closure,
// resolved as node resolves them, from peersDir's node_modules into dst at
// the same relative paths.
func copyNodePackage(t *testing.T, peersDir, name, dst string) {
	t.Helper()
	done := map[string]bool{}
	var visit func(from, name string, optional bool)
	visit = func(from, name string, optional bool) {
		dir := ""
		for d := from; ; d = filepath.Dir(d) {
			// As node resolves: never DIR/node_modules/node_modules, so
			// a stray link node_modules/node_modules is not followed.
			cand := filepath.Join(d, "node_modules", name)
			if _, err := os.Stat(filepath.Join(cand, "package.json")); err == nil && filepath.Base(d) != "node_modules" {
				dir = cand
				break
			}
			if d == peersDir || len(d) < len(peersDir) {
				break
			}
		}
		if dir == "" {
			if !optional {
				t.Fatalf("cannot resolve %s from %s", name, from)
			}
			return
		}
		if done[dir] {
			return
		}
		done[dir] = true
		rel, _ := filepath.Rel(peersDir, dir)
		copyPackageFiles(t, dir, filepath.Join(dst, rel))
		var pj struct {
			Dependencies         map[string]string `json:"dependencies"`
			OptionalDependencies map[string]string `json:"optionalDependencies"`
			PeerDependencies     map[string]string `json:"peerDependencies"`
		}
		data, _ := os.ReadFile(filepath.Join(dir, "package.json"))
		json.Unmarshal(data, &pj)
		for dep := range pj.Dependencies {
			visit(dir, dep, false)
		}
		for dep := range pj.OptionalDependencies {
			visit(dir, dep, true)
		}
		for dep := range pj.PeerDependencies {
			visit(dir, dep, true)
		}
	}
	visit(peersDir, name, false)
}

// copyPackageFiles copies one package's regular files, without its own
// node_modules (those packages are copied as they are resolved).
func copyPackageFiles(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() && d.Name() == "node_modules" && p != from {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if fi.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		return os.WriteFile(out, data, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// zipDir packs a directory as mcpb pack does: forward-slash paths, modes
// kept.
func zipDir(t *testing.T, dir, name string) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fh, err := zip.FileInfoHeader(fi)
		if err != nil {
			return err
		}
		fh.Name, fh.Method = filepath.ToSlash(rel), zip.Deflate
		w, err := zw.CreateHeader(fh)
		if err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = io.Copy(w, in)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

func makeWritable(dir string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}
