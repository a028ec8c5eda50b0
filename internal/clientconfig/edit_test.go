package clientconfig

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tailscale/hujson"
)

var (
	ctx        = context.Background()
	fixedNow   = func() time.Time { return time.Date(2026, 11, 29, 20, 15, 0, 0, time.UTC) }
	fixedStamp = ".20261129T201500Z"
	// backupRoot is every test's Options.BackupDir (TestMain makes it);
	// each test's files have their own path, so their own directory in it.
	backupRoot string
	testOpts   = &Options{Now: fixedNow}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clientconfig-backups-")
	if err != nil {
		panic(err)
	}
	backupRoot = dir
	testOpts.BackupDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// backupOf is where the backup of path made at fixedNow is.
func backupOf(path string) string {
	return filepath.Join(BackupDirFor(backupRoot, path), filepath.Base(path)+fixedStamp)
}

// testTarget makes a target of client c on Linux in a temporary home and
// workspace, with its file holding content (none when content is nil).
func testTarget(t *testing.T, c Client, user bool, content []byte, mode fs.FileMode) (Target, Entry) {
	t.Helper()
	home, ws := t.TempDir(), t.TempDir()
	env := envOf("linux", home, nil)
	ts, err := Locate(c, env, ws, user)
	if err != nil {
		t.Fatal(err)
	}
	tg := ts[0]
	if content != nil {
		if err := os.MkdirAll(filepath.Dir(tg.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tg.Path, content, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(tg.Path, mode); err != nil {
			t.Fatal(err)
		}
	}
	return tg, NewEntry(c, env, "/opt/berth/bin/berth", "/work/proj")
}

func connect(t *testing.T, tg Target, name string, e Entry, opts *Options) (*Edit, error) {
	t.Helper()
	ed, err := PrepareConnect(ctx, tg, name, e, opts)
	if err != nil {
		return nil, err
	}
	return ed, ed.Apply(ctx)
}

func disconnect(t *testing.T, tg Target, name string, opts *Options) (*Edit, error) {
	t.Helper()
	ed, err := PrepareDisconnect(ctx, tg, name, opts)
	if err != nil {
		return nil, err
	}
	return ed, ed.Apply(ctx)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dirNames lists a directory's entries, to show that nothing (a backup, a
// temp file) was left beside a file.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// mustParse checks that data is what the client reads: strict JSON, or
// JSON with comments.
func mustParse(t *testing.T, tg Target, data string) map[string]any {
	t.Helper()
	if !tg.JSONC && !json.Valid([]byte(data)) {
		t.Fatalf("not strict JSON:\n%s", data)
	}
	v, err := decodeJSONC([]byte(data))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, data)
	}
	return v.(map[string]any)
}

// TestConnectNewFile writes each client's file from nothing: the exact
// content, the mode, and 0700 for new user-scope directories.
func TestConnectNewFile(t *testing.T) {
	stdio := `{
  "%s": {
    "berth": {
      "type": "stdio",
      "command": "/opt/berth/bin/berth",
      "args": [
        "serve",
        "--workspace",
        "/work/proj"
      ]
    }
  }
}
`
	plain := strings.Replace(stdio, "      \"type\": \"stdio\",\n", "", 1)
	tests := []struct {
		client Client
		user   bool
		want   string
		mode   fs.FileMode
	}{
		{ClaudeDesktop, true, sprintf(plain, "mcpServers"), 0o600},
		{ClaudeCode, false, sprintf(stdio, "mcpServers"), 0o644},
		{ClaudeCode, true, sprintf(stdio, "mcpServers"), 0o600},
		{Cursor, false, sprintf(plain, "mcpServers"), 0o644},
		{Cursor, true, sprintf(plain, "mcpServers"), 0o600},
		{VSCode, false, sprintf(stdio, "servers"), 0o644},
		{VSCode, true, sprintf(stdio, "servers"), 0o600},
	}
	for _, tt := range tests {
		name := string(tt.client)
		if tt.user {
			name += " user"
		}
		t.Run(name, func(t *testing.T) {
			tg, e := testTarget(t, tt.client, tt.user, nil, 0)
			ed, err := connect(t, tg, "berth", e, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			if ed.Action != Added || !ed.Written || ed.Backup != "" || ed.Previous != nil {
				t.Errorf("edit = %+v", ed)
			}
			if got := read(t, tg.Path); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			fi, _ := os.Stat(tg.Path)
			if fi.Mode().Perm() != tt.mode {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tt.mode)
			}
			if tt.user && filepath.Base(tg.Path) != ".claude.json" {
				di, _ := os.Stat(filepath.Dir(tg.Path))
				if di.Mode().Perm() != 0o700 {
					t.Errorf("new user directory mode %v, want 0700", di.Mode().Perm())
				}
			}
			if got := dirNames(t, filepath.Dir(tg.Path)); len(got) != 1 {
				t.Errorf("left beside the file: %v", got)
			}
		})
	}
}

func sprintf(format string, args ...any) string {
	return strings.ReplaceAll(format, "%s", args[0].(string))
}

// TestConnectKeepsUnknownKeys adds the entry to a Claude Desktop file with
// preferences and other servers: every other byte is kept and the other
// keys keep their order.
func TestConnectKeepsUnknownKeys(t *testing.T) {
	old := `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "weather": {
      "command": "npx",
      "args": ["-y", "@acme/weather-mcp@1.0.0"],
      "env": {"API_KEY": "k"}
    }
  },
  "preferences": {"quickEntryShortcut": "off", "n": 1.50}
}
`
	want := `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "weather": {
      "command": "npx",
      "args": ["-y", "@acme/weather-mcp@1.0.0"],
      "env": {"API_KEY": "k"}
    },
    "berth": {
      "command": "/opt/berth/bin/berth",
      "args": [
        "serve",
        "--workspace",
        "/work/proj"
      ]
    }
  },
  "preferences": {"quickEntryShortcut": "off", "n": 1.50}
}
`
	tg, e := testTarget(t, ClaudeDesktop, true, []byte(old), 0o644)
	ed, err := connect(t, tg, "berth", e, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, tg.Path); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if ed.Backup != backupOf(tg.Path) || read(t, ed.Backup) != old {
		t.Errorf("backup %q does not hold the old file", ed.Backup)
	}
}

// TestConnectClaudeJSONSurgical edits ~/.claude.json, which holds other
// state: the result is the old file with only the entry spliced in.
func TestConnectClaudeJSONSurgical(t *testing.T) {
	old := `{"numStartups":12,"projects":{"/work/proj":{"allowedTools":[],"mcpServers":{}}},"oauthAccount":{"emailAddress":"u@example.com"},"mcpServers":{"db":{"type":"stdio","command":"db-mcp","args":[]}},"big":12345678901234567890}`
	tg, e := testTarget(t, ClaudeCode, true, []byte(old), 0o600)
	if _, err := connect(t, tg, "berth", e, testOpts); err != nil {
		t.Fatal(err)
	}
	got := read(t, tg.Path)
	inserted := `, "berth": {"type":"stdio","command":"/opt/berth/bin/berth","args":["serve","--workspace","/work/proj"]}`
	want := strings.Replace(old, `"args":[]}}`, `"args":[]}`+inserted+`}`, 1)
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The per-project mcpServers is a different scope and stays empty.
	v := mustParse(t, tg, got)
	if p := v["projects"].(map[string]any)["/work/proj"].(map[string]any)["mcpServers"].(map[string]any); len(p) != 0 {
		t.Errorf("project-local servers changed: %v", p)
	}
	fi, _ := os.Stat(tg.Path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 kept", fi.Mode().Perm())
	}
}

const jsoncOld = `// Project MCP servers.
{
  /* shared with the team */
  "inputs": [
    {"type": "promptString", "id": "api-key", "description": "API key", "password": true,},
  ],
  "servers": {
    "weather": {
      "type": "stdio",
      "command": "npx", // pinned below
      "args": ["-y", "@acme/weather-mcp@1.0.0",],
    },
    // more servers go here
  },
}
`

// TestConnectJSONCPreserved adds to a VS Code and a Cursor file with
// comments and trailing commas: comments and commas are kept, the result
// parses as JSON with comments, and disconnect gives back the same bytes.
func TestConnectJSONCPreserved(t *testing.T) {
	for _, c := range []Client{VSCode, Cursor} {
		t.Run(string(c), func(t *testing.T) {
			old := jsoncOld
			rk := "servers"
			if c == Cursor {
				rk = "mcpServers"
				old = strings.Replace(old, `"servers"`, `"mcpServers"`, 1)
			}
			tg, e := testTarget(t, c, false, []byte(old), 0o644)
			if _, err := connect(t, tg, "berth", e, testOpts); err != nil {
				t.Fatal(err)
			}
			got := read(t, tg.Path)
			typ := ""
			if c == VSCode {
				typ = "      \"type\": \"stdio\",\n"
			}
			want := strings.Replace(old, "    // more servers go here\n", "    // more servers go here\n"+`    "berth": {
`+typ+`      "command": "/opt/berth/bin/berth",
      "args": [
        "serve",
        "--workspace",
        "/work/proj"
      ]
    },
`, 1)
			if got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			for _, comment := range []string{"// Project MCP servers.", "/* shared with the team */", "// pinned below", "// more servers go here"} {
				if !strings.Contains(got, comment) {
					t.Errorf("comment %q lost", comment)
				}
			}
			v := mustParse(t, tg, got)
			if _, ok := v[rk].(map[string]any)["berth"]; !ok {
				t.Errorf("no berth entry in %v", v)
			}
			if _, err := hujson.Parse([]byte(got)); err != nil {
				t.Error(err)
			}

			ed, err := disconnect(t, tg, "berth", testOpts)
			if err != nil {
				t.Fatal(err)
			}
			if ed.Action != Removed || !ed.Written {
				t.Errorf("disconnect: %+v", ed)
			}
			if got := read(t, tg.Path); got != old {
				t.Errorf("disconnect did not give back the original:\n%s", got)
			}
		})
	}
}

// TestStrictRefusesComments: the Claude files are strict JSON, so a
// comment or a trailing comma is refused with its position, and the file
// is untouched with no backup.
func TestStrictRefusesComments(t *testing.T) {
	for _, tc := range []struct {
		client  Client
		content string
		line    int
		col     int
	}{
		{ClaudeCode, "{\n  // mine\n  \"mcpServers\": {}\n}\n", 2, 3},
		{ClaudeDesktop, "{\n  \"mcpServers\": {\"a\": {\"command\": \"a\"},}\n}\n", 2, 40},
	} {
		t.Run(string(tc.client), func(t *testing.T) {
			tg, e := testTarget(t, tc.client, tc.client == ClaudeDesktop, []byte(tc.content), 0o644)
			_, err := connect(t, tg, "berth", e, testOpts)
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want a SyntaxError", err)
			}
			if se.Line != tc.line || se.Column != tc.col || se.File != tg.Path {
				t.Errorf("at %s:%d:%d, want line %d column %d", se.File, se.Line, se.Column, tc.line, tc.col)
			}
			msg := err.Error()
			for _, want := range []string{tg.Path, "strict JSON", "nothing was changed", "fix:"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if read(t, tg.Path) != tc.content {
				t.Error("file changed")
			}
			if got := dirNames(t, filepath.Dir(tg.Path)); len(got) != 1 {
				t.Errorf("left beside the file: %v", got)
			}
		})
	}
}

// TestInvalidRefused: a file that does not parse, or whose shape is wrong,
// is refused for every client, untouched, with no backup.
func TestInvalidRefused(t *testing.T) {
	bad := []struct{ name, content, want string }{
		{"missing comma", "{\n  \"a\": 1\n  \"b\": 2\n}\n", "line 3, column 3"},
		{"truncated", `{"mcpServers": {"x": {`, "line 1"},
		{"not an object", `["x"]`, "top level is not a JSON object"},
		{"servers not an object", `{"mcpServers": [], "servers": []}`, "is not a JSON object"},
		{"duplicate root key", `{"mcpServers": {}, "servers": {}, "mcpServers": {}, "servers": {}}`, "appears 2 times"},
		{"duplicate entry", `{"mcpServers": {"berth": {}, "berth": {}}, "servers": {"berth": {}, "berth": {}}}`, `"berth" appears 2 times`},
	}
	for _, c := range Clients {
		for _, b := range bad {
			t.Run(string(c)+"/"+b.name, func(t *testing.T) {
				tg, e := testTarget(t, c, false, []byte(b.content), 0o644)
				for _, op := range []string{"connect", "disconnect"} {
					var err error
					if op == "connect" {
						_, err = connect(t, tg, "berth", e, &Options{Now: fixedNow, Force: true, BackupDir: backupRoot})
					} else {
						_, err = disconnect(t, tg, "berth", &Options{Now: fixedNow, Force: true, BackupDir: backupRoot})
					}
					if !errors.Is(err, ErrInvalidConfig) {
						t.Fatalf("%s: err = %v, want ErrInvalidConfig", op, err)
					}
					if !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), tg.Path) {
						t.Errorf("%s: message lacks %q or the path:\n%v", op, b.want, err)
					}
				}
				if read(t, tg.Path) != b.content {
					t.Error("file changed")
				}
				if got := dirNames(t, filepath.Dir(tg.Path)); len(got) != 1 {
					t.Errorf("left beside the file: %v", got)
				}
			})
		}
	}
}

