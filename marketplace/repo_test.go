package marketplace

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

func TestInitRefusesKeysInsideDir(t *testing.T) {
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "repo")
	_, err := repo.Init(t.Context(), repoDir, filepath.Join(repoDir, "keys"), nil)
	if err == nil || !strings.Contains(err.Error(), "would be published") {
		t.Fatalf("keys inside DIR: %v", err)
	}
	_, err = repo.Init(t.Context(), repoDir, repoDir, nil)
	if err == nil || !strings.Contains(err.Error(), "would be published") {
		t.Fatalf("keys equal to DIR: %v", err)
	}
	// Through a symlink too.
	os.MkdirAll(repoDir, 0o755)
	os.Symlink(repoDir, filepath.Join(dir, "link"))
	_, err = repo.Init(t.Context(), repoDir, filepath.Join(dir, "link", "keys"), nil)
	if err == nil || !strings.Contains(err.Error(), "would be published") {
		t.Fatalf("keys inside DIR through a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repoDir, "root.json")); err == nil {
		t.Error("a refused init wrote root.json")
	}
}

func TestInitFiles(t *testing.T) {
	e := newEnv(t, repo.Expiries{Timestamp: 2 * 3600e9})
	fi, err := os.Stat(e.keyDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("key dir: %v %v", fi.Mode(), err)
	}
	for _, role := range repo.RoleNames() {
		fi, err := os.Stat(repo.KeyPath(e.keyDir, role))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s key: %v %v", role, fi, err)
		}
	}
	if string(e.read("1.root.json")) != string(e.read("root.json")) {
		t.Error("root.json is not 1.root.json after init")
	}
	if !strings.HasSuffix(e.init.RootPath, "1.root.json") || len(e.init.RootSHA256) != 64 {
		t.Errorf("%+v", e.init)
	}
	if e.repo().Expiries().Timestamp != 2*3600e9 {
		t.Error("the timestamp expiry chosen at init is not kept")
	}
	// init again is refused and touches nothing.
	if _, err := repo.Init(e.ctx, e.repoDir, filepath.Join(e.dir, "keys2"), nil); err == nil || !strings.Contains(err.Error(), "already holds a catalog") {
		t.Errorf("second init: %v", err)
	}
	// A key open to others is refused.
	os.Chmod(repo.KeyPath(e.keyDir, "timestamp"), 0o644)
	if _, err := e.repo().Refresh(e.ctx); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("refresh with a readable key: %v", err)
	}
	os.Chmod(repo.KeyPath(e.keyDir, "timestamp"), 0o600)
	// refresh needs only the timestamp key while the snapshot is fresh.
	os.Rename(repo.KeyPath(e.keyDir, "targets"), filepath.Join(e.dir, "targets.key"))
	os.Rename(repo.KeyPath(e.keyDir, "snapshot"), filepath.Join(e.dir, "snapshot.key"))
	os.Rename(repo.KeyPath(e.keyDir, "root"), filepath.Join(e.dir, "root.key"))
	res, err := e.repo().Refresh(e.ctx)
	if err != nil {
		t.Fatalf("refresh with only the timestamp key: %v", err)
	}
	if res.SnapshotSigned || res.TimestampVersion != 2 {
		t.Errorf("%+v", res)
	}
	// add needs the targets key, and says so.
	dir, sig := e.bundle("acme-notes", "1.0.0", "")
	_, err = e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier})
	if err == nil || !strings.Contains(err.Error(), "targets key") {
		t.Errorf("add without the targets key: %v", err)
	}
	// Another catalog's key is recognised as not this one's.
	other := newEnv(t, repo.Expiries{})
	os.Rename(repo.KeyPath(other.keyDir, "targets"), repo.KeyPath(e.keyDir, "targets"))
	os.Rename(filepath.Join(e.dir, "snapshot.key"), repo.KeyPath(e.keyDir, "snapshot"))
	_, err = e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier})
	if err == nil || !strings.Contains(err.Error(), "is not a targets key of this catalog") {
		t.Errorf("add with another catalog's key: %v", err)
	}
}

