//lint:file-ignore SA1019 the relay carries the SEP-2577 features (roots, sampling, logging) during their deprecation window

package pool

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// Complete relays a completion/complete to the server that owns what it
// completes: a prompt (ref/prompt, by its exported name; the server gets
// its own name) or a resource template (ref/resource, by the template or a
// URI it matches), under that prompt's or that server's resource policy: a
// denied one is refused (an error wrapping ErrDenied). Completions show
// the server's suggestions only, so ask and allow relay without asking.
// Nothing found, or a server that does not offer completions, wraps
// ErrNotFound.
func (p *Pool) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, fmt.Errorf("completion/complete needs a ref (ref/prompt or ref/resource): %w", ErrNotFound)
	}
	var s *server
	q := *params
	ref := *params.Ref
	q.Ref = &ref
	switch ref.Type {
	case "ref/prompt":
		idx, _, _, err := p.promptIndex(ctx)
		if err != nil {
			return nil, err
		}
		e := idx[ref.Name]
		if e == nil {
			return nil, fmt.Errorf("no prompt named %s in %s: %w", ref.Name, p.workspace, ErrNotFound)
		}
		if e.prompt.Policy.Action == store.ActionDeny {
			return nil, deniedf("the operator's policy denies the prompt %s (rule %q), so berth does not complete its arguments", ref.Name, e.prompt.Policy.Pattern)
		}
		s, ref.Name = e.s, e.prompt.UpstreamName
	case "ref/resource":
		var err error
		if s, err = p.routeTemplate(ctx, ref.URI); err != nil {
			return nil, err
		}
		if m := p.policyFor(s, s.id); m.Action == store.ActionDeny {
			return nil, deniedf("the operator's policy denies the resources of %s (rule %q), %s among them", s.id, m.Pattern, ref.URI)
		}
	default:
		return nil, fmt.Errorf("completion/complete: unknown ref type %q (want ref/prompt or ref/resource): %w", ref.Type, ErrNotFound)
	}
	if err := s.pl.checkDrift(ctx); err != nil {
		return nil, err
	}
	c := s.live()
	if c == nil || c.cs == nil {
		return nil, fmt.Errorf("server %s stopped; try again", s.id)
	}
	if !hasCap(c, func(sc *mcp.ServerCapabilities) bool { return sc.Completions != nil }) {
		return nil, fmt.Errorf("server %s does not offer completions: %w", s.id, ErrNotFound)
	}
	cctx, cancel := context.WithTimeoutCause(ctx, s.callTime, errCallTimeout)
	defer cancel()
	res, err := c.cs.Complete(mergeCancel(cctx, c.ctx), &q)
	if err != nil {
		s.classify(ctx, cctx, c, err)
		return nil, fmt.Errorf("completing for %s: %w", s.id, err)
	}
	return res, nil
}

// routeTemplate finds the one server with the resource template t (or a
// resource or template serving the URI t).
func (p *Pool) routeTemplate(ctx context.Context, t string) (*server, error) {
	if err := p.boundary(ctx, nil); err != nil {
		return nil, err
	}
	var pick []*server
	for _, s := range p.servers() {
		s.refreshResources(ctx)
		s.mu.Lock()
		if s.conn != nil && (s.state == StateRunning || s.state == StateChanged) {
			for _, tp := range s.templates {
				if tp.URITemplate == t {
					pick = append(pick, s)
					break
				}
			}
		}
		s.mu.Unlock()
	}
	if len(pick) == 1 {
		return pick[0], nil
	}
	if len(pick) > 1 {
		return nil, fmt.Errorf("the resource template %s is offered by several servers; berth never merges them, so disable all but one", t)
	}
	return p.routeResource(ctx, t)
}

// Offers reports whether any running MCP server declared completions
// (what == "completions") or resource subscriptions ("subscribe").
func (p *Pool) Offers(what string) bool {
	return p.OffersFor(what, nil)
}

// OffersFor is Offers over the servers of the plugins for which plugin
// reports true (nil: every plugin), e.g. those a profile offers.
func (p *Pool) OffersFor(what string, plugin func(name string) bool) bool {
	for _, s := range p.servers() {
		if plugin != nil && !plugin(s.pl.name) {
			continue
		}
		c := s.live()
		if c == nil || c.cs == nil {
			continue
		}
		if hasCap(c, func(sc *mcp.ServerCapabilities) bool {
			switch what {
			case "completions":
				return sc.Completions != nil
			case "subscribe":
				return sc.Resources != nil && sc.Resources.Subscribe
			}
			return false
		}) {
			return true
		}
	}
	return false
}
