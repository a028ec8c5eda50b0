// Command setup prepares a BERTH_HOME for the benchmarks in bench/ (and
// for trying `berth serve` by hand): it writes a one-server bundle, trusts
// it (unsigned, as `berth trust --allow-unsigned` would), enables it in a
// workspace and sets tool policy rules. It uses berth's Go API, so it does
// not depend on which pool CLI commands exist.
//
//	setup -home H -workspace W -plugin bench -server echo -exe ./echoserver -policy 'bench__echo__*=allow'
//	setup -home H -workspace W -plugin everything -server everything -command node -arg /abs/dist/index.js -arg stdio
//
// -exe copies a program into the bundle (bin/NAME) and runs it as
// ${bundle}/bin/NAME; -command names a program looked up on the PATH that
// `berth serve` passes to its servers (its own PATH).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var (
		home      = flag.String("home", os.Getenv("BERTH_HOME"), "the BERTH_HOME to prepare (default $BERTH_HOME)")
		workspace = flag.String("workspace", "", "the workspace to enable the plugin in")
		plugin    = flag.String("plugin", "bench", "plugin name")
		server    = flag.String("server", "echo", "server name in the plugin")
		exe       = flag.String("exe", "", "program to copy into the bundle and run as ${bundle}/bin/NAME")
		command   = flag.String("command", "", "program name looked up on PATH (instead of -exe)")
		args      list
		policy    list
	)
	flag.Var(&args, "arg", "an argument of the server (repeatable)")
	flag.Var(&policy, "policy", "a tool policy rule PATTERN=ACTION (repeatable)")
	flag.Parse()
	if *home == "" || *workspace == "" || (*exe == "") == (*command == "") {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*home, *workspace, *plugin, *server, *exe, *command, args, policy); err != nil {
		log.Fatalf("setup: %v", err)
	}
}

func run(home, workspace, plugin, server, exe, command string, args, policy []string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "berth-bench-bundle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if exe != "" {
		name := filepath.Base(exe)
		if err := copyExe(exe, filepath.Join(dir, "bin", name)); err != nil {
			return err
		}
		command = "${bundle}/bin/" + name
	}
	if args == nil {
		args = []string{}
	}
	manifest := map[string]any{
		"manifestVersion": 1, "name": plugin, "version": "1.0.0",
		"description": "benchmark plugin made by bench/setup",
		"mcpServers":  map[string]any{server: map[string]any{"stdio": map[string]any{"command": command, "args": args}}},
	}
	data, _ := json.MarshalIndent(manifest, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), data, 0o644); err != nil {
		return err
	}
	paths, err := store.NewPaths(home)
	if err != nil {
		return err
	}
	st := store.Open(paths, nil)
	b, err := bundle.Open(ctx, dir, nil)
	if err != nil {
		return fmt.Errorf("the bundle: %w", err)
	}
	digest, err := store.ParseDigest(b.Digest)
	b.Close()
	if err != nil {
		return err
	}
	if _, err := st.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digest}); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return err
	}
	if _, err := pool.Enable(ctx, st, workspace, plugin, ""); err != nil {
		return fmt.Errorf("enable: %w", err)
	}
	for _, p := range policy {
		pat, action, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("-policy %q: want PATTERN=ACTION", p)
		}
		if err := st.SetPolicy(ctx, store.PolicyRule{Pattern: pat, Action: store.Action(action)}); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
	}
	fmt.Printf("BERTH_HOME=%s: plugin %s (server %s) trusted and enabled in %s; tools are named %s\n",
		home, plugin, server, workspace, pool.ExportName(plugin, server, "TOOL"))
	return nil
}

func copyExe(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
