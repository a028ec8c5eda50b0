package trust

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
)

const goodBundle = "../testdata/bundles/good/stdio-bundled"

func openBundle(t *testing.T, src string) *bundle.Bundle {
	t.Helper()
	b, err := bundle.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newStore(t *testing.T) *Store {
	t.Helper()
	p, err := NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return OpenStore(p, nil)
}

// signedRequest signs the bundle's listing with a fresh key and returns a
// request verified against a policy holding that key.
func signedRequest(t *testing.T, b *bundle.Bundle, signer string) (TrustRequest, Signer) {
	t.Helper()
	priv, pub, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := Sign(context.Background(), b.Listing().Bytes(), priv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewKeySigner(signer, pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier([]Signer{s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Verify(context.Background(), b.Listing().Bytes(), sig)
	if err != nil {
		t.Fatal(err)
	}
	return TrustRequest{Bundle: b, Signature: sig, Verified: res, Source: b.Source, ReviewHash: "sha256:x"}, s
}

func TestTrustStagesReadOnlySnapshot(t *testing.T) {
	s := newStore(t)
	b := openBundle(t, goodBundle)
	req, signer := signedRequest(t, b, "acme")
	res, err := s.Trust(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Already || res.Record.Digest != b.Digest || res.Record.Unsigned || res.Record.Signer.Fingerprint != signer.Fingerprint {
		t.Fatalf("record %+v", res.Record)
	}
	snap := s.Paths().Snapshot(b.Digest)
	fi, err := os.Stat(filepath.Join(snap, "bin", "notes-server"))
	if err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("bin mode %v %v", fi.Mode(), err)
	}
	fi, _ = os.Stat(filepath.Join(snap, "share", "index.txt"))
	if fi.Mode().Perm() != 0o444 {
		t.Fatalf("file mode %v", fi.Mode())
	}
	fi, _ = os.Stat(filepath.Join(snap, "share"))
	if fi.Mode().Perm() != 0o555 {
		t.Fatalf("dir mode %v", fi.Mode())
	}
	st, _ := s.State()
	if st.Generation != 1 {
		t.Fatalf("generation %d", st.Generation)
	}
	// Trusting again is a no-op.
	again, err := s.Trust(context.Background(), req)
	if err != nil || !again.Already {
		t.Fatalf("re-trust: %+v %v", again, err)
	}
	if st, _ := s.State(); st.Generation != 1 {
		t.Fatalf("re-trust bumped the generation to %d", st.Generation)
	}
	v, _ := NewVerifier([]Signer{signer}, nil)
	if rep := s.Verify(context.Background(), res.Record, v); rep.Err != nil || rep.Signature == nil {
		t.Fatalf("verify: %+v", rep)
	}
}

func TestTrustRefusals(t *testing.T) {
	s := newStore(t)
	b := openBundle(t, goodBundle)
	req, _ := signedRequest(t, b, "acme")
	if _, err := s.Trust(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// Another signer for the same plugin.
	other, _ := signedRequest(t, b, "mallory")
	_, err := s.Trust(context.Background(), other)
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), `key "acme"`) || !strings.Contains(err.Error(), `key "mallory"`) || !strings.Contains(err.Error(), "--allow-signer-change") {
		t.Fatalf("signer change: %v", err)
	}
	// Same version, new digest.
	dir := t.TempDir()
	copyDir(t, goodBundle, dir)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644)
	b2 := openBundle(t, dir)
	req2, _ := signedRequest(t, b2, "acme")
	req2.Verified.KeyFingerprint = req.Verified.KeyFingerprint // same identity, so only immutability refuses
	_, err = s.Trust(context.Background(), req2)
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "versions are immutable") {
		t.Fatalf("same version new digest: %v", err)
	}
	if st, _ := s.State(); st.Generation != 1 {
		t.Fatalf("refusals changed the generation: %d", st.Generation)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(to, 0o755)
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			return os.Symlink(target, to)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, fi.Mode().Perm())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDriftChecker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, snap string)
		want   string
	}{
		{"edited", func(t *testing.T, snap string) {
			p := filepath.Join(snap, "share", "index.txt")
			os.Chmod(p, 0o644)
			os.WriteFile(p, []byte("tampered\n"), 0o644)
			os.Chmod(p, 0o444)
		}, "changed share/index.txt (content)"},
		{"chmod", func(t *testing.T, snap string) {
			os.Chmod(filepath.Join(snap, "share", "index.txt"), 0o555)
		}, "changed share/index.txt (mode 100644 -> 100755)"},
		{"added", func(t *testing.T, snap string) {
			os.Chmod(filepath.Join(snap, "share"), 0o755)
			os.WriteFile(filepath.Join(snap, "share", "new.txt"), []byte("x"), 0o644)
		}, "added share/new.txt"},
		{"removed", func(t *testing.T, snap string) {
			os.Chmod(filepath.Join(snap, "share"), 0o755)
			os.Remove(filepath.Join(snap, "share", "index.txt"))
		}, "removed share/index.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			b := openBundle(t, goodBundle)
			if _, err := s.Stage(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			c, err := s.DriftChecker(b.Digest)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Check(context.Background()); err != nil {
				t.Fatalf("clean snapshot: %v", err)
			}
			if !c.Watching() {
				t.Log("no file-system watch; every check sweeps")
			}
			tc.tamper(t, s.Paths().Snapshot(b.Digest))
			var err2 error
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if err2 = c.Check(context.Background()); err2 != nil {
					break
				}
			}
			var de *DriftError
			if !errors.As(err2, &de) || !errors.Is(err2, ErrDrift) || !strings.Contains(err2.Error(), tc.want) || !strings.Contains(err2.Error(), "berth verify") {
				t.Fatalf("drift error %v, want it to mention %q", err2, tc.want)
			}
			// berth verify's library call sees the same difference.
			rep := s.Verify(context.Background(), &Record{Name: "acme-notes", Version: "1.4.2", Digest: b.Digest, Unsigned: true}, nil)
			if rep.Drift == nil || !errors.Is(rep.Err, ErrDrift) || !strings.Contains(rep.Err.Error(), tc.want) {
				t.Fatalf("Verify: %+v", rep)
			}
		})
	}
}

