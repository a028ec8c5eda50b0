package pool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps (the extension io.modelcontextprotocol/ui, SEP-1865): a tool
// links an interactive UI template, a ui:// resource of MIME type
// text/html;profile=mcp-app that the host renders, by its
// _meta.ui.resourceUri (or the older _meta["ui/resourceUri"]). The pool
// pins each template of a server like its tools: the hash of its contents
// is recorded with the tool surface (store.Surface.UI) at the first
// listing after enable and at every accept; a template whose contents
// differ, or that was not pinned, is withheld (reads of it are refused
// with a *SurfaceError, the tools that link it are listed without the
// link) until berth accept records it.
const (
	// UIExtension is the extension's identifier in capabilities.extensions.
	UIExtension = "io.modelcontextprotocol/ui"
	// UIMimeType is the MIME type of an MCP Apps HTML template.
	UIMimeType = "text/html;profile=mcp-app"
	// maxUITemplates bounds the templates one server's listing pins;
	// maxUIChanges the template changes kept per server.
	maxUITemplates = 32
	maxUIChanges   = 64
)

// IsUIURI reports whether uri is a ui:// resource.
func IsUIURI(uri string) bool {
	return len(uri) >= 5 && strings.EqualFold(uri[:5], "ui://")
}

// UILink returns the ui:// template a tool links (_meta.ui.resourceUri,
// else the older _meta["ui/resourceUri"]), or "".
func UILink(t *mcp.Tool) string {
	if t == nil || t.Meta == nil {
		return ""
	}
	if ui, ok := t.Meta["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok && IsUIURI(u) {
			return u
		}
	}
	if u, ok := t.Meta["ui/resourceUri"].(string); ok && IsUIURI(u) {
		return u
	}
	return ""
}

// withoutUILink returns a copy of a tool's _meta without its ui link
// (its other ui settings, such as visibility, stay).
func withoutUILink(meta mcp.Meta) mcp.Meta {
	out := maps.Clone(meta)
	delete(out, "ui/resourceUri")
	if ui, ok := out["ui"].(map[string]any); ok {
		ui = maps.Clone(ui)
		delete(ui, "resourceUri")
		out["ui"] = ui
	}
	return out
}

