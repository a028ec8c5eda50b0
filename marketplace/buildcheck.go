package marketplace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
)

// Unbuildable says why berth cannot build a bundle for a version of an
// unsigned source's entry: the rule of the first problem (docs/rules.md)
// and the message.
type Unbuildable struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// buildCheck says why berth cannot build a bundle for version v of the
// registry entry p of catalog ci, or nil when it can. It reads only the
// cached server.json: an entry that is one MCP Bundle
// (importer.RegistryMCPBPackage) counts as buildable until its download
// says otherwise. Entries of a marketplace.json are not checked here
// (nil): their plugin directory is read at show and install.
func buildCheck(ctx context.Context, ci *CatalogInfo, p *foreign.UnsignedPlugin, v *foreign.UnsignedVersion, opts *bundle.Options) *Unbuildable {
	if ci.Kind != KindRegistry {
		return nil
	}
	pkg, err := importer.RegistryMCPBPackage(v.ServerJSON)
	var me *importer.MCPBPackageError
	switch {
	case errors.As(err, &me):
		return &Unbuildable{Rule: me.Rule, Message: me.Message}
	case err != nil:
		return &Unbuildable{Message: err.Error()}
	case pkg != nil:
		return nil
	}
	b, err := importer.OpenServerJSON(ctx, entryLabel(ci, p, v), v.ServerJSON, opts)
	if err == nil {
		b.Close()
		return nil
	}
	var ie *bundle.InvalidError
	if errors.As(err, &ie) && len(ie.Problems) > 0 {
		return &Unbuildable{Rule: ie.Problems[0].Rule, Message: ie.Problems[0].Message}
	}
	return &Unbuildable{Message: err.Error()}
}

// buildableResolve is ropts with Skip set to skip the versions of p that
// berth cannot build (buildCheck), so that install picks, and show
// marks, the highest version it can install.
func buildableResolve(ctx context.Context, ci *CatalogInfo, p *foreign.UnsignedPlugin, ropts *ResolveOptions, bopts *bundle.Options) *ResolveOptions {
	o := ResolveOptions{}
	if ropts != nil {
		o = *ropts
	}
	o.Skip = func(cv *catalog.Version) string {
		v := p.Version(cv.Version)
		if v == nil {
			return ""
		}
		if u := buildCheck(ctx, ci, p, v, bopts); u != nil {
			return "berth cannot build a bundle for it: " + u.String()
		}
		return ""
	}
	return &o
}

// String is the reason with its rule.
func (u *Unbuildable) String() string {
	if u.Rule == "" {
		return u.Message
	}
	return u.Message + " [" + u.Rule + "]"
}

// markBuildable sets res.Latest to the version of the registry entry e
// that install picks among those berth can build a bundle for, or
// clears it and says why in res.Unbuildable. It reads the entry's cached
// server.json documents only; an entry it cannot read is left as the
// index says (show and install read it again, and fail closed).
func (c *Cache) markBuildable(res *Result, st *state, e *indexEntry, ci *CatalogInfo, ropts *ResolveOptions) {
	p, err := c.readEntryAt(st, e)
	if err != nil {
		return
	}
	ctx := context.Background()
	v, _, err := pickUnsigned(p, ci.Name, "", false, buildableResolve(ctx, ci, p, ropts, nil))
	if err == nil {
		res.Latest, res.Status = v.Version, v.Status
		return
	}
	if top := p.Version(res.Latest); top != nil {
		if u := buildCheck(ctx, ci, p, top, nil); u != nil {
			res.Unbuildable = u.String()
		}
	}
	if res.Unbuildable == "" {
		res.Unbuildable = "berth cannot build a bundle for any version (berth show lists why)"
	}
	res.Latest, res.Status = "", ""
}

// readEntryAt reads the entry e of the unsigned copy st points at.
func (c *Cache) readEntryAt(st *state, e *indexEntry) (*foreign.UnsignedPlugin, error) {
	f, err := os.Open(filepath.Join(c.dir, st.Name, st.Current, entriesFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw := make([]byte, e.N)
	if _, err := f.ReadAt(raw, e.Off); err != nil {
		return nil, err
	}
	p := &foreign.UnsignedPlugin{}
	if err := json.Unmarshal(raw, p); err != nil || p.Name != e.Name || len(p.Versions) == 0 {
		return nil, fmt.Errorf("the index does not point at the entry of %s", e.Name)
	}
	return p, nil
}