func TestAddSignerRules(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	// Same version, same digest: nothing to do.
	dir, sig := e.bundle("acme-notes", "1.0.0", "")
	res, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier})
	if err != nil || !res.Already {
		t.Fatalf("re-add: %v %+v", err, res)
	}
	// An add that stopped after the working copy was written but before
	// the catalog was published is finished by running it again.
	cat, _ := e.repo().Working()
	dir3, sig3 := e.bundle("acme-notes", "1.0.1", "")
	b3 := openBundle(t, dir3)
	cat.Plugin("acme-notes").Versions = append(cat.Plugin("acme-notes").Versions, &catalog.Version{Version: "1.0.1", Digest: b3.Digest,
		Archive: catalog.Archive{Format: "tar.gz", Size: 1, SHA256: "sha256:" + strings.Repeat("0", 64)}, URLs: []string{"x.tar.gz"}, SignatureURL: "x.sig",
		Released: e.clk.now(), Status: catalog.StatusActive, Summary: cat.Plugin("acme-notes").Versions[0].Summary})
	b3.Close()
	e.write(repo.WorkingFile, cat.Marshal())
	res, err = e.repo().Add(e.ctx, repo.AddRequest{Source: dir3, Signature: sig3, Verifier: e.verifier})
	if err != nil || res.Already || res.Publish == nil {
		t.Fatalf("finishing an interrupted add: %v %+v", err, res)
	}
	if rep, _ := repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now}); !rep.Published {
		t.Error("the interrupted add was not published")
	}
	// Same version, other content: versions are immutable.
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644)
	sig = e.sign(dir)
	_, err = e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier})
	if !errors.Is(err, repo.ErrVersionChanged) {
		t.Fatalf("changed version: %v", err)
	}
	// A signer the berth does not know: refused (exit 4).
	priv, pub, _ := trust.GenerateKey()
	dir2, _ := e.bundle("acme-notes", "1.1.0", "")
	b := openBundle(t, dir2)
	sig2, _ := trust.Sign(e.ctx, b.Listing().Bytes(), priv)
	b.Close()
	_, err = e.repo().Add(e.ctx, repo.AddRequest{Source: dir2, Signature: sig2, Verifier: e.verifier})
	if !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("unknown signer: %v", err)
	}
	// Known to this berth, but not allowed for this plugin by the catalog.
	mallory, _ := trust.NewKeySigner("mallory", pub, nil)
	acme, _ := trust.NewKeySigner("acme", e.pubPEM, nil)
	both, _ := trust.NewVerifier([]trust.Signer{acme, mallory}, nil)
	_, err = e.repo().Add(e.ctx, repo.AddRequest{Source: dir2, Signature: sig2, Verifier: both})
	if !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "allows only") {
		t.Fatalf("signer not allowed for the plugin: %v", err)
	}
	// A bad signature.
	_, err = e.repo().Add(e.ctx, repo.AddRequest{Source: dir2, Signature: []byte("{}"), Verifier: e.verifier})
	if !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("bad signature: %v", err)
	}
}

func TestAddArchiveWithURL(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	dir, sig := e.bundle("acme-notes", "1.0.0", "")
	// Pack the directory the way add does, as the archive a publisher ships.
	b := openBundle(t, dir)
	f, _ := os.Create(filepath.Join(e.dir, "notes.tar.gz"))
	if err := repo.PackTarGz(e.ctx, b, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.Close()
	os.WriteFile(filepath.Join(e.dir, "notes.tar.gz.sigstore.json"), sig, 0o644)
	_, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier, URL: "https://cdn.example/notes.tar.gz"})
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("--url with a directory: %v", err)
	}
	res, err := e.repo().Add(e.ctx, repo.AddRequest{Source: filepath.Join(e.dir, "notes.tar.gz"), Signature: sig, Verifier: e.verifier, URL: "https://cdn.example/notes.tar.gz", Tier: catalog.TierVerified})
	if err != nil {
		t.Fatal(err)
	}
	if res.Archive != "" {
		t.Errorf("with --url the archive was copied to %s", res.Archive)
	}
	cat, _ := e.repo().Working()
	v := cat.Plugin("acme-notes").Version("1.0.0")
	if v.URLs[0] != "https://cdn.example/notes.tar.gz" || cat.Plugin("acme-notes").Tier != catalog.TierVerified || v.Digest != res.Digest {
		t.Errorf("%+v", v)
	}
	rep, err := repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now})
	if err != nil || !rep.OK() || !rep.Published {
		t.Fatalf("lint: %v %+v", err, rep.Problems)
	}
}

