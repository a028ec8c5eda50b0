package marketplace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// The operator's store beside the test env's cache.
func (e *testEnv) store() *store.Store {
	return store.Open(store.Paths{Root: filepath.Join(e.dir, "home")}, &store.StoreOptions{Now: e.clk.now})
}

func (e *testEnv) install(st *store.Store, req InstallRequest) (*InstallResult, error) {
	if req.Resolve == nil {
		req.Resolve = &ResolveOptions{Now: e.clk.now()}
	}
	return e.cache.Install(e.ctx, st, req)
}

// wantNothingTrusted checks that a refused install left no record and no
// signer.
func wantNothingTrusted(t *testing.T, st *store.Store) {
	t.Helper()
	if recs, err := st.Records(); err != nil || len(recs) != 0 {
		t.Fatalf("records after a refusal: %v %v", recs, err)
	}
	if sg, err := st.Signers(); err != nil || len(sg) != 0 {
		t.Fatalf("signers after a refusal: %v %v", sg, err)
	}
}

// An install into an empty policy: the catalog's signer is proposed,
// shown to Confirm as new, added scoped to the plugin, and the record
// names the catalog, its root key IDs and its targets version.
func TestInstall(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.publish("acme-notes", "1.1.0")
	ci := e.addCatalog()
	st := e.store()
	var seen *InstallCandidate
	var staged, total int64
	res, err := e.install(st, InstallRequest{Name: "acme-notes", Constraint: "~1.0", Confirm: func(c *InstallCandidate) error {
		seen = c
		return nil
	}, StageProgress: func(c, t int64) { staged, total = c, t }})
	if err != nil {
		t.Fatal(err)
	}
	if staged == 0 || staged != total {
		t.Errorf("staging progress ended at %d of %d bytes", staged, total)
	}
	if seen == nil || seen.NewSigner == nil || seen.NewSigner.Plugin != "acme-notes" || seen.Version.Version != "1.0.0" || seen.Review.Name != "acme-notes" {
		t.Fatalf("Confirm saw %+v", seen)
	}
	rec := res.Trust.Record
	if rec.Version != "1.0.0" || rec.Catalog == nil || rec.Catalog.Name != "acme" || rec.Catalog.TargetsVersion != ci.TargetsVersion ||
		strings.Join(rec.Catalog.RootKeyIDs, ",") != strings.Join(ci.RootKeyIDs, ",") || rec.Catalog.Constraint != "~1.0" || rec.Catalog.AllowStale {
		t.Fatalf("record %+v, catalog %+v", rec, rec.Catalog)
	}
	if !strings.HasPrefix(rec.Source, e.repoDir+"/bundles/acme-notes/1.0.0/") {
		t.Errorf("record source %q", rec.Source)
	}
	// The record keeps the curator's tool list (none here) for upgrade.
	if tools, ok, err := InstalledTools(rec); string(rec.Catalog.Tools) != "[]" || !ok || len(tools) != 0 || err != nil {
		t.Errorf("recorded tools %q: %v %v %v", rec.Catalog.Tools, tools, ok, err)
	}
	sg, _ := st.Signers()
	if len(sg) != 1 || sg[0].Plugin != "acme-notes" || res.Trust.NewSigner == nil {
		t.Fatalf("policy %+v", sg)
	}
	// The next version verifies against the scoped signer: nothing new.
	res, err = e.install(st, InstallRequest{Name: "acme-notes"})
	if err != nil || res.Trust.NewSigner != nil || res.Version.Version != "1.1.0" {
		t.Fatalf("%+v %v", res, err)
	}
}

