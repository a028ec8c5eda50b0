package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// connectOptions are the inputs of berth connect and berth disconnect
// (which has no print, noPath, portable or env).
type connectOptions struct {
	Client                   string
	Workspace, Name          string
	User, Force, Print, JSON bool
	NoPath, Portable         bool
	Env                      []string
	// Profile is --profile: the entry serves that profile, and is named
	// berth-PROFILE unless --name says otherwise.
	Profile string
	// HTTP is --http URL (connecthttp.go): an HTTP entry instead of a
	// stdio one; TokenFile is --token-file.
	HTTP, TokenFile string
}

// profileEntryName is the default name of the entry of a profile, so that
// entries of several profiles sit side by side in one client beside the
// plain "berth".
func profileEntryName(profile string) string { return "berth-" + profile }

// profileFlag adds --profile to connect or disconnect, and returns the
// check RunE makes before the command runs: the profile's name is valid,
// and names the entry unless --name was given.
func profileFlag(cmd *cobra.Command, f *connectOptions, usage string) func() error {
	cmd.Flags().StringVar(&f.Profile, "profile", "", usage)
	return func() error {
		if f.Profile == "" {
			return nil
		}
		if err := store.CheckProfileName(f.Profile); err != nil {
			return usagef("--profile: %v", err)
		}
		if !cmd.Flags().Changed("name") {
			f.Name = profileEntryName(f.Profile)
		}
		return nil
	}
}

// clientSetup is what connect and disconnect work out before touching a
// file.
type clientSetup struct {
	client    clientconfig.Client
	env       clientconfig.Env
	workspace string // absolute, symlinks resolved; "" when not needed
	targets   []clientconfig.Target
}