// UITemplateHash is the pinned hash of a UI template: "sha256:" and the
// hex sha256 of the RFC 8785 canonical JSON of the contents a
// resources/read returned (each with its uri, mimeType, text or blob, and
// _meta, where the template's CSP domains and permissions are).
func UITemplateHash(contents []*mcp.ResourceContents) (string, error) {
	raw, err := json.Marshal(contents)
	if err != nil {
		return "", fmt.Errorf("berth cannot encode the template: %w", err)
	}
	canon, err := jsoncanonicalizer.Transform(raw)
	if err != nil {
		return "", fmt.Errorf("berth cannot canonicalize the template: %w", err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// UITemplate is what a review shows of a UI template.
type UITemplate struct {
	MIMEType string `json:"mimeType,omitempty"`
	// Size is the bytes of its text and blobs.
	Size int `json:"size"`
	// UI is its contents' _meta.ui (CSP domains, permissions, domain),
	// as the server sent it.
	UI any `json:"ui,omitempty"`
}

func describeTemplate(contents []*mcp.ResourceContents) *UITemplate {
	t := &UITemplate{}
	for _, c := range contents {
		if t.MIMEType == "" {
			t.MIMEType = c.MIMEType
		}
		t.Size += len(c.Text) + len(c.Blob)
		if ui, ok := c.Meta["ui"]; ok && t.UI == nil {
			t.UI = ui
		}
	}
	return t
}

// uiSurface is a server's UI templates; guarded by server.mu.
type uiSurface struct {
	live    map[string]string // URI → UITemplateHash, as last read
	defs    map[string]*UITemplate
	pinned  map[string]string // as recorded; nil is none
	changes []ToolChange
}

// served reports whether the template uri is read and matches its pin.
func (u *uiSurface) served(uri string) bool {
	h := u.live[uri]
	return h != "" && u.pinned[uri] == h
}

// diff recomputes the changes of s's templates.
func (u *uiSurface) diff(s *server) {
	u.changes = u.changes[:0:0]
	uris := make([]string, 0, len(u.live))
	for uri := range u.live {
		uris = append(uris, uri)
	}
	sort.Strings(uris)
	for _, uri := range uris {
		h := u.live[uri]
		old, ok := u.pinned[uri]
		switch {
		case !ok:
			u.changes = append(u.changes, ToolChange{Plugin: s.pl.name, Server: s.name, ID: s.id, URI: uri, Kind: ChangeAdded, Live: h, Template: u.defs[uri]})
		case old != h:
			u.changes = append(u.changes, ToolChange{Plugin: s.pl.name, Server: s.name, ID: s.id, URI: uri, Kind: ChangeChanged, Pinned: old, Live: h, Template: u.defs[uri]})
		}
		if len(u.changes) == maxUIChanges {
			break
		}
	}
}

// readUI reads the UI templates of a listing: those its tools link and
// the ui:// resources the server lists. A template berth cannot read is
// left out (its tools are listed without the link) and logged.
func (s *server) readUI(ctx context.Context, c *conn, tools []*mcp.Tool) (map[string]string, map[string]*UITemplate) {
	live, defs := map[string]string{}, map[string]*UITemplate{}
	if c == nil || c.cs == nil {
		return live, defs
	}
	want := map[string]bool{}
	for _, t := range tools {
		if u := UILink(t); u != "" {
			want[u] = true
		}
	}
	lctx, cancel := context.WithTimeout(ctx, s.callTime)
	defer cancel()
	mctx := mergeCancel(lctx, c.ctx)
	if hasCap(c, func(sc *mcp.ServerCapabilities) bool { return sc.Resources != nil }) {
		n := 0
		for r, err := range c.cs.Resources(mctx, nil) {
			if err != nil || n > 10000 {
				break
			}
			n++
			if IsUIURI(r.URI) {
				want[r.URI] = true
			}
		}
	}
	if len(want) == 0 {
		return live, defs
	}
	uris := make([]string, 0, len(want))
	for u := range want {
		uris = append(uris, u)
	}
	sort.Strings(uris)
	if len(uris) > maxUITemplates {
		s.out.event("pinning only the first %d of %d UI templates", maxUITemplates, len(uris))
		uris = uris[:maxUITemplates]
	}
	for _, uri := range uris {
		res, err := c.cs.ReadResource(mctx, &mcp.ReadResourceParams{URI: uri})
		if err == nil && (res == nil || len(res.Contents) == 0 || res.InputRequests != nil) {
			err = fmt.Errorf("the server returned no contents")
		}
		var h string
		if err == nil {
			h, err = UITemplateHash(res.Contents)
		}
		if err != nil {
			s.out.event("cannot read the UI template %s (%v); the tools that link it are offered without it", printable(uri), err)
			continue
		}
		live[uri], defs[uri] = h, describeTemplate(res.Contents)
	}
	return live, defs
}

// setUILocked replaces the live templates and recomputes their changes.
// The caller holds s.mu.
func (s *server) setUILocked(live map[string]string, defs map[string]*UITemplate) {
	s.ui.live, s.ui.defs = live, defs
	s.ui.diff(s)
}

// setPinnedUI replaces the pinned templates (after an accept, or a
// record by another process).
func (s *server) setPinnedUI(pinned map[string]string) {
	if pinned == nil {
		pinned = map[string]string{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if maps.Equal(pinned, s.ui.pinned) {
		return
	}
	s.ui.pinned = pinned
	s.ui.diff(s)
	s.setStateLocked()
	s.changedLocked()
	s.p.invalidate()
}

// servesUI reports whether uri is a template s read (so a read of it is
// routed to s even when s does not list it).
func (s *server) servesUILocked(uri string) bool {
	_, ok := s.ui.live[uri]
	return ok
}

// checkUIRead is the boundary of a UI template read: the contents must
// hash to the template's pin; otherwise the read is refused with a
// *SurfaceError and the change is kept for berth accept.
func (s *server) checkUIRead(uri string, res *mcp.ReadResourceResult) error {
	if res == nil || res.InputRequests != nil {
		return nil
	}
	h, err := UITemplateHash(res.Contents)
	if err != nil {
		return fmt.Errorf("the UI template %s of %s: %w; berth serves no template it cannot pin", uri, s.id, err)
	}
	s.mu.Lock()
	pinned, ok := s.ui.pinned[uri]
	if ok && pinned == h {
		s.mu.Unlock()
		return nil
	}
	if s.ui.live[uri] != h {
		live, defs := maps.Clone(s.ui.live), maps.Clone(s.ui.defs)
		if live == nil {
			live, defs = map[string]string{}, map[string]*UITemplate{}
		}
		if _, known := live[uri]; known || len(live) < maxUITemplates {
			live[uri], defs[uri] = h, describeTemplate(res.Contents)
			s.setUILocked(live, defs)
			s.setStateLocked()
			s.changedLocked()
		}
	}
	change := ToolChange{Plugin: s.pl.name, Server: s.name, ID: s.id, URI: uri, Kind: ChangeAdded, Live: h}
	if ok {
		change.Kind, change.Pinned = ChangeChanged, pinned
	}
	s.mu.Unlock()
	s.p.invalidate()
	s.p.changed()
	return &SurfaceError{Tool: uri, Change: change}
}
