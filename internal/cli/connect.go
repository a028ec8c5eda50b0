package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/clientconfig"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// Test-only environment variables. They let the CLI tests fix what would
// otherwise depend on the machine running them; nothing else reads them.
const (
	// testExecutableEnv replaces the path of the running berth binary in
	// the entry that connect writes.
	testExecutableEnv = "BERTH_TEST_EXECUTABLE"
	// testProcEnv replaces /proc when telling whether a client is running.
	testProcEnv = "BERTH_TEST_PROC"
)

type connectFlags struct {
	workspace, name          string
	user, force, print, json bool
}

// clientSetup is what connect and disconnect work out before touching a
// file.
type clientSetup struct {
	client    clientconfig.Client
	env       clientconfig.Env
	workspace string // absolute, symlinks resolved; "" when not needed
	targets   []clientconfig.Target
}

func (a *app) clientSetup(arg string, f *connectFlags, needWorkspace bool) (*clientSetup, error) {
	c, err := clientconfig.ParseClient(arg)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if err := clientconfig.CheckName(f.name); err != nil {
		return nil, usagef("--name: %v", err)
	}
	env, err := clientconfig.FromOS(a.getenv)
	if err != nil {
		return nil, err
	}
	env.ProcDir = a.getenv(testProcEnv)
	s := &clientSetup{client: c, env: env}
	if needWorkspace || (!f.user && c != clientconfig.ClaudeDesktop) {
		if s.workspace, err = resolveWorkspace(f.workspace); err != nil {
			return nil, err
		}
	}
	if s.targets, err = clientconfig.Locate(c, env, s.workspace, f.user); err != nil {
		return nil, err
	}
	return s, nil
}

// resolveWorkspace makes dir (default: the current directory) absolute
// with symlinks resolved, and checks that it is a directory.
func resolveWorkspace(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("cannot find the current directory (%v); pass --workspace DIR", err)
		}
		dir = wd
	}
	abs, err := pool.Workspace(dir)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %v; pass --workspace with an existing directory", dir, unwrapPath(err))
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory; pass --workspace with an existing directory", dir)
	}
	return abs, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// executable is the absolute path of the running berth binary, symlinks
// resolved, for the entry to run.
func (a *app) executable() (string, error) {
	if p := a.getenv(testExecutableEnv); p != "" {
		return p, nil
	}
	p, err := os.Executable()
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		return "", fmt.Errorf("cannot find the path of the berth binary (%v); run berth by its full path", err)
	}
	return p, nil
}

// temporaryBuild reports a binary that `go run` or `go test` built in a
// temporary directory: it is gone once that command ends.
func temporaryBuild(exe string) bool {
	s := filepath.ToSlash(exe)
	return strings.Contains(s, "/go-build") && (strings.Contains(s, "/exe/") || strings.HasSuffix(s, ".test"))
}

// connectJSON is the --json report of connect and disconnect. The top
// level describes the first file; Additional lists further files (Claude
// Desktop on Windows may have two).
type connectJSON struct {
	Client     string          `json:"client"`
	File       string          `json:"file"`
	Name       string          `json:"name"`
	Entry      any             `json:"entry"`
	Backup     *string         `json:"backup"`
	Written    bool            `json:"written"`
	Running    bool            `json:"running"`
	Action     string          `json:"action,omitempty"`
	Previous   json.RawMessage `json:"previous,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	Additional []fileJSON      `json:"additional,omitempty"`
}

type fileJSON struct {
	File    string  `json:"file"`
	Action  string  `json:"action,omitempty"`
	Backup  *string `json:"backup"`
	Written bool    `json:"written"`
}

func backupOf(ed *clientconfig.Edit) *string {
	if ed.Backup == "" {
		return nil
	}
	return &ed.Backup
}

func (a *app) connectCommand() *cobra.Command {
	var f connectFlags
	cmd := &cobra.Command{
		Use: "connect CLIENT",
		Example: `  berth connect claude-desktop
  berth connect cursor --workspace ~/src/project --portable
  berth connect vscode --env NODE_OPTIONS --print`,
		Short: "Add berth to an MCP client: claude-desktop, claude-code, cursor or vscode",
		Long: `Connect adds a server entry that runs 'berth serve --workspace DIR' over stdio
to the MCP configuration of CLIENT:

  claude-desktop  the app's claude_desktop_config.json (per user; on Windows
                  the Microsoft Store copy under %LOCALAPPDATA%\Packages\Claude_*
                  and/or %APPDATA%\Claude)
  claude-code     DIR/.mcp.json, or ~/.claude.json with --user
  cursor          DIR/.cursor/mcp.json, or ~/.cursor/mcp.json with --user
  vscode          DIR/.vscode/mcp.json, or the user mcp.json with --user

The entry runs this berth binary by its absolute path. DIR is --workspace,
or the current directory. Every other key, server and comment in the file is
kept as it was; the old file is first copied to FILE.bak-<UTC time>, and the
new one replaces it atomically. A file that does not parse is refused and
left untouched. An existing entry of the same name that differs is kept
unless --force. Running connect again changes nothing.

