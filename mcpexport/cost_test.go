package mcpexport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/store"
)

type teeReadCloser struct {
	io.Reader
	io.Closer
}

// listToolsWire connects a go-sdk client to ms over a newline-delimited
// stream, lists the tools through it (every page) and returns the bytes
// of each tools/list result and of each entry in it, exactly as the
// client read them off the wire, with the tools the client decoded.
func listToolsWire(t testing.TB, ms *mcp.Server) (results []json.RawMessage, entries []json.RawMessage, tools []*mcp.Tool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	ss, err := ms.Connect(ctx, &mcp.IOTransport{Reader: c2sR, Writer: s2cW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	wire := &syncBuffer{} // what the client read off the wire, as it came
	client := mcp.NewClient(&mcp.Implementation{Name: "cost-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: teeReadCloser{io.TeeReader(s2cR, wire), s2cR}, Writer: c2sW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	sc := bufio.NewScanner(strings.NewReader(wire.String()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Result == nil {
			continue
		}
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(msg.Result, &res) != nil || res.Tools == nil {
			continue
		}
		results = append(results, msg.Result)
		entries = append(entries, res.Tools...)
	}
	if len(entries) != len(tools) {
		t.Fatalf("the client decoded %d tools but %d entries were read off the wire", len(tools), len(entries))
	}
	return results, entries, tools
}

func rawBytes(rs []json.RawMessage) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// costTools are pool tools whose definitions exercise what the measure
// must get right: characters encoding/json would escape as HTML, a
// description over maxDescription with a multi-byte character at the
// cut, annotations, an output schema, and a schema berth does not list.
func costTools() []*pool.Tool {
	long := strings.Repeat("a", maxDescription-1) + "é and more <b>text</b> past the cap"
	mk := func(plugin, name string, def *mcp.Tool) *pool.Tool {
		def.Name = plugin + "__up__" + name
		return &pool.Tool{Name: def.Name, Plugin: plugin, Server: "up", UpstreamName: name, Definition: def}
	}
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	return []*pool.Tool{
		mk("alpha", "html", &mcp.Tool{Description: "Returns <html> & \"quotes\" → arrows, tabs\tand\nnewlines",
			InputSchema: obj(map[string]any{"q": map[string]any{"type": "string", "description": "a < b && c > d"}})}),
		mk("alpha", "long", &mcp.Tool{Description: long, Title: "Long one",
			InputSchema: obj(map[string]any{"n": map[string]any{"type": "integer", "minimum": 1}})}),
		mk("beta", "annotated", &mcp.Tool{Description: "destroys things",
			Annotations:  &mcp.ToolAnnotations{DestructiveHint: new(true), Title: "Destroy"},
			InputSchema:  obj(map[string]any{}),
			OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}),
		mk("beta", "raw", &mcp.Tool{Description: "schema kept as raw JSON",
			InputSchema: json.RawMessage(`{"type": "object",  "properties": {"x": {"type": "string", "pattern": "^<a>&$"}}}`)}),
		mk("beta", "notobject", &mcp.Tool{Description: "not listed", InputSchema: map[string]any{"type": "string"}}),
	}
}

// TestToolCostIsTheListedEntry: the measured bytes of each tool are the
// bytes of its entry in a real tools/list response, read by a go-sdk
// client off the wire, for the definitions addTool registers.
func TestToolCostIsTheListedEntry(t *testing.T) {
	s := &Server{ms: mcp.NewServer(&mcp.Implementation{Name: "berth", Version: "test"}, nil)}
	want := map[string]int{}
	for _, tl := range costTools() {
		c, ok := ToolCost(tl)
		if err := s.addTool(tl); (err == nil) != ok {
			t.Fatalf("%s: addTool error %v, but ToolCost says listed=%v", tl.Name, err, ok)
		}
		if ok {
			want[tl.Name] = c.Bytes
			if c.Tools != 1 || c.Tokens != (c.Bytes+3)/4 {
				t.Errorf("%s: cost %+v", tl.Name, c)
			}
		}
	}
	results, entries, tools := listToolsWire(t, s.ms)
	if len(tools) != 4 || len(results) != 1 {
		t.Fatalf("listed %d tools in %d results, want 4 in 1", len(tools), len(results))
	}
	sum := 0
	for i, tl := range tools {
		if got := len(entries[i]); got != want[tl.Name] {
			t.Errorf("%s: its tools/list entry is %d bytes on the wire, ToolCost measured %d\nentry: %s", tl.Name, got, want[tl.Name], entries[i])
		}
		sum += len(entries[i])
	}
	// The result carries the entries as they were measured, side by side.
	joined := `"tools":[` + string(bytes.Join(rawBytes(entries), []byte(","))) + `]`
	if !strings.Contains(string(results[0]), joined) {
		t.Errorf("the result does not hold the entries as listed: %s", results[0])
	}
	v := MeasureView(costTools(), nil, "", nil)
	if v.Offered.Bytes != sum || v.Offered.Tools != 4 || v.Listed != v.Offered || v.Mode != store.ToolsFull {
		t.Errorf("MeasureView of the whole workspace: %+v, want %d bytes of 4 tools listed in full", v, sum)
	}
}

// TestToolCostThroughThePool: the tools of a real plugin server, through
// the pool and a Server, listed to a go-sdk client: each entry on the
// wire is what ToolCost measures.
func TestToolCostThroughThePool(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	_, entries, listed := listToolsWire(t, e.srv.ms)
	tools, err := e.pool.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, tl := range tools {
		c, ok := ToolCost(tl)
		if !ok {
			t.Fatalf("%s not measured", tl.Name)
		}
		want[tl.Name] = c.Bytes
	}
	if len(listed) == 0 || len(listed) != len(tools) {
		t.Fatalf("listed %d tools, the pool has %d", len(listed), len(tools))
	}
	for i, tl := range listed {
		if got := len(entries[i]); got != want[tl.Name] {
			t.Errorf("%s: %d bytes on the wire, ToolCost measured %d", tl.Name, got, want[tl.Name])
		}
	}
}

// TestMetaCostIsTheListedEntries: the meta-tools' cost is the bytes of
// their entries when a go-sdk server lists them.
func TestMetaCostIsTheListedEntries(t *testing.T) {
	ms := mcp.NewServer(&mcp.Implementation{Name: "berth", Version: "test"}, nil)
	for _, def := range MetaTools() {
		ms.AddTool(def, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
	_, entries, _ := listToolsWire(t, ms)
	n := 0
	for _, e := range entries {
		n += len(e)
	}
	if c := MetaCost(); c.Bytes != n || c.Tools != 2 {
		t.Errorf("MetaCost %+v, the entries on the wire are %d bytes", c, n)
	}
}

// TestMeasureViewProfiles: a profile's cost counts only its tools; lazy
// mode lists the meta-tools and the always-listed tools.
func TestMeasureViewProfiles(t *testing.T) {
	tools := costTools()
	cost := func(name string) int {
		for _, tl := range tools {
			if tl.Name == name {
				c, _ := ToolCost(tl)
				return c.Bytes
			}
		}
		t.Fatalf("no tool %s", name)
		return 0
	}
	html, long, ann, raw := cost("alpha__up__html"), cost("alpha__up__long"), cost("beta__up__annotated"), cost("beta__up__raw")

	p := &store.Profile{Plugins: []string{"alpha"}, Mode: store.ToolsFull}
	v := MeasureView(tools, p, "", nil)
	if v.Offered.Bytes != html+long || v.Listed != v.Offered || len(v.Plugins) != 1 || v.Plugins["alpha"].Bytes != html+long {
		t.Errorf("profile of alpha, full: %+v", v)
	}

	p = &store.Profile{Tools: []string{"beta__*"}, Mode: store.ToolsLazy, Always: []string{"beta__up__raw"}}
	v = MeasureView(tools, p, "", nil)
	meta := MetaCost()
	if v.Mode != store.ToolsLazy || v.Offered.Bytes != ann+raw || v.Listed.Bytes != meta.Bytes+raw || v.Listed.Tools != 3 {
		t.Errorf("profile of beta__*, lazy, raw always: %+v (meta %d, raw %d)", v, meta.Bytes, raw)
	}
	// --always adds patterns; --tools overrides the mode.
	v = MeasureView(tools, p, "", []string{"beta__up__annotated"})
	if v.Listed.Bytes != meta.Bytes+raw+ann {
		t.Errorf("with --always: %+v", v)
	}
	v = MeasureView(tools, p, store.ToolsFull, nil)
	if v.Listed != v.Offered {
		t.Errorf("--tools full: %+v", v)
	}
	// An Always pattern never lists a tool the profile does not offer.
	p = &store.Profile{Plugins: []string{"alpha"}, Mode: store.ToolsLazy, Always: []string{"*"}}
	if v = MeasureView(tools, p, "", nil); v.Listed.Bytes != meta.Bytes+html+long {
		t.Errorf("always * in a profile of alpha: %+v", v)
	}
}

func TestEstimateTokens(t *testing.T) {
	for n, want := range map[int]int{0: 0, -1: 0, 1: 1, 4: 1, 5: 2, 400: 100, 401: 101} {
		if got := EstimateTokens(n); got != want {
			t.Errorf("EstimateTokens(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestViewCostOfLazyMode: in lazy mode, with --always, the entries berth
// lists to a go-sdk client are what MeasureView says that view lists.
func TestViewCostOfLazyMode(t *testing.T) {
	e := newEnv(t, &Options{View: &View{Mode: store.ToolsLazy, Always: []string{echoTool}}})
	_, entries, listed := listToolsWire(t, e.srv.ms)
	tools, err := e.pool.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, en := range entries {
		n += len(en)
	}
	v := MeasureView(tools, nil, store.ToolsLazy, []string{echoTool})
	if len(listed) != 3 || v.Listed.Tools != 3 || v.Listed.Bytes != n {
		t.Errorf("lazy mode listed %d tools in %d bytes; MeasureView says %+v", len(listed), n, v.Listed)
	}
	if v.Offered.Tools != len(tools) || v.Offered.Bytes <= v.Listed.Bytes-MetaCost().Bytes {
		t.Errorf("offered %+v of %d tools", v.Offered, len(tools))
	}
}
