package mcpexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/toolsearch"
)

// Lazy mode (docs/profiles.md): instead of every tool the view offers,
// the Server lists berth_find_tools, which searches them, and
// berth_call_tool, which calls one. Both work on exactly what full mode
// would list at the same catalog boundary (setOffered): a tool the policy
// denies, a tool whose changed surface is withheld, a tool of a disabled
// or revoked plugin or outside the view's profile is neither found nor
// called. A call through berth_call_tool is the real tool's own call
// (runTool): the same policy, approval, boundaries, relay and audit.

// metaHash marks a meta-tool in Server.tools (a pool tool's entry always
// holds "|").
const metaHash = "meta"

// offeredTools is what full mode would list at the last boundary, and the
// search index over it, built at the first search after it changed.
type offeredTools struct {
	key    string
	byName map[string]*pool.Tool
	defs   []*mcp.Tool // by Doc index
	docs   []toolsearch.Doc
	once   sync.Once
	index  *toolsearch.Index
}

// search is the index over the tools, built once.
func (o *offeredTools) search() *toolsearch.Index {
	o.once.Do(func() { o.index = toolsearch.New(o.docs) })
	return o.index
}

// setOffered records the tools the view offers at this boundary (the
// pool's listing, filtered by the view) and returns those berth can list:
// those whose definition go-sdk can serve. The caller holds syncMu.
func (s *Server) setOffered(tools []*pool.Tool) []*pool.Tool {
	keys := make([]string, 0, len(tools))
	for _, t := range tools {
		keys = append(keys, t.Name+"\x00"+t.Hash+"\x00"+string(t.Policy.Action))
	}
	sort.Strings(keys)
	key := strings.Join(keys, "\n")
	if s.offered != nil && s.offered.key == key {
		out := make([]*pool.Tool, 0, len(tools))
		for _, t := range tools {
			if _, ok := s.offered.byName[t.Name]; ok {
				out = append(out, t)
			}
		}
		return out
	}
	// What go-sdk refuses to serve is not listed in full mode (addTool):
	// it is not found either.
	scratch := mcp.NewServer(&mcp.Implementation{Name: "scratch"}, nil)
	o := &offeredTools{key: key, byName: map[string]*pool.Tool{}}
	var out []*pool.Tool
	for _, t := range tools {
		def, err := listable(scratch, t, nopTool)
		if err != nil {
			s.log.Warn("not offering a tool", "tool", t.Name, "error", err)
			continue
		}
		out = append(out, t)
		o.byName[t.Name] = t
		o.defs = append(o.defs, def)
		o.docs = append(o.docs, toolsearch.ToolDoc(t.Name, t.Plugin, t.Server, def))
	}
	s.offered = o
	return out
}

func nopTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// offeredTool is the tool the view offered at the last boundary under
// name, nil for none.
func (s *Server) offeredTool(name string) *pool.Tool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.offered == nil {
		return nil
	}
	return s.offered.byName[name]
}

// metaHandler is the handler of a meta-tool.
func (s *Server) metaHandler(name string) mcp.ToolHandler {
	if name == MetaFindTools {
		return s.findTools
	}
	return s.callThrough
}

// FoundTool is one match of berth_find_tools: the tool as tools/list
// would list it in full mode.
type FoundTool struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	InputSchema any                  `json:"inputSchema"`
}

// FindResult is berth_find_tools' structured result.
type FindResult struct {
	// Tools are the matches, best first; empty when none matched.
	Tools []FoundTool `json:"tools"`
}

// findTools is berth_find_tools: a catalog boundary (the catalog is
// re-assembled, as for tools/list), then a search of what the view
// offers.
func (s *Server) findTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	query, limit, err := findArgs(req.Params.Arguments)
	if err != nil {
		return toolError(fmt.Sprintf("berth refused this %s call: %v", MetaFindTools, err)), nil
	}
	s.refresh(ctx, "tools/call "+MetaFindTools)
	v, err := s.current()
	if err == nil {
		err = s.removedErr(v)
	}
	if err != nil {
		return toolError(fmt.Sprintf("berth cannot search: %v", err)), nil
	}
	s.syncMu.Lock()
	o := s.offered
	s.syncMu.Unlock()
	out := FindResult{Tools: []FoundTool{}}
	if o != nil {
		for _, h := range o.search().Search(query, limit) {
			if h.Doc < 0 || h.Doc >= len(o.defs) {
				continue
			}
			def := o.defs[h.Doc]
			out.Tools = append(out.Tools, FoundTool{Name: def.Name, Title: def.Title, Description: def.Description, Annotations: def.Annotations, InputSchema: def.InputSchema})
			if len(out.Tools) == limit {
				break
			}
		}
	}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil
}

// callThrough is berth_call_tool: the named tool's own call (runTool),
// with the request's _meta (progress token), input responses and state,
// session and transport, only the name and arguments taken from the
// meta-tool's arguments. A name the view does not offer is a tool error
// that points at berth_find_tools.
func (s *Server) callThrough(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, args, err := callArgs(req.Params.Arguments)
	if err != nil {
		return toolError(fmt.Sprintf("berth refused this %s call: %v", MetaCallTool, err)), nil
	}
	inner := &mcp.CallToolRequest{Session: req.Session, Extra: req.Extra, Params: &mcp.CallToolParamsRaw{
		Meta: req.Params.Meta, Name: name, Arguments: args,
		InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState,
	}}
	if s.offeredTool(name) == nil {
		// As a direct call of a name not listed: assemble the catalog
		// once, then say why a name of this view is not offered (drift,
		// policy, sign-in), or that it is unknown.
		s.refresh(ctx, "tools/call "+MetaCallTool)
		if s.offeredTool(name) == nil {
			res, how, err := s.unlistedCall(ctx, inner, name, MetaCallTool)
			switch how {
			case unlistedAnswered:
				return res, err
			case unlistedSignedIn:
				return s.runTool(ctx, inner, name, MetaCallTool)
			}
			return toolError(notOffered(name)), nil
		}
	}
	return s.runTool(ctx, inner, name, MetaCallTool)
}

