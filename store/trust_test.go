package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/sigtest"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/trust"
)

// keyPair is a publisher's key: its private PEM and its policy entry.
type keyPair struct {
	priv   []byte
	signer trust.Signer
}

func newKey(t *testing.T, name string) keyPair {
	t.Helper()
	priv, pub, err := trust.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := trust.NewKeySigner(name, pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{priv, s}
}

// signedCopy copies the good bundle to a fresh directory and writes its
// signature by k beside it, where Trust looks by default.
func signedCopy(t *testing.T, k keyPair) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme-notes")
	copyDir(t, goodBundle, dir)
	b := openBundle(t, dir)
	sig, err := trust.Sign(context.Background(), b.Listing().Bytes(), k.priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(DefaultSignatureFile(dir), sig, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// nothingWritten asserts a refused Trust left no record, no snapshot and
// the generation where it was.
func nothingWritten(t *testing.T, s *Store, generation uint64) {
	t.Helper()
	if recs, err := s.Records(); err != nil || len(recs) != 0 {
		t.Fatalf("records after a refusal: %v %v", recs, err)
	}
	if ents, _ := os.ReadDir(s.Paths().Store()); len(ents) != 0 {
		t.Fatalf("the store holds %d entries after a refusal", len(ents))
	}
	if st, _ := s.State(); st.Generation != generation {
		t.Fatalf("generation %d after a refusal, want %d", st.Generation, generation)
	}
}

// TestTrustPipeline: Trust verifies against the policy in config.json,
// reviews, asks Confirm with what it verified, and records exactly that.
func TestTrustPipeline(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	if _, err := s.AddSigner(ctx, acme.signer); err != nil {
		t.Fatal(err)
	}
	dir := signedCopy(t, acme)
	var seen *Candidate
	res, err := s.Trust(ctx, dir, &TrustOptions{Confirm: func(c *Candidate) error {
		seen = c
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.Signer == nil || seen.Signer.Name != "acme" || seen.Signer.Fingerprint != acme.signer.Fingerprint ||
		seen.Verification == nil || seen.Review.Name != "acme-notes" || seen.Bundle.Digest != res.Record.Digest {
		t.Fatalf("Confirm saw %+v", seen)
	}
	want := review.New(seen.Bundle).Hash()
	r := res.Record
	if r.ReviewHash != want || r.Signer.Name != "acme" || r.Unsigned || r.Source != dir || res.Review != seen.Review {
		t.Fatalf("record %+v, want review hash %s from %s", r, want, dir)
	}
	if fi, err := os.Stat(filepath.Join(res.Snapshot, "bin", "notes-server")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("staged snapshot: %v %v", fi, err)
	}
	stored, _ := os.ReadFile(s.Paths().Signature("acme-notes", "1.4.2"))
	given, _ := os.ReadFile(DefaultSignatureFile(dir))
	if string(stored) != string(given) {
		t.Fatal("the stored signature is not the verified one")
	}
	v, _ := trust.NewVerifier([]trust.Signer{acme.signer}, nil)
	if rep := s.Verify(ctx, r, v); rep.Err != nil {
		t.Fatalf("verify: %v", rep.Err)
	}
	// The signature can be given in memory, and the source named.
	again, err := s.Trust(ctx, dir, &TrustOptions{Signature: given, Source: "https://catalog.example/acme-notes"})
	if err != nil || !again.Already {
		t.Fatalf("trust again: %+v %v", again, err)
	}
}

func TestTrustRefusesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	acme := newKey(t, "acme")
	dir := signedCopy(t, acme)
	b := openBundle(t, dir)
	other, _ := ParseDigest("sha256:" + strings.Repeat("0", 64))
	declined := errors.New("declined")
	for _, tc := range []struct {
		name    string
		signers []trust.Signer
		opts    *TrustOptions
		check   func(error) bool
	}{
		{"no signer", nil, nil, func(err error) bool { return errors.As(err, new(*NoSignerError)) }},
		{"not the policy's key", []trust.Signer{newKey(t, "other").signer}, nil, func(err error) bool {
			return errors.As(err, new(*trust.VerificationError)) && strings.HasPrefix(err.Error(), dir+": ")
		}},
		{"no signature file", []trust.Signer{acme.signer}, &TrustOptions{SignatureFile: filepath.Join(t.TempDir(), "none.json")}, func(err error) bool {
			var e *SignatureMissingError
			return errors.As(err, &e) && errors.Is(err, os.ErrNotExist)
		}},
		{"pinned digest differs", []trust.Signer{acme.signer}, &TrustOptions{Digest: other}, func(err error) bool {
			var e *DigestMismatchError
			return errors.As(err, &e) && e.Got == b.Digest && e.Want == other.String()
		}},
		{"unsigned without a digest", nil, &TrustOptions{UnsignedUnsafe: true}, func(err error) bool { return strings.Contains(err.Error(), "TrustOptions.Digest") }},
		{"confirm declines", []trust.Signer{acme.signer}, &TrustOptions{Confirm: func(*Candidate) error { return declined }}, func(err error) bool { return err == declined }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			for _, sg := range tc.signers {
				if _, err := s.AddSigner(ctx, sg); err != nil {
					t.Fatal(err)
				}
			}
			gen := uint64(len(tc.signers))
			_, err := s.Trust(ctx, dir, tc.opts)
			if err == nil || !tc.check(err) {
				t.Fatalf("Trust: %v", err)
			}
			if err != declined && !errors.Is(err, trust.ErrUntrusted) {
				t.Fatalf("%v does not wrap trust.ErrUntrusted", err)
			}
			nothingWritten(t, s, gen)
		})
	}
}

// TestTrustUnsignedAndSignerChange: an unsigned trust needs the pinned
// digest and is recorded as unsigned; a later version from a signer is a
// signer change, refused unless allowed.
func TestTrustUnsignedAndSignerChange(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	acme := newKey(t, "acme")
	if _, err := s.AddSigner(ctx, acme.signer); err != nil {
		t.Fatal(err)
	}
	dir := signedCopy(t, acme)
	d, _ := ParseDigest(openBundle(t, dir).Digest)
	res, err := s.Trust(ctx, dir, &TrustOptions{UnsignedUnsafe: true, Digest: d})
	if err != nil || !res.Record.Unsigned || res.Record.Signer != nil {
		t.Fatalf("unsigned trust: %+v %v", res, err)
	}
	if _, err := os.Stat(s.Paths().Signature("acme-notes", "1.4.2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unsigned trust stored a signature: %v", err)
	}
	m, _ := os.ReadFile(filepath.Join(dir, "berth.json"))
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(strings.Replace(string(m), `"1.4.2"`, `"1.5.0"`, 1)), 0o644)
	b := openBundle(t, dir)
	sig, _ := trust.Sign(ctx, b.Listing().Bytes(), acme.priv)
	var sc *SignerChangeError
	if _, err := s.Trust(ctx, dir, &TrustOptions{Signature: sig}); !errors.As(err, &sc) || sc.Trusted != nil || sc.Offered.Name != "acme" || sc.Version != "1.4.2" {
		t.Fatalf("signer change: %v", err)
	}
	if res, err := s.Trust(ctx, dir, &TrustOptions{Signature: sig, AllowSignerChange: true}); err != nil || res.Record.Signer.Name != "acme" {
		t.Fatalf("allowed signer change: %+v %v", res, err)
	}
}

// TestSigners: an identity signer's trusted root is copied under the
// root and named by the stored signer; a second signer of the same name is
// refused before anything is written; removing one removes its copy.
func TestSigners(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	vs := sigtest.NewVirtualSigstore(t)
	id, err := trust.NewIdentitySigner("ci", "https://token.actions.githubusercontent.com", "ci@acme.example", "", vs.RootPath)
	if err != nil {
		t.Fatal(err)
	}
	added, err := s.AddSigner(ctx, id)
	kept := s.Paths().TrustedRoot("ci")
	if err != nil || added.TrustedRoot != kept {
		t.Fatalf("AddSigner: %+v %v", added, err)
	}
	if a, _ := os.ReadFile(kept); len(a) == 0 {
		t.Fatal("no copy of the trusted root")
	}
	signers, err := s.Signers()
	if err != nil || len(signers) != 1 || signers[0].TrustedRoot != kept {
		t.Fatalf("Signers: %+v %v", signers, err)
	}
	key := newKey(t, "ci")
	if _, err := s.AddSigner(ctx, key.signer); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("a second signer named ci: %v", err)
	}
	if signers, _ := s.Signers(); len(signers) != 1 || signers[0].Kind != trust.KindIdentity {
		t.Fatalf("the refused signer changed the policy: %+v", signers)
	}
	if _, err := s.RemoveSigner(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the trusted root copy outlived its signer: %v", err)
	}
	if _, err := s.RemoveSigner(ctx, "ci"); err == nil {
		t.Fatal("removed a signer that is not there")
	}
}

// TestTrustStageProgress: TrustOptions.StageProgress sees the copy into
// the store from 0 to the bundle's whole size, never going back; trusting
// the same bundle again reuses the snapshot and copies nothing.
func TestTrustStageProgress(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	dir := filepath.Join(t.TempDir(), "big")
	if out, err := exec.Command("cp", "-a", goodBundle, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.bin"), bytes.Repeat([]byte("x"), 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	b := openBundle(t, dir)
	var want int64
	for _, e := range b.Listing().Entries {
		if e.Mode != bundle.ModeSymlink {
			want += e.Size
		}
	}
	d, _ := ParseDigest(b.Digest)
	var calls [][2]int64
	progress := func(copied, total int64) { calls = append(calls, [2]int64{copied, total}) }
	if _, err := s.Trust(ctx, dir, &TrustOptions{UnsignedUnsafe: true, Digest: d, StageProgress: progress}); err != nil {
		t.Fatal(err)
	}
	if len(calls) < 3 || calls[0] != [2]int64{0, want} || calls[len(calls)-1] != [2]int64{want, want} {
		t.Fatalf("%d calls, first %v, last %v; want from 0 to %d of %d", len(calls), calls[0], calls[len(calls)-1], want, want)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] || calls[i][1] != want {
			t.Fatalf("call %d went from %v to %v", i, calls[i-1], calls[i])
		}
	}
	calls = nil
	if res, err := s.Trust(ctx, dir, &TrustOptions{UnsignedUnsafe: true, Digest: d, StageProgress: progress}); err != nil || !res.Already || len(calls) != 0 {
		t.Fatalf("trusting again: %+v %v, %d progress calls", res, err, len(calls))
	}
}