The client reads its file when it starts: quit it fully and start it again.
See docs/connect.md.

Exit codes: 0 connected (or already connected), 1 refused or failed, 2 usage.`,
		Args: exactArgs(1, "one CLIENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runConnect(cmd.Context(), args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workspace, "workspace", "", "the directory berth serves (default: the current directory)")
	fl.StringVar(&f.name, "name", "berth", "the server's name in the client")
	fl.BoolVar(&f.user, "user", false, "edit the user's configuration instead of the workspace's")
	fl.BoolVar(&f.force, "force", false, "replace a different entry of the same name")
	fl.BoolVar(&f.print, "print", false, "print the entry and the file it would go to; write nothing")
	a.jsonFlag(cmd, &f.json, connectJSON{})
	return cmd
}

func (a *app) runConnect(ctx context.Context, arg string, f *connectFlags) error {
	s, err := a.clientSetup(arg, f, true)
	if err != nil {
		return err
	}
	exe, err := a.executable()
	if err != nil {
		return err
	}
	entry := clientconfig.NewEntry(s.client, s.env, exe, s.workspace)
	// A client starts berth without this shell's environment: a BERTH_HOME
	// set here goes into the entry, or its berth would use another state root.
	if h := a.getenv("BERTH_HOME"); h != "" {
		paths, err := store.NewPaths(h)
		if err != nil {
			return fmt.Errorf("BERTH_HOME=%s: %v; set it to an absolute directory", h, err)
		}
		if entry.Env == nil {
			entry.Env = map[string]string{}
		}
		entry.Env["BERTH_HOME"] = paths.Root
	}
	var warnings []string
	if temporaryBuild(exe) {
		warnings = append(warnings, fmt.Sprintf("%s is a temporary build (go run) that disappears when it exits: install berth (make build, or go install ./cmd/berth) and run connect with the installed binary", exe))
	}
	running := clientconfig.Running(ctx, s.client, s.env)

	if f.print {
		if f.json {
			return writeJSON(a.stdout, connectJSON{Client: string(s.client), File: s.targets[0].Path, Name: f.name,
				Entry: entry, Running: running, Warnings: warnings, Additional: printAdditional(s.targets)})
		}
		for _, t := range s.targets {
			fmt.Fprintf(a.stdout, "File: %s\n", t.Path)
		}
		fmt.Fprintf(a.stdout, "Under %q:\n%q: %s\n", s.targets[0].RootKey, f.name, indentJSON(entry))
		a.printWarnings(warnings)
		fmt.Fprintln(a.stdout, "Nothing was written (--print).")
		return nil
	}

	// Every file is read and checked before any is written.
	opts := &clientconfig.Options{Force: f.force}
	edits := make([]*clientconfig.Edit, len(s.targets))
	for i, t := range s.targets {
		if edits[i], err = clientconfig.PrepareConnect(ctx, t, f.name, entry, opts); err != nil {
			return err
		}
	}
	if err := applyAll(ctx, edits); err != nil {
		return err
	}
	for _, ed := range edits {
		warnings = append(warnings, ed.Warnings...)
	}
	if f.json {
		out := reportJSON(s.client, f.name, edits, running, warnings)
		out.Entry = entry
		return writeJSON(a.stdout, out)
	}
	changed := false
	for _, ed := range edits {
		note := ""
		if ed.Target.Note != "" {
			note = " (" + ed.Target.Note + ")"
		}
		switch ed.Action {
		case clientconfig.Added:
			fmt.Fprintf(a.stdout, "Added server %q to %s%s.\n", f.name, ed.Target.Path, note)
		case clientconfig.Replaced:
			fmt.Fprintf(a.stdout, "Replaced server %q in %s%s; it was: %s\n", f.name, ed.Target.Path, note, ed.Previous)
		case clientconfig.Unchanged:
			fmt.Fprintf(a.stdout, "%s%s already has server %q as berth writes it; nothing changed.\n", ed.Target.Path, note, f.name)
		}
		if ed.Backup != "" {
			fmt.Fprintf(a.stdout, "Backup of the previous file: %s\n", ed.Backup)
		}
		changed = changed || ed.Written
	}
	fmt.Fprintf(a.stdout, "It runs: %s %s\n", entry.Command, strings.Join(entry.Args, " "))
	a.printWarnings(warnings)
	if changed {
		a.restartAdvice(s.client, f.name, running, f.user)
	}
	return nil
}

func (a *app) disconnectCommand() *cobra.Command {
	var f connectFlags
	cmd := &cobra.Command{
		Use: "disconnect CLIENT",
		Example: `  berth disconnect claude-desktop
  berth disconnect cursor --workspace ~/src/project --json`,
		Short: "Remove berth's entry from an MCP client's configuration",
		Long: `Disconnect removes the server entry named --name (default "berth") from the
MCP configuration of CLIENT (the same file connect writes, chosen by
--workspace and --user), and nothing else. The old file is first copied to
FILE.bak-<UTC time>. An entry of that name that does not run 'berth serve'
is kept unless --force.

