//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package mcpexport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newTestFlight is a flight of fs whose call is cancelled through the
// returned context.
func newTestFlight(fs *flights, session *mcp.ServerSession) (*flight, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	return &flight{fs: fs, session: session, owner: flightOwner(ctx, session, TransportStdio), binding: "b", cancel: cancel, wake: make(chan struct{}, 1)}, ctx
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
	if _, err := fs.register(f); err == nil || !strings.Contains(err.Error(), "of this client (this session)") || !strings.Contains(err.Error(), "answer or abandon") {
		t.Fatalf("flight %d of one session: %v, want refused", MaxFlightsPerSession+1, err)
	}
	g, _ := newTestFlight(fs, b)
	if _, err := fs.register(g); err != nil {
		t.Fatalf("another session's flight: %v", err)
	}
	g.end(nil)
}

// On stateless HTTP each request is a session of its own: the bound per
// client counts the flights of one listener and client address, so one
// client cannot hold every flight berth keeps.
func TestFlightBoundsStateless(t *testing.T) {
	fs := &flights{}
	stateless := func(host string) *flight {
		ctx := context.WithValue(context.WithValue(context.Background(), taskOwnerKey{}, "stateless /mcp"), flightClientKey{}, host)
		f, _ := newTestFlight(fs, &mcp.ServerSession{})
		f.owner = flightOwner(ctx, f.session, TransportStateless)
		return f
	}
	for i := range MaxFlightsPerSession {
		f := stateless("192.0.2.1")
		if _, err := fs.register(f); err != nil {
			t.Fatalf("flight %d: %v", i+1, err)
		}
		defer f.end(nil)
	}
	f := stateless("192.0.2.1")
	if _, err := fs.register(f); err == nil || !strings.Contains(err.Error(), "stateless /mcp from 192.0.2.1") {
		t.Fatalf("flight %d of one stateless client: %v, want refused naming the client", MaxFlightsPerSession+1, err)
	}
	g := stateless("192.0.2.2")
	if _, err := fs.register(g); err != nil {
		t.Fatalf("another client's flight: %v", err)
	}
	g.end(nil)
}

// The flight's timer is the wait for the client's retry: once the retry
// is taken, the call runs on however long it takes (it used to be
// cancelled when the previous round's FlightTimeout ran out).
func TestFlightRetryStopsTheTimer(t *testing.T) {
	fs := &flights{ttl: 50 * time.Millisecond}
	f, callCtx := newTestFlight(fs, nil)
	got := make(chan error, 1)
	go func() {
		_, err := f.ask(context.Background(), &mcp.ElicitParams{Message: "name?"})
		got <- err
	}()
	_, input, err := f.wait(context.Background())
	if err != nil || input == nil {
		t.Fatalf("wait = %v, %v; want the input requests", input, err)
	}
	g, err := fs.redeem(input.RequestState, "b")
	if err != nil || g != f {
		t.Fatalf("redeem = %v, %v", g, err)
	}
	if err := f.answer(mcp.InputResponseMap{flightKeyPrefix + "1": &mcp.ElicitResult{Action: "accept"}}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the parked request got %v, want the answer", err)
	}
	// The tool works on for three times the wait.
	time.Sleep(3 * fs.ttl)
	if callCtx.Err() != nil {
		t.Fatalf("the call was cancelled while it ran after its retry: %v", context.Cause(callCtx))
	}
	f.mu.Lock()
	f.done, f.res = true, &mcp.CallToolResult{}
	f.mu.Unlock()
	f.poke()
	if res, _, err := f.wait(context.Background()); err != nil || res == nil {
		t.Fatalf("the call's end: %v, %v", res, err)
	}
}

