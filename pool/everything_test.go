//go:build unix

package pool

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/testkit"
)

// server-everything (npm, pinned in testdata/peers) over stdio, SSE and
// Streamable HTTP: list tools, call echo and get-sum, read a resource,
// get a prompt.
func TestServerEverything(t *testing.T) {
	dir := peers.Require(t)
	node, err := peers.Node22()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"stdio", "sse", "streamable-http"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t)
			var srv map[string]any
			switch mode {
			case "stdio":
				// Through the package's bin link, so that its npm tree is
				// the program's runtime prefix (docs/pool.md): confined, the
				// server reads nothing outside it.
				srv = map[string]any{"stdio": map[string]any{"command": "mcp-server-everything", "args": []string{"stdio"}}}
			default:
				port := freePort(t)
				arg, path := "sse", "/sse"
				if mode == "streamable-http" {
					arg, path = "streamableHttp", "/mcp"
				}
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				cmd := peers.Command(ctx, t, "server-everything", arg)
				cmd.Env = append(cmd.Env, fmt.Sprintf("PORT=%d", port))
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				waitListening(t, port)
				srv = remoteServer(fmt.Sprintf("http://127.0.0.1:%d%s", port, path), mode, nil)
			}
			f.plugin("everything", map[string]any{"ev": srv})
			p := f.open(func(o *Options) {
				o.BaseEnv = []string{"PATH=" + filepath.Join(dir, "node_modules", ".bin") + ":" + filepath.Dir(node) + ":/usr/bin:/bin", "HOME=" + f.home}
			})
			st := status(t, p, "everything__ev")
			if st.State != StateRunning {
				t.Fatalf("status %+v", st)
			}
			if st.Protocol != "2025-11-25" {
				t.Errorf("negotiated %s, want the legacy 2025-11-25 after the discover probe", st.Protocol)
			}
			names := toolNames(t, p)
			for _, want := range []string{"everything__ev__echo", "everything__ev__get-sum"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools %v lack %s", names, want)
				}
			}
			if got := callText(t, p, "everything__ev__echo", `{"message":"hello berth"}`); got != "Echo: hello berth" {
				t.Fatalf("echo: %q", got)
			}
			if got := callText(t, p, "everything__ev__get-sum", `{"a":2,"b":3}`); !strings.Contains(got, "5") {
				t.Fatalf("get-sum: %q", got)
			}
			ctx := context.Background()
			rr, err := p.ReadResource(ctx, "demo://resource/dynamic/text/1", allow)
			if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text == "" {
				t.Fatalf("resource: %+v %v", rr, err)
			}
			pr, err := p.GetPrompt(ctx, "everything__ev__simple-prompt", nil, allow)
			if err != nil || len(pr.Messages) == 0 {
				t.Fatalf("prompt: %+v %v", pr, err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, port int) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "server-everything to listen", func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}
