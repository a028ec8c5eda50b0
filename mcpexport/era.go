//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package mcpexport

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

// Every era of client with every era of plugin server (docs/relay.md §"The
// protocol berth speaks to plugin servers"):
//
//   - the era berth speaks upstream is the client's where it can be: over
//     stdio the one client's, named by its first message (eraTransport and
//     pool.Options.AwaitUpstreamEra); legacy for listeners that serve
//     legacy clients only;
//   - a legacy server's sampling/createMessage, elicitation/create and
//     roots/list (callRelay.ListRoots) during a call reach a 2026-07-28
//     client as input requests: the server's request is parked, the
//     call's result is the input requests with a requestState of berth's,
//     and the client's retry answers the parked request (flights, below);
//   - a 2026-07-28 server's input requests reach a legacy client as
//     requests, round after round (legacyRounds); on a legacy connection
//     go-sdk's server asks the first round with requests itself.

// eraTransport tells the pool the era of the one client it serves (a
// stdio client) from the client's first message: an initialize below
// 2026-07-28 is a legacy client; anything else (server/discover, an
// initialize at 2026-07-28 or later, a request with no handshake) a
// 2026-07-28 one.
type eraTransport struct {
	mcp.Transport
	set func(legacy bool)
}

// Connect implements mcp.Transport.
func (t *eraTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &eraConn{Connection: c, set: t.set}, nil
}

// SupportsProtocolVersion passes on what the wrapped transport supports.
func (t *eraTransport) SupportsProtocolVersion(v string) bool {
	if pvs, ok := t.Transport.(mcp.ProtocolVersionSupporter); ok {
		return pvs.SupportsProtocolVersion(v)
	}
	return true
}

type eraConn struct {
	mcp.Connection
	once sync.Once
	set  func(legacy bool)
}

func (c *eraConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.IsCall() {
		c.once.Do(func() { c.set(legacyHandshake(req)) })
	}
	return msg, err
}

// legacyHandshake reports whether a client's first request is a legacy
// client's: an initialize asking for a version before 2026-07-28.
func legacyHandshake(req *jsonrpc.Request) bool {
	if req.Method != "initialize" {
		return false
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return true
	}
	return p.ProtocolVersion < modernProtocol
}

// Limits of the parked requests of legacy servers (flights).
const (
	// MaxFlightsPerSession is how many calls of one client session may
	// wait, at once, for the answers to a legacy server's requests.
	MaxFlightsPerSession = 8
	// MaxFlights is how many may wait in all.
	MaxFlights = 64
	// FlightTimeout is how long a call waits for the client's retry that
	// answers its server's parked requests; then the call is cancelled.
	FlightTimeout = 2 * time.Minute
	// MaxFlightRounds is how many rounds of requests one call may ask.
	MaxFlightRounds = 10
)

// MaxFlightHeld is how many progress and log messages of a flight's
// server wait, between rounds, for the client's retry; more are dropped,
// and counted with the outboxes' drops (outboxes.dropped).
const MaxFlightHeld = 64

// flightStatePrefix starts berth's requestState of a parked call.
const flightStatePrefix = "berth-relay."

// flightKeyPrefix starts the keys of berth's input requests that carry a
// parked server request.
const flightKeyPrefix = "berth-relay-"

// flights are the calls whose legacy server waits for a 2026-07-28
// client's answers.
type flights struct {
	// ttl is how long a flight waits for each retry (FlightTimeout when
	// zero).
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*flight
}

