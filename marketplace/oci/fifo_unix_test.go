//go:build unix

package oci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/ocitest"
)

// A FIFO planted as the snapshot the timestamp names: refused at once,
// never read (a read would block the push for good).
func TestPushRefusesSpecialMetadataFile(t *testing.T) {
	dir, _ := fakeCatalog(t)
	p := filepath.Join(dir, "2.snapshot.json")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	ref, _ := ParseRef("oci://" + reg.Host() + "/acme/catalog")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := PushCatalog(ctx, dir, ref, nil)
	if err == nil || !strings.Contains(err.Error(), "2.snapshot.json is missing or not a regular file") {
		t.Fatalf("a FIFO snapshot: %v", err)
	}
}
