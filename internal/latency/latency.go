// Package latency records per-operation durations in benchmarks and
// reports their median and tail, which mean ns/op hides on noisy machines.
package latency

import (
	"slices"
	"testing"
	"time"
)

// Recorder collects durations. It is not safe for concurrent use.
type Recorder struct {
	d []time.Duration
}

// Time runs f and records how long it took.
func (r *Recorder) Time(f func()) {
	start := time.Now()
	f()
	r.d = append(r.d, time.Since(start))
}

// Add records one duration.
func (r *Recorder) Add(d time.Duration) { r.d = append(r.d, d) }

// Quantile returns the q-quantile (0..1) of what was recorded.
func (r *Recorder) Quantile(q float64) time.Duration {
	if len(r.d) == 0 {
		return 0
	}
	s := slices.Clone(r.d)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

// Median is the 0.5-quantile.
func (r *Recorder) Median() time.Duration { return r.Quantile(0.5) }

// Report adds p50-ns and p99-ns metrics to the benchmark.
func (r *Recorder) Report(b *testing.B) {
	b.ReportMetric(float64(r.Median().Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(r.Quantile(0.99).Nanoseconds()), "p99-ns")
}