// TestBackupAndMode: the old file is copied into the backup directory,
// mode 0600 whatever its mode (it may hold what the client keeps private);
// the new file keeps the mode; a second backup in the same second gets a
// suffix; only the last KeepBackups backups of a file are kept.
func TestBackupAndMode(t *testing.T) {
	old := "{\n  \"mcpServers\": {}\n}\n"
	tg, e := testTarget(t, Cursor, true, []byte(old), 0o640)
	ed, err := connect(t, tg, "berth", e, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if ed.Backup != backupOf(tg.Path) {
		t.Fatalf("backup %q, want %q", ed.Backup, backupOf(tg.Path))
	}
	if read(t, ed.Backup) != old {
		t.Error("backup does not hold the old file")
	}
	if fi, _ := os.Stat(tg.Path); fi.Mode().Perm() != 0o640 {
		t.Errorf("%s: mode %v, want 0640", tg.Path, fi.Mode().Perm())
	}
	if fi, _ := os.Stat(ed.Backup); fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", ed.Backup, fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(ed.Backup)); fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want 0700", filepath.Dir(ed.Backup), fi.Mode().Perm())
	}
	if src := read(t, filepath.Join(filepath.Dir(ed.Backup), "source")); src != tg.Path+"\n" {
		t.Errorf("source %q, want the file's path", src)
	}
	if _, err := os.Stat(tg.Path + ".bak" + fixedStamp); err == nil {
		t.Error("a backup was written beside the file")
	}
	ed, err = disconnect(t, tg, "berth", testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if ed.Backup != backupOf(tg.Path)+"-2" {
		t.Errorf("second backup %q", ed.Backup)
	}
	if read(t, tg.Path) != old {
		t.Errorf("disconnect did not restore:\n%s", read(t, tg.Path))
	}
	// Eight more edits, some in the same second: five backups remain, the
	// newest ones.
	var last []string
	for i := range 8 {
		opts := &Options{Now: func() time.Time { return fixedNow().Add(time.Duration(i/2) * time.Minute) }, BackupDir: backupRoot}
		var ed *Edit
		if i%2 == 0 {
			ed, err = connect(t, tg, "berth", e, opts)
		} else {
			ed, err = disconnect(t, tg, "berth", opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		last = append(last, filepath.Base(ed.Backup))
	}
	ents, _ := os.ReadDir(filepath.Dir(ed.Backup))
	var kept []string
	for _, e := range ents {
		if e.Name() != "source" {
			kept = append(kept, e.Name())
		}
	}
	want := slices.Clone(last[len(last)-KeepBackups:])
	slices.Sort(want)
	slices.Sort(kept)
	if !slices.Equal(kept, want) {
		t.Errorf("kept backups %v, want the last %d: %v", kept, KeepBackups, want)
	}
}

// TestBackupsInOneSecond: more than KeepBackups backups of one file in
// the same second each exist when Apply returns them, and the last
// KeepBackups are kept (a name pruning freed is not reused for the newest).
func TestBackupsInOneSecond(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(t.TempDir(), "mcp.json")
	var names []string
	for i := range KeepBackups + 3 {
		name, err := writeBackup(root, path, []byte{byte('a' + i)}, strings.TrimPrefix(fixedStamp, "."))
		if err != nil {
			t.Fatal(err)
		}
		if got := read(t, name); got != string(rune('a'+i)) {
			t.Fatalf("backup %d (%s) holds %q, want %q", i, name, got, string(rune('a'+i)))
		}
		names = append(names, filepath.Base(name))
	}
	ents, _ := os.ReadDir(BackupDirFor(root, path))
	var kept []string
	for _, e := range ents {
		if e.Name() != "source" {
			kept = append(kept, e.Name())
		}
	}
	want := slices.Clone(names[len(names)-KeepBackups:])
	slices.Sort(want)
	slices.Sort(kept)
	if !slices.Equal(kept, want) {
		t.Errorf("kept backups %v, want the last %d: %v", kept, KeepBackups, want)
	}
}

// TestIdempotent: connecting twice changes nothing the second time and
// makes no second backup.
func TestIdempotent(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			tg, e := testTarget(t, c, false, []byte(`{"other": true}`), 0o644)
			if _, err := connect(t, tg, "berth", e, testOpts); err != nil {
				t.Fatal(err)
			}
			first := read(t, tg.Path)
			ed, err := connect(t, tg, "berth", e, &Options{Now: func() time.Time { return fixedNow().Add(time.Hour) }, BackupDir: backupRoot})
			if err != nil {
				t.Fatal(err)
			}
			if ed.Action != Unchanged || ed.Written || ed.Backup != "" || ed.Previous == nil {
				t.Errorf("second connect: %+v", ed)
			}
			if read(t, tg.Path) != first {
				t.Error("second connect changed the file")
			}
			if got := dirNames(t, filepath.Dir(tg.Path)); len(got) != 1 {
				t.Errorf("files: %v, want the file alone (backups go to the backup directory)", got)
			}
			if got := dirNames(t, BackupDirFor(backupRoot, tg.Path)); len(got) != 2 {
				t.Errorf("backups: %v, want one backup and source", got)
			}
		})
	}
}

