package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/trust"
)

func refOfSigner(s trust.Signer) SignerRef {
	return SignerRef{Kind: s.Kind, Name: s.Name, Fingerprint: s.Fingerprint, Issuer: s.Issuer, SAN: s.SAN}
}

func catalogOrigin() *CatalogOrigin {
	return &CatalogOrigin{Name: "acme", RootKeyIDs: []string{strings.Repeat("a", 64)}, TargetsVersion: 7, Constraint: "^1.4"}
}

// A proposed signer (a catalog's, for one plugin) that verifies the
// bundle is shown to Confirm, added to the policy scoped to the plugin
// with the record, and from then on verifies that plugin only: another
// plugin's bundle signed by the same key is refused.
func TestTrustProposedSignerIsAddedScoped(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	dir := signedCopy(t, acme)
	d := digestOf(t, dir)
	proposed := acme.signer
	proposed.Name = ScopedSignerName("acme-notes", proposed)

	// Declined: nothing is written, the policy stays empty.
	declined := errors.New("declined")
	var seen *Candidate
	_, err := s.Trust(ctx, dir, &TrustOptions{Digest: d, AllowedSigners: []SignerRef{refOfSigner(acme.signer)}, ProposedSigners: []trust.Signer{proposed}, Catalog: catalogOrigin(),
		Confirm: func(c *Candidate) error { seen = c; return declined }})
	if !errors.Is(err, declined) {
		t.Fatalf("got %v", err)
	}
	if seen == nil || seen.NewSigner == nil || seen.NewSigner.Plugin != "acme-notes" || seen.NewSigner.Name != proposed.Name {
		t.Fatalf("Confirm saw %+v", seen)
	}
	nothingWritten(t, s, 0)
	if sg, _ := s.Signers(); len(sg) != 0 {
		t.Fatalf("a declined install added %v", sg)
	}

	res, err := s.Trust(ctx, dir, &TrustOptions{Digest: d, AllowedSigners: []SignerRef{refOfSigner(acme.signer)}, ProposedSigners: []trust.Signer{proposed}, Catalog: catalogOrigin()})
	if err != nil {
		t.Fatal(err)
	}
	if res.NewSigner == nil || res.Record.Catalog == nil || res.Record.Catalog.TargetsVersion != 7 || res.Record.Signer.Name != proposed.Name {
		t.Fatalf("result %+v, record %+v", res, res.Record)
	}
	sg, err := s.Signers()
	if err != nil || len(sg) != 1 || sg[0].Plugin != "acme-notes" || sg[0].Fingerprint != acme.signer.Fingerprint {
		t.Fatalf("policy %+v %v", sg, err)
	}
	v, err := trust.NewVerifier(sg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep := s.Verify(ctx, res.Record, v); rep.Err != nil {
		t.Fatalf("verify: %v", rep.Err)
	}

	// The same key signs another plugin: the scoped signer refuses it,
	// both through Trust and through the policy's verifier.
	other := renamedCopy(t, dir, "acme-other")
	sign(t, other, acme)
	if _, err := s.Trust(ctx, other, nil); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "scoped to plugin acme-notes only, and this is a bundle of acme-other") {
		t.Fatalf("another plugin's bundle by the scoped key: %v", err)
	}
	if recs, _ := s.Find("acme-other", ""); len(recs) != 0 {
		t.Fatal("recorded")
	}
	// Proposing the same signer again finds it in the policy: no new one.
	again, err := s.Trust(ctx, dir, &TrustOptions{Digest: d, AllowedSigners: []SignerRef{refOfSigner(acme.signer)}, ProposedSigners: []trust.Signer{proposed}, Catalog: catalogOrigin()})
	if err != nil || !again.Already || again.NewSigner != nil {
		t.Fatalf("again: %+v %v", again, err)
	}
}

