package sandbox

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// echoServer is the probe's echo mode started under p (nil: unconfined),
// with its pipes.
type echoServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// benchLauncher is the launcher the benchmarks use: "" (this test binary)
// or the berth binary BenchmarkStartBerth builds.
var benchLauncher string

func startEcho(b *testing.B, p *Policy) *echoServer {
	cmd := exec.Command(probePath(), "echo")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if p == nil {
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
	} else {
		l, err := Wrap(cmd, p, &Options{Launcher: benchLauncher})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := l.Started(cmd.Start())
		if err != nil {
			b.Fatal(err)
		}
		if ln != nil {
			defer ln.Close()
		}
	}
	return &echoServer{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

func (s *echoServer) call(b *testing.B) {
	if _, err := io.WriteString(s.in, "ping\n"); err != nil {
		b.Fatal(err)
	}
	if line, err := s.out.ReadString('\n'); err != nil || line != "ping\n" {
		b.Fatalf("echo: %q %v", line, err)
	}
}

func (s *echoServer) stop(b *testing.B) {
	s.in.Close()
	if err := s.cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// benchPolicies are the same server unconfined and under each network mode.
func benchPolicies(b *testing.B) map[string]*Policy {
	ws := b.TempDir()
	p := func(mode string) *Policy {
		return &Policy{Exec: []string{probeDir}, Write: []string{ws}, Network: mode}
	}
	Probe() // cached before any timing
	git := filepath.Join(ws, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		b.Fatal(err)
	}
	ro := func(mode string) *Policy {
		q := p(mode)
		q.ReadOnly = []string{git} // the default profile's workspace .git
		return q
	}
	return map[string]*Policy{"unconfined": nil, "open": p(NetworkOpen), "none": p(NetworkNone), "hosts": p(NetworkHosts),
		"open-git": ro(NetworkOpen), "hosts-git": ro(NetworkHosts)}
}

// BenchmarkStartBerth is BenchmarkStart with the berth binary as the
// launcher, as berth runs it: its package initialisation is part of the
// cost.
func BenchmarkStartBerth(b *testing.B) {
	dir := b.TempDir()
	benchLauncher = testkit.Program(b, dir, "github.com/berth-mcp/berth/cmd/berth")
	defer func() { benchLauncher = "" }()
	BenchmarkStart(b)
}

// BenchmarkStart is the start-up cost of confinement: start the echo server,
// one round trip (it is up and answering), stop it. It reports the median
// per start in ms-median alongside the mean ns/op.
func BenchmarkStart(b *testing.B) {
	for _, name := range []string{"unconfined", "open", "none", "hosts", "open-git", "hosts-git"} {
		p := benchPolicies(b)[name]
		b.Run(name, func(b *testing.B) {
			var d []time.Duration
			for b.Loop() {
				t0 := time.Now()
				s := startEcho(b, p)
				s.call(b)
				d = append(d, time.Since(t0))
				s.stop(b)
			}
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "ms-median")
		})
	}
}

// BenchmarkCall is the per-call overhead: one line round trip to a running
// server.
func BenchmarkCall(b *testing.B) {
	for _, name := range []string{"unconfined", "open", "hosts"} {
		p := benchPolicies(b)[name]
		b.Run(name, func(b *testing.B) {
			s := startEcho(b, p)
			defer s.stop(b)
			for b.Loop() {
				s.call(b)
			}
		})
	}
}
