package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// Call calls a tool of the catalog by its exported name. In order: the
// boundary checks (state generation and reconcile, drift of the tool's
// plugin), the lookup (a withheld, colliding or denied name is refused
// with the reason), the operator's policy, the approver (nil means only
// what AllowedByPolicy allows runs), the boundary checks again, and the
// dispatch, bounded by the server's call timeout.
//
// A call refused by the policy or the approver returns an error wrapping
// ErrDenied; a drifted plugin one wrapping store.ErrDrift. A tool that
// ran and failed returns a result with IsError set, and no error.
//
// When the server dies during the call (its process exits, its
// connection closes, or it does not answer within the call timeout and is
// killed as hung), it is restarted with backoff; a tool annotated
// readOnlyHint or idempotentHint is then called once more on the new
// connection, any other tool fails with an error saying the call may have
// run.
func (p *Pool) Call(ctx context.Context, name string, args json.RawMessage, approver Approver) (*mcp.CallToolResult, error) {
	if p.isClosed() {
		return nil, errClosed
	}
	if approver == nil {
		approver = policyOnly
	}
	args, err := checkArgs(args)
	if err != nil {
		return nil, err
	}
	if err := p.generation(ctx); err != nil {
		return nil, err
	}
	e, err := p.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := e.s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	if c := e.s.live(); c != nil && c.toolsDirty.Load() {
		// The server said its tools changed: re-list, so a changed tool is
		// withheld before it runs.
		if err := e.s.refreshTools(ctx); err != nil {
			return nil, err
		}
		if e, err = p.lookupSame(ctx, e); err != nil {
			return nil, err
		}
	}
	req := &ApprovalRequest{Tool: name, Plugin: e.s.pl.name, Version: e.s.pl.version, Server: e.s.name, Native: e.s.native != nil, UpstreamTool: e.def.Name, Arguments: args, Annotations: e.def.Annotations, Policy: e.policy, Surface: e.tool.Hash}
	d, err := approver.Approve(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("approving the call to %s: %w", name, err)
	}
	if !d.Allow {
		reason := d.Reason
		if reason == "" {
			reason = "not approved"
		}
		return nil, deniedf("the call to %s was refused (%s, decided by %s); allow the tool with `berth policy set %s allow`, or approve the call", name, reason, orDefault(d.By, "the approver"), name)
	}
	// Approval may have taken a while: check again.
	if err := p.generation(ctx); err != nil {
		return nil, err
	}
	if e, err = p.lookupSame(ctx, e); err != nil {
		return nil, err
	}
	if err := e.s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	return p.dispatch(ctx, e, args)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkArgs requires a JSON object; empty means {}.
func checkArgs(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	// A well-formed document that starts with "{" is an object: a scan,
	// no decode.
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, fmt.Errorf("the arguments of a tool call must be a JSON object, like {\"text\": \"hi\"}")
	}
	return args, nil
}

