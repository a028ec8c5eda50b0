package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/testtree"
	"github.com/berth-mcp/berth/trust"
)

// BenchmarkVerifySnapshot re-verifies one trusted plugin whose snapshot is
// 10,000 files / 100 MB (re-hash against the recorded digest, then the
// signature), next to sha256sum over the same files in the same run: the
// physical limit. Compare ns/op of the two sub-benchmarks.
func BenchmarkVerifySnapshot(b *testing.B) {
	src := b.TempDir()
	n := testtree.Generate(b, src, 10_000, 100<<20)
	os.WriteFile(filepath.Join(src, "berth.json"), []byte(`{"manifestVersion":1,"name":"big","version":"1.0.0","description":"bench","nativeTools":{"t":{"executable":"${bundle}/d00/f00000.bin"}}}`), 0o644)
	bd, err := bundle.Open(context.Background(), src, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bd.Close()
	p, _ := NewPaths(b.TempDir())
	s := Open(p, nil)
	priv, pub, _ := trust.GenerateKey()
	sig, err := trust.Sign(context.Background(), bd.Listing().Bytes(), priv)
	if err != nil {
		b.Fatal(err)
	}
	signer, _ := trust.NewKeySigner("bench", pub, nil)
	v, _ := trust.NewVerifier([]trust.Signer{signer}, nil)
	res, err := v.Verify(context.Background(), bd.Listing().Bytes(), sig)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := s.record(context.Background(), &verified{bundle: bd, signature: sig, result: res, source: src, reviewHash: "x"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("berth-verify", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			if rep := s.Verify(context.Background(), tr.Record, v); rep.Err != nil {
				b.Fatal(rep.Err)
			}
		}
	})
	b.Run("sha256sum", func(b *testing.B) { testtree.Sha256sum(b, p.Snapshot(mustDigest(tr.Record.Digest)), n) })
}