// TestConflict: a different entry of the same name is kept unless Force.
func TestConflict(t *testing.T) {
	old := `{"mcpServers": {"berth": {"command": "/old/berth", "args": ["serve", "--workspace", "/elsewhere"]}}}`
	tg, e := testTarget(t, ClaudeDesktop, true, []byte(old), 0o644)
	_, err := connect(t, tg, "berth", e, testOpts)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "/elsewhere") {
		t.Fatalf("err = %v", err)
	}
	if read(t, tg.Path) != old || len(dirNames(t, filepath.Dir(tg.Path))) != 1 {
		t.Fatal("file touched")
	}
	ed, err := connect(t, tg, "berth", e, &Options{Now: fixedNow, Force: true, BackupDir: backupRoot})
	if err != nil {
		t.Fatal(err)
	}
	if ed.Action != Replaced || string(ed.Previous) != `{"command":"/old/berth","args":["serve","--workspace","/elsewhere"]}` {
		t.Errorf("edit: %+v (previous %s)", ed, ed.Previous)
	}
	want := `{"mcpServers": {"berth": {"command":"/opt/berth/bin/berth","args":["serve","--workspace","/work/proj"]}}}`
	if got := read(t, tg.Path); got != want {
		t.Errorf("got %s", got)
	}
}

