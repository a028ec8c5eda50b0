package pool

import (
	"context"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/berth-mcp/berth/store"
)

// Tool is one entry of the catalog.
type Tool struct {
	// Name is the exported name, "<plugin>__<server>__<tool>", or
	// "<plugin>__<entry>__<tool>" for a native tool.
	Name   string `json:"name"`
	Plugin string `json:"plugin"`
	// Server is the manifest's key of the server, or of the native tool
	// provider when Native is set.
	Server       string `json:"server"`
	Native       bool   `json:"native,omitempty"`
	UpstreamName string `json:"upstreamName"`
	// Definition is the tool as listed, with Name set to the exported
	// name; the caller must not modify it.
	Definition *mcp.Tool `json:"definition"`
	// Hash is the tool's pinned surface hash (ToolHash).
	Hash string `json:"hash"`
	// Policy is the operator's policy for the tool (allow or ask).
	Policy store.PolicyMatch `json:"policy"`
	// UI is the ui:// template (MCP Apps) the tool links, when it is
	// pinned and served; "" otherwise (a withheld template's link is
	// taken out of Definition).
	UI string `json:"ui,omitempty"`
}

type toolEntry struct {
	tool   *Tool
	s      *server
	def    *mcp.Tool // upstream
	policy store.PolicyMatch
}

// index is the assembled catalog, rebuilt when p.ver moved.
type index struct {
	ver        uint64
	tools      map[string]*toolEntry
	list       []*Tool
	denied     map[string]store.PolicyMatch
	withheld   map[string]ToolChange
	collided   map[string][]string  // exported name → server IDs
	collisions map[*server][]string // exported names
	perServer  map[*server]int
	starting   bool
}

type candidate struct {
	name   string
	s      *server
	def    *mcp.Tool
	hash   string
	change *ToolChange
	uiOK   bool // its UI template, if it links one, is served
}

// index returns the current catalog, rebuilding it from the servers'
// listings if anything changed since it was built.
func (p *Pool) index() *index {
	v := p.ver.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idx != nil && p.idx.ver == v {
		return p.idx
	}
	idx := &index{ver: v, tools: map[string]*toolEntry{}, denied: map[string]store.PolicyMatch{}, withheld: map[string]ToolChange{},
		collided: map[string][]string{}, collisions: map[*server][]string{}, perServer: map[*server]int{}}
	byName := map[string][]candidate{}
	var names []string
	for _, pl := range p.sortedPluginsLocked() {
		for _, s := range pl.servers {
			s.mu.Lock()
			if s.state == StateStarting {
				idx.starting = true
			}
			if s.conn != nil && (s.state == StateRunning || s.state == StateChanged) {
				changes := map[string]*ToolChange{}
				for i := range s.changes {
					changes[s.changes[i].Tool] = &s.changes[i]
				}
				for _, t := range s.tools {
					n := s.exportName(t.Name)
					if byName[n] == nil {
						names = append(names, n)
					}
					link := UILink(t)
					byName[n] = append(byName[n], candidate{name: n, s: s, def: t, hash: s.hashes[t.Name], change: changes[t.Name], uiOK: link != "" && s.ui.served(link)})
				}
			}
			s.mu.Unlock()
		}
	}
	sort.Strings(names)
	for _, n := range names {
		cs := byName[n]
		if len(cs) > 1 {
			for _, c := range cs {
				idx.collided[n] = append(idx.collided[n], c.s.id)
				idx.collisions[c.s] = append(idx.collisions[c.s], n)
			}
			continue
		}
		c := cs[0]
		if c.change != nil {
			idx.withheld[n] = *c.change
			continue
		}
		m := store.MatchPolicy(p.policy, store.PolicySubject{Plugin: c.s.pl.name, Signer: c.s.pl.signer, Name: n})
		if m.Action == store.ActionDeny {
			idx.denied[n] = m
			continue
		}
		def := *c.def
		def.Name = n
		ui := UILink(c.def)
		if ui != "" && !c.uiOK {
			def.Meta, ui = withoutUILink(def.Meta), ""
		}
		t := &Tool{Name: n, Plugin: c.s.pl.name, Server: c.s.name, Native: c.s.native != nil, UpstreamName: c.def.Name, Definition: &def, Hash: c.hash, UI: ui, Policy: m}
		idx.tools[n] = &toolEntry{tool: t, s: c.s, def: c.def, policy: m}
		idx.list = append(idx.list, t)
		idx.perServer[c.s]++
	}
	p.idx = idx
	return idx
}

