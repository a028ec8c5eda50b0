package review

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	_ "github.com/berth-mcp/berth/bundle/formats"

	"github.com/berth-mcp/berth/bundle"
)

const importGood = "../testdata/import/good"

// TestGoldenImportReviews: the review of every good source of another
// format (the real .mcpb files among them, signed and unsigned) is its
// golden file in testdata/import/golden.
func TestGoldenImportReviews(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the goldens show what the importers chose for linux (platform_overrides, ${/})")
	}
	srcs, _ := filepath.Glob(filepath.Join(importGood, "*"))
	if len(srcs) < 5 {
		t.Fatalf("%d good imports", len(srcs))
	}
	for _, src := range srcs {
		name := filepath.Base(src)
		t.Run(name, func(t *testing.T) {
			b, err := bundle.Open(context.Background(), src, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			d := New(b)
			base := filepath.Join(importGood, "..", "golden", name)
			checkGolden(t, base, d)
		})
	}
}

// TestImportDisclosesSameAuthority: the bundle berth import writes is
// reviewed exactly as its source, but for the notes on how the source was
// read and the MCPB signature block of the .mcpb file; the review hashes
// (kept in trust records) are equal.
func TestImportDisclosesSameAuthority(t *testing.T) {
	ctx := context.Background()
	srcs, _ := filepath.Glob(filepath.Join(importGood, "*"))
	for _, src := range srcs {
		t.Run(filepath.Base(src), func(t *testing.T) {
			b, err := bundle.Open(ctx, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			out := filepath.Join(t.TempDir(), "out")
			if err := b.WriteTree(ctx, out); err != nil {
				t.Fatal(err)
			}
			w, err := bundle.Open(ctx, out, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			ds, dw := New(b), New(w)
			if ds.Hash() != dw.Hash() {
				t.Errorf("review hashes differ: %s %s", ds.Hash(), dw.Hash())
			}
			ds.Notes, ds.MCPBSignature = nil, nil
			dw.Notes = nil
			// Written out, importedFrom is the bundle's claim; converted
			// here, berth's own finding.
			if ds.ImportedFromClaimed || !dw.ImportedFromClaimed {
				t.Errorf("importedFromClaimed: source %v, written bundle %v; want false, true", ds.ImportedFromClaimed, dw.ImportedFromClaimed)
			}
			dw.ImportedFromClaimed = false
			a, _ := json.Marshal(ds)
			c, _ := json.Marshal(dw)
			if !bytes.Equal(a, c) {
				t.Errorf("reviews differ:\n%s\n%s", a, c)
			}
			if len(ds.Servers) == 0 || ds.ImportedFrom == nil {
				t.Errorf("nothing disclosed: %s", a)
			}
		})
	}
}

// TestImportReviewsShowNoSecret: a sensitive input's default is never
// shown, nor the values of variables the import reads.
func TestImportReviewsShowNoSecret(t *testing.T) {
	const secret = "s3cr3t-value-that-must-never-print"
	for _, v := range []string{"ACME_FILES_API_KEY", "DB_URL", "ACME_TOKEN", "ACME_TEAM", "ACME_DB_TOKEN", "TINY_TOOLS_TOKEN", "IO_GITHUB_ACME_WEATHER_TOKEN"} {
		t.Setenv(v, secret)
	}
	srcs, _ := filepath.Glob(filepath.Join(importGood, "*"))
	for _, src := range srcs {
		b, err := bundle.Open(context.Background(), src, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := New(b)
		for _, out := range [][]byte{d.JSON(), text(t, d)} {
			// mcpb-node's sensitive api_key has the default
			// "never-shown".
			if strings.Contains(string(out), secret) || strings.Contains(string(out), "never-shown") {
				t.Fatalf("%s: the review shows a secret", src)
			}
		}
		b.Close()
	}
}
