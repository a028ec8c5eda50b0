package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/trust"
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

// mustDigest parses a digest that berth computed.
func mustDigest(s string) Digest {
	d, err := ParseDigest(s)
	if err != nil {
		panic(err)
	}
	return d
}

func newStore(t testing.TB) *Store {
	t.Helper()
	p, err := NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return Open(p, nil)
}

// signedRequest signs the bundle's listing with a fresh key and returns a
// request verified against a policy holding that key.
func signedRequest(t *testing.T, b *bundle.Bundle, signer string) (*verified, trust.Signer) {
	t.Helper()
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := trust.Sign(context.Background(), b.Listing().Bytes(), priv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := trust.NewKeySigner(signer, pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := trust.NewVerifier([]trust.Signer{s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Verify(context.Background(), b.Listing().Bytes(), sig)
	if err != nil {
		t.Fatal(err)
	}
	return &verified{bundle: b, signature: sig, result: res, source: b.Source, reviewHash: "sha256:x"}, s
}

func TestTrustStagesReadOnlySnapshot(t *testing.T) {
	s := newStore(t)
	b := openBundle(t, goodBundle)
	req, signer := signedRequest(t, b, "acme")
	res, err := s.record(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Already || res.Record.Digest != b.Digest || res.Record.Unsigned || res.Record.Signer.Fingerprint != signer.Fingerprint {
		t.Fatalf("record %+v", res.Record)
	}
	snap := s.Paths().Snapshot(mustDigest(b.Digest))
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
	again, err := s.record(context.Background(), req)
	if err != nil || !again.Already {
		t.Fatalf("re-trust: %+v %v", again, err)
	}
	if st, _ := s.State(); st.Generation != 1 {
		t.Fatalf("re-trust bumped the generation to %d", st.Generation)
	}
	v, _ := trust.NewVerifier([]trust.Signer{signer}, nil)
	if rep := s.Verify(context.Background(), res.Record, v); rep.Err != nil || rep.Signature == nil {
		t.Fatalf("verify: %+v", rep)
	}
}

func TestTrustRefusals(t *testing.T) {
	s := newStore(t)
	b := openBundle(t, goodBundle)
	req, _ := signedRequest(t, b, "acme")
	if _, err := s.record(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// Another signer for the same plugin.
	other, _ := signedRequest(t, b, "mallory")
	_, err := s.record(context.Background(), other)
	if !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), `key "acme"`) || !strings.Contains(err.Error(), `key "mallory"`) || !strings.Contains(err.Error(), "AllowSignerChange") || !errors.As(err, new(*SignerChangeError)) {
		t.Fatalf("signer change: %v", err)
	}
	// Same version, new digest.
	dir := t.TempDir()
	copyDir(t, goodBundle, dir)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644)
	b2 := openBundle(t, dir)
	req2, _ := signedRequest(t, b2, "acme")
	req2.result.KeyFingerprint = req.result.KeyFingerprint // same identity, so only immutability refuses
	_, err = s.record(context.Background(), req2)
	if !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "versions are immutable") {
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

// stagedChecker stages the good bundle in a fresh store and returns a
// drift checker of it whose first check passed; the checker is closed at
// the end of the test.
func stagedChecker(t *testing.T) (*Store, *bundle.Bundle, *DriftChecker) {
	t.Helper()
	s := newStore(t)
	b := openBundle(t, goodBundle)
	if _, err := s.stage(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	c, err := s.DriftChecker(mustDigest(b.Digest))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Check(context.Background()); err != nil {
		t.Fatalf("clean snapshot: %v", err)
	}
	return s, b, c
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
			s, b, c := stagedChecker(t)
			if !c.Watching() {
				t.Log("no file-system watch; every check sweeps")
			}
			tc.tamper(t, s.Paths().Snapshot(mustDigest(b.Digest)))
			if c.Watching() {
				testkit.Eventually(t, 2*time.Second, "the watch to notice the change", c.Noticed)
			}
			var err2 error
			testkit.Within(2*time.Second, func() bool { err2 = c.Check(context.Background()); return err2 != nil })
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
	if _, err := s.record(context.Background(), req); err != nil {
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
	if _, err := s.Revoke(context.Background(), "acme-notes", ""); !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("second revoke: %v", err)
	}
	gc, err = s.GC(context.Background())
	if err != nil || len(gc.Snapshots) != 1 || gc.Snapshots[0] != b.Digest {
		t.Fatalf("gc after revoke: %+v %v", gc, err)
	}
	if _, err := os.Stat(s.Paths().Snapshot(mustDigest(b.Digest))); !os.IsNotExist(err) {
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

// TestDriftCheckerAfterHarmlessChange: a change that passes the re-hash
// (a new empty directory, a snapshot directory replaced by an identical
// copy) must not blind the fast path to what comes after it.
func TestDriftCheckerAfterHarmlessChange(t *testing.T) {
	for _, tc := range []struct {
		name     string
		harmless func(t *testing.T, snap string)
		tamper   func(t *testing.T, snap string)
		want     string
	}{
		{"new empty directory, then a file in it", func(t *testing.T, snap string) {
			os.Chmod(snap, 0o755)
			if err := os.Mkdir(filepath.Join(snap, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, snap string) {
			os.WriteFile(filepath.Join(snap, "x", "evil.py"), []byte("x"), 0o644)
		}, "added x/evil.py"},
		{"directory replaced by a copy, then the copy edited", func(t *testing.T, snap string) {
			if err := os.Rename(snap, snap+".old"); err != nil {
				t.Fatal(err)
			}
			copyDir(t, snap+".old", snap)
		}, func(t *testing.T, snap string) {
			p := filepath.Join(snap, "share", "index.txt")
			os.Chmod(p, 0o644)
			os.WriteFile(p, []byte("tampered\n"), 0o644)
			os.Chmod(p, 0o444)
		}, "changed share/index.txt (content)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, b, c := stagedChecker(t)
			snap := s.Paths().Snapshot(mustDigest(b.Digest))
			tc.harmless(t, snap)
			for range 5 {
				time.Sleep(20 * time.Millisecond)
				if err := c.Check(ctx); err != nil {
					t.Fatalf("a change that keeps the content is not drift: %v", err)
				}
			}
			tc.tamper(t, snap)
			var err2 error
			testkit.Within(2*time.Second, func() bool { err2 = c.Check(ctx); return err2 != nil })
			if !errors.Is(err2, ErrDrift) || !strings.Contains(err2.Error(), tc.want) {
				t.Fatalf("drift error %v, want it to mention %q (watching: %v)", err2, tc.want, c.Watching())
			}
		})
	}
}

// TestGenerationWatchRecentWrite: a state.json replaced by one with the
// same inode number, size and modification time (inode reuse within one
// tick of a coarse file-system clock) is still noticed while it is recent,
// by the stat every Check makes when there is no file-system watch (and
// once a second when there is).
func TestGenerationWatchRecentWrite(t *testing.T) {
	s := newStore(t)
	for range 2 {
		if _, err := s.Update(context.Background(), func(*State) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	p := s.Paths().State()
	w := s.watchGeneration(false)
	if st, moved, err := w.Check(); err != nil || !moved || st.Generation != 2 {
		t.Fatalf("first check: %v %v", moved, err)
	}
	rewrite := func(gen string, mtime time.Time) {
		t.Helper()
		// In place: the same inode, and the same size for every gen.
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(`{"generation": ` + gen + "}\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	recent := time.Now().Add(-time.Millisecond)
	rewrite("3", recent)
	w.Check()
	rewrite("4", recent)
	st, moved, err := w.Check()
	if err != nil || !moved || st.Generation != 4 {
		t.Fatalf("a recent rewrite with the same inode, size and mtime was missed: generation %d, moved %v, %v", st.Generation, moved, err)
	}
	// A whole-second time may come from a file system that keeps no more:
	// a second-old rewrite is still read again.
	coarse := time.Now().Add(-500 * time.Millisecond).Truncate(time.Second)
	rewrite("5", coarse)
	w.Check()
	rewrite("6", coarse)
	if st, moved, _ := w.Check(); !moved || st.Generation != 6 {
		t.Fatalf("a rewrite within a whole-second tick was missed: %d %v", st.Generation, moved)
	}
	// Once the file is old, a stat is all a check costs.
	old := time.Now().Add(-time.Hour)
	rewrite("7", old)
	if st, moved, _ := w.Check(); !moved || st.Generation != 7 {
		t.Fatalf("old rewrite: %d %v", st.Generation, moved)
	}
	rewrite("8", old)
	if st, moved, _ := w.Check(); moved || st.Generation != 7 {
		t.Fatalf("a settled state.json was read again: %d %v", st.Generation, moved)
	}
}

// TestRecordsRefuseDamagedRecords: a record's digest becomes a store path
// and its signer decides whether a signature is checked, so a damaged
// record is an error, never a panic or a silently skipped check.
func TestRecordsRefuseDamagedRecords(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"digest with a path", `"digest": "sha256:`, `"digest": "sha256:../../../../etc/`, "digest"},
		{"digest too short", `"digest": "sha256:`, `"digest": "x`, "digest"},
		{"signed without a signer", `"unsigned": true`, `"unsigned": false`, "unsigned is false but signer is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			b := openBundle(t, goodBundle)
			req := &verified{bundle: b, source: b.Source}
			res, err := s.record(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			p := s.Paths().Record(res.Record.Name, res.Record.Version)
			data, _ := os.ReadFile(p)
			if !strings.Contains(string(data), tc.from) {
				t.Fatalf("record has no %q:\n%s", tc.from, data)
			}
			os.WriteFile(p, []byte(strings.Replace(string(data), tc.from, tc.to, 1)), 0o600)
			if _, err := s.Records(); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Records: %v", err)
			}
			if _, err := s.GC(context.Background()); err == nil {
				t.Fatal("gc ran with a damaged record")
			}
		})
	}
}

// TestRevokeCrash: a revoke that dies at any step never leaves a workspace
// enabling a version whose record is gone (a running pool would keep it,
// since the generation did not move); running revoke again finishes it.
func TestRevokeCrash(t *testing.T) {
	for _, step := range []string{"revoke-state-written", "revoke-removed"} {
		t.Run(step, func(t *testing.T) {
			ctx := context.Background()
			p, _ := NewPaths(t.TempDir())
			crashAt := ""
			s := Open(p, &StoreOptions{CrashHookUnsafe: func(at string) {
				if at == crashAt {
					panic(at)
				}
			}})
			b := openBundle(t, goodBundle)
			if _, err := s.record(ctx, &verified{bundle: b, source: b.Source}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(ctx, func(st *State) error {
				st.Workspace("/ws").Plugins["acme-notes"] = &Enablement{Version: "1.4.2", Digest: b.Digest}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			crashAt = step
			func() {
				defer func() {
					if r := recover(); r != step {
						t.Fatalf("revoke did not stop at %s: %v", step, r)
					}
				}()
				s.Revoke(ctx, "acme-notes", "")
			}()
			crashAt = ""
			st, _ := s.State()
			for ws, w := range st.Workspaces {
				for name, e := range w.Plugins {
					if _, err := s.Find(name, e.Version); err != nil {
						t.Fatalf("%s enables %s@%s, whose record is gone (generation %d)", ws, name, e.Version, st.Generation)
					}
				}
			}
			if st.Generation != 3 {
				t.Fatalf("generation %d after trust, enable and an interrupted revoke; want 3", st.Generation)
			}
			if recs, _ := s.Records(); len(recs) > 0 {
				if _, err := s.Revoke(ctx, "acme-notes", ""); err != nil {
					t.Fatalf("revoke again: %v", err)
				}
			}
			if recs, err := s.Records(); err != nil || len(recs) != 0 {
				t.Fatalf("records after revoke: %v %v", recs, err)
			}
		})
	}
}

// TestTrustAgainRepairsDriftedSnapshot: trusting the same bundle again
// when its staged copy was tampered with re-stages it instead of saying
// that nothing changed.
func TestTrustAgainRepairsDriftedSnapshot(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	b := openBundle(t, goodBundle)
	req, signer := signedRequest(t, b, "acme")
	if _, err := s.record(ctx, req); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(s.Paths().Snapshot(mustDigest(b.Digest)), "share", "index.txt"), 0o555)
	res, err := s.record(ctx, req)
	if err != nil || res.Already {
		t.Fatalf("re-trust of a drifted snapshot: %+v %v", res, err)
	}
	v, _ := trust.NewVerifier([]trust.Signer{signer}, nil)
	if rep := s.Verify(ctx, res.Record, v); rep.Err != nil {
		t.Fatalf("verify after re-trust: %v", rep.Err)
	}
	if st, _ := s.State(); st.Generation != 2 {
		t.Fatalf("generation %d, want 2", st.Generation)
	}
}

// TestGCRemovesTempFiles: the temp files of atomic writes that a crash
// cut short (snapshot metadata, records, signatures, revocations) are
// leftovers too.
func TestGCRemovesTempFiles(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	b := openBundle(t, goodBundle)
	if _, err := s.record(ctx, &verified{bundle: b, source: b.Source}); err != nil {
		t.Fatal(err)
	}
	h := mustDigest(b.Digest).hex
	temps := []string{
		filepath.Join(s.Paths().Store(), "."+h+".meta.json.tmp-123"),
		filepath.Join(s.Paths().PluginTrustDir("acme-notes"), ".1.4.2.json.tmp-456"),
		filepath.Join(s.Paths().PluginTrustDir("acme-notes"), ".1.4.2.sigstore.json.tmp-789"),
		filepath.Join(filepath.Dir(s.Paths().Revocation("acme-notes", "1.4.2")), ".1.4.2.json.tmp-012"),
	}
	os.MkdirAll(filepath.Dir(s.Paths().Revocation("acme-notes", "1.4.2")), 0o700)
	for _, p := range temps {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gc, err := s.GC(ctx)
	if err != nil || len(gc.Snapshots) != 0 || len(gc.Leftovers) != len(temps) {
		t.Fatalf("gc: %+v %v", gc, err)
	}
	for _, p := range temps {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is still there", p)
		}
	}
	if recs, err := s.Records(); err != nil || len(recs) != 1 {
		t.Fatalf("records after gc: %v %v", recs, err)
	}
	if _, err := os.Stat(s.Paths().SnapshotMeta(mustDigest(b.Digest))); err != nil {
		t.Fatal("gc removed the metadata of a kept snapshot")
	}
}

// TestGCRemovesServeTokenTemps: the temp file of an interrupted creation
// of serve.token (".serve.token-*", made by berth serve without the store
// lock) is a leftover once it is too old to be a creation in progress; a
// fresh one and serve.token itself stay.
func TestGCRemovesServeTokenTemps(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	root := s.Paths().Root
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	token := s.Paths().ServeToken()
	stale := filepath.Join(root, ".serve.token-1234")
	fresh := filepath.Join(root, ".serve.token-5678")
	for _, p := range []string{token, stale, fresh} {
		if err := os.WriteFile(p, []byte("tok\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	gc, err := s.GC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gc.Leftovers, []string{stale}) {
		t.Fatalf("leftovers %q, want only %s", gc.Leftovers, stale)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("%s is still there", stale)
	}
	for _, p := range []string{token, fresh} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("gc removed %s: %v", p, err)
		}
	}
}

// TestVerifyChecksRecordedSigner: a stored signature swapped for one by
// another signer of the policy does not pass as the recorded signer's.
func TestVerifyChecksRecordedSigner(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	b := openBundle(t, goodBundle)
	req, acme := signedRequest(t, b, "acme")
	res, err := s.record(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	other, mallory := signedRequest(t, b, "mallory")
	if err := os.WriteFile(s.Paths().Signature("acme-notes", "1.4.2"), other.signature, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := trust.NewVerifier([]trust.Signer{acme, mallory}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := s.Verify(ctx, res.Record, v)
	if !errors.Is(rep.Err, trust.ErrUntrusted) || !strings.Contains(rep.Err.Error(), `key "mallory"`) || !strings.Contains(rep.Err.Error(), `key "acme"`) {
		t.Fatalf("verify with another signer's signature: %v", rep.Err)
	}
}

// TestGenerationWatchConfig: a config.json changed without a generation
// bump (the bump cut off by a crash, or a hand edit) still moves the watch,
// so running pools re-read the tool policy.
func TestGenerationWatchConfig(t *testing.T) {
	s := newStore(t)
	w := s.WatchGeneration()
	if _, moved, err := w.Check(); err != nil || !moved {
		t.Fatalf("first check: %v %v", moved, err)
	}
	if err := atomicfile.WriteFile(s.Paths().Config(), []byte(`{"signers": [], "toolPolicy": [{"pattern": "*", "action": "deny"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Written outside any Store of this process: seen once the
	// file-system event arrives (or at once without a watch).
	eventually(t, w, "config.json replaced")
	if _, moved, _ := w.Check(); moved {
		t.Fatal("moved without a change")
	}
}

// TestTrustChecksNameAndVersion: the manifest's name and version become
// paths, so Trust re-checks them even for a Bundle a caller built or
// changed after bundle.Open.
func TestTrustChecksNameAndVersion(t *testing.T) {
	for _, tc := range []struct{ name, version string }{
		{"../../escape", "1.0.0"},
		{"acme-notes", "../../../escape"},
	} {
		s := newStore(t)
		b := openBundle(t, goodBundle)
		b.Manifest.Name, b.Manifest.Version = tc.name, tc.version
		_, err := s.record(context.Background(), &verified{bundle: b, source: b.Source})
		if err == nil {
			t.Fatalf("%s@%s was trusted", tc.name, tc.version)
		}
		matches, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Paths().Root), "escape*"))
		if len(matches) > 0 {
			t.Fatalf("%s@%s wrote %v", tc.name, tc.version, matches)
		}
	}
}

// TestStageRefusesSourceChangedAfterHashing: the source is hashed when it
// is opened and copied later; a file changed in between (same size or not,
// or its exec bit) is caught and nothing is staged.
func TestStageRefusesSourceChangedAfterHashing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(dir string) error
	}{
		{"same size", func(dir string) error {
			p := filepath.Join(dir, "share", "index.txt")
			data, _ := os.ReadFile(p)
			data[0] ^= 1
			return os.WriteFile(p, data, 0o644)
		}},
		// The same bytes behind a symbolic link: the copy never follows
		// one, as bundle's does not (issue 18).
		{"symbolic link", func(dir string) error {
			p := filepath.Join(dir, "share", "index.txt")
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			elsewhere := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-elsewhere.txt")
			if err := os.WriteFile(elsewhere, data, 0o644); err != nil {
				return err
			}
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(elsewhere, p)
		}},
		{"longer", func(dir string) error {
			f, err := os.OpenFile(filepath.Join(dir, "share", "index.txt"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("more\n")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, goodBundle, dir)
			os.Chmod(filepath.Join(dir, "share", "index.txt"), 0o644)
			b := openBundle(t, dir)
			if err := tc.change(dir); err != nil {
				t.Fatal(err)
			}
			s := newStore(t)
			if _, err := s.stage(context.Background(), b); err == nil || !strings.Contains(err.Error(), "changed while berth copied it") && !strings.Contains(err.Error(), "does not match the bundle") {
				t.Fatalf("stage of a changed source: %v", err)
			}
			entries, _ := os.ReadDir(s.Paths().Store())
			for _, e := range entries {
				t.Errorf("left in the store: %s", e.Name())
			}
		})
	}
	// A mode changed after hashing does not reach the snapshot: files are
	// staged with the modes of the reviewed listing.
	dir := t.TempDir()
	copyDir(t, goodBundle, dir)
	b := openBundle(t, dir)
	os.Chmod(filepath.Join(dir, "share", "index.txt"), 0o755)
	s := newStore(t)
	snap, err := s.stage(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(snap, "share", "index.txt")); err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("staged mode %v %v, want the reviewed 0444", fi.Mode(), err)
	}
}

// TestDriftCheckerSeesWhatTheWatchMisses: a write through a hard link in
// another directory raises no file-system event in the snapshot; the
// periodic sweep still finds it.
func TestDriftCheckerSeesWhatTheWatchMisses(t *testing.T) {
	ctx := context.Background()
	s, b, c := stagedChecker(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Link(filepath.Join(s.Paths().Snapshot(mustDigest(b.Digest)), "share", "index.txt"), link); err != nil {
		t.Skipf("no hard link into the store: %v", err)
	}
	os.Chmod(link, 0o644)
	os.WriteFile(link, []byte("tampered\n"), 0o644)
	os.Chmod(link, 0o444)
	os.Remove(link)
	var err2 error
	testkit.Within(fullSweepEvery+2*time.Second, func() bool { err2 = c.Check(ctx); return err2 != nil })
	if !errors.Is(err2, ErrDrift) || !strings.Contains(err2.Error(), "changed share/index.txt (content)") {
		t.Fatalf("a write through a hard link went unnoticed: %v (watching: %v)", err2, c.Watching())
	}
}

// Versions that differ only in build metadata are one version: trusting
// 1.0.0+x after 1.0.0 (other content, since the manifest differs) is
// refused as a change of an immutable version.
func TestTrustBuildMetadataIsSameVersion(t *testing.T) {
	s := newStore(t)
	req, _ := signedRequest(t, openBundle(t, goodBundle), "acme")
	if _, err := s.record(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyDir(t, goodBundle, dir)
	m, err := os.ReadFile(filepath.Join(dir, "berth.json"))
	if err != nil {
		t.Fatal(err)
	}
	v := req.bundle.Manifest.Version
	m = []byte(strings.Replace(string(m), `"version": "`+v+`"`, `"version": "`+v+`+build.7"`, 1))
	if err := os.WriteFile(filepath.Join(dir, "berth.json"), m, 0o644); err != nil {
		t.Fatal(err)
	}
	b2 := openBundle(t, dir)
	if b2.Manifest.Version != v+"+build.7" {
		t.Fatalf("the copy's version is %q", b2.Manifest.Version)
	}
	req2, _ := signedRequest(t, b2, "acme")
	req2.result.KeyFingerprint = req.result.KeyFingerprint
	_, err = s.record(context.Background(), req2)
	if !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "only in build metadata") || !strings.Contains(err.Error(), "versions are immutable") {
		t.Fatalf("trusting %s+build.7 after %s: %v", v, v, err)
	}
	if recs, _ := s.Records(); len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{{"1.0.0", "1.0.0+x", true}, {"1.0.0+a", "1.0.0+b", true}, {"1.0.0", "1.0.0-rc.1", false}, {"1.0.0", "1.0.1", false}} {
		if got := SameVersion(c.a, c.b); got != c.same {
			t.Errorf("SameVersion(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// TestRecordsWhileAnotherRevokes: a record that another berth removes
// between the listing and the read is gone, not damaged (TestConcurrentChanges
// in internal/cli saw "does not match its path" from a concurrent revoke).
func TestRecordsWhileAnotherRevokes(t *testing.T) {
	s := newStore(t)
	b := openBundle(t, goodBundle)
	res, err := s.record(context.Background(), &verified{bundle: b, source: b.Source})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Paths().Record(res.Record.Name, res.Record.Version)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			os.Rename(p, p+".away")
			os.Rename(p+".away", p)
		}
	})
	defer func() { close(done); wg.Wait() }()
	for range 3000 {
		recs, err := s.Records()
		if err != nil {
			t.Fatalf("Records while the record comes and goes: %v", err)
		}
		if len(recs) > 1 {
			t.Fatalf("%d records, want 0 or 1", len(recs))
		}
	}
}
