package sandbox

import (
	"bufio"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// echoServer is the probe's echo mode started under p (nil: unconfined),
// with its pipes.
type echoServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

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
		l, err := Wrap(cmd, p, nil)
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
	return map[string]*Policy{"unconfined": nil, "open": p(NetworkOpen), "none": p(NetworkNone), "hosts": p(NetworkHosts)}
}

// BenchmarkStart is the start-up cost of confinement: start the echo server,
// one round trip (it is up and answering), stop it. It reports the median
// per start in ms-median alongside the mean ns/op.
func BenchmarkStart(b *testing.B) {
	for _, name := range []string{"unconfined", "open", "none", "hosts"} {
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