func TestStatusAndLint(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.publish("acme-notes", "1.1.0")
	r := e.repo()
	if _, err := r.SetStatus(e.ctx, "acme-notes", "1.1.0", catalog.StatusRevoked, "", ""); err == nil {
		t.Error("revoked without a reason")
	}
	if _, err := r.SetStatus(e.ctx, "acme-notes", "9.0.0", catalog.StatusYanked, "x", ""); err == nil || !strings.Contains(err.Error(), "it has 1.0.0, 1.1.0") {
		t.Errorf("unknown version: %v", err)
	}
	if _, err := r.SetStatus(e.ctx, "acme-notes", "1.1.0", catalog.StatusRevoked, "leaked a token", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SetStatus(e.ctx, "acme-notes", "1.0.0", catalog.StatusDeprecated, "use notes-pro", "notes-pro"); err != nil {
		t.Fatal(err)
	}
	rep, err := repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now})
	if err != nil || !rep.OK() || !rep.Published || rep.Plugins != 1 {
		t.Fatalf("lint: %v %+v", err, rep)
	}
	// A hand edit: lint sees it unpublished; a broken one is an error
	// that sign refuses to publish.
	cat, _ := r.Working()
	cat.Plugin("acme-notes").Description = "Better notes"
	e.write(repo.WorkingFile, cat.Marshal())
	rep, _ = repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now})
	if !rep.OK() || rep.Published {
		t.Errorf("after a hand edit: %+v", rep.Problems)
	}
	if _, err := r.Sign(e.ctx); err != nil {
		t.Fatal(err)
	}
	rep, _ = repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now})
	if !rep.Published {
		t.Error("sign did not publish the working copy")
	}
	e.write(repo.WorkingFile, []byte(strings.Replace(string(cat.Marshal()), `"tier": "community"`, `"tier": "gold"`, 1)))
	rep, _ = repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now})
	if rep.OK() {
		t.Error("lint accepts tier gold")
	}
	if _, err := r.Sign(e.ctx); err == nil || !strings.Contains(err.Error(), "entry-tier") {
		t.Errorf("sign of a broken catalog: %v", err)
	}
	// A missing archive is a lint error.
	e.write(repo.WorkingFile, cat.Marshal())
	os.Remove(filepath.Join(e.repoDir, "bundles", "acme-notes", "1.0.0", "acme-notes-1.0.0.tar.gz"))
	rep, _ = repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now})
	if rep.OK() || !strings.Contains(repo.JoinProblems(rep.Problems), "version-file") {
		t.Errorf("lint with a missing archive: %v", repo.JoinProblems(rep.Problems))
	}
}

// TestRepoDuplicateKeys: the repository's settings and its working copy
// are read strictly; a key given twice (readers disagree on which one
// wins), or twice but for letter case, is refused with the file, the rule
// and the fix, and nothing is published.
func TestRepoDuplicateKeys(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	snapshot := func() map[string]string {
		files := map[string]string{}
		entries, _ := os.ReadDir(e.repoDir)
		for _, f := range entries {
			if f.IsDir() {
				continue
			}
			files[f.Name()] = string(e.read(f.Name()))
		}
		return files
	}
	edit := func(file, old, new string) (restore func()) {
		p := filepath.Join(e.repoDir, file)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(data), old, new, 1)
		if changed == string(data) {
			t.Fatalf("%s has no %q", file, old)
		}
		if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		return func() { os.WriteFile(p, data, 0o644) }
	}
	check := func(err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("a document with a key given twice was accepted")
		}
		for _, want := range wants {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error lacks %q: %v", want, err)
			}
		}
	}
	settings := filepath.Join(e.repoDir, "berth-catalog.json")
	for _, tc := range []struct{ old, new, want string }{
		{`"name": "acme",`, `"name": "acme", "name": "evil",`, `the key "name" appears more than once`},
		{`"timestamp":`, `"Timestamp": "1h", "timestamp":`, `expires.timestamp: the keys "Timestamp" and "timestamp" differ only in letter case`},
	} {
		restore := edit("berth-catalog.json", tc.old, tc.new)
		before := snapshot()
		_, err := repo.Open(e.repoDir, e.keyDir, &repo.Options{Now: e.clk.now})
		check(err, settings+" is damaged", tc.want, "keep the one you mean and delete the other")
		if _, lerr := repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now}); lerr == nil {
			t.Error("lint accepted the settings")
		}
		if after := snapshot(); !maps.Equal(before, after) {
			t.Error("a refused repository changed its files")
		}
		restore()
	}
	working := filepath.Join(e.repoDir, "catalog.json")
	for _, tc := range []struct{ old, new, want string }{
		{`"catalogVersion": 1,`, `"catalogVersion": 1, "catalogVersion": 1,`, `the key "catalogVersion" appears more than once`},
		{`"plugins": []`, `"Plugins": [], "plugins": []`, `the keys "Plugins" and "plugins" differ only in letter case`},
	} {
		restore := edit("catalog.json", tc.old, tc.new)
		before := snapshot()
		_, err := e.repo().Sign(e.ctx)
		check(err, working+": ", tc.want, "fix it (berth catalog lint")
		if after := snapshot(); !maps.Equal(before, after) {
			t.Error("a refused sign changed the repository's files")
		}
		rep, err := repo.Lint(e.repoDir, &repo.Options{Now: e.clk.now})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range rep.Problems {
			found = found || p.Rule == catalog.RuleCatalogSyntax && !p.Warning && strings.Contains(p.Message, tc.want)
		}
		if !found {
			t.Errorf("lint does not report %q: %v", tc.want, rep.Problems)
		}
		restore()
	}
}