// flight is one tools/call to a legacy plugin server, run on behalf of a
// 2026-07-28 client across its retries. Its pool.Call runs detached from
// the client's requests; the server's requests during it are parked until
// the client's retry answers them.
type flight struct {
	fs      *flights
	first   *call // the call that started it: its decision is the call's
	id      string
	binding string // tool, arguments, and the session where it lives on
	session *mcp.ServerSession
	// owner is the client the flight counts against
	// (MaxFlightsPerSession): its session, or on stateless HTTP, where
	// each request is a session of its own, the listener and the
	// client's address (flightOwner).
	owner  string
	cancel context.CancelFunc
	timer  *time.Timer

	mu     sync.Mutex
	asks   []*parkedAsk // waiting to be sent to the client
	sent   []*parkedAsk // sent, waiting for the client's answers
	rounds int
	wake   chan struct{} // one wake-up: an ask parked, or the call ended
	done   bool
	res    *mcp.CallToolResult
	err    error
	// to is the client's request that waits on the call now: the first,
	// then each retry; nil between rounds (after a round's input
	// requests went out, until the retry is taken). The server's
	// progress and log messages go to it, in wire order (relay).
	to *callRelay
	// held are the progress and log messages the server sent between
	// rounds, for the next retry (at most MaxFlightHeld); dropped
	// counts what did not fit.
	held    []flightNote
	dropped int
	ended   bool // end ran: nothing is held any more

	audited sync.Once // the call's audit entry when no retry writes it
}

// parkedAsk is one server request waiting for the client's answer.
type parkedAsk struct {
	req    mcp.InputRequest
	answer chan parkedAnswer // buffered: one answer
}

type parkedAnswer struct {
	res mcp.InputResponse
	err error
}

// flightBinding binds a flight to the call: the tool and its canonical
// arguments, and the client's session where sessions outlive a request
// (stdio, stateful HTTP); a stateless request's session does not, and the
// requestState, unguessable, expiring and good for one retry, is the
// binding there, as berth's approval state is.
func flightBinding(tool string, args json.RawMessage, ss *mcp.ServerSession, transport string) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(args)
	if ss != nil && (transport == TransportStdio || ss.ID() != "") {
		fmt.Fprintf(h, "\x00%p", ss)
	}
	return string(h.Sum(nil))
}

// flightClientKey is the context key of the address of a stateless
// HTTP request's client (serveStateless).
type flightClientKey struct{}

// flightOwner names the client a flight counts against: its session where
// sessions outlive a request (stdio, stateful HTTP, SSE); on stateless
// HTTP, where each request is a session of its own, the listener's path
// and the client's address (its host: a client's port changes from
// request to request).
func flightOwner(ctx context.Context, ss *mcp.ServerSession, transport string) string {
	if transport == TransportStateless {
		host, _ := ctx.Value(flightClientKey{}).(string)
		return taskOwner(ctx) + " from " + host
	}
	return fmt.Sprintf("session %p", ss)
}

// ownerText is the flight's owner as an error names it.
func (f *flight) ownerText() string {
	if strings.HasPrefix(f.owner, "session ") {
		return "this session"
	}
	return f.owner
}

// startFlight runs the pool call of c in a flight, for a 2026-07-28
// client: the call's relay parks its server's requests in it.
func (c *call) startFlight(ctx context.Context, name string, args json.RawMessage) *flight {
	s := c.s
	f := &flight{fs: s.flights, first: c, binding: flightBinding(name, args, c.req.Session, c.origin.Transport), session: c.req.Session, owner: flightOwner(ctx, c.req.Session, c.origin.Transport), wake: make(chan struct{}, 1)}
	var b [18]byte
	_, _ = rand.Read(b[:])
	f.id = base64.RawURLEncoding.EncodeToString(b[:])
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	f.to = c.relay
	c.relay.flight = f
	go func() {
		res, err := s.pool.Call(fctx, name, args, c)
		f.mu.Lock()
		f.done, f.res, f.err = true, res, err
		f.mu.Unlock()
		f.poke()
	}()
	return f
}