func (a *app) clientSetup(arg string, f *connectOptions, needWorkspace bool) (*clientSetup, error) {
	c, err := clientconfig.ParseClient(arg)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if err := clientconfig.CheckName(f.Name); err != nil {
		return nil, usagef("--name: %v", err)
	}
	env, err := clientconfig.FromOS(a.getenv)
	if err != nil {
		return nil, err
	}
	env.ProcDir = a.getenv(testProcEnv)
	s := &clientSetup{client: c, env: env}
	if needWorkspace || (!f.User && c != clientconfig.ClaudeDesktop) {
		if s.workspace, err = resolveWorkspace(f.Workspace); err != nil {
			return nil, err
		}
	}
	if s.targets, err = clientconfig.Locate(c, env, s.workspace, f.User); err != nil {
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

// goRunCache matches a binary that `go run` keeps in the Go build cache
// (Go 1.24 and later): <GOCACHE>/xx/<hash>-d/<name>.
var goRunCache = regexp.MustCompile(`/[0-9a-f]{2}/[0-9a-f]{64}-d/[^/]+$`)

// temporaryBuild reports a binary that `go run` or `go test` built: in a
// temporary directory, gone once that command ends, or in the build
// cache, which go clean -cache and the cache's own trimming remove.
func temporaryBuild(exe string) bool {
	s := filepath.ToSlash(exe)
	if goRunCache.MatchString(s) {
		return true
	}
	return strings.Contains(s, "/go-build") && (strings.Contains(s, "/exe/") || strings.HasSuffix(s, ".test"))
}

// connectJSON is the --json report of connect and disconnect. The top
// level describes the first file; Additional lists further files (Claude
// Desktop on Windows may have two).
type connectJSON struct {
	// Workspace is the workspace whose plugins were checked (connect).
	Workspace string `json:"workspace,omitempty"`
	// Profile is the profile the entry serves (--profile).
	Profile string `json:"profile,omitempty"`
	// Path is the PATH recorded in the entry; empty with --no-path.
	Path string `json:"path,omitempty"`
	// Missing are the variables the enabled plugins read that the
	// client's berth will find neither in the secret store nor in its
	// environment, each with its fix (connect).
	Missing    []missingJSON   `json:"missing,omitempty"`
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

const connectLong = `Connect adds a server entry that runs 'berth serve --workspace DIR' over stdio
to the MCP configuration of CLIENT:

  claude-desktop  the app's claude_desktop_config.json (per user; on Windows
                  the Microsoft Store copy under %LOCALAPPDATA%\Packages\Claude_*
                  and/or %APPDATA%\Claude)
  claude-code     DIR/.mcp.json, or ~/.claude.json with --user
  cursor          DIR/.cursor/mcp.json, or ~/.cursor/mcp.json with --user
  vscode          DIR/.vscode/mcp.json, or the user mcp.json with --user

The entry runs this berth binary by its absolute path. DIR is --workspace,
or the current directory. A workspace's file is usually committed: connect
warns when it writes this machine's paths into one. With --portable (VS
Code and Cursor) the entry runs 'berth' from the client's PATH, says
${workspaceFolder}, which the client expands, and records no PATH or
BERTH_HOME, so a committed file works for everyone who opens the project.
Every other key, server and comment in the file is kept as it was; the old
file is first copied to $BERTH_HOME/backups/ (the last five copies of each
file are kept), and the new one replaces it atomically.

GUI clients start berth with almost no environment. Connect records the
PATH of this shell in the entry's env, each directory once (shown before
it writes; --no-path or --portable leaves it out), so that the servers
berth runs find npx, uvx and other programs; BERTH_HOME too when it is
set (not with --portable). --env NAME copies another
variable; a name that looks like a secret (it has TOKEN, KEY, SECRET or
PASSWORD) is refused: store secrets with 'berth secret set NAME', which
never puts them in a client's file. Connect then lists every variable the
workspace's enabled plugins read that the client's berth will find neither
in the secret store nor in the entry, with the command that fixes it. A file that does not parse is refused and
left untouched. An existing entry of the same name that differs is kept
unless --force. Running connect again changes nothing.

--profile NAME writes an entry that runs 'berth serve --workspace DIR
--profile NAME', named berth-NAME (unless --name), so entries of several
profiles sit side by side in one client beside the plain "berth". The
profile must exist in the workspace (berth profile list); disconnect
--profile NAME removes that entry.

--http URL writes an HTTP entry instead, for a berth serve --http already
listening at URL, without the bearer token in the file: Claude Code's entry
gets the header from a headersHelper that runs 'berth token --header';
Cursor's and VS Code's send "Bearer ${env:BERTH_TOKEN}", which the client
expands from its environment. Claude Desktop's file takes stdio servers
only, so --http refuses it. Plain http:// is refused unless the host is a
loopback address.

The client reads its file when it starts: quit it fully and start it again.
See docs/connect.md.

Exit codes: 0 connected (or already connected), 1 refused or failed, 2 usage.`

func newConnectCmd(a *app) *cobra.Command {
	f := &connectOptions{}
	cmd := &cobra.Command{
		Use: "connect CLIENT",
		Example: `  berth connect claude-desktop
  berth connect cursor --workspace ~/src/project --portable
  berth connect vscode --env NODE_OPTIONS --print
  berth connect claude-desktop --profile desktop
  berth connect claude-code --profile code
  berth connect claude-code --http http://127.0.0.1:8931/mcp`,
		Short: "Add berth to an MCP client: claude-desktop, claude-code, cursor or vscode",
		Long:  connectLong,
		Args:  exactArgs(1, "one CLIENT"),
	}
	checkProfile := profileFlag(cmd, f, "serve the workspace's profile `NAME` (berth profile list); the entry is named berth-NAME unless --name")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		f.Client = args[0]
		if err := checkProfile(); err != nil {
			return err
		}
		return runConnect(cmd.Context(), a, f)
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Workspace, "workspace", "", "the directory berth serves (default: the current directory)")
	fl.StringVar(&f.Name, "name", "berth", "the server's name in the client (default with --profile: berth-NAME)")
	fl.BoolVar(&f.User, "user", false, "edit the user's configuration instead of the workspace's")
	fl.BoolVar(&f.Force, "force", false, "replace a different entry of the same name")
	fl.BoolVar(&f.Print, "print", false, "print the entry and the file it would go to; write nothing")
	fl.BoolVar(&f.NoPath, "no-path", false, "do not record this shell's PATH in the entry")
	fl.BoolVar(&f.Portable, "portable", false, "write a file to commit: the command berth, ${workspaceFolder}, no PATH or BERTH_HOME (vscode and cursor)")
	fl.StringArrayVar(&f.Env, "env", nil, "copy the variable `NAME` of this shell into the entry (not a secret; repeatable)")
	fl.StringVar(&f.HTTP, "http", "", "write an HTTP entry for the berth serve --http listening at `URL`, its token kept out of the file (claude-code, cursor, vscode)")
	fl.StringVar(&f.TokenFile, "token-file", "", "with --http: the token file of that berth serve (default $BERTH_HOME/serve.token)")
	a.jsonFlag(cmd, &f.JSON, connectJSON{})
	return cmd
}

// connectPlan is the entry connect writes and what it says about it.
type connectPlan struct {
	s        *clientSetup
	entry    clientconfig.Entry
	path     string
	extra    map[string]string
	missing  []missingJSON
	warnings []string
	running  bool
}

func runConnect(ctx context.Context, a *app, f *connectOptions) error {
	var p *connectPlan
	var auth clientconfig.HTTPAuth
	var err error
	if f.HTTP != "" {
		p, auth, err = a.planConnectHTTP(ctx, f)
	} else if f.TokenFile != "" {
		return usagef("--token-file is for --http entries")
	} else {
		p, err = a.planConnect(ctx, f)
	}
	if err != nil {
		return err
	}
	s, entry := p.s, p.entry
	if f.Print {
		return a.printConnect(f, p)
	}
	if !f.JSON {
		// Shown before anything is written.
		a.showRecorded(s.client, p.path, p.extra)
	}

	// Every file is read and checked before any is written.
	opts, err := a.editOptions(f.Force)
	if err != nil {
		return err
	}
	opts.Profile = f.Profile
	edits := make([]*clientconfig.Edit, len(s.targets))
	for i, t := range s.targets {
		if edits[i], err = clientconfig.PrepareConnect(ctx, t, f.Name, entry, opts); err != nil {
			return err
		}
	}
	if err := applyAll(ctx, edits); err != nil {
		return err
	}
	warnings := p.warnings
	for _, ed := range edits {
		warnings = append(warnings, ed.Warnings...)
	}
	if f.JSON {
		out := reportJSON(s.client, f.Name, edits, p.running, warnings)
		out.Entry, out.Workspace, out.Path, out.Missing, out.Profile = entry, s.workspace, p.path, p.missing, f.Profile
		return writeJSON(a.stdout, out)
	}
	changed := a.printConnected(f.Name, edits)
	if f.HTTP != "" {
		fmt.Fprintf(a.stdout, "It connects to: %s\n", entry.URL)
		a.tokenAdvice(s.client, auth)
	} else {
		fmt.Fprintf(a.stdout, "It runs: %s %s\n", entry.Command, strings.Join(entry.Args, " "))
	}
	a.printWarnings(warnings)
	a.printMissing(s.workspace, p.missing)
	if changed {
		a.restartAdvice(s.client, f.Name, p.running, f.User)
	}
	return nil
}

// planConnect works out the entry connect writes, the variables it
// records, what the workspace's plugins will miss, and the warnings.
func (a *app) planConnect(ctx context.Context, f *connectOptions) (*connectPlan, error) {
	s, err := a.clientSetup(f.Client, f, true)
	if err != nil {
		return nil, err
	}
	wsArg := s.workspace
	if f.Portable {
		if s.client != clientconfig.VSCode && s.client != clientconfig.Cursor {
			return nil, usagef("--portable writes ${workspaceFolder}, which only VS Code and Cursor expand; berth does not yet write a portable entry for %s, which gets the absolute workspace", s.client.Title())
		}
		if f.User {
			return nil, usagef("--portable is for the workspace's own file (%s), not --user", map[clientconfig.Client]string{clientconfig.VSCode: ".vscode/mcp.json", clientconfig.Cursor: ".cursor/mcp.json"}[s.client])
		}
		wsArg = "${workspaceFolder}"
	}
	p := &connectPlan{s: s}
	if p.extra, err = a.connectEnv(f.Env); err != nil {
		return nil, err
	}
	exe, err := a.executable()
	if err != nil {
		return nil, err
	}
	if p.entry, p.path, err = a.connectEntry(s, exe, wsArg, p.extra, f.NoPath, f.Portable); err != nil {
		return nil, err
	}
	if f.Profile != "" {
		if _, err := a.profile(s.workspace, f.Profile); err != nil {
			return nil, err
		}
		p.entry.Args = append(p.entry.Args, "--profile", f.Profile)
	}
	if p.missing, p.warnings, err = a.missingSources(s.workspace, f.Profile, p.entry.Env); err != nil {
		return nil, err
	}
	if f.Portable {
		p.warnings = append(p.warnings, a.portableWarnings(f)...)
	} else {
		p.warnings = append(p.warnings, committedWarnings(s, p.entry)...)
	}
	if !f.Portable && temporaryBuild(exe) {
		p.warnings = append(p.warnings, fmt.Sprintf("%s is a temporary build (go run) that disappears when it exits: install berth (make build, or go install ./cmd/berth) and run connect with the installed binary", exe))
	}
	p.running = clientconfig.Running(ctx, s.client, s.env)
	return p, nil
}

// connectEntry is the entry that runs exe for wsArg, with the variables
// it records: BERTH_HOME when set, this shell's PATH (unless noPath) and
// extra. A portable entry runs "berth" from the client's PATH and records
// neither PATH nor BERTH_HOME: nothing of this machine. It returns the
// PATH recorded.
func (a *app) connectEntry(s *clientSetup, exe, wsArg string, extra map[string]string, noPath, portable bool) (clientconfig.Entry, string, error) {
	if portable {
		exe, noPath = "berth", true
	}
	entry := clientconfig.NewEntry(s.client, s.env, exe, wsArg)
	// A client starts berth without this shell's environment: a BERTH_HOME
	// set here goes into the entry, or its berth would use another state root.
	if h := a.getenv("BERTH_HOME"); h != "" && !portable {
		paths, err := store.NewPaths(h)
		if err != nil {
			return entry, "", fmt.Errorf("BERTH_HOME=%s: %v; set it to an absolute directory", h, err)
		}
		if entry.Env == nil {
			entry.Env = map[string]string{}
		}
		entry.Env["BERTH_HOME"] = paths.Root
	}
	// GUI clients start berth with a minimal PATH: the servers it runs
	// would not find npx, uvx or node.
	path := ""
	if !noPath {
		path = dedupePath(a.getenv("PATH"))
	}
	if path != "" || len(extra) > 0 {
		if entry.Env == nil {
			entry.Env = map[string]string{}
		}
		if path != "" {
			entry.Env["PATH"] = path
		}
		maps.Copy(entry.Env, extra)
	}
	return entry, path, nil
}

// dedupePath is the list path (PATH) with each directory once, where it
// first appears: a shell's PATH often has the same directory several
// times (profiles that each prepend it), which the entry need not repeat.
func dedupePath(path string) string {
	seen := map[string]bool{}
	var out []string
	for _, dir := range filepath.SplitList(path) {
		if !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	return strings.Join(out, string(os.PathListSeparator))
}

// portableWarnings are what a portable entry, which names nothing of this
// machine, leaves to the client's environment.
func (a *app) portableWarnings(f *connectOptions) []string {
	var w []string
	if f.Profile != "" {
		w = append(w, fmt.Sprintf("the portable entry serves profile %s, which lives in your berth's state: others who open the project need a profile of that name in theirs (berth profile create %s)", f.Profile, f.Profile))
	}
	if h := a.getenv("BERTH_HOME"); h != "" {
		w = append(w, fmt.Sprintf("BERTH_HOME=%s is set here, and the portable entry does not record it: the client's berth uses the BERTH_HOME of the client's environment, or the default state root, where the plugins enabled here may not be (start the client from this shell, or connect without --portable)", h))
	}
	if !onPath(a.getenv("PATH"), "berth") {
		w = append(w, "berth is not on PATH here, and the portable entry runs the berth on the client's PATH: put berth on PATH (e.g. ~/.local/bin), or connect without --portable")
	}
	if len(f.Env) > 0 {
		w = append(w, fmt.Sprintf("the portable entry records the values of %s from this shell (--env), which others who open the project may not want", strings.Join(f.Env, ", ")))
	}
	return w
}

// committedWarnings warn when entry, not portable, goes into a project
// file, which is usually committed, with this machine's paths in it.
func committedWarnings(s *clientSetup, entry clientconfig.Entry) []string {
	var w []string
	for _, t := range s.targets {
		if t.User {
			continue
		}
		machine := []string{"the berth binary " + entry.Command, "the workspace " + s.workspace}
		for _, k := range []string{"PATH", "BERTH_HOME"} {
			if _, ok := entry.Env[k]; ok {
				machine = append(machine, k)
			}
		}
		fix := "--portable writes the command berth, ${workspaceFolder} and no PATH or BERTH_HOME, which VS Code and Cursor expand on every machine"
		if s.client == clientconfig.ClaudeCode {
			fix = "berth does not yet write a portable entry for Claude Code (--portable writes ${workspaceFolder}, which VS Code and Cursor expand, and Claude Code's .mcp.json expands environment variables instead): keep the entry in your own ~/.claude.json with --user, or keep .mcp.json out of the repository"
		}
		w = append(w, fmt.Sprintf("%s is a project file, usually committed, and this entry names this machine's paths (%s), which others who clone the project do not have: %s", t.Path, strings.Join(machine, ", "), fix))
	}
	return w
}

// printConnect prints the entry and its files for connect --print.
func (a *app) printConnect(f *connectOptions, p *connectPlan) error {
	s, entry := p.s, p.entry
	if f.JSON {
		return writeJSON(a.stdout, connectJSON{Workspace: s.workspace, Profile: f.Profile, Path: p.path, Missing: p.missing, Client: string(s.client), File: s.targets[0].Path, Name: f.Name,
			Entry: entry, Running: p.running, Warnings: p.warnings, Additional: printAdditional(s.targets)})
	}
	for _, t := range s.targets {
		fmt.Fprintf(a.stdout, "File: %s\n", t.Path)
	}
	fmt.Fprintf(a.stdout, "Under %q:\n%q: %s\n", s.targets[0].RootKey, f.Name, indentJSON(entry))
	a.printWarnings(p.warnings)
	a.printMissing(s.workspace, p.missing)
	fmt.Fprintln(a.stdout, "Nothing was written (--print).")
	return nil
}

// printConnected says what connect did to each file, and reports
// whether any was written.
func (a *app) printConnected(name string, edits []*clientconfig.Edit) bool {
	changed := false
	for _, ed := range edits {
		note := ""
		if ed.Target.Note != "" {
			note = " (" + ed.Target.Note + ")"
		}
		switch ed.Action {
		case clientconfig.Added:
			fmt.Fprintf(a.stdout, "Added server %q to %s%s.\n", name, ed.Target.Path, note)
		case clientconfig.Replaced:
			fmt.Fprintf(a.stdout, "Replaced server %q in %s%s; it was: %s\n", name, ed.Target.Path, note, ed.Previous)
		case clientconfig.Unchanged:
			fmt.Fprintf(a.stdout, "%s%s already has server %q as berth writes it; nothing changed.\n", ed.Target.Path, note, name)
		}
		if ed.Backup != "" {
			fmt.Fprintf(a.stdout, "Backup of the previous file: %s\n", ed.Backup)
		}
		changed = changed || ed.Written
	}
	return changed
}

func newDisconnectCmd(a *app) *cobra.Command {
	f := &connectOptions{}
	cmd := &cobra.Command{
		Use: "disconnect CLIENT",
		Example: `  berth disconnect claude-desktop
  berth disconnect cursor --workspace ~/src/project --json
  berth disconnect claude-desktop --profile desktop`,
		Short: "Remove berth's entry from an MCP client's configuration",
		Long: `Disconnect removes the server entry named --name (default "berth"; with
--profile NAME, "berth-NAME") from the MCP configuration of CLIENT (the
same file connect writes, chosen by --workspace and --user), and nothing
else. The old file is first copied to
$BERTH_HOME/backups/ (the last five copies of each file are kept). An entry of that name that does not run 'berth serve'
is kept unless --force; with --profile NAME, so is one that does not run
'berth serve ... --profile NAME' (the entry connect --profile writes).

When there is no such entry (or no file), disconnect says so and exits 0:
the client is not connected, which is what was asked.

Exit codes: 0 removed or not there, 1 refused or failed, 2 usage.`,
		Args: exactArgs(1, "one CLIENT"),
	}
	checkProfile := profileFlag(cmd, f, "remove the entry of profile `NAME` (berth-NAME unless --name); the profile need not exist any more")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		f.Client = args[0]
		if err := checkProfile(); err != nil {
			return err
		}
		return runDisconnect(cmd.Context(), a, f)
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Workspace, "workspace", "", "the workspace whose configuration to edit (default: the current directory)")
	fl.StringVar(&f.Name, "name", "berth", "the server's name in the client (default with --profile: berth-NAME)")
	fl.BoolVar(&f.User, "user", false, "edit the user's configuration instead of the workspace's")
	fl.BoolVar(&f.Force, "force", false, "remove the entry even if it does not run berth")
	a.jsonFlag(cmd, &f.JSON, connectJSON{})
	return cmd
}

func runDisconnect(ctx context.Context, a *app, f *connectOptions) error {
	s, err := a.clientSetup(f.Client, f, false)
	if err != nil {
		return err
	}
	opts, err := a.editOptions(f.Force)
	if err != nil {
		return err
	}
	opts.Profile = f.Profile
	edits := make([]*clientconfig.Edit, len(s.targets))
	for i, t := range s.targets {
		if edits[i], err = clientconfig.PrepareDisconnect(ctx, t, f.Name, opts); err != nil {
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
	if f.JSON {
		out := reportJSON(s.client, f.Name, edits, running, warnings)
		if edits[0].Previous != nil {
			out.Entry = edits[0].Previous
		}
		return writeJSON(a.stdout, out)
	}
	changed := false
	for _, ed := range edits {
		switch ed.Action {
		case clientconfig.Removed:
			fmt.Fprintf(a.stdout, "Removed server %q from %s.\n", f.Name, ed.Target.Path)
		case clientconfig.Absent:
			fmt.Fprintf(a.stdout, "No server %q in %s; nothing to remove.\n", f.Name, ed.Target.Path)
		}
		if ed.Backup != "" {
			fmt.Fprintf(a.stdout, "Backup of the previous file: %s\n", ed.Backup)
		}
		changed = changed || ed.Written
	}
	a.printWarnings(warnings)
	if changed {
		a.restartAdvice(s.client, f.Name, running, f.User)
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

// editOptions are the options of a client configuration edit: backups go
// under $BERTH_HOME/backups.
func (a *app) editOptions(force bool) (*clientconfig.Options, error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	return &clientconfig.Options{Force: force, BackupDir: paths.Backups()}, nil
}

// showRecorded says, before anything is written, which of this shell's
// variables the entry records.
func (a *app) showRecorded(c clientconfig.Client, path string, extra map[string]string) {
	if path != "" {
		fmt.Fprintf(a.stdout, "Recording this shell's PATH in the entry, since %s starts berth with a minimal one and the servers berth runs look for their programs on it (--no-path leaves it out):\n  PATH=%s\n", c.Title(), path)
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		fmt.Fprintf(a.stdout, "Recording %s=%s (--env %s).\n", k, extra[k], k)
	}
}
