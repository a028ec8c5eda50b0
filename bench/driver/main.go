// Command driver is the load driver of bench/: it connects W sessions to
// an MCP server over Streamable HTTP, SSE or stdio, pins the protocol
// version so every path takes the same era, calls one tool as fast as it
// answers for a fixed time, and prints requests/s and latency quantiles as
// one JSON line.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bench/internal/benchfmt"
)

func main() {
	var (
		name     = flag.String("name", "run", "label of this run in the output")
		url      = flag.String("url", "", "Streamable HTTP endpoint (…/mcp) or, with -sse, the SSE endpoint")
		sse      = flag.Bool("sse", false, "use the legacy SSE transport")
		command  = flag.String("cmd", "", "stdio: the command to start (split on spaces)")
		tool     = flag.String("tool", "echo", "tool to call")
		args     = flag.String("args", `{"text":"hello"}`, "JSON arguments")
		workers  = flag.Int("workers", 8, "concurrent sessions")
		duration = flag.Duration("duration", 5*time.Second, "how long to run")
		warmup   = flag.Duration("warmup", time.Second, "calls before measuring")
		proto    = flag.String("protocol", "2025-11-25", "protocol version to pin")
		token    = flag.String("token", "", "bearer token for the HTTP transports")
		tokenF   = flag.String("token-file", "", "file holding the bearer token (berth serve's $BERTH_HOME/serve.token), read at the first connection")
		wait     = flag.Duration("wait", 0, "retry the first connection this long (a server that is still starting)")
	)
	flag.Parse()
	var a map[string]any
	if err := json.Unmarshal([]byte(*args), &a); err != nil {
		log.Fatalf("-args: %v", err)
	}
	ctx := context.Background()
	connect := func() (*mcp.ClientSession, error) {
		if *tokenF != "" && *token == "" {
			// berth serve makes the file as it starts: a missing file is a
			// server still starting (see -wait).
			data, err := os.ReadFile(*tokenF)
			if err != nil {
				return nil, err
			}
			*token = strings.TrimSpace(string(data))
		}
		var t mcp.Transport
		switch {
		case *command != "":
			parts := strings.Fields(*command)
			cmd := exec.Command(parts[0], parts[1:]...)
			cmd.Stderr = os.Stderr
			t = &mcp.CommandTransport{Command: cmd}
		case *sse:
			t = &mcp.SSEClientTransport{Endpoint: *url, HTTPClient: httpClient(*token)}
		default:
			t = &mcp.StreamableClientTransport{Endpoint: *url, HTTPClient: httpClient(*token), DisableStandaloneSSE: true}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "bench-driver", Version: "1"}, nil)
		return c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: *proto})
	}
	sessions := make([]*mcp.ClientSession, *workers)
	for i := range sessions {
		cs, err := connect()
		for until := time.Now().Add(*wait); err != nil && i == 0 && time.Now().Before(until); {
			time.Sleep(100 * time.Millisecond)
			cs, err = connect()
		}
		if err != nil {
			log.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	var total atomic.Int64
	call := func(cs *mcp.ClientSession) error {
		total.Add(1)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: *tool, Arguments: a})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		return err
	}
	// Warm up every session.
	for end := time.Now().Add(*warmup); time.Now().Before(end); {
		for _, cs := range sessions {
			if err := call(cs); err != nil {
				log.Fatalf("warm-up call: %v", err)
			}
		}
	}
	var (
		mu     sync.Mutex
		lat    []time.Duration
		errs   int
		wg     sync.WaitGroup
		start  = time.Now()
		finish = start.Add(*duration)
	)
	for _, cs := range sessions {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for time.Now().Before(finish) {
				t0 := time.Now()
				if err := call(cs); err != nil {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	slices.Sort(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds())
	}
	out, _ := json.Marshal(benchfmt.Result{Name: *name, Workers: *workers, Requests: len(lat), Errors: errs, Seconds: elapsed, RPS: float64(len(lat)) / elapsed, P50us: q(0.5), P99us: q(0.99), TotalCalls: total.Load(), ClientCPU: cpuSeconds()})
	fmt.Println(string(out))
}