When there is no such entry (or no file), disconnect says so and exits 0:
the client is not connected, which is what was asked.

Exit codes: 0 removed or not there, 1 refused or failed, 2 usage.`,
		Args: exactArgs(1, "one CLIENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDisconnect(cmd.Context(), args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workspace, "workspace", "", "the workspace whose configuration to edit (default: the current directory)")
	fl.StringVar(&f.name, "name", "berth", "the server's name in the client")
	fl.BoolVar(&f.user, "user", false, "edit the user's configuration instead of the workspace's")
	fl.BoolVar(&f.force, "force", false, "remove the entry even if it does not run berth")
	a.jsonFlag(cmd, &f.json, connectJSON{})
	return cmd
}

func (a *app) runDisconnect(ctx context.Context, arg string, f *connectFlags) error {
	s, err := a.clientSetup(arg, f, false)
	if err != nil {
		return err
	}
	opts := &clientconfig.Options{Force: f.force}
	edits := make([]*clientconfig.Edit, len(s.targets))
	for i, t := range s.targets {
		if edits[i], err = clientconfig.PrepareDisconnect(ctx, t, f.name, opts); err != nil {
			return err
		}
	}
	running := clientconfig.Running(ctx, s.client, s.env)
	if err := applyAll(ctx, edits); err != nil {
		return err
	}
	var warnings []string
	for _, ed := range edits {
		warnings = append(warnings, ed.Warnings...)
	}
	if f.json {
		out := reportJSON(s.client, f.name, edits, running, warnings)
		if edits[0].Previous != nil {
			out.Entry = edits[0].Previous
		}
		return writeJSON(a.stdout, out)
	}
	changed := false
	for _, ed := range edits {
		switch ed.Action {
		case clientconfig.Removed:
			fmt.Fprintf(a.stdout, "Removed server %q from %s.\n", f.name, ed.Target.Path)
		case clientconfig.Absent:
			fmt.Fprintf(a.stdout, "No server %q in %s; nothing to remove.\n", f.name, ed.Target.Path)
		}
		if ed.Backup != "" {
			fmt.Fprintf(a.stdout, "Backup of the previous file: %s\n", ed.Backup)
		}
		changed = changed || ed.Written
	}
	a.printWarnings(warnings)
	if changed {
		a.restartAdvice(s.client, f.name, running, f.user)
	}
	return nil
}

// applyAll writes every prepared edit; on a failure it names the files
// already written.
func applyAll(ctx context.Context, edits []*clientconfig.Edit) error {
	for i, ed := range edits {
		if err := ed.Apply(ctx); err != nil {
			var done []string
			for _, prev := range edits[:i] {
				if prev.Written {
					done = append(done, fmt.Sprintf("%s was already written (backup: %s)", prev.Target.Path, prev.Backup))
				}
			}
			if len(done) > 0 {
				return fmt.Errorf("%w\nnote: %s", err, strings.Join(done, "; "))
			}
			return err
		}
	}
	return nil
}

func reportJSON(c clientconfig.Client, name string, edits []*clientconfig.Edit, running bool, warnings []string) connectJSON {
	first := edits[0]
	out := connectJSON{
		Client: string(c), File: first.Target.Path, Name: name, Backup: backupOf(first), Written: first.Written,
		Running: running, Action: string(first.Action), Warnings: warnings,
	}
	if first.Action == clientconfig.Replaced {
		out.Previous = first.Previous
	}
	for _, ed := range edits[1:] {
		out.Additional = append(out.Additional, fileJSON{File: ed.Target.Path, Action: string(ed.Action), Backup: backupOf(ed), Written: ed.Written})
	}
	return out
}

func printAdditional(ts []clientconfig.Target) []fileJSON {
	var out []fileJSON
	for _, t := range ts[1:] {
		out = append(out, fileJSON{File: t.Path})
	}
	return out
}

func (a *app) printWarnings(ws []string) {
	for _, w := range ws {
		fmt.Fprintf(a.stdout, "warning: %s\n", w)
	}
}

// restartAdvice says how the client picks the change up.
func (a *app) restartAdvice(c clientconfig.Client, name string, running, user bool) {
	title := c.Title()
	if running {
		fmt.Fprintf(a.stdout, "%s appears to be running: quit it fully (not just its window) and start it again to load the change.\n", title)
		if c == clientconfig.ClaudeDesktop {
			fmt.Fprintf(a.stdout, "Claude Desktop may overwrite its configuration file while it runs: if %q is missing after the restart, quit the app and run 'berth connect claude-desktop' again.\n", name)
		}
	} else {
		fmt.Fprintf(a.stdout, "%s loads the change the next time it starts.\n", title)
	}
	if c == clientconfig.ClaudeCode && !user {
		fmt.Fprintln(a.stdout, "Claude Code asks you to approve the servers of a project's .mcp.json before it starts them.")
	}
}

// indentJSON renders v as indented JSON without HTML escaping.
func indentJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
