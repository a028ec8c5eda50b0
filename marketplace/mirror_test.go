package marketplace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// treeFiles lists the regular files under dir, slash-separated, sorted.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestMirrorDirectory(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.publish("acme-notes", "1.1.0")
	// A version served from elsewhere: its archive is not mirrored.
	dir, sig := e.bundle("acme-notes", "2.0.0", "")
	b := openBundle(t, dir)
	packed := filepath.Join(e.dir, "notes.tar.gz")
	f, _ := os.Create(packed)
	if err := repo.PackTarGz(e.ctx, b, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.Close()
	if _, err := e.repo().Add(e.ctx, repo.AddRequest{Source: packed, Signature: sig, Verifier: e.verifier, URL: "https://cdn.example/notes.tar.gz"}); err != nil {
		t.Fatal(err)
	}
	e.addCatalog()

	dest := filepath.Join(e.dir, "mirror")
	res, err := e.cache.Mirror(e.ctx, "acme", dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.RootSHA256 != e.init.RootSHA256 || res.Replaced || res.Archives != 2 || res.Signatures != 3 || res.Metadata != 6 || res.TargetsVersion != 4 {
		t.Fatalf("result %+v", res)
	}
	if len(res.NotMirrored) != 1 || res.NotMirrored[0].Location != "https://cdn.example/notes.tar.gz" || res.NotMirrored[0].Version != "2.0.0" || res.NotMirrored[0].Reason != reasonAbsolute {
		t.Fatalf("not mirrored: %+v", res.NotMirrored)
	}
	// Exactly the files clients fetch, with the curator's bytes: no
	// working copy, settings or lock, and no older snapshots or targets.
	got := treeFiles(t, dest)
	var catTarget string
	for _, g := range got {
		if strings.HasPrefix(g, "targets/") {
			catTarget = g
		}
	}
	want := []string{"1.root.json", "4.snapshot.json", "4.targets.json",
		"bundles/acme-notes/1.0.0/acme-notes-1.0.0.tar.gz", "bundles/acme-notes/1.0.0/acme-notes-1.0.0.tar.gz.sigstore.json",
		"bundles/acme-notes/1.1.0/acme-notes-1.1.0.tar.gz", "bundles/acme-notes/1.1.0/acme-notes-1.1.0.tar.gz.sigstore.json",
		"bundles/acme-notes/2.0.0/acme-notes-2.0.0.tar.gz.sigstore.json",
		"root.json", catTarget, "timestamp.json"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("mirror files\n%v\nwant\n%v", got, want)
	}
	var size int64
	for _, g := range got {
		data, _ := os.ReadFile(filepath.Join(dest, g))
		if !bytes.Equal(data, e.read(g)) {
			t.Errorf("%s differs from the catalog's", g)
		}
		size += int64(len(data))
	}
	if res.Bytes != size {
		t.Errorf("result says %d bytes, the mirror has %d", res.Bytes, size)
	}

	// Another berth adds the mirror with the same pin, with the source
	// gone, and downloads from it.
	if err := os.Rename(e.repoDir, e.repoDir+".gone"); err != nil {
		t.Fatal(err)
	}
	c2 := OpenCache(filepath.Join(e.dir, "home2"), &CacheOptions{Now: e.clk.now})
	msrc, _ := ParseSource(dest)
	r, err := c2.Add(e.ctx, "acme", msrc, RootPin{SHA256: res.RootSHA256})
	if err != nil {
		t.Fatal(err)
	}
	if r.Plugins != 1 || r.TargetsVersion != 4 {
		t.Fatalf("added from the mirror: %+v", r.CatalogInfo)
	}
	l, _ := c2.Load("acme")
	d, err := c2.Download(e.ctx, "acme", l.Catalog.Plugin("acme-notes").Version("1.1.0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Rename(e.repoDir+".gone", e.repoDir); err != nil {
		t.Fatal(err)
	}

	// Again: the earlier mirror is replaced, its archives reused (checked).
	e.publish("acme-notes", "1.2.0")
	res, err = e.cache.Mirror(e.ctx, "acme", dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replaced || res.Reused != 2 || res.Archives != 3 || res.TargetsVersion != 5 {
		t.Fatalf("second mirror: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dest, "4.snapshot.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the earlier mirror's files stayed: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(e.dir, ".mirror*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// A tampered mirror is refused by its users.
	ts := filepath.Join(dest, "timestamp.json")
	data, _ := os.ReadFile(ts)
	tampered := bytes.Replace(data, []byte(`"expires": "2`), []byte(`"expires": "3`), 1)
	if bytes.Equal(tampered, data) {
		t.Fatalf("no expiry to tamper with in %s", data)
	}
	os.WriteFile(ts, tampered, 0o644)
	_, err = c2.Refresh(e.ctx, "acme")
	wantKind(t, err, KindBadSignature)
}

func TestMirrorRefusesDestinations(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	mk := func(name string, files ...string) string {
		d := filepath.Join(e.dir, name)
		os.MkdirAll(d, 0o755)
		for _, f := range files {
			os.WriteFile(filepath.Join(d, f), []byte("x"), 0o644)
		}
		return d
	}
	for _, c := range []struct{ dest, want string }{
		{mk("work", "notes.txt"), "it has notes.txt, which a mirror does not"},
		// The curator's own directory is no mirror: its working copy would go.
		{e.repoDir, "which a mirror does not"},
		{mk("nomirror", "timestamp.json"), "is not a mirror berth wrote (1.root.json"},
	} {
		if _, err := e.cache.Mirror(e.ctx, "acme", c.dest, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mirror into %s: %v, want %q", c.dest, err, c.want)
		}
	}
	link := filepath.Join(e.dir, "link")
	os.Symlink(mk("target"), link)
	if _, err := e.cache.Mirror(e.ctx, "acme", link, nil); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("mirror into a link: %v", err)
	}
	if files := treeFiles(t, filepath.Join(e.dir, "target")); len(files) != 0 {
		t.Errorf("written through the link: %v", files)
	}
	// A mirror of another catalog is not replaced.
	other := newEnv(t, repo.Expiries{})
	other.publish("acme-notes", "1.0.0")
	other.addCatalog()
	dest := filepath.Join(e.dir, "mirror")
	if _, err := other.cache.Mirror(e.ctx, "acme", dest, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cache.Mirror(e.ctx, "acme", dest, nil); err == nil || !strings.Contains(err.Error(), "holds a mirror of another catalog") {
		t.Errorf("mirror over another catalog's: %v", err)
	}
	// An empty directory is fine.
	if _, err := e.cache.Mirror(e.ctx, "acme", mk("empty"), nil); err != nil {
		t.Error(err)
	}
	if _, err := e.cache.Mirror(e.ctx, "nope", mk("empty2"), nil); !errors.Is(err, ErrNoCatalog) {
		t.Errorf("an unknown catalog: %v", err)
	}
}

// A catalog read from a mirror first: the canonical source only when the
// mirror cannot be reached, never when it serves what fails to verify.
func TestMirrorFirst(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	dest := filepath.Join(e.dir, "mirror")
	if _, err := e.cache.Mirror(e.ctx, "acme", dest, nil); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(e.dir, "mirror-old")
	if err := os.CopyFS(old, os.DirFS(dest)); err != nil {
		t.Fatal(err)
	}
	c2 := OpenCache(filepath.Join(e.dir, "home2"), &CacheOptions{Now: e.clk.now})
	src, _ := ParseSource(e.repoDir)
	m, _ := ParseSource(dest)
	// Added with the canonical source away: read from the mirror alone.
	os.Rename(e.repoDir, e.repoDir+".gone")
	r, err := c2.AddMirrored(e.ctx, "acme", src, m, RootPin{SHA256: e.init.RootSHA256})
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != e.repoDir || r.Mirror != dest || r.MirrorFailure != "" {
		t.Fatalf("added: source %q mirror %q failure %q", r.Source, r.Mirror, r.MirrorFailure)
	}
	l, _ := c2.Load("acme")
	d, err := c2.Download(e.ctx, "acme", l.Catalog.Plugin("acme-notes").Version("1.0.0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.URL, "bundles/") || len(d.Signature) == 0 {
		t.Errorf("downloaded %+v", d)
	}
	d.Close()
	os.Rename(e.repoDir+".gone", e.repoDir)

	// The curator publishes; the mirror still serves the last version,
	// valid: the update says up to date.
	e.publish("acme-notes", "1.1.0")
	r, err = c2.Refresh(e.ctx, "acme")
	if err != nil || r.Changed || r.MirrorFailure != "" {
		t.Fatalf("refresh from the stale mirror: %+v %v", r, err)
	}
	// The mirror is down: the canonical source, and the update says so.
	os.RemoveAll(dest)
	r, err = c2.Refresh(e.ctx, "acme")
	if err != nil || !r.Changed || r.TargetsVersion != 3 || !strings.Contains(r.MirrorFailure, "timestamp.json") {
		t.Fatalf("refresh with the mirror down: %+v %v", r, err)
	}
	// The mirror comes back with the old catalog: a rollback, refused,
	// naming the mirror; the canonical source is not read instead.
	os.Rename(old, dest)
	_, err = c2.Refresh(e.ctx, "acme")
	ve := wantKind(t, err, KindRollback)
	if ve.Mirror != dest || !strings.Contains(err.Error(), "served by its mirror "+dest) {
		t.Errorf("the refusal does not name the mirror: %v", err)
	}
	// Both down: a network failure that names both.
	os.RemoveAll(dest)
	os.Rename(e.repoDir, e.repoDir+".gone")
	_, err = c2.Refresh(e.ctx, "acme")
	if !errors.Is(err, ErrNetwork) || errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "its mirror "+dest+" could not be reached either") {
		t.Errorf("both down: %v", err)
	}
	// The catalog's canonical source is what it lists (and a lock records).
	list, _ := c2.List()
	if len(list) != 1 || list[0].Source != e.repoDir || list[0].Mirror != dest {
		t.Errorf("listed %+v", list[0])
	}
	// Dropped, the mirror is not read: the source alone.
	os.Rename(e.repoDir+".gone", e.repoDir)
	if ci, err := c2.SetMirror(e.ctx, "acme", nil); err != nil || ci.Mirror != "" {
		t.Fatalf("set no mirror: %+v %v", ci, err)
	}
	if r, err := c2.Refresh(e.ctx, "acme"); err != nil || r.Mirror != "" || r.MirrorFailure != "" {
		t.Fatalf("refresh without the mirror: %+v %v", r, err)
	}
	if _, err := c2.SetMirror(e.ctx, "acme", src); err == nil || !strings.Contains(err.Error(), "source itself") {
		t.Errorf("the source as its own mirror: %v", err)
	}
}

// A rotated root: the mirror has the whole chain, and a catalog pinned
// with the later root file is mirrored through it.
func TestMirrorRootChain(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	root, err := metadata.Root().FromBytes(e.read("root.json"))
	if err != nil {
		t.Fatal(err)
	}
	root.Signed.Version = 2
	root.ClearSignatures()
	if _, err := root.Sign(e.key(metadata.ROOT)); err != nil {
		t.Fatal(err)
	}
	two, err := root.ToBytes(true)
	if err != nil {
		t.Fatal(err)
	}
	e.write("2.root.json", two)
	e.write("root.json", two)
	if r, err := e.refresh(); err != nil || r.RootVersion != 2 {
		t.Fatalf("refresh after the rotation: %+v %v", r, err)
	}
	c3 := OpenCache(filepath.Join(e.dir, "home3"), &CacheOptions{Now: e.clk.now})
	src, _ := ParseSource(e.repoDir)
	if _, err := c3.Add(e.ctx, "acme", src, RootPin{Root: two}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []*Cache{e.cache, c3} {
		dest := filepath.Join(e.dir, fmt.Sprint("mirror", i))
		res, err := c.Mirror(e.ctx, "acme", dest, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.RootSHA256 != e.init.RootSHA256 || res.Metadata != 7 {
			t.Errorf("mirror %d: %+v", i, res)
		}
		for _, f := range []string{"1.root.json", "2.root.json", "root.json"} {
			data, _ := os.ReadFile(filepath.Join(dest, f))
			if !bytes.Equal(data, e.read(f)) {
				t.Errorf("mirror %d: %s is not the catalog's", i, f)
			}
		}
	}
}

// Mirroring a catalog into its own mirror reads its source: a mirror
// read to rewrite itself would never advance.
func TestMirrorIntoOwnMirror(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	dest := filepath.Join(e.dir, "mirror")
	if _, err := e.cache.Mirror(e.ctx, "acme", dest, nil); err != nil {
		t.Fatal(err)
	}
	c2 := OpenCache(filepath.Join(e.dir, "home2"), &CacheOptions{Now: e.clk.now})
	src, _ := ParseSource(e.repoDir)
	m, _ := ParseSource(dest)
	if _, err := c2.AddMirrored(e.ctx, "acme", src, m, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	e.publish("acme-notes", "1.1.0")
	res, err := c2.Mirror(e.ctx, "acme", dest, nil)
	if err != nil || res.TargetsVersion != 3 || !res.Replaced {
		t.Fatalf("mirror into its own mirror: %+v %v", res, err)
	}
	if r, err := c2.Refresh(e.ctx, "acme"); err != nil || r.Changed || r.TargetsVersion != 3 || r.MirrorFailure != "" {
		t.Fatalf("refresh from the new mirror: %+v %v", r, err)
	}
	list, _ := c2.List()
	if list[0].Mirror != dest {
		t.Errorf("the mirror was dropped: %+v", list[0])
	}
}