// A flight whose client never retries leaves the call's audit entry: the
// plugin's server ran it (and asked the client), so the audit says so and
// why it ended.
func TestFlightExpiryIsAudited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := &Server{audit: NewAudit(path), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	defer s.audit.Close()
	fs := &flights{ttl: 50 * time.Millisecond}
	f, callCtx := newTestFlight(fs, nil)
	f.first = &call{s: s, entry: AuditEntry{Tool: "demo__echo", Decision: VerdictAllow, DecidedBy: ByPolicy}}
	go func() { _, _ = f.ask(context.Background(), &mcp.ElicitParams{Message: "name?"}) }()
	if _, input, err := f.wait(context.Background()); err != nil || input == nil {
		t.Fatalf("wait = %v, %v; want the input requests", input, err)
	}
	<-callCtx.Done()
	// end is called right after the audit: wait for both.
	deadline := time.Now().Add(10 * time.Second)
	var lines []string
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(path)
		if lines = strings.Split(strings.TrimSpace(string(data)), "\n"); lines[0] != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(lines) != 1 || lines[0] == "" {
		t.Fatalf("audit after the flight expired: %q, want one entry", lines)
	}
	var e AuditEntry
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
		t.Fatal(err)
	}
	if e.Tool != "demo__echo" || e.Outcome != OutcomeFailed || !strings.Contains(e.Reason, "did not answer within") {
		t.Fatalf("audit %+v, want the call failed for want of an answer", e)
	}
	f.abandon(context.Canceled) // a second end writes nothing more
	if data, _ := os.ReadFile(path); strings.Count(string(data), "\n") != 1 {
		t.Fatalf("audit written twice:\n%s", data)
	}
}

// An answer of the right type that is nil answers nothing (the parked
// request would otherwise get a nil result and no error).
func TestFlightAnswersNil(t *testing.T) {
	if answers(&mcp.ElicitParams{}, (*mcp.ElicitResult)(nil)) || answers(&mcp.ListRootsParams{}, (*mcp.ListRootsResult)(nil)) || answers(&mcp.CreateMessageParams{}, (*mcp.CreateMessageWithToolsResult)(nil)) {
		t.Fatal("a nil answer counted as an answer")
	}
	if !answers(&mcp.ListRootsParams{}, &mcp.ListRootsResult{}) {
		t.Fatal("a roots answer did not count")
	}
}

// What a flight's server sends between rounds (after a round's input
// requests went to the client, before its retry is taken) is held for the
// retry and reaches it first, in order, under the retry's progress token;
// what it sends while a request waits goes to that request at once. At
// most MaxFlightHeld are held.
func TestFlightHoldsBetweenRounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type got struct {
		tok  string
		prog float64
	}
	seen := make(chan got, 2*MaxFlightHeld)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			seen <- got{fmt.Sprint(r.Params.ProgressToken), r.Params.Progress}
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	s := &Server{outbox: newOutboxes(slog.New(slog.NewTextHandler(io.Discard, nil))), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	first, endFirst := context.WithCancel(ctx)
	fs := &flights{}
	f, _ := newTestFlight(fs, ss)
	f.first = &call{s: s, tool: "rly__up__ask"}
	f.to = &callRelay{s: s, ss: ss, ctx: first, token: "first", modern: true, flight: f}
	note := func(v float64) { f.relay(flightNote{progress: &mcp.ProgressNotificationParams{Progress: v}}, nil) }
	expect := func(want ...got) {
		t.Helper()
		for _, w := range want {
			select {
			case g := <-seen:
				if g != w {
					t.Fatalf("the client got %+v, want %+v", g, w)
				}
			case <-ctx.Done():
				t.Fatalf("the client never got %+v", w)
			}
		}
	}
	note(1)
	expect(got{"first", 1})
	go func() { _, _ = f.ask(ctx, &mcp.ElicitParams{Message: "name?"}) }()
	_, input, err := f.wait(first)
	if err != nil || input == nil {
		t.Fatalf("wait = %v, %v; want the input requests", input, err)
	}
	endFirst() // the first request ended with its input requests
	for v := 2.0; v < 2+MaxFlightHeld+5; v++ {
		note(v)
	}
	select {
	case g := <-seen:
		t.Fatalf("the client got %+v between rounds, with no request to carry it", g)
	case <-time.After(100 * time.Millisecond):
	}
	g, err := fs.redeem(input.RequestState, "b")
	if err != nil || g != f {
		t.Fatalf("redeem = %v, %v", g, err)
	}
	if got := s.outbox.dropped.Load(); got != 5 {
		t.Fatalf("outboxes.dropped = %d after %d messages between rounds; want the 5 over MaxFlightHeld counted", got, MaxFlightHeld+5)
	}
	f.attach(&callRelay{s: s, ss: ss, ctx: ctx, token: "retry", modern: true})
	for v := 2.0; v < 2+MaxFlightHeld; v++ {
		expect(got{"retry", v})
	}
	note(100)
	expect(got{"retry", 100})
	f.end(nil)
	note(101)
	select {
	case g := <-seen:
		t.Fatalf("the client got %+v after the flight ended", g)
	case <-time.After(100 * time.Millisecond):
	}
}
