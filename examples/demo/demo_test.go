package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// TestDemo runs the demo, the README's first command, end to end: it must
// exit 0 and show every step, the approval queue and the drift refusal
// included.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example from source")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo needs the go command")
	}
	var out bytes.Buffer
	if code := run(context.Background(), &out, false); code != 0 {
		t.Fatalf("the demo exited %d:\n%s", code, out.String())
	}
	for _, want := range []string{
		"is a valid bundle: demo-notes 1.0.0",
		"(curator) $ berth catalog add",
		"$ berth marketplace add demo",
		"downloads    " + everythingPackage + " at trust (berth trust, berth install), staged; the server starts offline",
		"Catalog demo vouches for this signer for demo-notes only",
		"Installed demo-notes@1.0.0 from catalog demo",
		"Enabled demo-notes@1.0.0",
		"is in step with its berth.lock (2 plugin(s))",
		"REVOKED: catalog demo revoked demo-fmt@1.0.0",
		"berth serve no longer lists demo-fmt__fmt__hash_file",
		"$ berth approve ",
		"demo-fmt__fmt__hash_file",
		"no longer matches what was reviewed",
		"Demo complete: every step behaved as expected.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out.String())
		}
	}
	checkReadable(t, out.String())
}

// checkReadable holds the demo to what a newcomer reads (issue 25): every
// command meant to fail is announced as such before it runs, and its exit
// said to be expected; no tool is listed twice (one bundle's tools under
// two plugins); JSON results keep their lines.
func checkReadable(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	// A command that fails prints "(exit N, as expected)"; an
	// EXPECTED FAILURE note must come after the previous command and
	// before this one.
	lastCmd, lastNote := -1, -1
	failing := 0
	for i, l := range lines {
		switch {
		case strings.Contains(l, "EXPECTED FAILURE: "):
			lastNote = i
		case strings.Contains(l, "$ berth "):
			lastCmd = i
		case strings.HasPrefix(strings.TrimSpace(l), "(exit ") && strings.HasSuffix(l, ", as expected)"):
			failing++
			// The note names the failure before the command, or before a
			// run of commands it covers ("the next two commands").
			if lastNote < 0 || lastNote > lastCmd {
				t.Errorf("line %d: %q ran with no note before it that it is meant to fail", i+1, lines[lastCmd])
			}
		}
	}
	if failing < 4 {
		t.Errorf("%d commands said to fail as expected, want the trust, verify, sync --check and the last verify", failing)
	}
	for _, w := range []string{"berth: no signer is configured", "FAILED  demo-fmt@1.0.0", "departs from its berth.lock"} {
		at := strings.Index(out, w)
		note := strings.LastIndex(out[:max(at, 0)], "EXPECTED FAILURE")
		if at < 0 || note < 0 {
			t.Errorf("%q is not preceded by an EXPECTED FAILURE note", w)
		}
	}
	// Step 10: each tool once, and no bundle's tools under two plugins.
	step := out[strings.Index(out, "list the tools"):]
	step = step[:strings.Index(step, "\n== ")]
	seen := map[string]string{}
	for _, l := range strings.Split(step, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		parts := strings.SplitN(f[0], "__", 3)
		if len(parts) != 3 {
			t.Errorf("step 10 lists %q, not a plugin__server__tool name", f[0])
			continue
		}
		key := parts[1] + "__" + parts[2]
		if other, ok := seen[key]; ok {
			t.Errorf("the tool %s is listed twice, as %s and %s", key, other, f[0])
		}
		seen[key] = f[0]
	}
	if len(seen) < 4 {
		t.Errorf("step 10 lists %d tools:\n%s", len(seen), step)
	}
	// The native tool's JSON result is printed indented, one field a line.
	for _, w := range []string{"result:\n", "\n       \"path\": \"settings.json\",\n", "\n       \"size\": 72\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("the JSON result is not printed on its lines: no %q", w)
		}
	}
	if strings.Contains(out, "{   \"path\"") {
		t.Error("the JSON result is printed with its newlines squashed")
	}
}

// TestDemoFailsWhenAStepFails: a step that does not behave (here the build,
// with a go command that fails) ends the demo with DEMO FAILED and a
// non-zero exit code.
func TestDemoFailsWhenAStepFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake go command is a shell script")
	}
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'go: simulated build failure' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	if code := run(context.Background(), &out, false); code == 0 {
		t.Fatalf("the demo with a failing step exited 0:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "DEMO FAILED: building ./examples/notesserver") || !strings.Contains(out.String(), "simulated build failure") || strings.Contains(out.String(), "Demo complete") {
		t.Fatalf("the demo's output does not report the failed step:\n%s", out.String())
	}
}

// TestExampleCatalog: every bundle of examples/catalog is valid as the
// demo assembles it, and the one that wraps an npm server runs it with
// npx at exactly the version the tests' npm peers pin.
func TestExampleCatalog(t *testing.T) {
	repo, err := findRepo()
	if err != nil {
		t.Fatal(err)
	}
	var peers struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, err := os.ReadFile(filepath.Join(repo, "testdata", "peers", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &peers); err != nil {
		t.Fatal(err)
	}
	if want := "@modelcontextprotocol/server-everything@" + peers.Dependencies["@modelcontextprotocol/server-everything"]; want != everythingPackage {
		t.Fatalf("the everything bundle pins %s, the peers %s", everythingPackage, want)
	}
	ents, err := os.ReadDir(filepath.Join(repo, "examples", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	if strings.Join(dirs, " ") != "demo-fmt demo-notes everything" || len(catalogBundles) != 3 {
		t.Fatalf("examples/catalog holds %v; the demo builds %v", dirs, catalogBundles)
	}
	for _, name := range catalogBundles {
		dir := filepath.Join(t.TempDir(), name)
		if err := copyFile(filepath.Join(repo, "examples", "catalog", name, "berth.json"), filepath.Join(dir, "berth.json"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range bundlePrograms[name] {
			if err := copyFile(filepath.Join(repo, "examples", "catalog", name, "berth.json"), filepath.Join(dir, "bin", p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bundle.Open(context.Background(), dir, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "everything" {
			s := b.Manifest.MCPServers["everything"]
			f, err := runtimefetch.Read(s.Stdio.Command, s.Stdio.Args)
			if err != nil || f == nil || f.Tool != "npx" || f.Package != everythingPackage || f.Ecosystem != runtimefetch.EcosystemNPM {
				t.Fatalf("everything runs %+v (%v)", f, err)
			}
		}
		b.Close()
	}
}
