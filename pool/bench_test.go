//go:build unix

package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/latency"
	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/internal/testtree"
)

// BenchmarkDispatch compares pool.Call to a local Go echo server (stdio)
// with a bare go-sdk client session to the same server, in one run, the
// two calls alternating. The bundle has 1 file, or 10,000: the drift check
// at each dispatch must not grow with it (the DriftChecker's fsnotify fast
// path). Metrics: pool-p50-ns, bare-p50-ns and ratio (of the medians).
func BenchmarkDispatch(b *testing.B) {
	for _, files := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			f := newFixture(b)
			extra := map[string]string{}
			dir := f.bundleDir("bench", map[string]any{"echo": testServer("-tools", "echo")}, extra)
			if files > 1 {
				testtree.Generate(b, filepath.Join(dir, "tree"), files-2, 20<<20) // + berth.json + share/data.txt
			}
			f.install(dir)
			p := f.open(nil)
			ctx := context.Background()
			args := json.RawMessage(`{"text":"bench"}`)
			if _, err := p.Call(ctx, "bench__echo__echo", args, allow); err != nil {
				b.Fatal(err)
			}

			cmd := exec.Command(filepath.Join(f.bin, "berth-testserver"), "-tools", "echo")
			cmd.Env = f.options().BaseEnv
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "echo", Arguments: args}
			for range 50 { // warm both paths
				p.Call(ctx, "bench__echo__echo", args, allow)
				cs.CallTool(ctx, params)
			}
			var viaPool, bare latency.Recorder
			b.ResetTimer()
			viaPoolCall := func() {
				start := time.Now()
				if _, err := p.Call(ctx, "bench__echo__echo", args, allow); err != nil {
					b.Fatal(err)
				}
				viaPool.Add(time.Since(start))
			}
			bareCall := func() {
				start := time.Now()
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
				bare.Add(time.Since(start))
			}
			i := 0
			for b.Loop() {
				// Alternate which goes first, so neither profits from the
				// other having just woken the machine up.
				if i++; i%2 == 0 {
					viaPoolCall()
					bareCall()
				} else {
					bareCall()
					viaPoolCall()
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(viaPool.Median().Nanoseconds()), "pool-p50-ns")
			b.ReportMetric(float64(bare.Median().Nanoseconds()), "bare-p50-ns")
			b.ReportMetric(float64(viaPool.Median())/float64(bare.Median()), "ratio")
		})
	}
}

// useBuiltServer replaces the fixture's berth-testserver (this test
// binary, whose many packages take a while to initialize) with the small
// command built from pool/internal/testserver, so that the cold start
// measures berth and go-sdk rather than the test binary's init.
func useBuiltServer(b *testing.B, f *fixture) {
	dir := b.TempDir()
	out := filepath.Join(dir, "berth-testserver")
	if err := testkit.GoBuild(dir, "github.com/berth-mcp/berth/pool/internal/testserver/berth-testserver"); err != nil {
		b.Logf("%v; using the test binary", err)
		return
	}
	link := filepath.Join(f.bin, "berth-testserver")
	if err := os.Remove(link); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(out, link); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkColdStart measures the time from Open to every server running
// (WaitStarted), for a plugin with 1 server and one with 20 servers of the
// same bundle started together, alternating in one run. The surfaces are
// pinned before (the steady state: pinning happens once per enable).
// Metrics: one-p50-ms, twenty-p50-ms and ratio (of the medians).
func BenchmarkColdStart(b *testing.B) {
	f := newFixture(b)
	useBuiltServer(b, f)
	ws := map[int]string{}
	for _, n := range []int{1, 20} {
		servers := map[string]any{}
		for i := range n {
			servers[fmt.Sprintf("s%02d", i)] = testServer("-tools", "echo")
		}
		dir, err := Workspace(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		f.ws = dir
		ws[n] = dir
		f.plugin(fmt.Sprintf("cold%d", n), servers)
	}
	ctx := context.Background()
	var cpu [21]time.Duration // CPU (berth and its children) per cold start of n servers
	start := func(n int) time.Duration {
		before := cpuTime()
		t0 := time.Now()
		p, err := Open(ctx, f.store, ws[n], f.options())
		if err != nil {
			b.Fatal(err)
		}
		if err := p.WaitStarted(ctx); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		for _, s := range p.Status() {
			if s.State != StateRunning {
				b.Fatalf("%s is %s: %s", s.ID, s.State, s.LastError)
			}
		}
		p.Close()                    // reaps the children, so their CPU counts
		cpu[n] += cpuTime() - before // includes Close: an upper bound
		return d
	}
	start(1) // pin the surfaces
	start(20)
	var one, twenty latency.Recorder
	b.ResetTimer()
	for b.Loop() {
		one.Add(start(1))
		twenty.Add(start(20))
	}
	b.StopTimer()
	b.ReportMetric(float64(one.Median().Microseconds())/1000, "one-p50-ms")
	b.ReportMetric(float64(twenty.Median().Microseconds())/1000, "twenty-p50-ms")
	b.ReportMetric(float64(twenty.Median())/float64(one.Median()), "ratio")
	// What 2 cores allow at best: the CPU of 20 starts spread over the
	// cores, against the wall time of one start.
	perStart := cpu[20] / time.Duration(20*b.N)
	b.ReportMetric(float64(perStart.Microseconds())/1000, "cpu-per-server-ms")
	b.ReportMetric(float64(20*perStart/time.Duration(runtime.NumCPU()))/float64(one.Median()), "cpu-bound-ratio")
}

// cpuTime is the user and system CPU time of this process and of its
// waited-for children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
