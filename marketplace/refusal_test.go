package marketplace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// Each refusal is made the way an attacker or a broken mirror would make
// it, with the catalog's real keys where the attack needs a signature, and
// each must come out as its own kind, with exit 4 (trust.ErrUntrusted),
// leaving the verified copy as it was.

func (e *testEnv) key(role string) signature.Signer {
	e.t.Helper()
	r := e.repo()
	p, err := r.Published()
	if err != nil {
		e.t.Fatal(err)
	}
	k, err := repo.RoleSigner(e.keyDir, role, &p.Root.Signed)
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// publishTimestamp signs and writes a timestamp naming snapshot.json of
// the given version and bytes.
func (e *testEnv) publishTimestamp(version, snapVersion int64, snapData []byte) {
	e.t.Helper()
	ts := metadata.Timestamp(e.clk.now().Add(24 * time.Hour).UTC().Truncate(time.Second))
	ts.Signed.Version = version
	ts.Signed.Meta["snapshot.json"] = repo.MetaFile(snapVersion, snapData)
	if _, err := ts.Sign(e.key(metadata.TIMESTAMP)); err != nil {
		e.t.Fatal(err)
	}
	data, err := ts.ToBytes(true)
	if err != nil {
		e.t.Fatal(err)
	}
	e.write("timestamp.json", data)
}

// publishSnapshot signs and writes snapshot version naming targets.json of
// the given version and bytes.
func (e *testEnv) publishSnapshot(version, targVersion int64, targData []byte) []byte {
	e.t.Helper()
	s := metadata.Snapshot(e.clk.now().Add(24 * time.Hour).UTC().Truncate(time.Second))
	s.Signed.Version = version
	s.Signed.Meta["targets.json"] = repo.MetaFile(targVersion, targData)
	if _, err := s.Sign(e.key(metadata.SNAPSHOT)); err != nil {
		e.t.Fatal(err)
	}
	data, err := s.ToBytes(true)
	if err != nil {
		e.t.Fatal(err)
	}
	e.write(fmt.Sprintf("%d.snapshot.json", version), data)
	return data
}

// currentCopy returns the bytes of the cached copy's files, to check that
// a refusal changed nothing.
func (e *testEnv) currentCopy() string {
	e.t.Helper()
	st, err := e.cache.readState("acme")
	if err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range []string{"root.json", "timestamp.json", "snapshot.json", "targets.json", "catalog.json"} {
		data, err := os.ReadFile(filepath.Join(e.cache.dir, "acme", st.Current, f))
		if err != nil {
			e.t.Fatal(err)
		}
		b.Write(data)
	}
	return st.Current + b.String()
}

func (e *testEnv) refused(kind VerifyKind, says string) {
	e.t.Helper()
	before := e.currentCopy()
	_, err := e.refresh()
	ve := wantKind(e.t, err, kind)
	if says != "" && !strings.Contains(ve.Error(), says) {
		e.t.Errorf("the %s refusal does not say %q:\n%v", kind, says, ve)
	}
	if !strings.Contains(ve.Error(), "berth kept its last verified copy") {
		e.t.Errorf("the refusal does not say what berth did:\n%v", ve)
	}
	if after := e.currentCopy(); after != before {
		e.t.Errorf("a %s refusal changed the verified copy", kind)
	}
}

// setup publishes 1.0.0, adds the catalog, publishes 1.1.0 and refreshes:
// the client has timestamp 3, snapshot 3, targets 3.
func setup(t *testing.T, exp repo.Expiries) *testEnv {
	e := newEnv(t, exp)
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	e.publish("acme-notes", "1.1.0")
	if _, err := e.refresh(); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRefuseTimestampRollback(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	old := e.read("timestamp.json")
	e.publish("acme-notes", "1.1.0")
	if _, err := e.refresh(); err != nil {
		t.Fatal(err)
	}
	// A mirror replays the old, validly signed timestamp.
	e.write("timestamp.json", old)
	e.refused(KindRollback, "the timestamp's version went down")
}

func TestRefuseSnapshotRollback(t *testing.T) {
	e := setup(t, repo.Expiries{})
	// A new timestamp (signed with the real key) names the old snapshot 2.
	e.publishTimestamp(4, 2, e.read("2.snapshot.json"))
	e.refused(KindRollback, "older snapshot")
}

func TestRefuseTargetsRollback(t *testing.T) {
	e := setup(t, repo.Expiries{})
	// A new snapshot 4 names the old targets 2; a new timestamp names it.
	snap := e.publishSnapshot(4, 2, e.read("2.targets.json"))
	e.publishTimestamp(4, 4, snap)
	e.refused(KindRollback, "older targets version")
}

func TestRefuseExpiredTimestamp(t *testing.T) {
	e := setup(t, repo.Expiries{Timestamp: time.Hour})
	e.clk.advance(90 * time.Minute)
	e.refused(KindExpired, "timestamp.json is expired")
}

func TestRefuseExpiredSnapshot(t *testing.T) {
	e := setup(t, repo.Expiries{Timestamp: 48 * time.Hour, Snapshot: time.Hour})
	e.clk.advance(90 * time.Minute)
	e.refused(KindExpired, "snapshot.json is expired")
}

func TestRefuseMixAndMatch(t *testing.T) {
	e := setup(t, repo.Expiries{})
	e.publish("acme-notes", "1.2.0")
	// The mirror serves the new snapshot 4 with the targets of version 3
	// under the name 4.targets.json.
	e.write("4.targets.json", e.read("3.targets.json"))
	e.refused(KindMixAndMatch, "does not match the length and hash the snapshot gives")
}

func TestRefuseMixAndMatchVersion(t *testing.T) {
	e := setup(t, repo.Expiries{})
	// A snapshot signed with the real key, whose length and hash fit the
	// file, but which names targets version 4 for a file of version 3.
	snap := e.publishSnapshot(4, 4, e.read("3.targets.json"))
	e.write("4.targets.json", e.read("3.targets.json"))
	e.publishTimestamp(4, 4, snap)
	e.refused(KindMixAndMatch, "not the version the snapshot names")
}

func TestRefuseSnapshotMismatch(t *testing.T) {
	e := setup(t, repo.Expiries{})
	e.publish("acme-notes", "1.2.0")
	e.write("4.snapshot.json", e.read("3.snapshot.json"))
	e.refused(KindMixAndMatch, "the snapshot does not match")
}

func TestRefuseTamperedTarget(t *testing.T) {
	e := setup(t, repo.Expiries{})
	e.publish("acme-notes", "1.2.0")
	p, err := e.repo().Published()
	if err != nil {
		t.Fatal(err)
	}
	rel := repo.TargetFile(p.Targets.Signed.Targets[catalog.TargetName])
	e.write(rel, bytes.Replace(e.read(rel), []byte("Notes search"), []byte("Notes steal!"), 1))
	e.refused(KindTargetMismatch, "catalog.json's length or hash differs")
}

func TestRefuseBadSignature(t *testing.T) {
	e := setup(t, repo.Expiries{})
	e.publish("acme-notes", "1.2.0")
	// Someone edits the timestamp without the key: push its expiry out.
	ts := e.read("timestamp.json")
	e.write("timestamp.json", bytes.Replace(ts, []byte(`"expires": "2026`), []byte(`"expires": "2036`), 1))
	e.refused(KindBadSignature, "")
}

func TestRefuseMalformed(t *testing.T) {
	e := setup(t, repo.Expiries{})
	e.write("timestamp.json", []byte("<html>not found</html>"))
	e.refused(KindMalformed, "")
}

func TestRefuseChangedVersion(t *testing.T) {
	e := setup(t, repo.Expiries{})
	// The curator (or whoever holds the targets key) rewrites a published
	// version with another digest and signs it.
	cat, err := e.repo().Working()
	if err != nil {
		t.Fatal(err)
	}
	cat.Plugin("acme-notes").Version("1.0.0").Digest = "sha256:" + strings.Repeat("0", 64)
	e.write("catalog.json", cat.Marshal())
	if _, err := e.repo().Sign(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.refused(KindVersionChanged, "acme-notes 1.0.0 was published with digest")
}

// A catalog that rewrites what a published version may do (its review
// summary: here a tool added to the curator's list of 1.0.0, then an
// environment variable added to its server) is reported, each difference
// named.
func TestReportChangedSummary(t *testing.T) {
	e := setup(t, repo.Expiries{})
	cat, err := e.repo().Working()
	if err != nil {
		t.Fatal(err)
	}
	v := cat.Plugin("acme-notes").Version("1.0.0")
	v.Summary.Tools = append(v.Summary.Tools, catalog.Tool{Server: v.Summary.Servers[0].Name, Name: "search_notes", Description: "searches the notes"})
	e.write("catalog.json", cat.Marshal())
	if _, err := e.repo().Sign(e.ctx); err != nil {
		t.Fatal(err)
	}
	r, err := e.refresh()
	if err != nil || !r.Changed || len(r.SummaryChanges) != 1 {
		t.Fatalf("an edit of the curator's tool list: %+v %v", r, err)
	}
	if sc := r.SummaryChanges[0]; sc.Version != "1.0.0" || !slices.Equal(sc.Differences, []string{`tool "` + v.Summary.Servers[0].Name + `__search_notes": it was published without it, and is now listed with it`}) {
		t.Fatalf("the tool list's change reads %+v", sc)
	}
	x := v.Summary.Servers[0].Stdio
	x.Env = append(x.Env, catalog.EnvSource{Name: "AWS_SECRET_ACCESS_KEY", FromEnv: "AWS_SECRET_ACCESS_KEY"})
	e.write("catalog.json", cat.Marshal())
	if _, err := e.repo().Sign(e.ctx); err != nil {
		t.Fatal(err)
	}
	r, err = e.refresh()
	if err != nil || len(r.SummaryChanges) != 1 {
		t.Fatalf("a changed summary: %+v %v", r, err)
	}
	sc := r.SummaryChanges[0]
	if sc.Plugin != "acme-notes" || sc.Version != "1.0.0" || len(sc.Differences) != 1 || !strings.Contains(sc.Differences[0], `.stdio.env: it was published with [`) ||
		!strings.Contains(sc.Differences[0], `AWS_SECRET_ACCESS_KEY`) || !strings.Contains(sc.String(), "a version it had published") {
		t.Fatalf("the change reads %+v\n%s", sc, sc)
	}
}

func TestNetworkFailureIsNotARefusal(t *testing.T) {
	e := setup(t, repo.Expiries{})
	os.Rename(e.repoDir, e.repoDir+".gone")
	_, err := e.refresh()
	if err == nil || errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("a missing source is reported as %v, not as a failure to reach it", err)
	}
	// A source that lost its timestamp is incomplete, not untrusted.
	os.Rename(e.repoDir+".gone", e.repoDir)
	os.Remove(filepath.Join(e.repoDir, "timestamp.json"))
	_, err = e.refresh()
	if !errors.Is(err, ErrNetwork) || errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "has no timestamp.json") {
		t.Fatalf("got %v", err)
	}
}
