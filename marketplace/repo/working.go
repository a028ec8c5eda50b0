package repo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-mcp/berth/internal/strictjson"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

func joinProblems(ps []*catalog.Problem) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, "\n  ")
}

// working reads the working copy, which must be valid.
func (r *Repository) working() (*catalog.Catalog, error) { return r.readWorking(false) }

// readWorking decodes DIR/catalog.json strictly (unknown fields anywhere
// are errors) and checks every entry. With normalize, contextTokens are
// recomputed first.
func (r *Repository) readWorking(normalize bool) (*catalog.Catalog, error) {
	path := filepath.Join(r.dir, workingFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cat, err := decodeStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; fix it (berth catalog lint %s says more)", path, err, r.dir)
	}
	if normalize {
		for _, p := range cat.Plugins {
			for _, v := range p.Versions {
				if v != nil {
					v.Summary.ContextTokens = catalog.EstimateTokens(v.Summary.Tools)
				}
			}
		}
	}
	if _, ps, err := catalog.Parse(cat.Marshal()); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	} else if catalog.HasErrors(ps) {
		var errs []*catalog.Problem
		for _, p := range ps {
			if !p.Warning {
				errs = append(errs, p)
			}
		}
		return nil, fmt.Errorf("%s breaks catalog rules, so berth will not publish it:\n  %s\nfix these entries and run the command again", path, joinProblems(errs))
	}
	cat.Sort()
	return cat, nil
}

// decodeStrict decodes a whole catalog document, failing on any unknown
// field, any trailing data and any catalogVersion but 1.
func decodeStrict(data []byte) (*catalog.Catalog, error) {
	cat := &catalog.Catalog{}
	if ps := strictjson.Decode(data, cat, strictjson.Options{FoldCase: true, Nulls: strictjson.NullAnywhere}); len(ps) > 0 {
		if len(ps) == 1 && ps[0].Kind == strictjson.Trailing {
			return nil, errors.New("data after the catalog's JSON object")
		}
		return nil, &strictjson.Error{Problems: ps}
	}
	if cat.CatalogVersion != catalog.FormatVersion {
		return nil, fmt.Errorf("catalogVersion is %d; write %d", cat.CatalogVersion, catalog.FormatVersion)
	}
	if cat.Plugins == nil {
		cat.Plugins = []*catalog.Plugin{}
	}
	for i, p := range cat.Plugins {
		if p == nil {
			return nil, fmt.Errorf("plugins[%d] is null", i)
		}
	}
	return cat, nil
}