func TestRevokeAndGC(t *testing.T) {
	s := newStore(t)
	b := openBundle(t, goodBundle)
	req, _ := signedRequest(t, b, "acme")
	if _, err := s.Trust(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.Paths().Store(), ".tmp-leftover", "x"), 0o555)
	gc, err := s.GC(context.Background())
	if err != nil || len(gc.Snapshots) != 0 || len(gc.Leftovers) != 1 {
		t.Fatalf("gc with a record: %+v %v", gc, err)
	}
	gone, err := s.Revoke(context.Background(), "acme-notes", "")
	if err != nil || len(gone) != 1 {
		t.Fatalf("revoke: %v %v", gone, err)
	}
	if _, err := s.Revoke(context.Background(), "acme-notes", ""); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("second revoke: %v", err)
	}
	gc, err = s.GC(context.Background())
	if err != nil || len(gc.Snapshots) != 1 || gc.Snapshots[0] != b.Digest {
		t.Fatalf("gc after revoke: %+v %v", gc, err)
	}
	if _, err := os.Stat(s.Paths().Snapshot(b.Digest)); !os.IsNotExist(err) {
		t.Fatal("snapshot still there")
	}
	if st, _ := s.State(); st.Generation != 2 {
		t.Fatalf("generation %d, want 2 (trust + revoke)", st.Generation)
	}
}

func TestGenerationWatch(t *testing.T) {
	s := newStore(t)
	w := s.WatchGeneration()
	if _, moved, err := w.Check(); err != nil || !moved {
		t.Fatalf("first check: %v %v", moved, err)
	}
	if _, moved, _ := w.Check(); moved {
		t.Fatal("moved without a change")
	}
	if _, err := s.Update(context.Background(), func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	st, moved, _ := w.Check()
	if !moved || st.Generation != 1 {
		t.Fatalf("after update: %v %d", moved, st.Generation)
	}
}
