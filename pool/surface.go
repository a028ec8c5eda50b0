package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolHash is the pinned hash of one tool's surface: "sha256:" and the hex
// sha256 of the RFC 8785 canonical JSON of
//
//	{"name", "description", "inputSchema", "outputSchema",
//	 "annotations": {"title", "readOnlyHint", "destructiveHint",
//	                 "idempotentHint", "openWorldHint"}}
//
// where a missing schema is null, missing annotations are the same as
// empty ones, the boolean hints default to false and the optional hints
// (destructiveHint, openWorldHint) are null when absent, so that a server
// that drops "destructiveHint": true changes its hash. A tool that links
// an MCP Apps template (_meta.ui, or the older _meta["ui/resourceUri"])
// adds "ui" and "ui/resourceUri" with those values (null when absent);
// a tool without either hashes as before.
func ToolHash(t *mcp.Tool) (string, error) {
	type annotations struct {
		Title           string `json:"title"`
		ReadOnlyHint    bool   `json:"readOnlyHint"`
		DestructiveHint *bool  `json:"destructiveHint"`
		IdempotentHint  bool   `json:"idempotentHint"`
		OpenWorldHint   *bool  `json:"openWorldHint"`
	}
	v := struct {
		Name         string      `json:"name"`
		Description  string      `json:"description"`
		InputSchema  any         `json:"inputSchema"`
		OutputSchema any         `json:"outputSchema"`
		Annotations  annotations `json:"annotations"`
	}{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
	if a := t.Annotations; a != nil {
		v.Annotations = annotations{a.Title, a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint}
	}
	var x any = v
	ui, hasUI := t.Meta["ui"]
	legacy, hasLegacy := t.Meta["ui/resourceUri"]
	if hasUI || hasLegacy {
		x = struct {
			Tool   any `json:"tool"`
			UI     any `json:"ui"`
			Legacy any `json:"ui/resourceUri"`
		}{v, ui, legacy}
	}
	raw, err := json.Marshal(x)
	if err != nil {
		return "", fmt.Errorf("tool %q has a surface berth cannot encode: %w", t.Name, err)
	}
	canon, err := jsoncanonicalizer.Transform(raw)
	if err != nil {
		return "", fmt.Errorf("tool %q has a surface berth cannot canonicalize: %w", t.Name, err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ChangeKind is how a tool differs from its pinned surface.
type ChangeKind string

// Kinds of tool surface changes.
const (
	ChangeAdded   ChangeKind = "added"   // a tool the pinned surface does not have
	ChangeChanged ChangeKind = "changed" // a tool whose hash differs from the pinned one
)

// ToolChange is one difference between a server's live tool surface and
// the surface pinned when the plugin was enabled (or last accepted). The
// tool is withheld from the catalog until the change is accepted.
type ToolChange struct {
	Plugin string `json:"plugin"`
	// Server is the manifest's key of the server or native tool
	// provider; ID its identity (ServerStatus.ID).
	Server string     `json:"server"`
	ID     string     `json:"id"`
	Tool   string     `json:"tool"` // the upstream name
	Kind   ChangeKind `json:"kind"`
	// Pinned is the pinned hash ("" for an added tool); Live the hash of
	// what the server lists now.
	Pinned string `json:"pinned,omitempty"`
	Live   string `json:"live"`
	// Definition is the tool as the server lists it now (nil for a UI
	// template).
	Definition *mcp.Tool `json:"definition"`
	// URI is set, and Tool empty, for an MCP Apps UI template (apps.go):
	// its ui:// URI; Template is what it is now.
	URI      string      `json:"uri,omitempty"`
	Template *UITemplate `json:"template,omitempty"`
}

// diffSurface compares a live surface of the server s with a pinned one
// (tool → hash). Removed tools are not changes: they simply disappear.
func diffSurface(s *server, live []*mcp.Tool, hashes, pinned map[string]string) []ToolChange {
	var out []ToolChange
	for _, t := range live {
		h := hashes[t.Name]
		old, ok := pinned[t.Name]
		switch {
		case !ok:
			out = append(out, ToolChange{Plugin: s.pl.name, Server: s.name, ID: s.id, Tool: t.Name, Kind: ChangeAdded, Live: h, Definition: t})
		case old != h:
			out = append(out, ToolChange{Plugin: s.pl.name, Server: s.name, ID: s.id, Tool: t.Name, Kind: ChangeChanged, Pinned: old, Live: h, Definition: t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

func sameChanges(a, b []ToolChange) bool {
	key := func(c ToolChange) string {
		return c.Plugin + "\x00" + c.ID + "\x00" + c.Tool + "\x00" + c.URI + "\x00" + string(c.Kind) + "\x00" + c.Live
	}
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, c := range a {
		seen[key(c)]++
	}
	for _, c := range b {
		if seen[key(c)] == 0 {
			return false
		}
		seen[key(c)]--
	}
	return true
}
