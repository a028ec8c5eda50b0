package mcpexport

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newTestFlight is a flight of fs whose call is cancelled through the
// returned context.
func newTestFlight(fs *flights, session *mcp.ServerSession) (*flight, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	return &flight{fs: fs, session: session, binding: "b", cancel: cancel, wake: make(chan struct{}, 1)}, ctx
}

// A parked request the client does not answer in time fails (its server
// is told), the call is cancelled, and its state is void.
func TestFlightExpires(t *testing.T) {
	fs := &flights{ttl: 50 * time.Millisecond}
	f, callCtx := newTestFlight(fs, nil)
	got := make(chan error, 1)
	go func() {
		_, err := f.ask(context.Background(), &mcp.ElicitParams{Message: "name?"})
		got <- err
	}()
	_, input, err := f.wait(context.Background())
	if err != nil || input == nil || !strings.HasPrefix(input.RequestState, flightStatePrefix) {
		t.Fatalf("wait = %v, %v; want the input requests", input, err)
	}
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "did not answer within") {
			t.Fatalf("the parked request got %v, want the expiry", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked request was never answered after its flight expired")
	}
	if callCtx.Err() == nil {
		t.Error("the call was not cancelled when its flight expired")
	}
	if _, err := fs.redeem(input.RequestState, "b"); err == nil {
		t.Error("an expired flight's state was redeemed")
	}
}

// At most MaxFlightsPerSession calls of one session wait at once; another
// session still may.
func TestFlightBounds(t *testing.T) {
	fs := &flights{}
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	for i := range MaxFlightsPerSession {
		f, _ := newTestFlight(fs, a)
		if _, err := fs.register(f); err != nil {
			t.Fatalf("flight %d: %v", i+1, err)
		}
		defer f.end(nil)
	}
	f, _ := newTestFlight(fs, a)
	if _, err := fs.register(f); err == nil || !strings.Contains(err.Error(), "of this session") {
		t.Fatalf("flight %d of one session: %v, want refused", MaxFlightsPerSession+1, err)
	}
	g, _ := newTestFlight(fs, b)
	if _, err := fs.register(g); err != nil {
		t.Fatalf("another session's flight: %v", err)
	}
	g.end(nil)
}
