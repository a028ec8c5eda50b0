package browse

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strings"

	"github.com/berth-mcp/berth/internal/loopback"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

// CSP is the Content-Security-Policy of every response: everything from
// the page's own origin only (no inline script or style, no other host),
// never framed, no <base>, forms only to itself.
const CSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// DefaultAddr is where berth marketplace serve listens unless told
// otherwise: a free port on the loopback address.
const DefaultAddr = "127.0.0.1:0"

// Listen listens on addr, which must be a loopback address (127.0.0.0/8,
// ::1 or localhost); "" means DefaultAddr. The page is for the person at
// this machine: it is never served to the network.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%q is not HOST:PORT (for example 127.0.0.1:8080, or 127.0.0.1:0 for a free port): %v", addr, err)
	}
	if host == "" || !loopback.IsHost(host) {
		return nil, fmt.Errorf("%q is not a loopback address: the marketplace page is served to this machine only; use 127.0.0.1:PORT or [::1]:PORT (to publish a catalog's page, use berth marketplace export DIR and host the files)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// localhost may resolve to a non-loopback address on a broken host.
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%q resolved to %v, which is not a loopback address; use 127.0.0.1:PORT", addr, ln.Addr())
	}
	return ln, nil
}

// Handler serves the pages:
//
//	GET /                              the index: ?q= and the filters (Query)
//	GET /plugins/CATALOG/NAME[@VERSION] a plugin's page
//	GET /catalogs                      the catalogs and their TUF state
//	GET /icons/CATALOG/NAME.png        a plugin's icon, when its catalog carries one
//	GET /static/...                    the embedded style sheet and script
//
// Only GET and HEAD are served (405 otherwise), only to loopback Host
// names and origins (403 otherwise: DNS rebinding, other sites' pages),
// and every response carries CSP, nosniff and no-referrer. It asks for no
// token: berth marketplace serve serves HandlerWithToken.
func (s *Site) Handler() http.Handler {
	return guard(s.mux())
}

// mux routes the pages of Handler.
func (s *Site) mux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveIndex)
	mux.HandleFunc("GET /catalogs", s.serveCatalogs)
	mux.HandleFunc("GET /plugins/{catalog}/{ref}", s.servePlugin)
	mux.HandleFunc("GET /icons/{catalog}/{file}", s.serveIcon)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(staticFiles())))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no page %s here.", r.URL.Path), rootOf(r.URL.Path))
	})
	return mux
}

// guard sets the headers of every response and refuses what the page
// never needs.
func guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed: the marketplace page only reads (GET and HEAD); it never changes anything", http.StatusMethodNotAllowed)
			return
		}
		if err := loopback.CheckRequest(r); err != nil {
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// rootOf is the relative path from a URL path back to the site's root.
func rootOf(p string) string {
	n := strings.Count(strings.TrimPrefix(path.Clean(p), "/"), "/")
	return strings.Repeat("../", n)
}

func (s *Site) write(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	data, err := render(name, p)
	if err != nil {
		http.Error(w, "berth: the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(data)
}

func (s *Site) fail(w http.ResponseWriter, r *http.Request, status int, msg, root string) {
	s.write(w, r, status, "error", &page{Title: http.StatusText(status), Root: root, Problem: msg})
}

func (s *Site) serveIndex(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error()+".", "")
		return
	}
	p, err := s.indexPage(q, false)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error(), "")
		return
	}
	s.write(w, r, http.StatusOK, "index", p)
}

func (s *Site) indexPage(q Query, static bool) (*page, error) {
	snap, err := s.load()
	if err != nil {
		return nil, err
	}
	limit := s.o.MaxResults
	if static {
		limit = 0
	}
	res, err := s.search(snap, q, limit)
	if err != nil {
		return nil, err
	}
	return &page{Title: "Plugins", Nav: "index", Static: static, Public: s.public, Index: res, Stale: res.Stale}, nil
}

func (s *Site) serveCatalogs(w http.ResponseWriter, r *http.Request) {
	snap, err := s.load()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error(), "")
		return
	}
	s.write(w, r, http.StatusOK, "catalogs", s.catalogsPage(snap, false))
}

func (s *Site) catalogsPage(snap *snapshot, static bool) *page {
	p := &page{Title: "Catalogs", Nav: "catalogs", Static: static, Public: s.public, Catalogs: snap.catalogs}
	for _, cv := range snap.catalogs {
		if cv.Info.Stale {
			p.Stale = append(p.Stale, cv.Info)
		}
	}
	return p
}

func (s *Site) servePlugin(w http.ResponseWriter, r *http.Request) {
	const root = "../../"
	catName, ref := r.PathValue("catalog"), r.PathValue("ref")
	name, version, _ := strings.Cut(ref, "@")
	snap, err := s.load()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error(), root)
		return
	}
	cv := snap.byName[catName]
	if cv == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no catalog %q. The catalogs page lists the ones you added.", catName), root)
		return
	}
	pl := cv.byName[name]
	if pl == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("Catalog %s does not list %q. Search the index for it.", catName, name), root)
		return
	}
	p, err := s.pluginHTML(snap, cv, pl, version, false)
	if errors.Is(err, marketplace.ErrNoPlugin) {
		s.fail(w, r, http.StatusNotFound, err.Error(), root)
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error(), root)
		return
	}
	s.write(w, r, http.StatusOK, "plugin", p)
}

func (s *Site) pluginHTML(snap *snapshot, cv *catalogView, pl *catalog.Plugin, version string, static bool) (*page, error) {
	pp, err := s.pluginPage(snap, cv, pl, version)
	if err != nil {
		return nil, err
	}
	p := &page{Title: pl.Name, Root: "../../", Static: static, Public: s.public, Plugin: pp}
	if cv.Info.Stale {
		p.Stale = []*marketplace.CatalogInfo{cv.Info}
	}
	return p, nil
}

func (s *Site) serveIcon(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutSuffix(r.PathValue("file"), ".png")
	snap, err := s.load()
	if err != nil || !ok {
		http.NotFound(w, r)
		return
	}
	var icon []byte
	if cv := snap.byName[r.PathValue("catalog")]; cv != nil {
		if pl := cv.byName[name]; pl != nil {
			icon = pl.IconPNG()
		}
	}
	if icon == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Disposition", "inline; filename=\"icon.png\"")
	w.Write(icon)
}
