//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/berth-mcp/berth/pool"
)

// Completions and resource subscriptions are relayed to the plugin server
// that owns the prompt, template or resource (pool.Complete,
// pool.Subscribe). berth declares the completions capability and
// resources.subscribe only when a running plugin server offers them.

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	if err := s.completionInView(ctx, req.Params); err != nil {
		return nil, relayError("completion/complete", err)
	}
	res, err := s.pool.Complete(ctx, req.Params)
	if err != nil {
		return nil, relayError("completion/complete", err)
	}
	dropCompletionIdentity(res)
	return res, nil
}

func dropCompletionIdentity(res *mcp.CompleteResult) {
	if res == nil || res.Meta == nil {
		return
	}
	delete(res.Meta, mcp.MetaKeyServerInfo)
	if len(res.Meta) == 0 {
		res.Meta = nil
	}
}

func (s *Server) subscribeResource(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if s.view.Profile != "" && !s.hasResource(uri) {
		// A profile's session subscribes only to what it lists.
		if s.refresh(ctx, "resources/subscribe"); !s.hasResource(uri) {
			return relayError("resources/subscribe", &notInViewError{what: uri, profile: s.view.Profile})
		}
	}
	if err := s.pool.Subscribe(ctx, uri, sessionKey(req.Session)); err != nil {
		return relayError("resources/subscribe", err)
	}
	s.addSub(uri, req.Session)
	if s.view.Profile != "" && !s.hasResource(uri) {
		// A boundary dropped it while the pool subscribed.
		s.endSub(ctx, uri, req.Session)
		return relayError("resources/subscribe", &notInViewError{what: uri, profile: s.view.Profile})
	}
	return nil
}

func (s *Server) unsubscribeResource(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	s.subMu.Lock()
	s.dropSubLocked(req.Params.URI, req.Session)
	s.subMu.Unlock()
	return s.pool.Unsubscribe(ctx, req.Params.URI, sessionKey(req.Session))
}

// sessionKey is who the pool holds a subscription for.
func sessionKey(ss *mcp.ServerSession) any {
	if ss == nil {
		return new(int) // a subscriber of its own
	}
	return ss
}

// Berth's record of the subscriptions of a Server's sessions (subs) is
// what an update is delivered by (subscribedNow): go-sdk keeps its own
// record, which berth cannot end, so a subscription berth ended at a
// boundary is ended here and in the pool (which counts subscribers per
// session, and unsubscribes berth upstream when the last one goes).

func (s *Server) addSub(uri string, ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if s.subs == nil {
		s.subs = map[string]map[*mcp.ServerSession]bool{}
	}
	if s.subs[uri] == nil {
		s.subs[uri] = map[*mcp.ServerSession]bool{}
	}
	s.subs[uri][ss] = true
}

func (s *Server) dropSubLocked(uri string, ss *mcp.ServerSession) {
	delete(s.subs[uri], ss)
	if len(s.subs[uri]) == 0 {
		delete(s.subs, uri)
	}
}

// endSub ends ss's subscription to uri, in berth's record and in the pool.
func (s *Server) endSub(ctx context.Context, uri string, ss *mcp.ServerSession) {
	s.subMu.Lock()
	s.dropSubLocked(uri, ss)
	s.subMu.Unlock()
	if err := s.pool.Unsubscribe(ctx, uri, sessionKey(ss)); err != nil {
		s.log.Debug("ending a resource subscription", "uri", uri, "error", err)
	}
}

// endStaleSubs runs at every catalog boundary (Sync), after the
// resources were applied: it ends the subscriptions of sessions that are
// gone and, in a profile's view, those to a resource the view no longer
// lists (the profile was narrowed or removed), so that neither the
// session nor berth upstream holds them any more.
func (s *Server) endStaleSubs(ctx context.Context) {
	live := map[*mcp.ServerSession]bool{}
	for ss := range s.ms.Sessions() {
		live[ss] = true
	}
	type sub struct {
		uri string
		ss  *mcp.ServerSession
	}
	var end []sub
	s.subMu.Lock()
	for uri, sessions := range s.subs {
		listed := s.view.Profile == "" || s.hasResource(uri)
		for ss := range sessions {
			if !listed || !live[ss] {
				end = append(end, sub{uri, ss})
			}
		}
	}
	s.subMu.Unlock()
	for _, e := range end {
		s.endSub(ctx, e.uri, e.ss)
	}
}