// AllowedSigners refuses a signature the policy accepts, by a signer the
// catalog does not allow for the plugin; a proposal may not be scoped to
// another plugin; a catalog origin needs a digest and allowed signers.
func TestTrustAllowedSigners(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	mallory := newKey(t, "mallory")
	if _, err := s.AddSigner(ctx, mallory.signer); err != nil {
		t.Fatal(err)
	}
	dir := signedCopy(t, mallory)
	d := digestOf(t, dir)
	gen := generation(t, s)
	_, err := s.Trust(ctx, dir, &TrustOptions{Digest: d, AllowedSigners: []SignerRef{refOfSigner(acme.signer)}, Catalog: catalogOrigin()})
	var na *SignerNotAllowedError
	if !errors.As(err, &na) || !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "only key "+acme.signer.Fingerprint+" may sign it") {
		t.Fatalf("got %v", err)
	}
	if _, err := s.Trust(ctx, dir, &TrustOptions{Digest: d, AllowedSigners: []SignerRef{}}); !errors.As(err, &na) {
		t.Fatalf("an empty allowed list: %v", err)
	}
	nothingWritten(t, s, gen)

	p := acme.signer
	p.Plugin = "acme-other"
	if _, err := s.Trust(ctx, signedCopy(t, acme), &TrustOptions{ProposedSigners: []trust.Signer{p}}); err == nil || !strings.Contains(err.Error(), "cannot sign acme-notes") {
		t.Fatalf("a proposal scoped to another plugin: %v", err)
	}
	clash := acme.signer
	clash.Name = "mallory"
	if _, err := s.Trust(ctx, signedCopy(t, acme), &TrustOptions{ProposedSigners: []trust.Signer{clash}}); err == nil || !strings.Contains(err.Error(), `a signer named "mallory" already`) {
		t.Fatalf("a proposal under a taken name: %v", err)
	}
	for _, o := range []*TrustOptions{
		{Catalog: catalogOrigin(), AllowedSigners: []SignerRef{refOfSigner(mallory.signer)}},
		{Catalog: catalogOrigin(), Digest: d},
	} {
		if _, err := s.Trust(ctx, dir, o); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "needs the catalog's digest") {
			t.Fatalf("a catalog origin without digest or signers: %v", err)
		}
	}
	nothingWritten(t, s, gen)
	// Allowed, by the policy's own signer: recorded with the origin.
	res, err := s.Trust(ctx, dir, &TrustOptions{Digest: d, AllowedSigners: []SignerRef{refOfSigner(mallory.signer)}, Catalog: catalogOrigin()})
	if err != nil || res.NewSigner != nil || res.Record.Catalog.Name != "acme" {
		t.Fatalf("%+v %v", res, err)
	}
}

