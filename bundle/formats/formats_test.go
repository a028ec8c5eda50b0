package formats_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	_ "github.com/berth-mcp/berth/bundle/formats"
	"github.com/berth-mcp/berth/internal/testkit"
)

const good = "../../testdata/import/good"

// TestBuiltBinaryReadsEveryFormat builds berth and reads every good
// source of another format with it: berth validate takes each as valid,
// of its format, and berth review shows what the review package's golden
// shows. Every format registered here is met at least once, so a format
// the CLI does not register (internal/cli imports this package) fails
// here, not in a user's hands.
func TestBuiltBinaryReadsEveryFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds berth")
	}
	berth := testkit.Program(t, t.TempDir(), "github.com/berth-mcp/berth/cmd/berth")
	srcs, err := filepath.Glob(filepath.Join(good, "*"))
	if err != nil || len(srcs) < 3 {
		t.Fatalf("sources %v, %v", srcs, err)
	}
	home := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(berth, args...)
		cmd.Env = append(os.Environ(), "BERTH_HOME="+home, "NO_COLOR=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			err = errors.Join(err, errors.New(stderr.String()))
		}
		return stdout.String(), err
	}
	seen := map[string]bool{}
	for _, src := range srcs {
		name := filepath.Base(src)
		out, err := run("validate", "--json", src)
		if err != nil {
			t.Fatalf("berth validate %s: %v\n%s", name, err, out)
		}
		var v struct {
			Valid  bool   `json:"valid"`
			Format string `json:"format"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || !v.Valid || v.Format == "" {
			t.Fatalf("berth validate %s: %v\n%s", name, err, out)
		}
		seen[v.Format] = true
		out, err = run("review", src)
		if err != nil {
			t.Fatalf("berth review %s: %v\n%s", name, err, out)
		}
		if runtime.GOOS != "linux" {
			// The goldens show what the importers chose for linux.
			continue
		}
		golden, err := os.ReadFile(filepath.Join(good, "..", "golden", name+".review.txt"))
		if err != nil {
			t.Fatal(err)
		}
		// The runtime prefix berth review finds on this machine's PATH
		// is the machine's, not the bundle's; the goldens (from package
		// review, which looks nothing up) say it is found at start.
		out = hereRe.ReplaceAllString(out, "the program's runtime prefix, found when it starts,")
		if !strings.HasPrefix(out, string(golden)) {
			t.Errorf("berth review %s does not show the golden review:\n%s", name, out)
		}
	}
	for _, f := range bundle.Formats() {
		if !seen[f.Name] {
			t.Errorf("no source of the format %s in %s was read as one by the built berth", f.Name, good)
		}
	}
	if want := []string{bundle.FormatMCPB, bundle.FormatClaudePlugin, bundle.FormatMCPRegistry}; !slices.EqualFunc(bundle.Formats(), want, func(f *bundle.Format, n string) bool { return f.Name == n }) {
		t.Errorf("registered formats %v, want %v", bundle.Formats(), want)
	}
}

// hereRe is the runtime prefix berth review found on the PATH.
var hereRe = regexp.MustCompile(`the program's runtime prefix \(here: [^)\n]*\),`)
