package clientconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func envOf(goos, home string, vars map[string]string) Env {
	return Env{GOOS: goos, Home: home, Getenv: func(k string) string { return vars[k] }}
}

func paths(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Path)
	}
	return out
}

// TestLocate checks every client's file on Linux, macOS and Windows, in
// both scopes, with the environment injected.
func TestLocate(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "proj")
	xdg := filepath.Join(home, "xdg")
	j := filepath.Join
	tests := []struct {
		name   string
		env    Env
		client Client
		user   bool
		want   string
		root   string
		jsonc  bool
	}{
		{"desktop linux", envOf("linux", home, nil), ClaudeDesktop, false, j(home, ".config", "Claude", "claude_desktop_config.json"), "mcpServers", false},
		{"desktop linux xdg", envOf("linux", home, map[string]string{"XDG_CONFIG_HOME": xdg}), ClaudeDesktop, true, j(xdg, "Claude", "claude_desktop_config.json"), "mcpServers", false},
		{"desktop linux relative xdg ignored", envOf("linux", home, map[string]string{"XDG_CONFIG_HOME": "rel"}), ClaudeDesktop, false, j(home, ".config", "Claude", "claude_desktop_config.json"), "mcpServers", false},
		{"desktop macos", envOf("darwin", home, nil), ClaudeDesktop, false, j(home, "Library", "Application Support", "Claude", "claude_desktop_config.json"), "mcpServers", false},
		{"code project", envOf("linux", home, nil), ClaudeCode, false, j(ws, ".mcp.json"), "mcpServers", false},
		{"code user", envOf("darwin", home, nil), ClaudeCode, true, j(home, ".claude.json"), "mcpServers", false},
		{"cursor project", envOf("windows", home, nil), Cursor, false, j(ws, ".cursor", "mcp.json"), "mcpServers", true},
		{"cursor user", envOf("linux", home, nil), Cursor, true, j(home, ".cursor", "mcp.json"), "mcpServers", true},
		{"vscode project", envOf("linux", home, nil), VSCode, false, j(ws, ".vscode", "mcp.json"), "servers", true},
		{"vscode user linux", envOf("linux", home, map[string]string{"XDG_CONFIG_HOME": xdg}), VSCode, true, j(xdg, "Code", "User", "mcp.json"), "servers", true},
		{"vscode user macos", envOf("darwin", home, nil), VSCode, true, j(home, "Library", "Application Support", "Code", "User", "mcp.json"), "servers", true},
		{"vscode user windows", envOf("windows", home, map[string]string{"APPDATA": j(home, "Roam")}), VSCode, true, j(home, "Roam", "Code", "User", "mcp.json"), "servers", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := Locate(tt.client, tt.env, ws, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != 1 || ts[0].Path != tt.want || ts[0].RootKey != tt.root || ts[0].JSONC != tt.jsonc || ts[0].Client != tt.client {
				t.Errorf("got %+v\nwant path %s, root %s, jsonc %v", ts, tt.want, tt.root, tt.jsonc)
			}
			if wantUser := tt.user || tt.client == ClaudeDesktop; ts[0].User != wantUser {
				t.Errorf("User = %v, want %v", ts[0].User, wantUser)
			}
		})
	}
}

