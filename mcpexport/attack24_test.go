package mcpexport

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bound of parked legacy-server requests per client session
// (MaxFlightsPerSession) counted flights by *mcp.ServerSession, and a
// stateless request has a session of its own (now they are counted by
// listener path and client host, flightOwner): one stateless client
// (calling a tool of a legacy plugin server that elicits, never
// answering) parks MaxFlights calls, each for up to FlightTimeout per
// round, and every other client, a stdio session included, is then
// refused: its legacy server's sampling and elicitation fail.
func TestAttack24StatelessFlightsStarveOthers(t *testing.T) {
	fs := &flights{ttl: time.Minute}
	var all []*flight
	stateless := context.WithValue(context.WithValue(context.Background(), taskOwnerKey{}, "stateless /mcp"), flightClientKey{}, "127.0.0.1")
	mk := func(transport string) *flight {
		ss := new(mcp.ServerSession)
		f := &flight{fs: fs, first: &call{origin: origin{Transport: transport}}, session: ss, owner: flightOwner(stateless, ss, transport), cancel: func() {}, wake: make(chan struct{}, 1)}
		f.id = time.Now().String()
		all = append(all, f)
		return f
	}
	defer func() {
		for _, f := range all {
			f.mu.Lock()
			if f.timer != nil {
				f.timer.Stop()
			}
			f.mu.Unlock()
		}
	}()
	for range MaxFlights + 1 {
		if _, err := fs.register(mk(TransportStateless)); err != nil {
			break
		}
	}
	if _, err := fs.register(mk(TransportStdio)); err != nil {
		t.Fatalf("a stdio session's first parked request was refused after one stateless listener's requests parked: %v", err)
	}
}
