package mcpexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestNoListChangedWhenNothingChanged: a client that connects while the
// pool's servers are still starting, and lists, gets no
// notifications/tools/list_changed afterwards: the catalog it was shown
// is the one the servers' first start made. (berth serve over stdio sent
// one about 0.9 s after every connect.)
func TestNoListChangedWhenNothingChanged(t *testing.T) {
	for _, proto := range []string{legacy, ""} {
		t.Run("proto="+proto, func(t *testing.T) {
			e := newEnv(t, nil, store.PolicyRule{Pattern: echoTool, Action: "allow"})
			changed := make(chan string, 10)
			ctx := context.Background()
			ct, st := mcp.NewInMemoryTransports()
			if _, err := e.srv.Connect(ctx, st); err != nil {
				t.Fatal(err)
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { changed <- "tools" },
				PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { changed <- "prompts" },
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- "resources" },
			})
			cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if names := toolNames(t, cs); !slices.Contains(names, echoTool) {
				t.Fatalf("tools %v", names)
			}
			select {
			case what := <-changed:
				t.Fatalf("a %s list_changed notification, though nothing changed since the client listed", what)
			case <-time.After(2 * time.Second):
			}
			if got, _ := callTool(t, cs, echoTool, "hi"); got != "echo: hi" {
				t.Fatalf("echo: %q", got)
			}
		})
	}
}

// TestNoWarningForANotificationToAClosedSession: a catalog change
// announced to a session whose client already went away logs no warning.
func TestNoWarningForANotificationToAClosedSession(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, store.PolicyRule{Pattern: echoTool, Action: "allow"})
	ctx := context.Background()
	// One session stays, so the change is seen to be announced; others
	// go away first.
	stay := e.client(legacy, nil)
	changed := make(chan struct{}, 10)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	watcher, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	toolNames(t, stay)
	toolNames(t, watcher)
	for range 3 {
		gone := e.client(legacy, nil)
		toolNames(t, gone)
		gone.Close()
	}
	stay.Close()
	if _, err := pool.Disable(ctx, e.store, e.pool.WorkspaceDir(), "demo"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no tools/list_changed after the plugin was disabled")
	}
	time.Sleep(200 * time.Millisecond) // the other lists' notifications
	if out := logs.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
		t.Fatalf("serve warned about notifications to closed sessions:\n%s", out)
	}
}

// TestClosedStreamNotificationsAreSilent: the errors go-sdk's transports
// return for a notification to a stream or session that already closed
// are dropped without a warning; a request's error, and any other
// notification error, still reach go-sdk.
func TestClosedStreamNotificationsAreSilent(t *testing.T) {
	var logs syncBuffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	for _, tc := range []struct {
		method string
		err    error
		silent bool
	}{
		{"notifications/progress", fmt.Errorf("%w: write to closed stream", errors.New("rejected")), true},
		{"notifications/message", errors.New("session is closed"), true},
		{"notifications/tools/list_changed", fmt.Errorf("calling: %w", mcp.ErrConnectionClosed), true},
		{"notifications/resources/list_changed", io.ErrClosedPipe, true},
		{"notifications/progress", errors.New("encoding: bad params"), false},
		{"sampling/createMessage", errors.New("session is closed"), false},
	} {
		s.notices.real[listTools].Store(true)
		s.notices.real[listResources].Store(true)
		h := s.sendingMiddleware(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, tc.err })
		_, err := h(context.Background(), tc.method, nil)
		if tc.silent != (err == nil) {
			t.Errorf("%s with %q: error %v, want silent=%v", tc.method, tc.err, err, tc.silent)
		}
	}
	if out := logs.String(); strings.Contains(out, "level=WARN") {
		t.Fatalf("warned: %s", out)
	}
}
