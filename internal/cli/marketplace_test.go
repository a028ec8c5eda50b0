package cli

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// catalogFixture is a curator's catalog with one signed plugin, and a
// berth home that trusts the publisher.
type catalogFixture struct {
	t               *testing.T
	dir, home, repo string
	env             map[string]string
}

func newCatalogFixture(t *testing.T) *catalogFixture {
	dir := t.TempDir()
	f := &catalogFixture{t: t, dir: dir, home: filepath.Join(dir, "home"), repo: filepath.Join(dir, "repo")}
	f.env = map[string]string{"BERTH_HOME": f.home}
	notes := filepath.Join(dir, "notes")
	if out, err := exec.Command("cp", "-a", "../../testdata/bundles/good/stdio-bundled", notes).CombinedOutput(); err != nil {
		t.Fatalf("%s", out)
	}
	f.ok("catalog", "init", f.repo, "--keys", filepath.Join(dir, "keys"), "--name", "acme")
	f.ok("keygen", "--out", filepath.Join(dir, "acme"))
	f.ok("sign", notes, "--key", filepath.Join(dir, "acme.key"))
	f.ok("signers", "add-key", "acme", filepath.Join(dir, "acme.pub"))
	f.ok("catalog", "add", f.repo, notes, "--keys", filepath.Join(dir, "keys"))
	return f
}

func (f *catalogFixture) run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return f.env[k] }, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func (f *catalogFixture) ok(args ...string) string {
	f.t.Helper()
	code, out, errs := f.run(args...)
	if code != 0 {
		f.t.Fatalf("berth %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func (f *catalogFixture) key(role string) signature.Signer {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, "keys", role+".key"))
	if err != nil {
		f.t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := signature.LoadSigner(k, crypto.Hash(0))
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func metaOf(version int64, data []byte) *metadata.MetaFiles {
	m := metadata.MetaFile(version)
	sum := sha256.Sum256(data)
	m.Length, m.Hashes = int64(len(data)), metadata.Hashes{"sha256": sum[:]}
	return m
}

// forgeTimestamp writes a timestamp of version v, signed with the
// catalog's real timestamp key, that names snapshot version sv.
func (f *catalogFixture) forgeTimestamp(v, sv int64) {
	f.t.Helper()
	snap, err := os.ReadFile(filepath.Join(f.repo, fmt.Sprintf("%d.snapshot.json", sv)))
	if err != nil {
		f.t.Fatal(err)
	}
	ts := metadata.Timestamp(time.Now().Add(time.Hour).UTC().Truncate(time.Second))
	ts.Signed.Version = v
	ts.Signed.Meta["snapshot.json"] = metaOf(sv, snap)
	if _, err := ts.Sign(f.key("timestamp")); err != nil {
		f.t.Fatal(err)
	}
	if err := ts.ToFile(filepath.Join(f.repo, "timestamp.json"), true); err != nil {
		f.t.Fatal(err)
	}
}

// forgeSnapshot writes snapshot version v, signed with the real snapshot
// key, that names targets version tv.
func (f *catalogFixture) forgeSnapshot(v, tv int64) {
	f.t.Helper()
	targ, err := os.ReadFile(filepath.Join(f.repo, fmt.Sprintf("%d.targets.json", tv)))
	if err != nil {
		f.t.Fatal(err)
	}
	s := metadata.Snapshot(time.Now().Add(time.Hour).UTC().Truncate(time.Second))
	s.Signed.Version = v
	s.Signed.Meta["targets.json"] = metaOf(tv, targ)
	if _, err := s.Sign(f.key("snapshot")); err != nil {
		f.t.Fatal(err)
	}
	if err := s.ToFile(filepath.Join(f.repo, fmt.Sprintf("%d.snapshot.json", v)), true); err != nil {
		f.t.Fatal(err)
	}
}

// TestCatalogRollbackExit4 forges, with the catalog's real online keys
// (as an attacker who stole them, or a curator's broken tooling would),
// a timestamp that names an older snapshot, and a snapshot that names
// older targets. berth marketplace update refuses both with exit 4.
func TestCatalogRollbackExit4(t *testing.T) {
	for _, c := range []struct {
		name  string
		forge func(f *catalogFixture)
		says  string
	}{
		{"snapshot", func(f *catalogFixture) { f.forgeTimestamp(4, 2) }, "the timestamp names an older snapshot"},
		{"targets", func(f *catalogFixture) { f.forgeSnapshot(4, 2); f.forgeTimestamp(4, 4) }, "the snapshot lists an older targets version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newCatalogFixture(t)
			f.ok("marketplace", "add", "acme", f.repo, "--root", filepath.Join(f.repo, "1.root.json"))
			// One more version, so the client holds snapshot 3 and targets 3.
			f.ok("catalog", "status", f.repo, "acme-notes@1.4.2", "deprecated", "--reason", "old", "--keys", filepath.Join(f.dir, "keys"))
			f.ok("marketplace", "update", "acme")
			c.forge(f)
			code, _, errs := f.run("marketplace", "update", "acme")
			if code != ExitUntrusted || !strings.Contains(errs, "refused (rollback)") || !strings.Contains(errs, c.says) {
				t.Fatalf("exit %d:\n%s", code, errs)
			}
			if out := f.ok("show", "acme-notes"); !strings.Contains(out, "deprecated: old") {
				t.Errorf("the verified copy changed:\n%s", out)
			}
		})
	}
}

// treeState records every file under dir: path, mode, size, mtime and
// content hash.
func treeState(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		fmt.Fprintf(&b, "%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}

// TestBrowseHasNoSideEffects: with the catalog's metadata cached, search
// and show make no request (the source fails every one from then on),
// write nothing under BERTH_HOME (not even the cache) nor in the working
// directory, and start nothing.
func TestBrowseHasNoSideEffects(t *testing.T) {
	f := newCatalogFixture(t)
	var fail atomic.Bool
	var after atomic.Int64
	files := http.FileServer(http.Dir(f.repo))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			after.Add(1)
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	f.ok("marketplace", "add", "acme", srv.URL, "--root", filepath.Join(f.repo, "1.root.json"))
	fail.Store(true)
	wd, _ := os.Getwd()
	before, beforeWD := treeState(t, f.home), treeState(t, wd)
	for _, args := range [][]string{
		{"search"}, {"search", "notes", "--json"}, {"search", "--tag", "x"},
		{"show", "acme-notes"}, {"show", "acme-notes@1.4.2", "--json"}, {"show", "acme-notes", "--catalog", "acme"},
		{"marketplace", "list"}, {"marketplace", "list", "--json"},
	} {
		f.ok(args...)
	}
	if n := after.Load(); n != 0 {
		t.Errorf("browsing made %d request(s) to the source", n)
	}
	if got := treeState(t, f.home); got != before {
		t.Errorf("browsing changed BERTH_HOME:\nbefore:\n%s\nafter:\n%s", before, got)
	}
	if got := treeState(t, wd); got != beforeWD {
		t.Error("browsing changed the working directory")
	}
	// The update does go to the network, fails with exit 1, and says so.
	code, _, errs := f.run("marketplace", "update")
	if code != ExitFailure || !strings.Contains(errs, "cannot download") || after.Load() == 0 {
		t.Errorf("update against a failing source: exit %d: %s", code, errs)
	}
}