func (f *flight) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// ask parks a server's request until the client answers it on its retry,
// or the flight ends.
func (f *flight) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &parkedAsk{req: req, answer: make(chan parkedAnswer, 1)}
	f.mu.Lock()
	if f.rounds >= MaxFlightRounds {
		f.mu.Unlock()
		return nil, relayRefusal("berth refused the request: the call already asked %d rounds of its client, the most berth relays", MaxFlightRounds)
	}
	f.asks = append(f.asks, a)
	f.mu.Unlock()
	f.poke()
	select {
	case ans := <-a.answer:
		return ans.res, ans.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// wait waits until the flight's call ended or its server asked something.
// It returns the call's result, or the input-required result to give the
// client (registered under its state). ctx is the client's request.
func (f *flight) wait(ctx context.Context) (res, input *mcp.CallToolResult, err error) {
	for {
		f.mu.Lock()
		if f.done {
			res, err := f.res, f.err
			f.mu.Unlock()
			f.end(nil)
			return res, nil, err
		}
		if len(f.asks) > 0 {
			f.rounds++
			m := mcp.InputRequestMap{}
			for i, a := range f.asks {
				m[fmt.Sprintf("%s%d", flightKeyPrefix, i+1)] = a.req
			}
			f.sent, f.asks = f.asks, nil
			// This request ends with the input requests: what the
			// server sends from now on waits for the retry.
			f.to = nil
			f.mu.Unlock()
			state, rerr := f.fs.register(f)
			if rerr != nil {
				f.end(rerr)
				return nil, nil, rerr
			}
			return nil, &mcp.CallToolResult{InputRequests: m, RequestState: state}, nil
		}
		f.mu.Unlock()
		select {
		case <-f.wake:
		case <-ctx.Done():
			// The client gave up on the call: so does berth.
			f.end(fmt.Errorf("the client's request ended: %w", context.Cause(ctx)))
			return nil, nil, context.Cause(ctx)
		}
	}
}

// flightNote is a progress or a log message of a flight's server.
type flightNote struct {
	progress *mcp.ProgressNotificationParams
	log      *pool.LogMessage
}

// relay passes n to the client's request that waits on the call now, or,
// between rounds, holds it for the next retry (attach). Under f.mu, so
// that what is held goes out before what comes after it: wire order, from
// round to round. done: the sessions a log message reached already.
func (f *flight) relay(n flightNote, done map[*mcp.ServerSession]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.to != nil:
		f.to.deliver(n, done)
	case f.ended:
	case len(f.held) < MaxFlightHeld:
		f.held = append(f.held, n)
	default:
		f.dropped++
		if f.first != nil && f.first.s != nil && f.first.s.outbox != nil {
			f.first.s.outbox.dropped.Add(1) // counted with every other relayed drop
		}
	}
}

// deliver relays n to r's request.
func (r *callRelay) deliver(n flightNote, done map[*mcp.ServerSession]bool) {
	if n.progress != nil {
		r.progress(n.progress)
		return
	}
	if done == nil {
		done = map[*mcp.ServerSession]bool{}
	}
	if r.ss != nil && r.s.levels.of(r.ss) != "" {
		// The session set a level: it gets the server's log messages
		// as every such session does (relayLog).
		return
	}
	r.log(n.log, done)
}

// attach makes r, the client's retry that was taken, the request the
// call's progress and log messages go to from now on, and passes it what
// the server sent between rounds first.
func (f *flight) attach(r *callRelay) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.to = r
	for _, n := range f.held {
		r.deliver(n, nil)
	}
	if f.dropped > 0 {
		r.s.log.Warn("berth dropped progress and log messages a plugin server sent between two rounds of a call's input requests, more than it keeps for the client's retry", "tool", f.first.tool, "dropped", f.dropped, "kept", MaxFlightHeld)
	}
	f.held, f.dropped = nil, 0
}

// abandon ends the flight when no request of the client is left to
// audit the call (it expired, or its retry was refused): the plugin's
// server did run it (its requests were passed on), so the call's own
// audit entry is written here, once, with what came of it.
func (f *flight) abandon(cause error) {
	f.audited.Do(func() {
		if f.first == nil {
			return
		}
		c := f.first
		c.entry.Outcome, c.entry.Reason = OutcomeFailed, shortErr(fmt.Errorf("berth cancelled the call: %w", cause))
		c.writeAudit()
	})
	f.end(cause)
}

