package browse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-mcp/berth/internal/atomicfile"
)

// exportMarker marks a directory as a berth export, which a later export
// may replace.
const exportMarker = ".berth-export"

// ExportResult says what Export wrote.
type ExportResult struct {
	Dir      string
	Pages    int
	Plugins  int
	Catalogs int
}

// indexEntry is one plugin of search-index.js, what the exported index's
// script ranks and filters.
type indexEntry struct {
	Key         string   `json:"key"`
	Catalog     string   `json:"catalog"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Publisher   string   `json:"publisher,omitempty"`
	Tier        string   `json:"tier"`
	Tags        []string `json:"tags"`
	Kinds       []string `json:"kinds"`
	Latest      string   `json:"latest,omitempty"`
	Status      string   `json:"status,omitempty"`
	Updated     int64    `json:"updated"`
}

// ExportOptions tune Export. A nil *ExportOptions means the defaults.
type ExportOptions struct {
	// WithLocalState puts this machine's own state in the pages, as the
	// served page shows it: which versions it trusts and when, catalog
	// sources that are local paths or loopback addresses, when each
	// catalog was added. An export is meant for hosting, so by default it
	// carries none of it.
	WithLocalState bool
}

// Export writes the pages as a static site in dir: plain files whose
// links are relative, so it works from file:// and from any static host,
// with search and filters done by the page's script over an embedded
// index. dir must not exist, be empty, or be an earlier export (which is
// replaced whole: the new site is written beside it and renamed into
// place).
func (s *Site) Export(ctx context.Context, dir string, opts *ExportOptions) (*ExportResult, error) {
	if opts == nil || !opts.WithLocalState {
		o := s.o
		o.Store = nil // no trust records: nothing of what this machine trusts, or when
		s = &Site{cache: s.cache, o: o, public: true}
	}
	dir = filepath.Clean(dir)
	if err := checkExportDir(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	res, err := s.writeSite(ctx, tmp)
	if err != nil {
		return nil, err
	}
	old := ""
	if _, err := os.Lstat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return nil, err
	}
	atomicfile.SyncDir(parent)
	if old != "" {
		os.RemoveAll(old)
	}
	res.Dir = dir
	return res, nil
}

func checkExportDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory; choose a new directory for the export", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(dir, exportMarker)); err != nil {
		return fmt.Errorf("%s is not empty and is not an earlier berth export, so berth will not replace it; choose a new directory (an earlier export, which has a %s file, is replaced whole)", dir, exportMarker)
	}
	return nil
}

func (s *Site) writeSite(ctx context.Context, dir string) (*ExportResult, error) {
	snap, err := s.load()
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Catalogs: len(snap.catalogs)}
	write := func(rel string, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".html") {
			res.Pages++
		}
		return atomicfile.WriteNew(p, data, 0o644)
	}
	// The index lists every plugin; its script ranks and filters them.
	ip, err := s.indexPage(Query{}, true)
	if err != nil {
		return nil, err
	}
	data, err := render("index", ip)
	if err != nil {
		return nil, err
	}
	if err := write("index.html", data); err != nil {
		return nil, err
	}
	idx := struct {
		Catalogs int          `json:"catalogs"`
		Plugins  []indexEntry `json:"plugins"`
	}{Catalogs: len(snap.catalogs), Plugins: []indexEntry{}}
	for _, c := range ip.Index.All {
		idx.Plugins = append(idx.Plugins, indexEntry{Key: c.Key, Catalog: c.Catalog, Name: c.Name, Description: c.Description, Publisher: c.Publisher,
			Tier: c.Tier, Tags: nonNil(c.Tags), Kinds: nonNil(c.Kinds), Latest: c.Latest, Status: c.Status, Updated: c.Updated.Unix()})
	}
	js, err := json.Marshal(idx) // escapes <, > and &: safe in any context
	if err != nil {
		return nil, err
	}
	if err := write("search-index.js", append(append([]byte("window.berthIndex = "), js...), ";\n"...)); err != nil {
		return nil, err
	}
	if data, err = render("catalogs", s.catalogsPage(snap, true)); err != nil {
		return nil, err
	}
	if err := write("catalogs.html", data); err != nil {
		return nil, err
	}
	for _, cv := range snap.catalogs {
		for _, pl := range cv.Catalog.Plugins {
			res.Plugins++
			refs := []string{""}
			for _, v := range pl.Versions {
				refs = append(refs, v.Version)
			}
			for _, version := range refs {
				p, err := s.pluginHTML(snap, cv, pl, version, true)
				if err != nil {
					return nil, err
				}
				if data, err = render("plugin", p); err != nil {
					return nil, err
				}
				name := pl.Name
				if version != "" {
					name += "@" + version
				}
				if err := write("plugins/"+cv.Info.Name+"/"+name+".html", data); err != nil {
					return nil, err
				}
			}
			if icon := pl.IconPNG(); icon != nil {
				if err := write("icons/"+cv.Info.Name+"/"+pl.Name+".png", icon); err != nil {
					return nil, err
				}
			}
		}
	}
	err = fs.WalkDir(staticFiles(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(staticFiles(), p)
		if err != nil {
			return err
		}
		return write("static/"+p, data)
	})
	if err != nil {
		return nil, err
	}
	if err := write(exportMarker, []byte("A static copy of berth's marketplace page (berth marketplace export); the next export replaces this directory.\n")); err != nil {
		return nil, err
	}
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