// The archive at the download URL was swapped: the download is refused
// while it streams (exit 4), and nothing is trusted.
func TestInstallTamperedDownload(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	other, _ := e.bundle("acme-notes", "1.0.0", `,
    "extra": {"stdio": {"command": "${bundle}/bin/notes-server"}}`)
	packed := filepath.Join(e.dir, "other.tar.gz")
	f, err := os.Create(packed)
	if err != nil {
		t.Fatal(err)
	}
	b := openBundle(t, other)
	if err := repo.PackTarGz(e.ctx, b, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.Close()
	data, _ := os.ReadFile(packed)
	e.write("bundles/acme-notes/1.0.0/acme-notes-1.0.0.tar.gz", data)
	st := e.store()
	_, err = e.install(st, InstallRequest{Name: "acme-notes"})
	wantKind(t, err, KindDownloadMismatch)
	wantNothingTrusted(t, st)
}

// A signature by anyone but the catalog's allowed signer is refused
// (exit 4), whether the operator's policy knows that signer or not.
func TestInstallUnknownSigner(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	// Mallory re-signs the same bundle and swaps the signature file.
	dir, _ := e.bundle("acme-notes", "1.0.0", "")
	mPriv, mPub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b := openBundle(t, dir)
	sig, err := trust.Sign(e.ctx, b.Listing().Bytes(), mPriv)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	e.write("bundles/acme-notes/1.0.0/acme-notes-1.0.0.tar.gz.sigstore.json", sig)
	st := e.store()
	_, err = e.install(st, InstallRequest{Name: "acme-notes"})
	var ve *trust.VerificationError
	if !errors.As(err, &ve) || !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("got %v", err)
	}
	wantNothingTrusted(t, st)
	// With mallory in the policy, the signature verifies, and is still
	// refused: the catalog does not allow mallory for this plugin.
	ms, err := trust.NewKeySigner("mallory", mPub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSigner(e.ctx, ms); err != nil {
		t.Fatal(err)
	}
	_, err = e.install(st, InstallRequest{Name: "acme-notes"})
	var na *store.SignerNotAllowedError
	if !errors.As(err, &na) || !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("got %v", err)
	}
	if recs, _ := st.Records(); len(recs) != 0 {
		t.Fatal("recorded")
	}
}

// A revoked version is never installed (exit 4), named or not.
func TestInstallRevoked(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	if _, err := e.repo().SetStatus(e.ctx, "acme-notes", "1.0.0", catalog.StatusRevoked, "leaked a token", ""); err != nil {
		t.Fatal(err)
	}
	e.addCatalog()
	st := e.store()
	for _, c := range []string{"", "1.0.0", "^1"} {
		_, err := e.install(st, InstallRequest{Name: "acme-notes", Constraint: c})
		var rv *RevokedVersionError
		if !errors.As(err, &rv) || !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), `revoked by catalog acme ("leaked a token")`) {
			t.Fatalf("%q: got %v", c, err)
		}
	}
	wantNothingTrusted(t, st)
}

// The curator's signed catalog lies about what the plugin does: the
// downloaded bundle's review differs from the summary, and install
// refuses (exit 4) naming the difference, with nothing written, not even
// the new signer.
func TestInstallSummaryLies(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	r := e.repo()
	cat, err := r.Working()
	if err != nil {
		t.Fatal(err)
	}
	v := cat.Plugin("acme-notes").Version("1.0.0")
	v.Summary.Servers[0].Stdio.Env = []catalog.EnvSource{}
	v.Summary.Servers[0].Tools = catalog.ToolFilter{Allow: []string{"*"}, Deny: []string{}}
	if err := os.WriteFile(filepath.Join(e.repoDir, "catalog.json"), cat.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Sign(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.addCatalog()
	st := e.store()
	_, err = e.install(st, InstallRequest{Name: "acme-notes", Confirm: func(*InstallCandidate) error {
		t.Fatal("Confirm was asked about a bundle that is not what the catalog says")
		return nil
	}})
	var sm *SummaryMismatchError
	if !errors.As(err, &sm) || !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{`server "notes".stdio.env: the catalog says []`, `server "notes".tools`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not show %q:\n%v", want, err)
		}
	}
	wantNothingTrusted(t, st)
}

// An expired copy is refused (exit 4) unless allowed, and then the
// record says so.
func TestInstallStale(t *testing.T) {
	e := newEnv(t, repo.Expiries{Timestamp: time.Hour})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	e.clk.advance(2 * time.Hour)
	st := e.store()
	_, err := e.install(st, InstallRequest{Name: "acme-notes"})
	var se *StaleError
	if !errors.As(err, &se) || !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("got %v", err)
	}
	wantNothingTrusted(t, st)
	res, err := e.install(st, InstallRequest{Name: "acme-notes", AllowStale: true})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Trust.Record.Catalog
	if !o.AllowStale || o.StaleSince == nil || len(res.Warnings) == 0 {
		t.Fatalf("record origin %+v, warnings %v", o, res.Warnings)
	}
}

