package mcpexport

import (
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/latency"
)

// BenchmarkRelayProgressToken measures what a progress token adds to a
// call through berth (a go-sdk client in memory, berth, the testrelay
// plugin server over stdio, on a legacy connection and a 2026-07-28 one),
// the three kinds of call alternating in one run:
//
//   - none: tools/call of "progress" {n: 3} without a progress token (the
//     server sends no progress);
//   - progress: the same call with a token: the server sends 3 progress
//     notifications, the last reaching its total, then its result;
//   - silent: a call with a token to a tool that sends no progress
//     ("level").
//
// Metrics: the median of each (none-p50-us, progress-p50-us,
// silent-p50-us) and what the token adds to it (progress-added-us,
// silent-added-us: the median less none's). The progress drain this
// replaced kept a call with a token open up to 50 ms after its result
// when no progress reached its total (silent), or until the last one was
// handled.
func BenchmarkRelayProgressToken(b *testing.B) {
	for _, legacy := range []bool{true, false} {
		name := "upstream=2026-07-28"
		if legacy {
			name = "upstream=2025-11-25"
		}
		b.Run(name, func(b *testing.B) {
			e := newRelayEnv(b, legacy)
			rc := e.client("2025-11-25", clientCaps{})
			n3 := map[string]any{"n": 3}
			kinds := []struct {
				rec  *latency.Recorder
				call func()
			}{
				{&latency.Recorder{}, func() { rc.call(b, "progress", n3, nil) }},
				{&latency.Recorder{}, func() { rc.call(b, "progress", n3, "bench") }},
				{&latency.Recorder{}, func() { rc.call(b, "level", nil, "bench") }},
			}
			for range 20 { // warm every path
				for _, k := range kinds {
					k.call()
				}
			}
			b.ResetTimer()
			i := 0
			for b.Loop() {
				// Rotate which goes first.
				for j := range kinds {
					k := kinds[(i+j)%len(kinds)]
					start := time.Now()
					k.call()
					k.rec.Add(time.Since(start))
				}
				i++
			}
			b.StopTimer()
			us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
			none, progress, silent := kinds[0].rec.Median(), kinds[1].rec.Median(), kinds[2].rec.Median()
			b.ReportMetric(us(none), "none-p50-us")
			b.ReportMetric(us(progress), "progress-p50-us")
			b.ReportMetric(us(silent), "silent-p50-us")
			b.ReportMetric(us(progress-none), "progress-added-us")
			b.ReportMetric(us(silent-none), "silent-added-us")
			b.ReportMetric(0, "ns/op")
		})
	}
}
