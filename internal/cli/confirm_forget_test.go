package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/store"
)

// forgetConfirmed never fails silently: when berth cannot read its trust
// records it warns, naming the failure and that the confirmed values stay
// in config.json.
func TestForgetConfirmedWarnsWhenRecordsUnreadable(t *testing.T) {
	paths := store.Paths{Root: t.TempDir()}
	// A record that does not match its path makes Records fail.
	bad := filepath.Join(paths.TrustDir(), "acme", "1.0.0.json")
	if err := os.MkdirAll(filepath.Dir(bad), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"name": "other", "version": "2.0.0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st := store.Open(paths, nil)
	if _, err := st.Records(); err == nil {
		t.Fatal("the damaged record reads")
	}
	var errBuf bytes.Buffer
	a := &app{stdout: &bytes.Buffer{}, stderr: &errBuf, getenv: func(string) string { return "" }}
	a.forgetConfirmed(st, "acme")
	got := errBuf.String()
	for _, want := range []string{"warning:", "does not match its path", "acme", "config.json"} {
		if !strings.Contains(got, want) {
			t.Errorf("the warning %q does not say %q", got, want)
		}
	}
}