// Two catalogs list the name: install does not guess.
func TestInstallAmbiguous(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	src, _ := ParseSource(e.repoDir)
	if _, err := e.cache.Add(e.ctx, "mirror", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	st := e.store()
	_, err := e.install(st, InstallRequest{Name: "acme-notes"})
	var ae *AmbiguousError
	if !errors.As(err, &ae) || strings.Join(ae.Catalogs, ",") != "acme,mirror" {
		t.Fatalf("got %v", err)
	}
	if _, err := e.install(st, InstallRequest{Name: "acme-notes", Catalog: "mirror"}); err != nil {
		t.Fatal(err)
	}
}

// The operator's cooldown and the berth version are applied as resolution
// does; a lock installs exactly its version, digest and signer.
func TestInstallResolutionAndLock(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.clk.advance(10 * 24 * time.Hour)
	e.publish("acme-notes", "1.1.0")
	if _, err := e.repo().SetStatus(e.ctx, "acme-notes", "1.0.0", catalog.StatusYanked, "broken search", ""); err != nil {
		t.Fatal(err)
	}
	e.addCatalog()
	e.clk.advance(time.Hour)
	st := e.store()
	_, err := e.install(st, InstallRequest{Name: "acme-notes", Resolve: &ResolveOptions{Now: e.clk.now(), MinReleaseAge: 24 * time.Hour}})
	var nv *NoVersionError
	if !errors.As(err, &nv) || !strings.Contains(err.Error(), "1.1.0: released 1h0m0s ago, within your min-release-age cooldown of 24h0m0s") || !strings.Contains(err.Error(), "1.0.0: yanked: broken search") {
		t.Fatalf("got %v", err)
	}
	p, _, err := e.cache.Plugin("acme", "acme-notes")
	if err != nil {
		t.Fatal(err)
	}
	refs, _, _ := signerSets("acme-notes", p.Signers)
	pin := &Pin{Version: "1.0.0", Digest: p.Version("1.0.0").Digest, Constraint: "^1",
		Signer: catalog.Signer{Kind: trust.KindKey, Fingerprint: refs[0].Fingerprint}}
	// Another digest, or another signer, than the lock's is refused.
	bad := *pin
	bad.Digest = "sha256:" + strings.Repeat("2", 64)
	if _, err := e.install(st, InstallRequest{Name: "acme-notes", Pin: &bad}); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "but the lock pins") {
		t.Fatalf("another digest: %v", err)
	}
	bad = *pin
	bad.Signer.Fingerprint = "sha256:" + strings.Repeat("3", 64)
	if _, err := e.install(st, InstallRequest{Name: "acme-notes", Pin: &bad}); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "no longer allows") {
		t.Fatalf("another signer: %v", err)
	}
	wantNothingTrusted(t, st)
	// The yanked, locked version installs, with a warning.
	res, err := e.install(st, InstallRequest{Name: "acme-notes", Pin: pin})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version.Version != "1.0.0" || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "yanked") || res.Trust.Record.Catalog.Constraint != "^1" {
		t.Fatalf("%+v %v", res.Trust.Record, res.Warnings)
	}
}

