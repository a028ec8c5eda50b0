//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package mcpexport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	if s.view.Profile != "" && !s.hasResource(req.Params.URI) {
		// A profile's session subscribes only to what it lists.
		if s.refresh(ctx, "resources/subscribe"); !s.hasResource(req.Params.URI) {
			return relayError("resources/subscribe", &notInViewError{what: req.Params.URI, profile: s.view.Profile})
		}
	}
	if err := s.pool.Subscribe(ctx, req.Params.URI, sessionKey(req.Session)); err != nil {
		return relayError("resources/subscribe", err)
	}
	return nil
}

func (s *Server) unsubscribeResource(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return s.pool.Unsubscribe(ctx, req.Params.URI, sessionKey(req.Session))
}

// sessionKey is who the pool holds a subscription for.
func sessionKey(ss *mcp.ServerSession) any {
	if ss == nil {
		return new(int) // a subscriber of its own
	}
	return ss
}

// relayUpdated passes a subscribed resource's update to the sessions
// go-sdk holds subscribed to it.
func (s *Server) relayUpdated(_ context.Context, uri string, _ []any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.ms.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		s.log.Debug("relaying a resource update", "uri", uri, "error", err)
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
// plugin server offers them.
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
		if !s.pool.Offers("completions") {
			caps.Completions = nil
		}
		if caps.Resources != nil {
			caps.Resources.Subscribe = s.pool.Offers("subscribe")
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
