package browse

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var linkRe = regexp.MustCompile(`(?:href|src)="([^"]*)"`)

// TestExport: every page of the static site, every link between them
// relative and naming a file that exists, no server needed.
func TestExport(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "site")
	res, err := f.site().Export(f.ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 2 catalogs, 7 plugins with 9 versions in all: index, catalogs, and
	// one page per plugin and per version.
	if res.Plugins != 7 || res.Catalogs != 2 || res.Pages != 2+7+9 {
		t.Errorf("%+v", res)
	}
	pages := 0
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !strings.HasSuffix(p, ".html") {
			return err
		}
		pages++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		html := string(data)
		if !strings.Contains(html, `<meta http-equiv="Content-Security-Policy" content="default-src 'self'; base-uri 'none'; form-action 'self'">`) {
			t.Errorf("%s has no CSP", p)
		}
		for _, m := range linkRe.FindAllStringSubmatch(html, -1) {
			u, err := url.Parse(m[1])
			if err != nil {
				t.Errorf("%s: bad link %q", p, m[1])
				continue
			}
			if u.Scheme != "" {
				if strings.Contains(p, filepath.Join("plugins", "acme", "acme-notes")) && (u.Scheme == "https" || u.Scheme == "mailto") || u.Host == "acme.example" {
					continue // the README's and publisher's links, to elsewhere, not loaded
				}
				t.Errorf("%s: absolute link %q", p, m[1])
				continue
			}
			if strings.HasPrefix(u.Path, "/") {
				t.Errorf("%s: root-relative link %q does not work from file://", p, m[1])
				continue
			}
			target := filepath.Join(filepath.Dir(p), filepath.FromSlash(u.Path))
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %q names no file", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages != res.Pages {
		t.Errorf("%d pages on disk, %d reported", pages, res.Pages)
	}
	js, err := os.ReadFile(filepath.Join(dir, "search-index.js"))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Catalogs int          `json:"catalogs"`
		Plugins  []indexEntry `json:"plugins"`
	}
	text := strings.TrimSuffix(strings.TrimPrefix(string(js), "window.berthIndex = "), ";\n")
	if err := json.Unmarshal([]byte(text), &idx); err != nil || idx.Catalogs != 2 || len(idx.Plugins) != 7 {
		t.Fatalf("search-index.js: %v %+v", err, idx)
	}
	if strings.Contains(string(js), "<script") {
		t.Error("search-index.js carries markup unescaped")
	}
	if _, err := os.Stat(filepath.Join(dir, "icons", "acme", "acme-notes.png")); err != nil {
		t.Error(err)
	}

	// An earlier export is replaced whole; any other directory is left.
	os.WriteFile(filepath.Join(dir, "stray.html"), []byte("old"), 0o644)
	if _, err := f.site().Export(f.ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stray.html")); err == nil {
		t.Error("the old export's files survived")
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if _, err := f.site().Export(f.ctx, other, nil); err == nil || !strings.Contains(err.Error(), "is not empty and is not an earlier berth export") {
		t.Errorf("export over a directory of someone's: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(other, "notes.txt")); string(data) != "mine" {
		t.Error("the directory was changed")
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".site.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}
