package marketplace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/repo"
)

// berth catalog add writes the archive and its signature only as regular
// files inside the catalog's directory: a symbolic link planted there (a
// directory on the way, or the file itself) is refused, and what it
// points at is not touched.
func TestCatalogAddRefusesLinks(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	add := func(version string) error {
		dir, sig := e.bundle("acme-notes", version, "")
		_, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier})
		return err
	}
	vdir := filepath.Join(e.repoDir, "bundles", "acme-notes", "1.1.0")
	for _, tc := range []struct {
		name, link, target, want string
	}{
		{"a linked version directory", vdir, outside, "bundles/acme-notes/1.1.0 is a symbolic link (to " + outside + ")"},
		{"a linked plugin directory", filepath.Join(e.repoDir, "bundles", "acme-notes"), outside, "bundles/acme-notes is a symbolic link"},
		{"a linked archive", filepath.Join(vdir, "acme-notes-1.1.0.tar.gz"), victim, "bundles/acme-notes/1.1.0/acme-notes-1.1.0.tar.gz is a symbolic link (to " + victim + ")"},
		{"a linked signature", filepath.Join(vdir, "acme-notes-1.1.0.tar.gz.sigstore.json"), victim, "acme-notes-1.1.0.tar.gz.sigstore.json is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(vdir)
			if tc.link == filepath.Join(e.repoDir, "bundles", "acme-notes") {
				moved := filepath.Join(e.dir, "moved")
				os.RemoveAll(moved)
				if err := os.Rename(tc.link, moved); err != nil {
					t.Fatal(err)
				}
				defer func() {
					os.Remove(tc.link)
					os.Rename(moved, tc.link)
				}()
			} else {
				os.MkdirAll(filepath.Dir(tc.link), 0o755)
				defer os.Remove(tc.link)
			}
			if err := os.Symlink(tc.target, tc.link); err != nil {
				t.Fatal(err)
			}
			err := add("1.1.0")
			var pe *repo.ServedPathError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "never through a link") {
				t.Fatalf("add through %s: %v", tc.name, err)
			}
			if data, _ := os.ReadFile(victim); string(data) != "keep\n" {
				t.Errorf("the file outside changed: %q", data)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Errorf("berth wrote into the directory outside: %v", entries)
			}
		})
	}
	// With the links gone, the same version adds.
	os.RemoveAll(vdir)
	if err := add("1.1.0"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(vdir, "acme-notes-1.1.0.tar.gz"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the archive: %v %v", fi, err)
	}
}