// TestLocateClaudeDesktopWindows checks the classic and the Store (MSIX)
// locations: the package suffix is globbed, and the classic file is kept
// when its folder exists or when no package is installed.
func TestLocateClaudeDesktopWindows(t *testing.T) {
	j := filepath.Join
	setup := func(t *testing.T, msix []string, classic bool) (Env, string, string) {
		home := t.TempDir()
		appData, local := j(home, "AppData", "Roaming"), j(home, "AppData", "Local")
		for _, p := range msix {
			if err := os.MkdirAll(j(local, "Packages", p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// Other packages and a stray file are not Claude's.
		os.MkdirAll(j(local, "Packages", "Microsoft.Windows.Photos_8wekyb3d8bbwe"), 0o755)
		os.WriteFile(j(local, "Packages", "Claude_file"), nil, 0o644)
		if classic {
			os.MkdirAll(j(appData, "Claude"), 0o755)
		}
		return envOf("windows", home, map[string]string{"APPDATA": appData, "LOCALAPPDATA": local}), appData, local
	}
	file := "claude_desktop_config.json"

	t.Run("msix only", func(t *testing.T) {
		env, _, local := setup(t, []string{"Claude_abc123"}, false)
		ts, err := Locate(ClaudeDesktop, env, "", true)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{j(local, "Packages", "Claude_abc123", "LocalCache", "Roaming", "Claude", file)}
		if got := paths(ts); !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		if ts[0].Note == "" || !ts[0].User {
			t.Errorf("target %+v: want a note and User", ts[0])
		}
	})
	t.Run("msix and classic", func(t *testing.T) {
		env, appData, local := setup(t, []string{"Claude_abc123"}, true)
		ts, _ := Locate(ClaudeDesktop, env, "", false)
		want := []string{
			j(local, "Packages", "Claude_abc123", "LocalCache", "Roaming", "Claude", file),
			j(appData, "Claude", file),
		}
		if got := paths(ts); !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("classic only", func(t *testing.T) {
		env, appData, _ := setup(t, nil, true)
		ts, _ := Locate(ClaudeDesktop, env, "", false)
		if got, want := paths(ts), []string{j(appData, "Claude", file)}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("nothing installed", func(t *testing.T) {
		env, appData, _ := setup(t, nil, false)
		ts, _ := Locate(ClaudeDesktop, env, "", false)
		if got, want := paths(ts), []string{j(appData, "Claude", file)}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("defaults without APPDATA", func(t *testing.T) {
		home := t.TempDir()
		ts, _ := Locate(ClaudeDesktop, envOf("windows", home, nil), "", false)
		if got, want := paths(ts), []string{j(home, "AppData", "Roaming", "Claude", file)}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

func TestLocateNeedsAbsolutePaths(t *testing.T) {
	if _, err := Locate(Cursor, envOf("linux", "", nil), "/w", false); err == nil {
		t.Error("empty home accepted")
	}
	if _, err := Locate(Cursor, envOf("linux", "/home/u", nil), "w", false); err == nil {
		t.Error("relative workspace accepted")
	}
	if _, err := Locate(Cursor, envOf("linux", "/home/u", nil), "", true); err != nil {
		t.Errorf("user scope needs no workspace: %v", err)
	}
}

func TestFromOS(t *testing.T) {
	vars := map[string]string{"HOME": "/home/u", "USERPROFILE": `C:\Users\u`}
	env, err := FromOS(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	if want := vars["HOME"]; env.GOOS != "windows" && env.Home != want {
		t.Errorf("home %q, want %q", env.Home, want)
	}
	if _, err := FromOS(func(string) string { return "" }); err == nil {
		t.Error("missing home accepted")
	}
}

func TestNewEntry(t *testing.T) {
	vars := map[string]string{"APPDATA": `C:\Users\u\AppData\Roaming`, "LOCALAPPDATA": `C:\Users\u\AppData\Local`, "ProgramData": `C:\ProgramData`, "SystemRoot": `C:\WINDOWS`, "PATH": "x"}
	args := []string{"serve", "--workspace", "/w"}
	tests := []struct {
		client Client
		env    Env
		want   Entry
	}{
		{ClaudeDesktop, envOf("linux", "/h", vars), Entry{Command: "/b", Args: args}},
		{ClaudeDesktop, envOf("darwin", "/h", vars), Entry{Command: "/b", Args: args}},
		{ClaudeDesktop, envOf("windows", "/h", vars), Entry{Command: "/b", Args: args, Env: map[string]string{
			"APPDATA": vars["APPDATA"], "LOCALAPPDATA": vars["LOCALAPPDATA"], "ProgramData": vars["ProgramData"], "SystemRoot": vars["SystemRoot"]}}},
		{ClaudeDesktop, envOf("windows", "/h", map[string]string{"SystemRoot": `C:\WINDOWS`}), Entry{Command: "/b", Args: args, Env: map[string]string{"SystemRoot": `C:\WINDOWS`}}},
		{ClaudeCode, envOf("windows", "/h", vars), Entry{Type: "stdio", Command: "/b", Args: args}},
		{Cursor, envOf("linux", "/h", vars), Entry{Command: "/b", Args: args}},
		{VSCode, envOf("linux", "/h", vars), Entry{Type: "stdio", Command: "/b", Args: args}},
	}
	for _, tt := range tests {
		if got := NewEntry(tt.client, tt.env, "/b", "/w"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s on %s: got %+v, want %+v", tt.client, tt.env.GOOS, got, tt.want)
		}
	}
	if got := string(mustMarshal(NewEntry(VSCode, Env{}, "/b", "/w"))); got != `{"type":"stdio","command":"/b","args":["serve","--workspace","/w"]}` {
		t.Errorf("field order: %s", got)
	}
}

func TestParseClientAndName(t *testing.T) {
	for _, c := range Clients {
		if got, err := ParseClient(string(c)); err != nil || got != c {
			t.Errorf("ParseClient(%q) = %q, %v", c, got, err)
		}
	}
	if _, err := ParseClient("claude"); err == nil {
		t.Error("unknown client accepted")
	}
	for _, n := range []string{"berth", "berth_2", "a-b", "A"} {
		if err := CheckName(n); err != nil {
			t.Errorf("CheckName(%q): %v", n, err)
		}
	}
	for _, n := range []string{"", "has space", "dot.ted", "x/y", string(make([]byte, 65))} {
		if err := CheckName(n); err == nil {
			t.Errorf("CheckName(%q) accepted", n)
		}
	}
}
