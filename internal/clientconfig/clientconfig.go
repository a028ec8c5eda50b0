// Package clientconfig finds the MCP configuration files of MCP clients
// (Claude Desktop, Claude Code, Cursor, VS Code) and edits one server entry
// in them safely.
//
// An edit changes only the bytes of that one entry: every other key,
// server, comment, indentation and key order stays as it was. The existing
// file is parsed first (strict JSON for the Claude files, JSON with comments
// and trailing commas for Cursor and VS Code) and an edit is refused, with
// the file untouched, when it does not parse. The result is parsed again and
// compared with the original before anything is written. Writing copies the
// old file into a backup directory (Options.BackupDir, the last KeepBackups
// copies per file), then replaces it atomically (temp file, fsync, rename)
// with the same mode.
//
// Nothing here prints or exits; the CLI (berth connect, berth disconnect)
// does that.
package clientconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
)

// Client names an MCP client whose configuration berth can edit.
type Client string

// The clients berth knows.
const (
	ClaudeDesktop Client = "claude-desktop"
	ClaudeCode    Client = "claude-code"
	Cursor        Client = "cursor"
	VSCode        Client = "vscode"
)

// Clients lists every client, in the order berth documents them.
var Clients = []Client{ClaudeDesktop, ClaudeCode, Cursor, VSCode}

// ParseClient returns the client named s, or an error that lists the
// clients berth knows.
func ParseClient(s string) (Client, error) {
	for _, c := range Clients {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, len(Clients))
	for i, c := range Clients {
		names[i] = string(c)
	}
	return "", fmt.Errorf("unknown client %q: use one of %s", s, strings.Join(names, ", "))
}

// Title is the client's product name, for messages.
func (c Client) Title() string {
	switch c {
	case ClaudeDesktop:
		return "Claude Desktop"
	case ClaudeCode:
		return "Claude Code"
	case Cursor:
		return "Cursor"
	case VSCode:
		return "VS Code"
	}
	return string(c)
}

// namePattern is what clients accept as a server (and so tool prefix) name.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// CheckName reports whether name can name a server entry.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("server name %q is not allowed: use 1 to 64 letters, digits, '_' or '-' (clients reject other names)", name)
	}
	return nil
}

// Env is the user's environment as far as client configuration goes: the
// operating system, the home directory and the environment variables.
// FromOS describes the running process; tests describe another machine.
type Env struct {
	// GOOS is "darwin", "windows", "linux", ...; empty means runtime.GOOS.
	GOOS string
	// Home is the user's home directory. It must be absolute.
	Home string
	// Getenv reads an environment variable; nil reads none.
	Getenv func(string) string
	// ProcDir is where Linux process information is read to tell whether a
	// client is running; empty means /proc.
	ProcDir string
}

