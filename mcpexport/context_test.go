package mcpexport

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/testkit/recorded"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// replayName is the program name under which the test binary replays
// recordings: replayserver.Main, the test plugin of the context figure.
const replayName = "berth-replay-upstream"

// MinContextTools is the fewest recorded real tools the context figure
// is measured over (issue 23).
const MinContextTools = 150

// MaxLazyShare is the aim: lazy mode's tools/list at most this share of
// full mode's.
const MaxLazyShare = 0.05

// contextFigures are the bytes of the tools/list result (the JSON-RPC
// result object, every page) that a go-sdk client reads from berth serve
// offering the recorded real tools, in full mode and in lazy mode.
type contextFigures struct {
	Tools      int // tools listed in full mode
	Full, Lazy int // bytes of the tools/list results
	// Measured is MeasureView's figure for full mode: the entries alone.
	Measured ViewCost
}

// measureRecorded enables one plugin per recording of
// testdata/tools-recorded, each with one stdio server that replays it
// (replayserver as replayName, the recording copied into the bundle),
// and lists the tools through berth in full and in lazy mode.
func measureRecorded(t testing.TB) contextFigures {
	t.Helper()
	ctx := context.Background()
	recs, err := recorded.Load(recorded.Dir())
	if err != nil {
		t.Fatal(err)
	}
	home, bin, ws := t.TempDir(), t.TempDir(), t.TempDir()
	exe, _ := os.Executable()
	if err := os.Symlink(exe, filepath.Join(bin, replayName)); err != nil {
		t.Fatal(err)
	}
	paths, _ := store.NewPaths(home)
	st := store.Open(paths, nil)
	for _, r := range recs {
		dir := filepath.Join(t.TempDir(), r.Plugin)
		os.MkdirAll(dir, 0o755)
		data, err := os.ReadFile(filepath.Join(recorded.Dir(), r.File))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, r.File), data, 0o644)
		manifest, _ := json.Marshal(map[string]any{
			"manifestVersion": 1, "name": r.Plugin, "version": "1.0.0", "description": "replays " + r.Package + "@" + r.Version,
			"mcpServers": map[string]any{r.Server: map[string]any{"stdio": map[string]any{"command": replayName, "args": []string{"-dir", ".", r.File}}}},
		})
		os.WriteFile(filepath.Join(dir, "berth.json"), manifest, 0o644)
		b, err := bundle.Open(ctx, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		digest, _ := store.ParseDigest(b.Digest)
		b.Close()
		if _, err := st.Trust(ctx, dir, &store.TrustOptions{UnsignedUnsafe: true, Digest: digest}); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Enable(ctx, st, ws, r.Plugin, ""); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	p, err := pool.Open(ctx, st, ws, &pool.Options{BaseEnv: []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	list := func(view *View) (int, int) {
		srv := New(p, &Options{View: view})
		defer srv.Close()
		results, _, tools := listToolsWire(t, srv.ms)
		n := 0
		for _, r := range results {
			n += len(r)
		}
		return n, len(tools)
	}
	var f contextFigures
	f.Full, f.Tools = list(nil)
	lazy, listed := list(&View{Mode: store.ToolsLazy})
	if listed != len(MetaTools()) {
		t.Fatalf("lazy mode listed %d tools, want the %d meta-tools", listed, len(MetaTools()))
	}
	f.Lazy = lazy
	tools, err := p.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.Measured = MeasureView(tools, nil, store.ToolsFull, nil)
	return f
}

// TestContextLazyVersusFull is the context figure of issue 23: berth
// serve offering at least MinContextTools real tools recorded from npm
// servers lists, in lazy mode, at most MaxLazyShare of the bytes it lists
// in full mode. The figures are in bench/README.md (§Context).
func TestContextLazyVersusFull(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server per recording")
	}
	f := measureRecorded(t)
	if f.Tools < MinContextTools {
		t.Fatalf("berth listed %d recorded tools, want at least %d", f.Tools, MinContextTools)
	}
	share := float64(f.Lazy) / float64(f.Full)
	t.Logf("%d recorded tools: tools/list result %d bytes in full mode (~%d tokens), %d bytes in lazy mode (~%d tokens): %.2f %%",
		f.Tools, f.Full, EstimateTokens(f.Full), f.Lazy, EstimateTokens(f.Lazy), 100*share)
	t.Logf("the entries alone (berth tools, berth status): %d bytes", f.Measured.Offered.Bytes)
	if share > MaxLazyShare {
		t.Errorf("lazy mode lists %d bytes, %.2f %% of full mode's %d: above the aim of %.0f %%", f.Lazy, 100*share, f.Full, 100*MaxLazyShare)
	}
	// The measure of berth tools and status is the entries of the same
	// listing: all but the result's envelope and separators.
	if f.Measured.Offered.Tools != f.Tools || f.Measured.Offered.Bytes >= f.Full || f.Full-f.Measured.Offered.Bytes > f.Tools+512 {
		t.Errorf("MeasureView says %+v of the %d tools listed in %d bytes", f.Measured.Offered, f.Tools, f.Full)
	}
}

// BenchmarkContextListing reports the context figure: the bytes of the
// tools/list result in full and in lazy mode over the recorded real
// tools, and lazy's share of full, in percent (bench/README.md §Context).
// The time per operation is the setup's and means nothing.
func BenchmarkContextListing(b *testing.B) {
	var f contextFigures
	for b.Loop() {
		f = measureRecorded(b)
	}
	b.ReportMetric(float64(f.Tools), "tools")
	b.ReportMetric(float64(f.Full), "full-bytes")
	b.ReportMetric(float64(f.Lazy), "lazy-bytes")
	b.ReportMetric(100*float64(f.Lazy)/float64(f.Full), "lazy-%")
	b.ReportMetric(float64(EstimateTokens(f.Full)), "full-tokens")
	b.ReportMetric(float64(EstimateTokens(f.Lazy)), "lazy-tokens")
}