func (p *Pool) sortedPluginsLocked() []*plugin {
	out := make([]*plugin, 0, len(p.plugins))
	for _, pl := range p.plugins {
		if pl.err == nil {
			out = append(out, pl)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (p *Pool) servers() []*server {
	var out []*server
	for _, pl := range p.activePlugins() {
		out = append(out, pl.servers...)
	}
	return out
}

// Tools assembles the catalog: the tools of every running server, named
// "<plugin>__<server>__<tool>" and filtered by the manifest's tools.allow
// and tools.deny, and of every running native tool provider, named
// "<plugin>__<entry>__<tool>"; without tools withheld for a surface change or a
// name collision, and without tools the operator's policy denies; each
// with its policy. Servers still starting are not waited for.
func (p *Pool) Tools(ctx context.Context) ([]*Tool, error) {
	if p.isClosed() {
		return nil, errClosed
	}
	if err := p.boundary(ctx, nil); err != nil {
		return nil, err
	}
	for _, s := range p.servers() {
		s.refreshTools(ctx)
	}
	idx := p.index()
	return append([]*Tool(nil), idx.list...), nil
}

// Prompt is one prompt of the catalog.
type Prompt struct {
	// Name is the exported name, "<plugin>__<server>__<prompt>".
	Name         string `json:"name"`
	Plugin       string `json:"plugin"`
	Server       string `json:"server"`
	UpstreamName string `json:"upstreamName"`
	// Definition is the prompt as listed, with Name set to Name.
	Definition *mcp.Prompt `json:"definition"`
	// Policy is the operator's policy for the prompt (allow or ask;
	// denied prompts are not listed).
	Policy store.PolicyMatch `json:"policy"`
}

// Resource is a resource or a resource template of a server. URIs are
// the server's own: ReadResource routes a URI to the one server that
// lists it or whose template matches it.
type Resource struct {
	Plugin   string                `json:"plugin"`
	Server   string                `json:"server"`
	Resource *mcp.Resource         `json:"resource,omitempty"`
	Template *mcp.ResourceTemplate `json:"template,omitempty"`
	// Policy is the operator's policy for the resources of the server,
	// decided by its identity "<plugin>__<server>" (allow or ask; the
	// resources of a denied server are not listed).
	Policy store.PolicyMatch `json:"policy"`
}

// policyFor is the operator's policy for a name of a server's plugin.
func (p *Pool) policyFor(s *server, name string) store.PolicyMatch {
	p.mu.Lock()
	rules := p.policy
	p.mu.Unlock()
	return store.MatchPolicy(rules, store.PolicySubject{Plugin: s.pl.name, Signer: s.pl.signer, Name: name})
}

// refreshPrompts lists a server's prompts when it has none listed yet or
// announced a change.
func (s *server) refreshPrompts(ctx context.Context) {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	c := s.live()
	if c == nil || !hasCap(c, func(sc *mcp.ServerCapabilities) bool { return sc.Prompts != nil }) {
		return
	}
	s.mu.Lock()
	listed := s.listedAt.prompts
	s.mu.Unlock()
	if listed && !c.promptsDirty.Swap(false) {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, s.callTime)
	defer cancel()
	var out []*mcp.Prompt
	for pr, err := range c.cs.Prompts(mergeCancel(lctx, c.ctx), nil) {
		if err != nil {
			c.promptsDirty.Store(true)
			s.classify(ctx, lctx, c, err)
			return
		}
		out = append(out, pr)
	}
	s.mu.Lock()
	s.prompts, s.listedAt.prompts = out, true
	s.mu.Unlock()
}

func (s *server) refreshResources(ctx context.Context) {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	c := s.live()
	if c == nil || !hasCap(c, func(sc *mcp.ServerCapabilities) bool { return sc.Resources != nil }) {
		return
	}
	s.mu.Lock()
	listed := s.listedAt.resources
	s.mu.Unlock()
	if listed && !c.resourcesDirty.Swap(false) {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, s.callTime)
	defer cancel()
	mctx := mergeCancel(lctx, c.ctx)
	var rs []*mcp.Resource
	var ts []*mcp.ResourceTemplate
	for r, err := range c.cs.Resources(mctx, nil) {
		if err != nil {
			c.resourcesDirty.Store(true)
			s.classify(ctx, lctx, c, err)
			return
		}
		rs = append(rs, r)
	}
	for t, err := range c.cs.ResourceTemplates(mctx, nil) {
		if err != nil {
			break // templates are optional
		}
		ts = append(ts, t)
	}
	s.mu.Lock()
	s.resources, s.templates, s.listedAt.resources = rs, ts, true
	s.mu.Unlock()
}

// hasCap reports whether an MCP server declared a capability. Native tool
// providers have tools only.
func hasCap(c *conn, f func(*mcp.ServerCapabilities) bool) bool {
	if c.cs == nil {
		return false
	}
	ir := c.cs.InitializeResult()
	return ir != nil && ir.Capabilities != nil && f(ir.Capabilities)
}

type promptEntry struct {
	prompt *Prompt
	s      *server
}

// promptIndex lists the prompts of the running servers, namespaced like
// tools, with their policy; colliding names are left out and returned
// separately, and so are the prompts the policy denies (by the same name
// in idx, with a deny policy; list lacks them).
func (p *Pool) promptIndex(ctx context.Context) (map[string]*promptEntry, []*Prompt, map[string][]string, error) {
	if p.isClosed() {
		return nil, nil, nil, errClosed
	}
	if err := p.boundary(ctx, nil); err != nil {
		return nil, nil, nil, err
	}
	p.mu.Lock()
	rules := p.policy
	p.mu.Unlock()
	byName := map[string][]*promptEntry{}
	for _, s := range p.servers() {
		s.refreshPrompts(ctx)
		s.mu.Lock()
		if s.conn != nil && (s.state == StateRunning || s.state == StateChanged) {
			for _, pr := range s.prompts {
				n := ExportName(s.pl.name, s.name, pr.Name)
				def := *pr
				def.Name = n
				m := store.MatchPolicy(rules, store.PolicySubject{Plugin: s.pl.name, Signer: s.pl.signer, Name: n})
				byName[n] = append(byName[n], &promptEntry{prompt: &Prompt{Name: n, Plugin: s.pl.name, Server: s.name, UpstreamName: pr.Name, Definition: &def, Policy: m}, s: s})
			}
		}
		s.mu.Unlock()
	}
	idx := map[string]*promptEntry{}
	collided := map[string][]string{}
	var list []*Prompt
	for n, es := range byName {
		if len(es) > 1 {
			for _, e := range es {
				collided[n] = append(collided[n], e.s.id)
			}
			sort.Strings(collided[n])
			continue
		}
		idx[n] = es[0]
		if es[0].prompt.Policy.Action != store.ActionDeny {
			list = append(list, es[0].prompt)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return idx, list, collided, nil
}

// Prompts lists the prompts of the running servers that advertise them,
// named like tools, each with the operator's policy for it. Colliding
// names and prompts the policy denies are left out.
func (p *Pool) Prompts(ctx context.Context) ([]*Prompt, error) {
	_, list, _, err := p.promptIndex(ctx)
	return list, err
}

// Resources lists the resources and resource templates of the running
// servers that advertise them, each with the operator's policy for its
// server's resources; those of a server whose resources the policy denies
// are left out.
func (p *Pool) Resources(ctx context.Context) ([]*Resource, error) {
	if p.isClosed() {
		return nil, errClosed
	}
	if err := p.boundary(ctx, nil); err != nil {
		return nil, err
	}
	var out []*Resource
	for _, s := range p.servers() {
		s.refreshResources(ctx)
		m := p.policyFor(s, s.id)
		if m.Action == store.ActionDeny {
			continue
		}
		s.mu.Lock()
		if s.conn != nil && (s.state == StateRunning || s.state == StateChanged) {
			for _, r := range s.resources {
				out = append(out, &Resource{Plugin: s.pl.name, Server: s.name, Resource: r, Policy: m})
			}
			for _, t := range s.templates {
				out = append(out, &Resource{Plugin: s.pl.name, Server: s.name, Template: t, Policy: m})
			}
		}
		s.mu.Unlock()
	}
	return out, nil
}

// routeResource finds the one server that serves uri: the servers that
// list it exactly, else those with a matching template. Two or more is a
// collision, refused.
func (p *Pool) routeResource(ctx context.Context, uri string) (*server, error) {
	if p.isClosed() {
		return nil, errClosed
	}
	if err := p.boundary(ctx, nil); err != nil {
		return nil, err
	}
	var exact, tmpl []*server
	for _, s := range p.servers() {
		s.refreshResources(ctx)
		s.mu.Lock()
		if s.conn != nil && (s.state == StateRunning || s.state == StateChanged) {
			for _, r := range s.resources {
				if r.URI == uri {
					exact = append(exact, s)
					break
				}
			}
			if (len(exact) == 0 || exact[len(exact)-1] != s) && s.servesUILocked(uri) {
				exact = append(exact, s)
			}
			for _, t := range s.templates {
				if tp, err := uritemplate.New(t.URITemplate); err == nil && tp.Regexp().MatchString(uri) {
					tmpl = append(tmpl, s)
					break
				}
			}
		}
		s.mu.Unlock()
	}
	pick := exact
	if len(pick) == 0 {
		pick = tmpl
	}
	switch len(pick) {
	case 0:
		return nil, fmt.Errorf("no running server of %s lists the resource %s or a template that matches it: %w", p.workspace, uri, ErrNotFound)
	case 1:
		return pick[0], nil
	}
	var ids []string
	for _, s := range pick {
		ids = append(ids, s.id)
	}
	return nil, fmt.Errorf("the resource %s is served by several servers (%s); berth never merges them, so disable all but one", uri, joinNames(ids))
}