// notOffered is the tool error of berth_call_tool for a name it cannot
// call.
func notOffered(name string) string {
	return fmt.Sprintf("berth has no tool %q to call here: no tool of that name is offered (it is unknown, outside this profile, or denied by the operator's policy). Search with %s and call a name it returns.", name, MetaFindTools)
}

// notInViewError refuses a request for something outside the view's
// profile; it wraps pool.ErrNotFound: to the client, it is unknown.
type notInViewError struct {
	what, profile string
}

func (e *notInViewError) Error() string {
	return fmt.Sprintf("%s is not offered by the profile %s", e.what, e.profile)
}

func (e *notInViewError) Unwrap() error { return pool.ErrNotFound }

// viewRefusal is why the view does not offer a request the pool routed
// (kind, and the plugin and name the pool resolved), nil when it does: an
// error of the state, the profile's removal, or notInViewError. It is
// checked before anyone is asked and before anything is sent, whatever
// path the request took.
func (s *Server) viewRefusal(kind pool.RequestKind, plugin, name string) error {
	if s.view.Profile == "" {
		return nil
	}
	v, err := s.current()
	if err != nil {
		return err
	}
	if err := s.removedErr(v); err != nil {
		return err
	}
	ok := v.offersPlugin(plugin)
	if kind == pool.RequestTool {
		ok = v.offersTool(plugin, name)
	}
	if !ok {
		return &notInViewError{what: name, profile: s.view.Profile}
	}
	return nil
}

// unknownTool is go-sdk's answer to a tools/call of a name it does not
// list.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// metaArgs decodes a meta-tool's arguments: a JSON object (no key twice,
// checked as every request's params are), whose keys are among known.
func metaArgs(raw json.RawMessage, known ...string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New("its arguments must be a JSON object")
	}
	if err := checkStrict(raw, MaxArgumentDepth+1, ""); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New("its arguments must be a JSON object")
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown argument %s (it takes only %s)", strings.Join(unknown, ", "), strings.Join(known, " and "))
	}
	return m, nil
}

// findArgs reads berth_find_tools' arguments: query, a string with a
// word in it, and limit, an integer from 1 to MaxFindLimit
// (DefaultFindLimit when absent).
func findArgs(raw json.RawMessage) (string, int, error) {
	const want = `send {"query": "words describing the task", "limit": 5}`
	m, err := metaArgs(raw, "query", "limit")
	if err != nil {
		return "", 0, fmt.Errorf("%v; %s", err, want)
	}
	var query string
	if q, ok := m["query"]; !ok || json.Unmarshal(q, &query) != nil || bytes.TrimSpace(q)[0] != '"' {
		return "", 0, fmt.Errorf("query must be a string; %s", want)
	}
	if strings.TrimSpace(query) == "" {
		return "", 0, fmt.Errorf("query holds no words; %s", want)
	}
	if len(query) > maxQuery {
		return "", 0, fmt.Errorf("query is %d bytes, more than the %d it may have (a few words are enough); %s", len(query), maxQuery, want)
	}
	limit := DefaultFindLimit
	if l, ok := m["limit"]; ok {
		n, err := strconv.Atoi(string(bytes.TrimSpace(l)))
		if err != nil {
			return "", 0, fmt.Errorf("limit must be an integer from 1 to %d, not %s; %s", MaxFindLimit, l, want)
		}
		if n < 1 || n > MaxFindLimit {
			return "", 0, fmt.Errorf("limit must be from 1 to %d, not %d; %s", MaxFindLimit, n, want)
		}
		limit = n
	}
	return query, limit, nil
}

// maxQuery caps berth_find_tools' query.
const maxQuery = 1024

// callArgs reads berth_call_tool's arguments: name, a string, and
// arguments, an object (absent: none), kept as sent so that the tool's
// call checks and encodes them as a direct call's.
func callArgs(raw json.RawMessage) (string, json.RawMessage, error) {
	const want = `send {"name": "<a name ` + MetaFindTools + ` returned>", "arguments": {…the tool's arguments…}}`
	m, err := metaArgs(raw, "name", "arguments")
	if err != nil {
		return "", nil, fmt.Errorf("%v; %s", err, want)
	}
	var name string
	if n, ok := m["name"]; !ok || json.Unmarshal(n, &name) != nil || bytes.TrimSpace(n)[0] != '"' {
		return "", nil, fmt.Errorf("name must be a string; %s", want)
	}
	if name == "" {
		return "", nil, fmt.Errorf("name is empty; %s", want)
	}
	args, ok := m["arguments"]
	if !ok {
		return name, nil, nil
	}
	if args = bytes.TrimSpace(args); args[0] != '{' {
		return "", nil, fmt.Errorf("arguments must be a JSON object (the tool's arguments), not %s; %s", jsonKind(args), want)
	}
	return name, args, nil
}

// jsonKind names the type of a JSON value.
func jsonKind(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