// Update finds an installed version revoked: it is disabled in every
// workspace, berth verify fails for it, and it cannot be enabled again;
// a deprecated one only warns.
func TestUpdateRevokesInstalled(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.publish("acme-tools", "2.0.0")
	e.addCatalog()
	st := e.store()
	var recs []*store.Record
	for _, n := range []string{"acme-notes", "acme-tools"} {
		res, err := e.install(st, InstallRequest{Name: n})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, res.Trust.Record)
	}
	ws1, ws2 := t.TempDir(), t.TempDir()
	if _, err := st.Update(e.ctx, func(s *store.State) error {
		for _, ws := range []string{ws1, ws2} {
			for _, r := range recs {
				s.Workspace(ws).Plugins[r.Name] = &store.Enablement{Version: r.Version, Digest: r.Digest}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.repo().SetStatus(e.ctx, "acme-notes", "1.0.0", catalog.StatusRevoked, "leaked a token", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.repo().SetStatus(e.ctx, "acme-tools", "2.0.0", catalog.StatusDeprecated, "use acme-notes", "acme-notes"); err != nil {
		t.Fatal(err)
	}
	before, _ := st.State()
	u, err := e.cache.Update(e.ctx, st, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Installed.Revoked) != 1 || !u.Installed.Revoked[0].New || len(u.Installed.Revoked[0].Disabled) != 2 ||
		len(u.Installed.Warnings) != 1 || u.Installed.Warnings[0].Status != catalog.StatusDeprecated {
		t.Fatalf("%+v", u.Installed)
	}
	after, _ := st.State()
	if after.Generation <= before.Generation {
		t.Fatal("no generation bump")
	}
	for _, ws := range []string{ws1, ws2} {
		if after.Workspaces[ws].Plugins["acme-notes"] != nil || after.Workspaces[ws].Plugins["acme-tools"] == nil {
			t.Fatalf("%s: %+v", ws, after.Workspaces[ws].Plugins)
		}
	}
	sg, _ := st.Signers()
	v, _ := trust.NewVerifier(sg, nil)
	rep := st.Verify(e.ctx, recs[0], v)
	var re *store.RevokedError
	if !errors.As(rep.Err, &re) || !strings.Contains(rep.Err.Error(), "leaked a token") {
		t.Fatalf("verify: %v", rep.Err)
	}
	if rep := st.Verify(e.ctx, recs[1], v); rep.Err != nil {
		t.Fatalf("the deprecated one: %v", rep.Err)
	}
	// Once recorded, a later update reports nothing new.
	u, err = e.cache.Update(e.ctx, st, "acme")
	if err != nil || len(u.Installed.Revoked) != 0 {
		t.Fatalf("%+v %v", u, err)
	}
}

// A catalog that allows a second signer: a new version by it follows the
// existing rule, refused (exit 4) unless the signer change is allowed;
// then that signer too is added, scoped.
func TestInstallSignerChange(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	priv2, pub2, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := trust.NewKeySigner("acme2", pub2, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := e.repo()
	cat, err := r.Working()
	if err != nil {
		t.Fatal(err)
	}
	p := cat.Plugin("acme-notes")
	p.Signers = append(p.Signers, &catalog.Signer{Kind: trust.KindKey, Fingerprint: s2.Fingerprint, PublicKey: s2.PublicKey})
	if err := os.WriteFile(filepath.Join(e.repoDir, "catalog.json"), cat.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Sign(e.ctx); err != nil {
		t.Fatal(err)
	}
	dir, _ := e.bundle("acme-notes", "1.1.0", "")
	b := openBundle(t, dir)
	sig, err := trust.Sign(e.ctx, b.Listing().Bytes(), priv2)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	v2, err := trust.NewVerifier([]trust.Signer{s2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: v2}); err != nil {
		t.Fatal(err)
	}
	e.addCatalog()
	st := e.store()
	if _, err := e.install(st, InstallRequest{Name: "acme-notes", Constraint: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.install(st, InstallRequest{Name: "acme-notes"})
	var sc *store.SignerChangeError
	if !errors.As(err, &sc) || !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("got %v", err)
	}
	if sg, _ := st.Signers(); len(sg) != 1 {
		t.Fatalf("a refused signer change added a signer: %v", sg)
	}
	res, err := e.install(st, InstallRequest{Name: "acme-notes", AllowSignerChange: true})
	if err != nil || res.Version.Version != "1.1.0" || res.Trust.NewSigner == nil || res.Trust.NewSigner.Fingerprint != s2.Fingerprint || res.Trust.NewSigner.Plugin != "acme-notes" {
		t.Fatalf("%+v %v", res, err)
	}
}

// A catalog that lies about a native tool of the bundle (another
// executable digest, or no native tool at all) is refused at install
// (exit 4) before Confirm is asked, and nothing is trusted.
func TestInstallNativeToolLies(t *testing.T) {
	const nativeTool = "\n    },\n  \"nativeTools\": {\n    \"fmt\": {\"executable\": \"${bundle}/bin/notes-server\"}"
	for _, tc := range []struct {
		name string
		lie  func(*catalog.Summary)
		want string
	}{
		{"digest", func(s *catalog.Summary) {
			s.NativeTools[0].SHA256 = s.NativeTools[0].SHA256[:len(s.NativeTools[0].SHA256)-64] + strings.Repeat("0", 64)
		}, `native tool "fmt".sha256`},
		{"omitted", func(s *catalog.Summary) { s.NativeTools = []catalog.SummaryNativeTool{} }, `native tool "fmt": the catalog does not list it, the bundle has it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, repo.Expiries{})
			dir, sig := e.bundle("acme-fmt", "1.0.0", nativeTool)
			r := e.repo()
			if _, err := r.Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier}); err != nil {
				t.Fatal(err)
			}
			cat, err := r.Working()
			if err != nil {
				t.Fatal(err)
			}
			v := cat.Plugin("acme-fmt").Version("1.0.0")
			if len(v.Summary.NativeTools) != 1 || v.Summary.NativeTools[0].Name != "fmt" {
				t.Fatalf("the bundle's summary has native tools %+v", v.Summary.NativeTools)
			}
			tc.lie(&v.Summary)
			if err := os.WriteFile(filepath.Join(e.repoDir, repo.WorkingFile), cat.Marshal(), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Sign(e.ctx); err != nil {
				t.Fatal(err)
			}
			e.addCatalog()
			st := e.store()
			_, err = e.install(st, InstallRequest{Name: "acme-fmt", Confirm: func(*InstallCandidate) error {
				t.Fatal("Confirm was asked about a bundle that is not what the catalog says")
				return nil
			}})
			var sm *SummaryMismatchError
			if !errors.As(err, &sm) || !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a summary mismatch showing %q", err, tc.want)
			}
			wantNothingTrusted(t, st)
		})
	}
}