// A version trusted by hand and then installed from a catalog is recorded
// again, with its catalog origin.
func TestTrustByHandThenFromCatalog(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	if _, err := s.AddSigner(ctx, acme.signer); err != nil {
		t.Fatal(err)
	}
	dir := signedCopy(t, acme)
	if _, err := s.Trust(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	res, err := s.Trust(ctx, dir, &TrustOptions{Digest: digestOf(t, dir), AllowedSigners: []SignerRef{refOfSigner(acme.signer)}, Catalog: catalogOrigin()})
	if err != nil || res.Already || res.Record.Catalog == nil || !res.Reused {
		t.Fatalf("%+v %v", res, err)
	}
	recs, _ := s.Find("acme-notes", "1.4.2")
	if len(recs) != 1 || recs[0].Catalog == nil || recs[0].Catalog.Constraint != "^1.4" {
		t.Fatalf("record %+v", recs)
	}
}

// MarkRevoked disables the version in every workspace with a generation
// bump, and from then on Verify fails for it (exit 4, naming the reason),
// Trust refuses it, and it cannot be enabled again; marking twice changes
// nothing more.
func TestMarkRevoked(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	if _, err := s.AddSigner(ctx, acme.signer); err != nil {
		t.Fatal(err)
	}
	dir := signedCopy(t, acme)
	res, err := s.Trust(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	ws1, ws2, ws3 := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := s.Update(ctx, func(st *State) error {
		for _, ws := range []string{ws1, ws2, ws3} {
			st.Workspace(ws).Plugins["acme-notes"] = &Enablement{Version: rec.Version, Digest: rec.Digest}
		}
		st.Workspace(ws2).Plugins["other"] = &Enablement{Version: "1.0.0", Digest: rec.Digest}
		// A workspace whose last plugin is revoked keeps its profiles.
		st.Workspace(ws3).Profiles = map[string]*Profile{"notes": {Plugins: []string{"acme-notes"}, Mode: ToolsFull}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := generation(t, s)
	// Another digest of the same version is not this revocation.
	if _, err := s.MarkRevoked(ctx, Revocation{Name: "acme-notes", Version: "1.4.2", Digest: "sha256:" + strings.Repeat("1", 64), Catalog: "acme", Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	mr, err := s.MarkRevoked(ctx, Revocation{Name: "acme-notes", Version: "1.4.2", Digest: rec.Digest, Catalog: "acme", Reason: "leaked a token"})
	if err != nil || mr.Already || len(mr.Disabled) != 3 {
		t.Fatalf("%+v %v", mr, err)
	}
	st, _ := s.State()
	if st.Generation <= before || st.Workspaces[ws1] != nil || st.Workspaces[ws2].Plugins["acme-notes"] != nil || st.Workspaces[ws2].Plugins["other"] == nil ||
		st.Workspaces[ws3] == nil || len(st.Workspaces[ws3].Plugins) != 0 || st.ProfileOf(ws3, "notes") == nil {
		t.Fatalf("state after revocation: %+v", st)
	}
	v, _ := trust.NewVerifier([]trust.Signer{acme.signer}, nil)
	rep := s.Verify(ctx, rec, v)
	var re *RevokedError
	if !errors.As(rep.Err, &re) || !errors.Is(rep.Err, trust.ErrUntrusted) || rep.Revoked == nil || !strings.Contains(rep.Err.Error(), `revoked by catalog acme on `) || !strings.Contains(rep.Err.Error(), `"leaked a token"`) {
		t.Fatalf("verify: %+v", rep)
	}
	if err := s.CheckNotRevoked("acme-notes", "1.4.2", rec.Digest); !errors.As(err, &re) {
		t.Fatalf("CheckNotRevoked: %v", err)
	}
	if _, err := s.Trust(ctx, dir, nil); !errors.As(err, &re) {
		t.Fatalf("trust again: %v", err)
	}
	again, err := s.MarkRevoked(ctx, Revocation{Name: "acme-notes", Version: "1.4.2", Digest: rec.Digest, Catalog: "acme", Reason: "leaked a token"})
	if err != nil || !again.Already || len(again.Disabled) != 0 {
		t.Fatalf("again: %+v %v", again, err)
	}
	list, err := s.Revocations()
	if err != nil || len(list) != 1 {
		t.Fatalf("revocations %v %v", list, err)
	}
	// The record keeps where it disabled the version (where upgrade
	// enables its replacement), and marking again does not forget it.
	if got, want := list[0].Disabled, mr.Disabled; !slices.Equal(got, want) {
		t.Fatalf("the revocation records it was disabled in %v, want %v", got, want)
	}
	if _, err := s.MarkRevoked(ctx, Revocation{Name: "../x", Version: "1.0.0", Digest: rec.Digest}); err == nil {
		t.Fatal("a bad name was accepted")
	}
	if fi, err := os.Stat(filepath.Join(s.Paths().Revocations(), "acme-notes", "1.4.2.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("revocation file %v %v", fi, err)
	}
}

func TestMinReleaseAge(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.SetMinReleaseAge(ctx, 72*time.Hour); err != nil {
		t.Fatal(err)
	}
	c, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.ReleaseCooldown(); err != nil || d != 72*time.Hour || c.MinReleaseAge != "72h0m0s" {
		t.Fatalf("%v %v %q", d, err, c.MinReleaseAge)
	}
	if err := s.SetMinReleaseAge(ctx, -time.Second); err == nil {
		t.Fatal("a negative cooldown was accepted")
	}
	if err := s.SetMinReleaseAge(ctx, 0); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Config()
	if c.MinReleaseAge != "" {
		t.Fatalf("unset: %q", c.MinReleaseAge)
	}
	bad := &Config{MinReleaseAge: "soon"}
	if _, err := bad.ReleaseCooldown(); err == nil || !strings.Contains(err.Error(), "berth config set min-release-age") {
		t.Fatalf("a damaged value: %v", err)
	}
}

func digestOf(t *testing.T, dir string) Digest {
	t.Helper()
	b := openBundle(t, dir)
	return mustDigest(b.Digest)
}

func generation(t *testing.T, s *Store) uint64 {
	t.Helper()
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	return st.Generation
}

// renamedCopy copies the bundle dir with its manifest naming plugin name.
func renamedCopy(t *testing.T, dir, name string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), name)
	copyDir(t, dir, to)
	m := filepath.Join(to, "berth.json")
	data, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Replace(string(data), `"name": "acme-notes"`, `"name": "`+name+`"`, 1)
	if out == string(data) {
		t.Fatal("the manifest has no name to replace")
	}
	if err := os.WriteFile(m, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// sign writes the signature of dir by k beside it.
func sign(t *testing.T, dir string, k keyPair) {
	t.Helper()
	b := openBundle(t, dir)
	sig, err := trust.Sign(context.Background(), b.Listing().Bytes(), k.priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(DefaultSignatureFile(dir), sig, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tool policy allow set after an install from a catalog records the
// signer of that version, the scoped one the catalog vouched for, and
// holds for it: config.json keeps the scope and the rule through the
// strict decoding. A version of the plugin from another signer makes the
// rule ask.
func TestPolicyAllowRecordsTheScopedSigner(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	dir := signedCopy(t, acme)
	proposed := acme.signer
	proposed.Name = ScopedSignerName("acme-notes", proposed)
	res, err := s.Trust(ctx, dir, &TrustOptions{Digest: digestOf(t, dir), AllowedSigners: []SignerRef{refOfSigner(acme.signer)}, ProposedSigners: []trust.Signer{proposed}, Catalog: catalogOrigin()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPolicy(ctx, PolicyRule{Pattern: "acme-notes__*", Action: ActionAllow}); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Config()
	if err != nil {
		t.Fatalf("config.json with a scoped signer and a signed allow: %v", err)
	}
	if len(cfg.Signers) != 1 || cfg.Signers[0].Plugin != "acme-notes" {
		t.Fatalf("signers %+v", cfg.Signers)
	}
	want := "key " + acme.signer.Fingerprint
	if len(cfg.ToolPolicy) != 1 || cfg.ToolPolicy[0].Signer != want || cfg.ToolPolicy[0].Signer != res.Record.SignerIdentity() {
		t.Fatalf("rule %+v, want the signer %s", cfg.ToolPolicy, want)
	}
	name := "acme-notes__notes__search"
	if m := MatchPolicy(cfg.ToolPolicy, PolicySubject{Plugin: "acme-notes", Signer: res.Record.SignerIdentity(), Name: name}); m.Action != ActionAllow {
		t.Fatalf("the installed version: %+v", m)
	}
	if m := MatchPolicy(cfg.ToolPolicy, PolicySubject{Plugin: "acme-notes", Signer: "key sha256:other", Name: name}); m.Action != ActionAsk || !m.OtherSigner {
		t.Fatalf("a version from another signer: %+v", m)
	}
}

// A revocation is lifted by the operator or by its catalog, and the file
// records who and when. One the operator lifted stays lifted when the
// catalog revokes the version again; one the catalog lifted applies again.
func TestLiftRevocation(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	if _, err := s.AddSigner(ctx, acme.signer); err != nil {
		t.Fatal(err)
	}
	res, err := s.Trust(ctx, signedCopy(t, acme), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	rev := Revocation{Name: rec.Name, Version: rec.Version, Digest: rec.Digest, Catalog: "acme", Reason: "leaked a token"}
	if _, err := s.LiftRevocation(ctx, Lift{Name: rec.Name, Version: rec.Version, By: LiftedByOperator}); !errors.Is(err, ErrNotRevoked) {
		t.Fatalf("lift with nothing revoked: %v", err)
	}
	if _, err := s.MarkRevoked(ctx, rev); err != nil {
		t.Fatal(err)
	}
	// Another catalog's or another digest's lift lifts nothing.
	if _, err := s.LiftRevocation(ctx, Lift{Name: rec.Name, Version: rec.Version, Catalog: "evil", By: LiftedByCatalog}); !errors.Is(err, ErrNotRevoked) {
		t.Fatalf("lift by another catalog: %v", err)
	}
	if _, err := s.LiftRevocation(ctx, Lift{Name: rec.Name, Version: rec.Version, Digest: "sha256:" + strings.Repeat("1", 64), By: LiftedByOperator}); !errors.Is(err, ErrNotRevoked) {
		t.Fatalf("lift of another digest: %v", err)
	}
	l, err := s.LiftRevocation(ctx, Lift{Name: rec.Name, Version: rec.Version, Digest: rec.Digest, Catalog: "acme", By: LiftedByCatalog})
	if err != nil || l.Lifted == nil || l.Lifted.By != LiftedByCatalog || l.Reason != "leaked a token" {
		t.Fatalf("catalog lift: %+v %v", l, err)
	}
	if err := s.CheckNotRevoked(rec.Name, rec.Version, rec.Digest); err != nil {
		t.Fatalf("after the catalog's lift: %v", err)
	}
	if kept, err := s.RevocationOf(rec.Name, rec.Version, rec.Digest); err != nil || kept == nil || kept.Lifted == nil {
		t.Fatalf("the lifted revocation is not on file: %+v %v", kept, err)
	}
	// The catalog revokes it again: it applies again.
	if mr, err := s.MarkRevoked(ctx, rev); err != nil || mr.Already || mr.Lifted != nil {
		t.Fatalf("revoked again: %+v %v", mr, err)
	}
	var re *RevokedError
	if err := s.CheckNotRevoked(rec.Name, rec.Version, rec.Digest); !errors.As(err, &re) || !strings.Contains(err.Error(), "berth revoke --lift acme-notes@1.4.2") {
		t.Fatalf("after revoking again: %v", err)
	}
	if _, err := s.LiftRevocation(ctx, Lift{Name: rec.Name, Version: rec.Version, By: LiftedByOperator}); err != nil {
		t.Fatal(err)
	}
	// Enabled again, it stays enabled when the catalog still revokes it.
	if _, err := s.Update(ctx, func(st *State) error {
		st.Workspace(t.TempDir()).Plugins[rec.Name] = &Enablement{Version: rec.Version, Digest: rec.Digest}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mr, err := s.MarkRevoked(ctx, rev)
	if err != nil || mr.Lifted == nil || mr.Lifted.By != LiftedByOperator || len(mr.Disabled) != 0 {
		t.Fatalf("revoked after the operator's lift: %+v %v", mr, err)
	}
	if err := s.CheckNotRevoked(rec.Name, rec.Version, rec.Digest); err != nil {
		t.Fatalf("after the operator's lift: %v", err)
	}
	if _, err := s.LiftRevocation(ctx, Lift{Name: rec.Name, Version: rec.Version, By: "someone"}); err == nil {
		t.Fatal("a lift by someone was accepted")
	}
}
