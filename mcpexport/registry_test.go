package mcpexport

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/fsx"
)

// A live serve's record is read while it holds its lock (even though the
// stale one beside it, of a running PID, is removed), and is gone once the
// serve closes it.
func TestReadServingTrustsTheLockNotThePID(t *testing.T) {
	dir := t.TempDir()
	r := newRegistry(dir, "/w", slog.New(slog.DiscardHandler))
	if r.path == "" {
		t.Fatal("the registry did not record")
	}
	recs, err := ReadServing(dir)
	if err != nil || len(recs) != 1 || recs[0].PID != os.Getpid() || recs[0].Workspace != "/w" {
		t.Fatalf("a live record: %+v, %v", recs, err)
	}
	r.close()
	recs, err = ReadServing(dir)
	if err != nil || len(recs) != 0 {
		t.Fatalf("after close: %+v, %v", recs, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("close left %v", ents)
	}
}

// A record too big to be berth's is skipped and named, never read whole;
// the other records come with the error.
func TestReadServingCapsTheFileSize(t *testing.T) {
	dir := t.TempDir()
	r := newRegistry(dir, "/w", slog.New(slog.DiscardHandler))
	t.Cleanup(r.close)
	pid := os.Getppid()
	big := filepath.Join(dir, strconv.Itoa(pid)+".json")
	if err := os.WriteFile(big, []byte(`{"pid":`+strconv.Itoa(pid)+`,"x":"`+strings.Repeat("a", maxServeRecord)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	release, err := fsx.HoldLock(context.Background(), filepath.Join(dir, strconv.Itoa(pid)+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	recs, err := ReadServing(dir)
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "over 1048576 bytes") {
		t.Fatalf("the error does not name the big file: %v", err)
	}
	if len(recs) != 1 || recs[0].PID != os.Getpid() {
		t.Fatalf("the readable record is not returned beside the error: %+v", recs)
	}
}