// lookup finds a tool, waiting for servers that are still starting when
// the name is not (yet) in the catalog.
func (p *Pool) lookup(ctx context.Context, name string) (*toolEntry, error) {
	for waited := false; ; waited = true {
		idx := p.index()
		if e := idx.tools[name]; e != nil {
			return e, nil
		}
		if ch, ok := idx.withheld[name]; ok {
			return nil, &SurfaceError{Tool: name, Change: ch}
		}
		if m, ok := idx.denied[name]; ok {
			return nil, deniedf("the operator's policy denies %s (rule %q); change it with `berth policy set` or `berth policy unset %s`", name, m.Pattern, m.Pattern)
		}
		if ids, ok := idx.collided[name]; ok {
			return nil, fmt.Errorf("%s is the name of tools of several servers (%s), so berth offers none of them; disable one of the plugins", name, joinNames(ids))
		}
		if !waited && p.kickSignIn(name) {
			// A server waiting for a sign-in: try it now (after `berth
			// login`); if it still needs one, notFound says so.
			if err := p.waitStarting(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if waited || !idx.starting {
			return nil, p.notFound(name)
		}
		if err := p.waitStarting(ctx); err != nil {
			return nil, err
		}
	}
}

// waitStarting waits until no server is starting (a first start or a
// restart in progress).
func (p *Pool) waitStarting(ctx context.Context) error {
	for _, s := range p.servers() {
		for {
			s.mu.Lock()
			st, ch := s.state, s.notify
			s.mu.Unlock()
			if st != StateStarting {
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// notFound explains a missing tool, naming the plugin or server that
// should have it (by the name's plugin and provider parts).
func (p *Pool) notFound(name string) error {
	plugin, provider, _, _ := ParseName(name)
	for _, pl := range p.activePlugins() {
		if pl.name != plugin || (pl.err == nil && pl.driftErr() == nil) {
			continue
		}
		if err := pl.driftErr(); err != nil {
			return err
		}
		return pl.err
	}
	for _, s := range p.servers() {
		prefix := s.id + Sep
		if !strings.HasPrefix(name, prefix) || s.pl.name != plugin || s.name != provider {
			continue
		}
		s.mu.Lock()
		st, err := s.state, s.lastErr
		gave := s.gaveUp
		var ferr error
		if st == StateFailed {
			ferr = s.failedErrLocked()
		}
		s.mu.Unlock()
		switch {
		case ferr != nil:
			return fmt.Errorf("no tool %s: %w", name, ferr)
		case err != nil && (st == StateStopped || st == StateDrifted || gave):
			return fmt.Errorf("no tool %s: %s %s is %s: %w", name, s.noun(), s.id, st, err)
		case st == StateRunning || st == StateChanged:
			return &UnknownToolError{Name: name, msg: fmt.Sprintf("%s %s has no tool %s (or its manifest's tools filter hides it)", s.noun(), s.id, strings.TrimPrefix(name, prefix))}
		}
	}
	return &UnknownToolError{Name: name, msg: fmt.Sprintf("no tool named %s is enabled in %s", name, p.workspace)}
}

// UnknownToolError is a call of a name the catalog has no tool of (and
// berth knows nothing more of: no server of that name failed or stopped).
type UnknownToolError struct {
	// Name is the name called.
	Name string
	// DidYouMean are the tools that Name may have meant
	// (Pool.SuggestTools). The pool never fills it: only a caller that
	// may show every tool of the catalog to whoever called does.
	DidYouMean []string
	msg        string
}

func (e *UnknownToolError) Error() string {
	if len(e.DidYouMean) > 0 {
		return e.msg + "; did you mean " + strings.Join(e.DidYouMean, " or ") + "? (berth tools lists the catalog)"
	}
	return e.msg + "; berth tools lists the catalog"
}

// SuggestTools returns the tools of the catalog that name, a mistyped or
// bare tool name, may have meant (at most three, sorted): those whose
// tool part is name's, else those within a few edits of name. It lists
// names of the whole workspace, whatever a profile offers.
func (p *Pool) SuggestTools(name string) []string {
	return suggestTools(name, slices.Collect(maps.Keys(p.index().tools)))
}

// suggestTools returns, sorted, at most three of names that a mistyped
// or bare tool name may have meant: those whose tool part (after the last
// Sep) is name or name's tool part, else those within a few edits of
// name.
func suggestTools(name string, names []string) []string {
	_, bare, _ := cutLast(name)
	var out []string
	for _, n := range names {
		if _, t, ok := cutLast(n); ok && t == bare {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		limit := max(2, len(name)/5)
		for _, n := range names {
			if editDistance(name, n) <= limit {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}

// cutLast splits a tool name at its last Sep; a name without one is all
// tool part.
func cutLast(name string) (prefix, tool string, ok bool) {
	i := strings.LastIndex(name, Sep)
	if i < 0 {
		return "", name, false
	}
	return name[:i], name[i+len(Sep):], true
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// lookupSame looks the tool up again and requires the same server and
// surface.
func (p *Pool) lookupSame(ctx context.Context, e *toolEntry) (*toolEntry, error) {
	n, err := p.lookup(ctx, e.tool.Name)
	if err != nil {
		return nil, err
	}
	if n.s != e.s || n.tool.Hash != e.tool.Hash {
		return nil, fmt.Errorf("%s changed while the call waited; call it again", e.tool.Name)
	}
	return n, nil
}

// SurfaceError refuses a tool whose definition differs from the pinned
// surface. It wraps store.ErrDrift (CLI exit code 5).
type SurfaceError struct {
	Tool   string
	Change ToolChange
}

func (e *SurfaceError) Error() string {
	what := "its definition (description, schemas or annotations) changed"
	if e.Change.Kind == ChangeAdded {
		what = "the server added it after the tool surface was pinned"
	}
	if e.Change.URI != "" {
		what = "its contents changed"
		if e.Change.Kind == ChangeAdded {
			what = "it is not in the surface pinned"
		}
		return fmt.Sprintf("the UI template %s of %s is withheld: %s since the plugin was enabled; review and accept it with `berth accept %s`", printable(e.Change.URI), e.Change.ID, what, e.Change.Plugin)
	}
	return fmt.Sprintf("%s is withheld: %s since the plugin was enabled; review and accept it with `berth accept %s`", e.Tool, what, e.Change.Plugin)
}

// Unwrap returns store.ErrDrift: a changed live tool surface is drift.
func (e *SurfaceError) Unwrap() error { return store.ErrDrift }

// dispatch sends the call, and handles a server that dies during it.
func (p *Pool) dispatch(ctx context.Context, e *toolEntry, args json.RawMessage) (*mcp.CallToolResult, error) {
	s := e.s
	retryable := e.def.Annotations != nil && (e.def.Annotations.ReadOnlyHint || e.def.Annotations.IdempotentHint)
	c := s.live()
	if c == nil || c.ctx.Err() != nil {
		// Nothing was sent: wait for a start in progress; wait for a
		// scheduled restart only for a tool that may be repeated.
		seq := uint64(0)
		if c != nil {
			seq = c.seq
		}
		var err error
		if c, err = s.waitConn(ctx, seq, retryable); err != nil {
			return nil, fmt.Errorf("the call to %s did not run: %w", e.tool.Name, err)
		}
	}
	res, dead, err := p.send(ctx, e, c, args)
	if !dead {
		return res, err
	}
	s.awaitDown(c)
	if !retryable {
		return nil, fmt.Errorf("%s %s stopped during the call to %s (%v); berth is restarting it. The call may or may not have run, and %s is not annotated read-only or idempotent, so berth did not repeat it: check its effects before calling it again", s.noun(), s.id, e.tool.Name, err, e.tool.Name)
	}
	s.out.event("retrying %s once after a restart (it is read-only or idempotent)", e.def.Name)
	c2, werr := s.waitConn(ctx, c.seq, true)
	if werr != nil {
		return nil, fmt.Errorf("%s %s stopped during the call to %s (%v) and did not come back: %w", s.noun(), s.id, e.tool.Name, err, werr)
	}
	if err := p.generation(ctx); err != nil {
		return nil, err
	}
	if err := s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	if _, err := p.lookupSame(ctx, e); err != nil {
		return nil, err
	}
	res, dead, err2 := p.send(ctx, e, c2, args)
	if dead {
		return nil, fmt.Errorf("%s %s stopped during the call to %s, and again during the one retry after its restart (%v); berth gives up on this call", s.noun(), s.id, e.tool.Name, err2)
	}
	return res, err2
}

// send makes one tools/call on a connection. dead reports that the
// connection died (or hung) during it.
func (p *Pool) send(ctx context.Context, e *toolEntry, c *conn, args json.RawMessage) (*mcp.CallToolResult, bool, error) {
	s := e.s
	if err := s.sameSurface(c, e); err != nil {
		return nil, false, err
	}
	cctx, cancel := withCallTimeout(ctx, s.callTime)
	defer cancel(nil)
	stop := context.AfterFunc(c.ctx, func() { cancel(context.Cause(c.ctx)) })
	defer stop()
	cctx, closeRelay := s.openRelay(cctx, c)
	defer closeRelay()
	res, err := c.sess.callTool(cctx, e.def.Name, args)
	c.taskCallReturned(taskCallFrom(ctx), err) // tasks.go
	if err == nil && taskResult(res) {
		// A task that reached go-sdk, which keeps only its resultType
		// (whatever content the result also carries): on legacy SSE
		// (tasks are carried over stdio and Streamable HTTP), or in an
		// answer berth did not read (tasks_http.go). Over stdio berth
		// reads every answer, so this is a second guard.
		how := "berth carries the tasks extension only for plugin servers over stdio or Streamable HTTP"
		switch {
		case c.httpTasks():
			how = fmt.Sprintf("berth reads a task only in the JSON body or an event (up to %d bytes) of the call's own answer", maxTaskEvent)
		case c.stdio():
			how = "berth did not recognise it on the wire"
		}
		err = fmt.Errorf("%s %s answered tools/call %s with a task (resultType \"task\"), which berth did not ask of it or could not read: %s, so no client can follow this task (docs/relay.md §Tasks); berth refused the result, and cannot cancel the task (go-sdk's HTTP client drops its ID)", s.noun(), s.id, e.tool.Name, how)
		s.out.event("%v", err)
		return nil, false, err
	}
	if err == nil {
		s.mu.Lock()
		s.inRow = 0
		s.mu.Unlock()
		return res, false, nil
	}
	if sc := s.stopped(); sc != nil && c.ctx.Err() != nil {
		return nil, false, fmt.Errorf("the call to %s was cancelled: %w", e.tool.Name, sc)
	}
	if ctx.Err() != nil {
		return nil, false, fmt.Errorf("the call to %s was cancelled: %w", e.tool.Name, context.Cause(ctx))
	}
	s.classify(ctx, cctx, c, err)
	if c.ctx.Err() != nil {
		if sc := s.stopped(); sc != nil {
			return nil, false, fmt.Errorf("the call to %s was cancelled: %w", e.tool.Name, sc)
		}
		return nil, true, context.Cause(c.ctx)
	}
	return nil, false, fmt.Errorf("%s: %w", e.tool.Name, err)
}

// sameSurface checks, just before a send, that c is the server's current
// connection and that the tool there is still the one looked up: a
// restart or a re-listing since the lookup may have changed the tool, and
// a changed tool must not run before it is accepted.
func (s *server) sameSurface(c *conn, e *toolEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.changes {
		if ch.Tool == e.def.Name {
			return &SurfaceError{Tool: e.tool.Name, Change: ch}
		}
	}
	if s.conn != c || s.hashes[e.def.Name] != e.tool.Hash {
		return fmt.Errorf("%s changed while the call waited, so berth did not send it; call it again", e.tool.Name)
	}
	return nil
}

// ErrNotFound means no running server offers the prompt or resource
// asked for.
var ErrNotFound = errors.New("not found")

// GetPrompt gets a prompt by its exported name, under the same policy and
// approval as a tool call: a prompt the policy denies is refused (an error
// wrapping ErrDenied); otherwise the approver decides (nil: only what
// AllowedByPolicy allows runs), and the boundary checks run again before
// the prompt is fetched. A name no running server offers wraps ErrNotFound.
func (p *Pool) GetPrompt(ctx context.Context, name string, args map[string]string, approver Approver) (*mcp.GetPromptResult, error) {
	idx, _, collided, err := p.promptIndex(ctx)
	if err != nil {
		return nil, err
	}
	e := idx[name]
	if e == nil {
		if ids, ok := collided[name]; ok {
			return nil, fmt.Errorf("%s is the name of prompts of several servers (%s), so berth offers none of them", name, joinNames(ids))
		}
		return nil, fmt.Errorf("no prompt named %s in %s: %w", name, p.workspace, ErrNotFound)
	}
	if args == nil {
		args = map[string]string{}
	}
	rawArgs, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	req := &ApprovalRequest{Kind: RequestPrompt, Tool: name, Plugin: e.s.pl.name, Version: e.s.pl.version, Server: e.s.name, UpstreamTool: e.prompt.UpstreamName, Arguments: rawArgs, Policy: e.prompt.Policy}
	if req.Policy.Action == store.ActionDeny {
		return nil, &PolicyDeniedError{Request: req}
	}
	if err := e.s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	if err := p.approve(ctx, approver, req, "the prompt "+name); err != nil {
		return nil, err
	}
	if err := p.generation(ctx); err != nil {
		return nil, err
	}
	if idx, _, _, err = p.promptIndex(ctx); err != nil {
		return nil, err
	}
	if n := idx[name]; n == nil || n.s != e.s || n.prompt.UpstreamName != e.prompt.UpstreamName || n.prompt.Policy.Action == store.ActionDeny {
		return nil, fmt.Errorf("the prompt %s changed while the request waited; ask for it again", name)
	}
	if err := e.s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	c := e.s.live()
	if c == nil {
		return nil, fmt.Errorf("server %s stopped; try again", e.s.id)
	}
	cctx, cancel := withCallTimeout(ctx, e.s.callTime)
	defer cancel(nil)
	rctx, closeRelay := e.s.openRelay(mergeCancel(cctx, c.ctx), c)
	defer closeRelay()
	params := &mcp.GetPromptParams{Name: e.prompt.UpstreamName, Arguments: args}
	params.InputResponses, params.RequestState = stampParams(rctx, isModern(c.cs), &params.Meta, params.SetProgressToken)
	res, err := c.cs.GetPrompt(rctx, params)
	if err != nil {
		e.s.classify(ctx, cctx, c, err)
		return nil, fmt.Errorf("getting the prompt %s: %w", name, err)
	}
	return res, nil
}

// ReadResource reads a resource, routed to the one server that lists the
// URI or has a template matching it, under the same policy and approval
// as a tool call, decided by the server's identity "<plugin>__<server>": a
// server whose resources the policy denies is refused (an error wrapping
// ErrDenied); otherwise the approver decides (nil: only what
// AllowedByPolicy allows runs). A URI no running server serves wraps
// ErrNotFound.
func (p *Pool) ReadResource(ctx context.Context, uri string, approver Approver) (*mcp.ReadResourceResult, error) {
	s, err := p.routeResource(ctx, uri)
	if err != nil {
		return nil, err
	}
	rawArgs, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return nil, err
	}
	req := &ApprovalRequest{Kind: RequestResource, Tool: s.id, URI: uri, Plugin: s.pl.name, Version: s.pl.version, Server: s.name, Arguments: rawArgs, Policy: p.policyFor(s, s.id)}
	if req.Policy.Action == store.ActionDeny {
		return nil, &PolicyDeniedError{Request: req}
	}
	if err := s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	if err := p.approve(ctx, approver, req, "reading "+uri); err != nil {
		return nil, err
	}
	if err := p.generation(ctx); err != nil {
		return nil, err
	}
	again, err := p.routeResource(ctx, uri)
	if err != nil {
		return nil, err
	}
	if again != s || p.policyFor(s, s.id).Action == store.ActionDeny {
		return nil, fmt.Errorf("the server of %s changed while the request waited; read it again", uri)
	}
	if err := s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	c := s.live()
	if c == nil {
		return nil, fmt.Errorf("server %s stopped; try again", s.id)
	}
	cctx, cancel := withCallTimeout(ctx, s.callTime)
	defer cancel(nil)
	rctx, closeRelay := s.openRelay(mergeCancel(cctx, c.ctx), c)
	defer closeRelay()
	params := &mcp.ReadResourceParams{URI: uri}
	params.InputResponses, params.RequestState = stampParams(rctx, isModern(c.cs), &params.Meta, params.SetProgressToken)
	res, err := c.cs.ReadResource(rctx, params)
	if err != nil {
		s.classify(ctx, cctx, c, err)
		return nil, fmt.Errorf("reading %s from %s: %w", uri, s.id, err)
	}
	if IsUIURI(uri) {
		if err := s.checkUIRead(uri, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// PolicyDeniedError refuses a prompt or resource that the operator's
// policy denies; the approver is not asked. It wraps ErrDenied, and
// Request is what would have been asked.
type PolicyDeniedError struct {
	Request *ApprovalRequest
}

func (e *PolicyDeniedError) Error() string {
	r := e.Request
	what := fmt.Sprintf("the prompt %s (rule %q)", r.Tool, r.Policy.Pattern)
	if r.Kind == RequestResource {
		what = fmt.Sprintf("the resources of %s (rule %q), %s among them", r.Tool, r.Policy.Pattern, r.URI)
	}
	return fmt.Sprintf("the operator's policy denies %s; change it with `berth policy set` or `berth policy unset %s`", what, r.Policy.Pattern)
}

// Unwrap returns ErrDenied.
func (e *PolicyDeniedError) Unwrap() error { return ErrDenied }

// approve asks the approver (nil: policyOnly) about a request; a refusal
// is an error wrapping ErrDenied.
func (p *Pool) approve(ctx context.Context, approver Approver, req *ApprovalRequest, what string) error {
	if approver == nil {
		approver = policyOnly
	}
	d, err := approver.Approve(ctx, req)
	if err != nil {
		return fmt.Errorf("approving %s: %w", what, err)
	}
	if !d.Allow {
		reason := d.Reason
		if reason == "" {
			reason = "not approved"
		}
		return deniedf("%s was refused (%s, decided by %s); allow it with `berth policy set %s allow`, or approve the request", what, reason, orDefault(d.By, "the approver"), req.Tool)
	}
	return nil
}