// end stops the flight: its call is cancelled (when still running) and
// its parked requests are refused with cause.
func (f *flight) end(cause error) {
	f.fs.remove(f)
	if cause == nil {
		cause = errors.New("the call ended")
	}
	f.mu.Lock()
	pending := append(f.sent, f.asks...)
	f.sent, f.asks = nil, nil
	f.ended, f.held, f.to = true, nil, nil
	if f.timer != nil {
		f.timer.Stop()
	}
	f.mu.Unlock()
	f.cancel()
	for _, a := range pending {
		a.answer <- parkedAnswer{err: relayRefusal("berth could not relay the request to the client: %v", cause)}
	}
}

// register files f under a fresh state, within the limits, and arms its
// expiry.
func (fs *flights) register(f *flight) (string, error) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	state := flightStatePrefix + f.id + "." + base64.RawURLEncoding.EncodeToString(b[:])
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[string]*flight{}
	}
	n, mine := 0, 0
	for _, g := range fs.m {
		if g == f {
			continue
		}
		n++
		if g.owner == f.owner {
			mine++
		}
	}
	switch {
	case n >= MaxFlights:
		return "", fmt.Errorf("%d calls already wait for their clients to answer their servers' requests, the most berth keeps; answer or abandon a waiting call (each is dropped %s after its input requests were sent)", MaxFlights, cmp.Or(fs.ttl, FlightTimeout))
	case mine >= MaxFlightsPerSession:
		return "", fmt.Errorf("%d calls of this client (%s) already wait for it to answer their servers' requests, the most berth keeps per client; answer or abandon a waiting call (each is dropped %s after its input requests were sent)", MaxFlightsPerSession, f.ownerText(), cmp.Or(fs.ttl, FlightTimeout))
	}
	for k, g := range fs.m {
		if g == f {
			delete(fs.m, k)
		}
	}
	fs.m[state] = f
	ttl := cmp.Or(fs.ttl, FlightTimeout)
	f.mu.Lock()
	if f.timer == nil {
		f.timer = time.AfterFunc(ttl, func() {
			// Only a flight still waiting for its retry expires: one
			// whose retry was taken (redeem) runs on.
			if fs.take(f) {
				f.abandon(fmt.Errorf("the client did not answer within %s", ttl))
			}
		})
	} else {
		f.timer.Reset(ttl)
	}
	f.mu.Unlock()
	return state, nil
}

// redeem takes the flight of state, if it is one and bound to binding:
// a state is good for one retry.
func (fs *flights) redeem(state, binding string) (*flight, error) {
	fs.mu.Lock()
	f := fs.m[state]
	if f != nil && f.binding == binding {
		delete(fs.m, state)
	} else {
		f = nil
	}
	fs.mu.Unlock()
	if f != nil {
		// FlightTimeout is the wait for the client's retry: the call
		// now runs on under the retry's request (register arms it
		// again for a next round).
		f.mu.Lock()
		if f.timer != nil {
			f.timer.Stop()
		}
		f.mu.Unlock()
	}
	if f == nil {
		return nil, errors.New("its requestState names no call of this client that waits for answers (unknown, used, expired, or another call's or session's); call the tool again")
	}
	return f, nil
}

// take removes f's state, and reports whether it was there (the flight
// waited for its retry).
func (fs *flights) take(f *flight) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for k, g := range fs.m {
		if g == f {
			delete(fs.m, k)
			return true
		}
	}
	return false
}

func (fs *flights) remove(f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for k, g := range fs.m {
		if g == f {
			delete(fs.m, k)
		}
	}
}