// TestReplaceIndented replaces an entry in an indented file at its
// indentation, keeping the rest.
func TestReplaceIndented(t *testing.T) {
	old := "{\n\t\"servers\": {\n\t\t\"berth\": {\"type\": \"stdio\", \"command\": \"berth\", \"args\": [\"serve\"]}, // ours\n\t\t\"b\": {}\n\t}\n}\n"
	want := "{\n\t\"servers\": {\n\t\t\"berth\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"/opt/berth/bin/berth\",\n\t\t\t\"args\": [\n\t\t\t\t\"serve\",\n\t\t\t\t\"--workspace\",\n\t\t\t\t\"/work/proj\"\n\t\t\t]\n\t\t}, // ours\n\t\t\"b\": {}\n\t}\n}\n"
	tg, e := testTarget(t, VSCode, false, []byte(old), 0o644)
	if _, err := connect(t, tg, "berth", e, &Options{Now: fixedNow, Force: true, BackupDir: backupRoot}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, tg.Path); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestDisconnectRemovesOnlyOurs removes the entry wherever it stands and
// leaves every other byte.
func TestDisconnectRemovesOnlyOurs(t *testing.T) {
	ours := `{"command": "/b", "args": ["serve", "--workspace", "/w"]}`
	tests := []struct{ name, old, want string }{
		{"first",
			"{\n  \"mcpServers\": {\n    \"berth\": " + ours + ",\n    \"a\": {\"command\": \"a\"}\n  },\n  \"x\": 1\n}\n",
			"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"a\"}\n  },\n  \"x\": 1\n}\n"},
		{"middle",
			"{\"mcpServers\": {\n  \"a\": {},\n  \"berth\": " + ours + ",\n  \"c\": {}\n}}",
			"{\"mcpServers\": {\n  \"a\": {},\n  \"c\": {}\n}}"},
		{"last",
			"{\"mcpServers\": {\n  \"a\": {},\n  \"berth\": " + ours + "\n}}",
			"{\"mcpServers\": {\n  \"a\": {}\n}}"},
		{"last with a comment before",
			"{\"mcpServers\": {\n  \"a\": {}, // a\n  // berth\n  \"berth\": " + ours + "\n}}",
			"{\"mcpServers\": {\n  \"a\": {} // a\n  // berth\n}}"},
		{"last with trailing comma",
			"{\"mcpServers\": {\n  \"a\": {},\n  \"berth\": " + ours + ",\n}}",
			"{\"mcpServers\": {\n  \"a\": {},\n}}"},
		{"inline",
			"{\"mcpServers\": {\"a\": {}, \"berth\": " + ours + ", \"c\": {}}}",
			"{\"mcpServers\": {\"a\": {}, \"c\": {}}}"},
		{"inline last",
			"{\"mcpServers\": {\"a\": {}, \"berth\": " + ours + "}}",
			"{\"mcpServers\": {\"a\": {}}}"},
		{"only",
			"{\n  \"mcpServers\": {\n    \"berth\": " + ours + "\n  }\n}\n",
			"{\n  \"mcpServers\": {}\n}\n"},
		{"only with a comment",
			"{\n  \"mcpServers\": {\n    // keep\n    \"berth\": " + ours + "\n  }\n}\n",
			"{\n  \"mcpServers\": {\n    // keep\n  }\n}\n"},
		{"crlf",
			"{\r\n  \"mcpServers\": {\r\n    \"a\": {},\r\n    \"berth\": " + ours + "\r\n  }\r\n}\r\n",
			"{\r\n  \"mcpServers\": {\r\n    \"a\": {}\r\n  }\r\n}\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, _ := testTarget(t, Cursor, false, []byte(tt.old), 0o644)
			ed, err := disconnect(t, tg, "berth", testOpts)
			if err != nil {
				t.Fatal(err)
			}
			if ed.Action != Removed || string(ed.Previous) != `{"command":"/b","args":["serve","--workspace","/w"]}` {
				t.Errorf("edit %+v, previous %s", ed, ed.Previous)
			}
			if got := read(t, tg.Path); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestDisconnectAbsentAndForeign(t *testing.T) {
	t.Run("no file", func(t *testing.T) {
		tg, _ := testTarget(t, VSCode, false, nil, 0)
		ed, err := disconnect(t, tg, "berth", testOpts)
		if err != nil || ed.Action != Absent || ed.Written {
			t.Fatalf("%+v, %v", ed, err)
		}
		if _, err := os.Stat(filepath.Dir(tg.Path)); !errors.Is(err, fs.ErrNotExist) {
			t.Error("disconnect created a directory")
		}
	})
	t.Run("no entry", func(t *testing.T) {
		old := `{"servers": {"a": {}}}`
		tg, _ := testTarget(t, VSCode, false, []byte(old), 0o644)
		ed, err := disconnect(t, tg, "berth", testOpts)
		if err != nil || ed.Action != Absent || ed.Written || ed.Backup != "" {
			t.Fatalf("%+v, %v", ed, err)
		}
		if read(t, tg.Path) != old || len(dirNames(t, filepath.Dir(tg.Path))) != 1 {
			t.Error("file touched")
		}
	})
	t.Run("foreign entry", func(t *testing.T) {
		old := `{"servers": {"berth": {"type": "http", "url": "https://example.com/mcp"}}}`
		tg, _ := testTarget(t, VSCode, false, []byte(old), 0o644)
		_, err := disconnect(t, tg, "berth", testOpts)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("err = %v", err)
		}
		if read(t, tg.Path) != old {
			t.Error("file touched")
		}
		ed, err := disconnect(t, tg, "berth", &Options{Now: fixedNow, Force: true, BackupDir: backupRoot})
		if err != nil || ed.Action != Removed {
			t.Fatalf("%+v, %v", ed, err)
		}
		if got := read(t, tg.Path); got != `{"servers": {}}` {
			t.Errorf("got %s", got)
		}
	})
}

// TestSpecialFiles: an empty file, a byte order mark, a symlinked file.
func TestSpecialFiles(t *testing.T) {
	t.Run("whitespace only", func(t *testing.T) {
		tg, e := testTarget(t, ClaudeCode, false, []byte("\n  \n"), 0o644)
		ed, err := connect(t, tg, "berth", e, testOpts)
		if err != nil || ed.Action != Added || ed.Backup == "" {
			t.Fatalf("%+v, %v", ed, err)
		}
		mustParse(t, tg, read(t, tg.Path))
	})
	t.Run("byte order mark", func(t *testing.T) {
		old := "\xef\xbb\xbf{\"mcpServers\": {}}"
		tg, e := testTarget(t, ClaudeDesktop, true, []byte(old), 0o644)
		if _, err := connect(t, tg, "berth", e, testOpts); err != nil {
			t.Fatal(err)
		}
		got := read(t, tg.Path)
		if got != "\xef\xbb\xbf{\"mcpServers\": {\"berth\": {\"command\":\"/opt/berth/bin/berth\",\"args\":[\"serve\",\"--workspace\",\"/work/proj\"]}}}" {
			t.Errorf("got %q", got)
		}
		if _, err := disconnect(t, tg, "berth", testOpts); err != nil {
			t.Fatal(err)
		}
		if got := read(t, tg.Path); got != "\xef\xbb\xbf{\"mcpServers\": {}}" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		tg, e := testTarget(t, Cursor, true, nil, 0)
		real := filepath.Join(t.TempDir(), "dotfiles-mcp.json")
		os.WriteFile(real, []byte(`{}`), 0o644)
		os.MkdirAll(filepath.Dir(tg.Path), 0o700)
		if err := os.Symlink(real, tg.Path); err != nil {
			t.Skip(err)
		}
		ed, err := connect(t, tg, "berth", e, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(tg.Path); fi.Mode()&fs.ModeSymlink == 0 {
			t.Error("the link was replaced by a file")
		}
		if !strings.Contains(read(t, real), `"berth"`) {
			t.Error("the linked file was not edited")
		}
		if ed.Backup != backupOf(real) {
			t.Errorf("backup %q, want that of the linked file %s", ed.Backup, backupOf(real))
		}
	})
	t.Run("directory", func(t *testing.T) {
		tg, e := testTarget(t, Cursor, true, nil, 0)
		os.MkdirAll(tg.Path, 0o700)
		if _, err := connect(t, tg, "berth", e, testOpts); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestChangedDuringEdit: when the client rewrites the file between read
// and write, berth writes nothing and leaves no backup.
func TestChangedDuringEdit(t *testing.T) {
	tg, e := testTarget(t, ClaudeDesktop, true, []byte(`{"mcpServers": {}}`), 0o644)
	ed, err := PrepareConnect(ctx, tg, "berth", e, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	theirs := `{"mcpServers": {}, "preferences": {}}`
	os.WriteFile(tg.Path, []byte(theirs), 0o644)
	err = ed.Apply(ctx)
	if !errors.Is(err, ErrChanged) || ed.Written {
		t.Fatalf("err = %v, written %v", err, ed.Written)
	}
	if read(t, tg.Path) != theirs || len(dirNames(t, filepath.Dir(tg.Path))) != 1 {
		t.Error("berth wrote over the other writer, or left files")
	}

	// A file created meanwhile is not overwritten either.
	tg2, e2 := testTarget(t, Cursor, false, nil, 0)
	ed, _ = PrepareConnect(ctx, tg2, "berth", e2, testOpts)
	os.MkdirAll(filepath.Dir(tg2.Path), 0o755)
	os.WriteFile(tg2.Path, []byte(`{}`), 0o644)
	if err := ed.Apply(ctx); !errors.Is(err, ErrChanged) {
		t.Fatalf("err = %v", err)
	}
}

// TestWarnsAboutRemoteEntries: Claude Desktop entries with a url are
// reported, and kept.
func TestWarnsAboutRemoteEntries(t *testing.T) {
	old := `{"mcpServers": {"remote": {"type": "http", "url": "https://example.com/mcp"}}}`
	tg, e := testTarget(t, ClaudeDesktop, true, []byte(old), 0o644)
	ed, err := connect(t, tg, "berth", e, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ed.Warnings) != 1 || !strings.Contains(ed.Warnings[0], `"remote"`) {
		t.Errorf("warnings: %q", ed.Warnings)
	}
	if !strings.Contains(read(t, tg.Path), `"remote": {"type": "http", "url": "https://example.com/mcp"}`) {
		t.Error("remote entry changed")
	}
}

func TestIsBerthEntry(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"command":"/b","args":["serve","--workspace","/w"]}`:    true,
		`{"type":"stdio","command":"C:\\b.exe","args":["serve"]}`: true,
		`{"command":"npx","args":["-y","x"]}`:                     false,
		`{"url":"https://x"}`:                                     false,
		`[]`:                                                      false,
	} {
		if got := isBerthEntry([]byte(raw)); got != want {
			t.Errorf("isBerthEntry(%s) = %v", raw, got)
		}
	}
}

func TestApplyTwicePanics(t *testing.T) {
	tg, e := testTarget(t, Cursor, false, nil, 0)
	ed, _ := PrepareConnect(ctx, tg, "berth", e, testOpts)
	if err := ed.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	ed.Apply(ctx)
}

// TestConnectLayouts inserts into objects of every shape in the file's own
// style.
func TestConnectLayouts(t *testing.T) {
	e := Entry{Command: "/b", Args: []string{"serve"}}
	tests := []struct{ name, old, want string }{
		{"bare braces", `{}`, "{\n  \"mcpServers\": {\n    \"berth\": {\n      \"command\": \"/b\",\n      \"args\": [\n        \"serve\"\n      ]\n    }\n  }\n}"},
		{"minified", `{"a":1}`, `{"a":1, "mcpServers": {"berth":{"command":"/b","args":["serve"]}}}`},
		{"minified trailing comma", `{"mcpServers":{"a":1,}}`, `{"mcpServers":{"a":1, "berth": {"command":"/b","args":["serve"]},}}`},
		{"four spaces", "{\n    \"x\": 1\n}\n", "{\n    \"x\": 1,\n    \"mcpServers\": {\n        \"berth\": {\n            \"command\": \"/b\",\n            \"args\": [\n                \"serve\"\n            ]\n        }\n    }\n}\n"},
		{"tabs and crlf", "{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": 1\r\n\t}\r\n}\r\n", "{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": 1,\r\n\t\t\"berth\": {\r\n\t\t\t\"command\": \"/b\",\r\n\t\t\t\"args\": [\r\n\t\t\t\t\"serve\"\r\n\t\t\t]\r\n\t\t}\r\n\t}\r\n}\r\n"},
		{"comment after last", "{\"mcpServers\": {\n  \"a\": 1 // one\n}}", "{\"mcpServers\": {\n  \"a\": 1, // one\n  \"berth\": {\n    \"command\": \"/b\",\n    \"args\": [\n      \"serve\"\n    ]\n  }\n}}"},
		{"only a comment", "{\"mcpServers\": {\n  // none yet\n}}", "{\"mcpServers\": {\n  // none yet\n  \"berth\": {\n    \"command\": \"/b\",\n    \"args\": [\n      \"serve\"\n    ]\n  }\n}}"},
		{"html characters kept", `{"mcpServers": {"a<&>": 1}}`, `{"mcpServers": {"a<&>": 1, "berth": {"command":"/b","args":["serve"]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parse(Target{Client: Cursor, Path: "/x", RootKey: "mcpServers", JSONC: true}, []byte(tt.old))
			if err != nil {
				t.Fatal(err)
			}
			c, err := d.connect("berth", e, false)
			if err != nil {
				t.Fatal(err)
			}
			if string(c.data) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", c.data, tt.want)
			}
		})
	}
}

// TestConnectWindowsClaudeDesktop writes the entry, with the Windows
// variables, to both the Store (MSIX) copy and the classic file, and
// disconnects from both.
func TestConnectWindowsClaudeDesktop(t *testing.T) {
	home := t.TempDir()
	j := filepath.Join
	local, roaming := j(home, "AppData", "Local"), j(home, "AppData", "Roaming")
	msixDir := j(local, "Packages", "Claude_abc123", "LocalCache", "Roaming", "Claude")
	os.MkdirAll(msixDir, 0o755)
	os.MkdirAll(j(roaming, "Claude"), 0o755)
	os.WriteFile(j(msixDir, "claude_desktop_config.json"), []byte("{\n  \"preferences\": {}\n}\n"), 0o644)
	vars := map[string]string{"APPDATA": roaming, "LOCALAPPDATA": local, "ProgramData": `C:\ProgramData`, "SystemRoot": `C:\WINDOWS`}
	env := envOf("windows", home, vars)
	ts, err := Locate(ClaudeDesktop, env, "", true)
	if err != nil || len(ts) != 2 {
		t.Fatalf("targets %v, %v", paths(ts), err)
	}
	e := NewEntry(ClaudeDesktop, env, `C:\Program Files\berth\berth.exe`, `C:\work`)
	for _, tg := range ts {
		if _, err := connect(t, tg, "berth", e, testOpts); err != nil {
			t.Fatal(err)
		}
		v := mustParse(t, tg, read(t, tg.Path))
		got := v["mcpServers"].(map[string]any)["berth"].(map[string]any)
		if got["command"] != `C:\Program Files\berth\berth.exe` {
			t.Errorf("%s: command %v", tg.Path, got["command"])
		}
		env := got["env"].(map[string]any)
		for k, want := range vars {
			if env[k] != want {
				t.Errorf("%s: env %s = %v, want %v", tg.Path, k, env[k], want)
			}
		}
	}
	if _, ok := mustParse(t, ts[0], read(t, ts[0].Path))["preferences"]; !ok {
		t.Error("MSIX file lost its preferences")
	}
	for _, tg := range ts {
		ed, err := disconnect(t, tg, "berth", testOpts)
		if err != nil || ed.Action != Removed {
			t.Fatalf("%s: %+v %v", tg.Path, ed, err)
		}
	}
	if got := read(t, ts[0].Path); got != "{\n  \"preferences\": {},\n  \"mcpServers\": {}\n}\n" {
		t.Errorf("MSIX file after disconnect: %q", got)
	}
}

// TestVerifyCatchesBadEdits: the last check before writing refuses any
// result that changes more than the entry.
func TestVerifyCatchesBadEdits(t *testing.T) {
	tg := Target{Client: ClaudeCode, Path: "/x/.mcp.json", RootKey: "mcpServers"}
	d, err := parse(tg, []byte(`{"a": 1, "mcpServers": {"s": {"command": "s"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{Command: "/b", Args: []string{"serve"}}
	ok := `{"a": 1, "mcpServers": {"s": {"command": "s"}, "berth": {"command": "/b", "args": ["serve"]}}}`
	if err := d.verify([]byte(ok), "berth", &e); err != nil {
		t.Fatalf("good edit refused: %v", err)
	}
	for _, bad := range []string{
		`{"a": 1, "mcpServers": {"s": {"command": "s"}}}`,                                                 // entry missing
		`{"a": 2, "mcpServers": {"s": {"command": "s"}, "berth": {"command": "/b", "args": ["serve"]}}}`,  // other key changed
		`{"a": 1, "mcpServers": {"berth": {"command": "/b", "args": ["serve"]}}}`,                         // other server lost
		`{"a": 1, "mcpServers": {"s": {"command": "s"}, "berth": {"command": "/c", "args": ["serve"]}}}`,  // wrong entry
		`{"a": 1, "mcpServers": {"s": {"command": "s"}, "berth": {"command": "/b", "args": ["serve"]},}}`, // not strict
		`{"a": 1, "mcpServers": []}`,
		`[]`,
	} {
		if err := d.verify([]byte(bad), "berth", &e); !errors.Is(err, errBug) {
			t.Errorf("verify accepted %s (err %v)", bad, err)
		}
	}
	if err := d.verify([]byte(`{"a": 1, "mcpServers": {"s": {"command": "s"}, "berth": {}}}`), "berth", nil); !errors.Is(err, errBug) {
		t.Errorf("verify accepted a removal that kept the entry: %v", err)
	}
}

// TestWorkspaceLinks: a project file whose folder or itself is a symbolic
// link out of the workspace (or one that cannot be followed) is refused
// by connect and disconnect, before and at the time of writing, and the
// file it leads to is left as it was; a link inside the workspace is
// followed.
func TestWorkspaceLinks(t *testing.T) {
	for _, c := range []Client{VSCode, Cursor, ClaudeCode} {
		t.Run(string(c), func(t *testing.T) {
			tg, e := testTarget(t, c, false, nil, 0)
			if tg.Workspace == "" {
				t.Fatalf("Locate left Workspace empty: %+v", tg)
			}
			outside := filepath.Join(t.TempDir(), "user.json")
			os.WriteFile(outside, []byte(`{}`), 0o644)
			refused := func(what, link string) {
				t.Helper()
				for _, op := range []string{"connect", "disconnect"} {
					var err error
					if op == "connect" {
						_, err = connect(t, tg, "berth", e, testOpts)
					} else {
						_, err = disconnect(t, tg, "berth", testOpts)
					}
					if !errors.Is(err, ErrOutsideWorkspace) || !strings.Contains(err.Error(), link+" is a symbolic link") || !strings.Contains(err.Error(), "rm "+link) {
						t.Errorf("%s, %s: err = %v", what, op, err)
					}
				}
				if got := read(t, outside); got != `{}` {
					t.Errorf("%s: the file outside was written: %s", what, got)
				}
			}
			dir := filepath.Dir(tg.Path)
			if dir != tg.Workspace {
				os.Symlink(filepath.Dir(outside), dir)
				refused("linked folder", dir)
				os.Remove(dir)
				os.Mkdir(dir, 0o755)
			}
			os.Symlink(outside, tg.Path)
			refused("linked file", tg.Path)
			os.Remove(tg.Path)
			os.Symlink(filepath.Join(tg.Workspace, "missing", "x.json"), tg.Path)
			refused("dangling link", tg.Path)
			os.Remove(tg.Path)

			// Inside the workspace: followed.
			inside := filepath.Join(tg.Workspace, "shared.json")
			os.WriteFile(inside, []byte(`{}`), 0o644)
			os.Symlink(inside, tg.Path)
			if _, err := connect(t, tg, "berth", e, testOpts); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(read(t, inside), `"berth"`) {
				t.Error("the linked file inside the workspace was not edited")
			}

			// Linked out after Prepare: Apply writes nothing.
			ed, err := PrepareDisconnect(ctx, tg, "berth", testOpts)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(tg.Path)
			os.Symlink(outside, tg.Path)
			if err := ed.Apply(ctx); !errors.Is(err, ErrOutsideWorkspace) {
				t.Errorf("Apply after the link changed: %v", err)
			}
			if got := read(t, outside); got != `{}` {
				t.Errorf("the file outside was written: %s", got)
			}
		})
	}
}
