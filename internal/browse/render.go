package browse

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/review"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// staticFiles are the embedded assets under static/.
func staticFiles() fs.FS {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	return sub
}

// page is what every template gets.
type page struct {
	Title string
	// Root leads from the page back to the site's root, relatively, so
	// the same links work served and from file://.
	Root string
	// Static is set for the export: links name .html files, and the index
	// searches with the embedded index.
	Static bool
	// Public is set on an export without local state: the pages say
	// nothing of the machine that wrote them (no trust records, no
	// local catalog sources, no times it added a catalog).
	Public bool
	Nav    string // "index" or "catalogs"
	// Stale are the stale catalogs whose plugins the page shows.
	Stale    []*marketplace.CatalogInfo
	Index    *results
	Plugin   *pluginPage
	Catalogs []*catalogView
	// Problem is an error page's message.
	Problem string
}

func (p *page) link(path string) string {
	if p.Static {
		if path == "" {
			path = "index"
		}
		return p.Root + path + ".html"
	}
	if path == "" {
		if p.Root == "" {
			return "./"
		}
		return p.Root
	}
	return p.Root + path
}

var funcs = template.FuncMap{
	"date": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02")
	},
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"join": strings.Join,
	// publicSource says a catalog source can be shown in a public export:
	// an https URL, not a path or loopback address of the exporter's.
	"publicSource": func(src string) bool { return strings.HasPrefix(src, "https://") },
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + "…"
	},
	"indexURL":    func(p *page) string { return p.link("") },
	"catalogsURL": func(p *page) string { return p.link("catalogs") },
	"pluginURL": func(p *page, catName, name, version string) string {
		ref := name
		if version != "" {
			ref += "@" + version
		}
		return p.link("plugins/" + catName + "/" + ref)
	},
	"filterURL": func(p *page, key, value string) string {
		return p.link("") + "?" + url.Values{key: {value}}.Encode()
	},
	"staticURL":      func(p *page, file string) string { return p.Root + "static/" + file },
	"iconURL":        func(p *page, catName, name string) string { return p.Root + "icons/" + catName + "/" + name + ".png" },
	"signersHeading": func() string { return marketplace.SignersHeading },
	"kindLabel": func(k string) string {
		for _, x := range kinds {
			if x.Value == k {
				return x.Label
			}
		}
		return k
	},
}

var templates = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{"index", "plugin", "catalogs", "error"} {
		t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
		out[name] = t
	}
	return out
}()

// render executes a page's template. Then, as berth's terminal output
// does (review.Printable), every invisible or format character the text
// carries is written as a visible escape like \u202e: a bidirectional
// override in a catalog's text must not reorder what a person reads. The
// templates themselves hold none.
func render(name string, p *page) ([]byte, error) {
	var b bytes.Buffer
	if err := templates[name].Execute(&b, p); err != nil {
		return nil, err
	}
	return []byte(review.PrintableLines(b.String())), nil
}