// answer gives each request the client was sent its answer from
// responses; a missing or mistyped answer refuses that request (the
// server gets an error) and fails the retry.
func (f *flight) answer(responses mcp.InputResponseMap) error {
	f.mu.Lock()
	sent := f.sent
	f.sent = nil
	f.mu.Unlock()
	var missing []string
	for i, a := range sent {
		key := fmt.Sprintf("%s%d", flightKeyPrefix, i+1)
		res, ok := responses[key]
		if ok && !answers(a.req, res) {
			ok = false
		}
		if !ok {
			missing = append(missing, key)
			a.answer <- parkedAnswer{err: relayRefusal("berth relayed the request to the client as the input request %q, and the client did not answer it", key)}
			continue
		}
		a.answer <- parkedAnswer{res: res}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("the retry did not answer berth's input requests %s (each needs the answer of its kind)", strings.Join(missing, ", "))
	}
	return nil
}

// answers reports whether res is an answer of req's kind (a nil one is
// none).
func answers(req mcp.InputRequest, res mcp.InputResponse) bool {
	switch req.(type) {
	case *mcp.ElicitParams:
		r, ok := res.(*mcp.ElicitResult)
		return ok && r != nil
	case *mcp.CreateMessageWithToolsParams, *mcp.CreateMessageParams:
		r, ok := res.(*mcp.CreateMessageWithToolsResult)
		return ok && r != nil
	case *mcp.ListRootsParams:
		r, ok := res.(*mcp.ListRootsResult)
		return ok && r != nil
	}
	return false
}

// runFlight is the pool call of a tools/call for a 2026-07-28 client: a
// first call starts a flight, a retry with berth's requestState resumes
// its flight with the client's answers. input, when set, is the result to
// return (the server's requests as input requests).
func (c *call) runFlight(ctx context.Context, name string, args json.RawMessage) (res, input *mcp.CallToolResult, err error) {
	state := c.req.Params.RequestState
	if !strings.HasPrefix(state, flightStatePrefix) {
		return c.startFlight(ctx, name, args).wait(ctx)
	}
	refuse := func(err error) (*mcp.CallToolResult, *mcp.CallToolResult, error) {
		c.entry.Decision, c.entry.DecidedBy, c.entry.Outcome, c.entry.Reason = VerdictDeny, ByBerth, OutcomeRefused, shortErr(err)
		c.writeAudit()
		return nil, toolError(fmt.Sprintf("berth refused the retry of %s: %v", name, err)), nil
	}
	f, err := c.s.flights.redeem(state, flightBinding(name, args, c.req.Session, c.origin.Transport))
	if err != nil {
		return refuse(err)
	}
	// The call's progress and log messages reach this request now.
	f.attach(c.relay)
	if aerr := f.answer(c.req.Params.InputResponses); aerr != nil {
		f.abandon(fmt.Errorf("its client's retry was refused: %w", aerr))
		return refuse(aerr)
	}
	res, input, err = f.wait(ctx)
	// The call was decided in its first round: the audit says how.
	e := f.first.entry
	c.entry.Plugin, c.entry.Server, c.entry.Policy = e.Plugin, e.Server, e.Policy
	c.entry.DecidedBy, c.entry.Decision, c.entry.Always, c.entry.Approval = e.DecidedBy, e.Decision, e.Always, e.Approval
	c.withdrawn, c.denied, c.approver = f.first.withdrawn, f.first.denied, f.first.approver
	return res, input, err
}

// flies reports whether c's pool call of tool name runs in a flight: a
// 2026-07-28 client that can answer a legacy server's sampling,
// elicitation or roots/list, calling a tool whose server may send them
// during the call (pool.AsksDuringCall: a legacy connection, or one not
// made yet), or the retry that answers one. A call to a 2026-07-28 server
// runs in the client's request: its server asks with input requests.
func (c *call) flies(name string) bool {
	if c.relay == nil || !c.relay.modern || c.req.Session == nil {
		return false
	}
	if strings.HasPrefix(c.req.Params.RequestState, flightStatePrefix) {
		return true
	}
	caps := c.relay.caps
	if caps == nil || caps.Sampling == nil && caps.Elicitation == nil && !declaresRoots(caps) {
		return false
	}
	return c.s.pool.AsksDuringCall(name)
}

// declaresRoots reports whether a client declared the roots capability.
func declaresRoots(caps *mcp.ClientCapabilities) bool {
	return caps != nil && (caps.RootsV2 != nil || caps.Roots != (mcp.RootCapabilities{}))
}

