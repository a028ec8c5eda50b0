//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window
package pool

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// targetRelay is a Relay that only names its client.
type targetRelay struct{ client string }

func (r targetRelay) Progress(context.Context, Origin, *mcp.ProgressNotificationParams) {}
func (r targetRelay) CreateMessage(context.Context, Origin, store.PolicyMatch, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, nil
}
func (r targetRelay) Elicit(context.Context, Origin, store.PolicyMatch, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, nil
}
func (r targetRelay) Client() any { return r.client }

// A server's request belongs to the call still being served, not to
// another client's call whose answer was read: clients take turns with a
// server, and the call before may not be done yet (its caller has not
// closed it) when the next client's call asks for sampling.
func TestTargetSkipsAnsweredCalls(t *testing.T) {
	s := &server{pl: &plugin{name: "p"}, name: "s", id: "p__s"}
	c := &conn{}
	from := s.origin()

	first := WithRelay(context.Background(), &RelayRequest{Relay: targetRelay{"client-1"}, Progress: true})
	firstCtx, closeFirst := s.openRelay(first, c)
	defer closeFirst()
	second := WithRelay(context.Background(), &RelayRequest{Relay: targetRelay{"client-2"}})
	_, closeSecond := s.openRelay(second, c)
	defer closeSecond()

	// Both open and unanswered: berth cannot tell whose the request is.
	if _, err := c.relays.target(context.Background(), from, "sampling/createMessage"); err == nil || !strings.Contains(err.Error(), "several clients") {
		t.Fatalf("target with two clients' calls open = %v, want the several-clients refusal", err)
	}

	// The first call's request goes out and its answer is read off the
	// wire (wire.go), before its caller is done with it: the second
	// client's call is the target.
	id, _ := jsonrpc.MakeID(float64(1))
	c.relays.onWrite(firstCtx, &jsonrpc.Request{ID: id, Method: "tools/call"})
	c.relays.answer(id)
	oc, err := c.relays.target(context.Background(), from, "sampling/createMessage")
	if err != nil {
		t.Fatalf("target once client-1's call was answered: %v", err)
	}
	if got := oc.req.Relay.Client(); got != "client-2" {
		t.Fatalf("target = %v's call, want client-2's", got)
	}
}

// Of one client's calls open with a server, a server's request belongs to
// the most recently opened one that is still open, every time, however
// the open calls are stored; closed calls never count.
func TestTargetMostRecentOpenCall(t *testing.T) {
	s := &server{pl: &plugin{name: "p"}, name: "s", id: "p__s"}
	c := &conn{}
	from := s.origin()
	var calls []*openCall
	var dones []func()
	for range 8 {
		ctx, done := s.openRelay(WithRelay(context.Background(), &RelayRequest{Relay: targetRelay{"client-1"}}), c)
		defer done()
		calls = append(calls, ctx.Value(openCallKey{}).(*openCall))
		dones = append(dones, done)
	}
	for round := range 20 {
		oc, err := c.relays.target(context.Background(), from, "elicitation/create")
		if err != nil {
			t.Fatal(err)
		}
		if oc != calls[7] {
			t.Fatalf("round %d: target = call #%d, want the most recent (#8)", round, oc.seq)
		}
	}
	// The most recent is done: the one opened before it is the target.
	dones[7]()
	if oc, err := c.relays.target(context.Background(), from, "elicitation/create"); err != nil || oc != calls[6] {
		t.Fatalf("target after the latest call was answered = %v, %v; want call #7", oc, err)
	}
	// Another client's call opens: berth cannot tell whose the request is.
	_, done := s.openRelay(WithRelay(context.Background(), &RelayRequest{Relay: targetRelay{"client-2"}}), c)
	defer done()
	if _, err := c.relays.target(context.Background(), from, "elicitation/create"); err == nil || !strings.Contains(err.Error(), "several clients") {
		t.Fatalf("target with two clients' calls open = %v, want the several-clients refusal", err)
	}
}