// subscribedNow reports whether an update of uri may go to ss: berth
// holds ss's subscription to it, and the view, as the state has it now,
// offers the plugin whose resource it is.
func (s *Server) subscribedNow(uri string, ss *mcp.ServerSession) bool {
	s.subMu.Lock()
	held := s.subs[uri][ss]
	s.subMu.Unlock()
	if !held {
		return false
	}
	if s.view.Profile == "" {
		return true
	}
	plugin, ok := s.resourcePlugin(uri)
	return ok && s.offersPluginNow(plugin)
}

// resourcePlugin is the plugin of a resource the catalog lists (or of the
// template that matches uri).
func (s *Server) resourcePlugin(uri string) (string, bool) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if p, ok := s.resPlugins[uri]; ok {
		if _, listed := s.resources[uri]; listed {
			return p, true
		}
	}
	for t := range s.templates {
		if tp, err := uritemplate.New(t); err == nil && tp.Regexp().MatchString(uri) {
			return s.resPlugins[t], true
		}
	}
	return "", false
}

// relayUpdated passes a subscribed resource's update to the sessions of
// every Server of the family (the pool has one sink) that berth holds
// subscribed to it: sendingMiddleware drops it for any other session
// (subscribedNow).
func (s *Server) relayUpdated(_ context.Context, uri string, _ []any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, m := range s.fam.servers() {
		m.subMu.Lock()
		n := len(m.subs[uri])
		m.subMu.Unlock()
		if n == 0 {
			continue
		}
		if err := m.ms.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			s.log.Debug("relaying a resource update", "uri", uri, "error", err)
		}
	}
}

// relayError is the JSON-RPC error of a refused or failed relayed request.
func relayError(method string, err error) error {
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		return err
	case errors.Is(err, pool.ErrNotFound):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", method, err)}
	case errors.Is(err, pool.ErrDenied):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%s: %v", method, err)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: %v", method, err)}
}

// capsMiddleware declares completions and resources.subscribe in a
// session's initialize (or server/discover) result only when a running
// server of a plugin the view offers declared them.
func (s *Server) capsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || (method != "initialize" && method != "server/discover") {
			return res, err
		}
		var caps *mcp.ServerCapabilities
		switch r := res.(type) {
		case *mcp.InitializeResult:
			caps = r.Capabilities
		case *mcp.DiscoverResult:
			caps = r.Capabilities
		}
		if caps == nil {
			return res, err
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s.pool.WaitStarted(wctx)
		cancel()
		// Of the plugins the view offers now: a profile's session is
		// told nothing of the plugins outside it.
		var offers func(string) bool
		if s.view.Profile != "" {
			offers = s.offersPluginNow
		}
		if !s.pool.OffersFor("completions", offers) {
			caps.Completions = nil
		}
		if caps.Resources != nil {
			caps.Resources.Subscribe = s.pool.OffersFor("subscribe", offers)
		}
		return res, err
	}
}

// completionInView refuses a completion of a prompt or resource template
// the view's profile does not offer.
func (s *Server) completionInView(ctx context.Context, p *mcp.CompleteParams) error {
	if s.view.Profile == "" || p == nil || p.Ref == nil {
		return nil
	}
	switch p.Ref.Type {
	case "ref/prompt":
		if !s.promptInView(p.Ref.Name) {
			return &notInViewError{what: "the prompt " + p.Ref.Name, profile: s.view.Profile}
		}
	case "ref/resource":
		if !s.hasTemplate(p.Ref.URI) && !s.hasResource(p.Ref.URI) {
			if s.refresh(ctx, "completion/complete"); !s.hasTemplate(p.Ref.URI) && !s.hasResource(p.Ref.URI) {
				return &notInViewError{what: "the resource template " + p.Ref.URI, profile: s.view.Profile}
			}
		}
	}
	return nil
}

func (s *Server) hasTemplate(t string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	_, ok := s.templates[t]
	return ok
}