// askAsInput passes a legacy server's request of kind to the call's
// 2026-07-28 client as an input request, after the client's capability
// (the plugin's policy was applied by the pool), and waits for the
// client's answer on its retry.
func (r *callRelay) askAsInput(ctx context.Context, from pool.Origin, kind pool.RequestKind, method string, declared bool, m store.PolicyMatch, req mcp.InputRequest) (mcp.InputResponse, error) {
	if !declared {
		err := relayRefusal("berth refused %s from %s: the client (%s) did not declare the %s capability", method, from.ID, r.client, kind)
		r.audit(from, kind, m, OutcomeRefused, err.Error())
		return nil, err
	}
	r.audit(from, kind, m, OutcomeRan, "passed to the client as an input request ("+method+" of a legacy server)")
	return r.flight.ask(ctx, req)
}

// legacyRounds asks a legacy client what a plugin server's input
// requests ask, as requests, and calls the server again with the answers,
// round after round (at most MaxFlightRounds), until its result has no
// input requests. Each round goes through the plugin's policy, the
// client's capabilities and the audit as any input request does
// (checkInputRequests).
func (c *call) legacyRounds(ctx context.Context, name string, args json.RawMessage, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	for round := 1; res != nil && res.InputRequests != nil; round++ {
		if round > MaxFlightRounds {
			return toolError(fmt.Sprintf("berth stopped %s: its server asked for input %d times, the most berth relays in one call", name, MaxFlightRounds)), nil
		}
		if err := c.checkInputRequests(res.InputRequests); err != nil {
			return toolError(fmt.Sprintf("berth did not pass on what %s asked for: %v", c.tool, err)), nil
		}
		responses, err := askLegacy(ctx, c.req.Session, res.InputRequests)
		if err != nil {
			return toolError(fmt.Sprintf("berth could not ask the client what %s asked for: %v", c.tool, err)), nil
		}
		c.relayReq.InputResponses, c.relayReq.RequestState = responses, res.RequestState
		c.preApproved = c.approved
		res, err = c.s.pool.Call(ctx, name, args, c)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// askLegacy asks a legacy client session each input request as a request.
func askLegacy(ctx context.Context, ss *mcp.ServerSession, m mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	if ss == nil {
		return nil, errors.New("the request has no client session to ask")
	}
	out := mcp.InputResponseMap{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var res mcp.InputResponse
		var err error
		switch p := m[k].(type) {
		case *mcp.ElicitParams:
			res, err = ss.Elicit(ctx, p)
		case *mcp.CreateMessageParams:
			var msgs []*mcp.SamplingMessageV2
			for _, sm := range p.Messages {
				msgs = append(msgs, &mcp.SamplingMessageV2{Role: sm.Role, Content: []mcp.Content{sm.Content}})
			}
			res, err = ss.CreateMessageWithTools(ctx, &mcp.CreateMessageWithToolsParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens, Messages: msgs, Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences, SystemPrompt: p.SystemPrompt, Temperature: p.Temperature})
		case *mcp.CreateMessageWithToolsParams:
			res, err = ss.CreateMessageWithTools(ctx, p)
		case *mcp.ListRootsParams:
			res, err = ss.ListRoots(ctx, p)
		default:
			err = fmt.Errorf("berth does not relay %T", p)
		}
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", k, err)
		}
		out[k] = res
	}
	return out, nil
}

// onRequestStream is the context to send a server's request to the client
// in: the client's request's (its values say which request it relates to,
// so go-sdk's Streamable HTTP transport sends it on that request's stream,
// as MCP asks, not on the session's standalone GET stream, which a client
// may not have opened yet), cancelled when either the client's request or
// the server's (ctx) ends.
func (r *callRelay) onRequestStream(ctx context.Context) (context.Context, func()) {
	m, cancel := context.WithCancelCause(r.ctx)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return m, func() {
		stop()
		cancel(nil)
	}
}