// FromOS describes the running process, reading variables with getenv
// (os.Getenv when nil). The home directory is $HOME (%USERPROFILE% on
// Windows).
func FromOS(getenv func(string) string) (Env, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := Env{GOOS: runtime.GOOS, Getenv: getenv}
	if e.GOOS == "windows" {
		e.Home = getenv("USERPROFILE")
	} else {
		e.Home = getenv("HOME")
	}
	if e.Home == "" || !filepath.IsAbs(e.Home) {
		what := "HOME"
		if e.GOOS == "windows" {
			what = "USERPROFILE"
		}
		return e, fmt.Errorf("cannot find your home directory: $%s is %q; set it to an absolute path", what, e.Home)
	}
	return e, nil
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// absEnv returns the variable k when it is an absolute path, else def.
func (e Env) absEnv(k, def string) string {
	if v := e.getenv(k); v != "" && filepath.IsAbs(v) {
		return v
	}
	return def
}

// xdgConfig is $XDG_CONFIG_HOME, or ~/.config.
func (e Env) xdgConfig() string {
	return e.absEnv("XDG_CONFIG_HOME", filepath.Join(e.Home, ".config"))
}

// Target is one configuration file to edit and how to edit it.
type Target struct {
	Client Client
	// Path is the file's absolute path.
	Path string
	// RootKey is the top-level key that holds the servers: "mcpServers",
	// or "servers" for VS Code.
	RootKey string
	// JSONC reports whether the file may hold comments and trailing commas
	// (VS Code, Cursor). Other files must be strict JSON.
	JSONC bool
	// User reports a per-user file (rather than one in a project): new
	// directories for it are made 0700 and a new file 0600.
	User bool
	// Workspace is, for a project file, the workspace directory it is in
	// (Locate sets it). A symbolic link on the way from it to the file
	// that leads out of it is refused (ErrOutsideWorkspace): the
	// workspace is not the user's to trust. A user's file follows links
	// (dotfiles).
	Workspace string
	// Note, when set, says why this file was chosen (Windows Claude
	// Desktop installs).
	Note string
}

// Locate returns the configuration files of client c: those in workspace
// (an absolute directory) or, with user, the user's own. Claude Desktop has
// only a user file; on Windows it may have two (see Target.Note), and berth
// writes both.
func Locate(c Client, env Env, workspace string, user bool) ([]Target, error) {
	if env.Home == "" || !filepath.IsAbs(env.Home) {
		return nil, fmt.Errorf("home directory %q is not an absolute path", env.Home)
	}
	if !user && c != ClaudeDesktop && !filepath.IsAbs(workspace) {
		return nil, fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	goos := env.goos()
	switch c {
	case ClaudeDesktop:
		return claudeDesktopTargets(env), nil
	case ClaudeCode:
		if user {
			return []Target{{Client: c, Path: filepath.Join(env.Home, ".claude.json"), RootKey: "mcpServers", User: true}}, nil
		}
		return []Target{{Client: c, Path: filepath.Join(workspace, ".mcp.json"), RootKey: "mcpServers", Workspace: workspace}}, nil
	case Cursor:
		if user {
			return []Target{{Client: c, Path: filepath.Join(env.Home, ".cursor", "mcp.json"), RootKey: "mcpServers", JSONC: true, User: true}}, nil
		}
		return []Target{{Client: c, Path: filepath.Join(workspace, ".cursor", "mcp.json"), RootKey: "mcpServers", JSONC: true, Workspace: workspace}}, nil
	case VSCode:
		if user {
			var dir string
			switch goos {
			case "darwin":
				dir = filepath.Join(env.Home, "Library", "Application Support")
			case "windows":
				dir = env.absEnv("APPDATA", filepath.Join(env.Home, "AppData", "Roaming"))
			default:
				dir = env.xdgConfig()
			}
			return []Target{{Client: c, Path: filepath.Join(dir, "Code", "User", "mcp.json"), RootKey: "servers", JSONC: true, User: true}}, nil
		}
		return []Target{{Client: c, Path: filepath.Join(workspace, ".vscode", "mcp.json"), RootKey: "servers", JSONC: true, Workspace: workspace}}, nil
	}
	return nil, fmt.Errorf("unknown client %q", c)
}

const claudeDesktopFile = "claude_desktop_config.json"

// claudeDesktopTargets finds where Claude Desktop reads its configuration.
//
// On Windows a Microsoft Store / MSIX install (the default since early
// 2026) reads a virtualised copy under
// %LOCALAPPDATA%\Packages\Claude_<publisher id>\LocalCache\Roaming\Claude\
// and never sees %APPDATA%\Claude\. berth writes every MSIX copy it finds,
// and also the classic file when its folder exists or when no MSIX package
// is installed, so an edit lands wherever the app reads.
func claudeDesktopTargets(env Env) []Target {
	t := Target{Client: ClaudeDesktop, RootKey: "mcpServers", User: true}
	switch env.goos() {
	case "darwin":
		t.Path = filepath.Join(env.Home, "Library", "Application Support", "Claude", claudeDesktopFile)
		return []Target{t}
	case "windows":
		appData := env.absEnv("APPDATA", filepath.Join(env.Home, "AppData", "Roaming"))
		localAppData := env.absEnv("LOCALAPPDATA", filepath.Join(env.Home, "AppData", "Local"))
		classicDir := filepath.Join(appData, "Claude")
		var out []Target
		pkgs, _ := filepath.Glob(filepath.Join(localAppData, "Packages", "Claude_*"))
		sort.Strings(pkgs)
		for _, p := range pkgs {
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				continue
			}
			m := t
			m.Path = filepath.Join(p, "LocalCache", "Roaming", "Claude", claudeDesktopFile)
			m.Note = "Microsoft Store (MSIX) install: " + filepath.Base(p)
			out = append(out, m)
		}
		classic := t
		classic.Path = filepath.Join(classicDir, claudeDesktopFile)
		if len(out) == 0 {
			classic.Note = "classic install (no Microsoft Store package found)"
			return []Target{classic}
		}
		if fi, err := os.Stat(classicDir); err == nil && fi.IsDir() {
			classic.Note = "classic install folder, also present"
			out = append(out, classic)
		}
		return out
	default:
		t.Path = filepath.Join(env.xdgConfig(), "Claude", claudeDesktopFile)
		return []Target{t}
	}
}

// Entry is the server entry berth writes: a stdio server running
// Command with Args. Field order is the order written.
type Entry struct {
	// Type is "stdio" for the clients whose files name the transport
	// (Claude Code, VS Code); "http" for an HTTP entry there; empty
	// otherwise.
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL, Headers and HeadersHelper make an HTTP entry (NewHTTPEntry):
	// no Command then.
	URL           string            `json:"url,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	HeadersHelper string            `json:"headersHelper,omitempty"`
}

// windowsChildEnv are the variables a stdio child of Claude Desktop on
// Windows may lack, and that berth and the servers it runs need.
var windowsChildEnv = []string{"APPDATA", "LOCALAPPDATA", "ProgramData", "SystemRoot"}

// NewEntry returns the entry that runs `executable serve --workspace
// workspace` for client c. Both paths must be absolute. On Windows the
// Claude Desktop entry carries the variables a stdio child would otherwise
// lack, with their values in env.
func NewEntry(c Client, env Env, executable, workspace string) Entry {
	e := Entry{Command: executable, Args: []string{"serve", "--workspace", workspace}}
	switch c {
	case ClaudeCode, VSCode:
		e.Type = "stdio"
	case ClaudeDesktop:
		if env.goos() == "windows" {
			for _, k := range windowsChildEnv {
				if v := env.getenv(k); v != "" {
					if e.Env == nil {
						e.Env = map[string]string{}
					}
					e.Env[k] = v
				}
			}
		}
	}
	return e
}
