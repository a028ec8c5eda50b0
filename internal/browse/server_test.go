package browse

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/review"
)

var update = flag.Bool("update", false, "rewrite the golden HTML in testdata/")

func fixtureFor(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t)
}

// served starts the site on a real loopback listener.
func served(t *testing.T, f *fixture) (*httptest.Server, *Site) {
	t.Helper()
	s := f.site()
	return newServer(t, s), s
}

func newServer(t *testing.T, s *Site) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, srv *httptest.Server, method, path string, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, string(body)}
}

func get(t *testing.T, srv *httptest.Server, path string) response {
	t.Helper()
	return do(t, srv, "GET", path, nil)
}

// keys are the cards of an index page, in order.
var keyRe = regexp.MustCompile(`data-key="([^"]+)"`)

func keys(body string) []string {
	var out []string
	for _, m := range keyRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestRoutes(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	for _, c := range []struct {
		path, ctype string
		status      int
		want        string
	}{
		{"/", "text/html; charset=utf-8", 200, "7 of 7 plugins in 2 catalogs."},
		{"/catalogs", "text/html; charset=utf-8", 200, "TUF versions"},
		{"/plugins/acme/acme-notes", "text/html; charset=utf-8", 200, "Review of 1.2.0, as the catalog states it"},
		{"/plugins/acme/acme-notes@1.0.0", "text/html; charset=utf-8", 200, "Review of 1.0.0, as the catalog states it"},
		{"/plugins/beta/acme-notes", "text/html; charset=utf-8", 200, "acme-notes, from catalog beta (tier community)"},
		{"/icons/acme/acme-notes.png", "image/png", 200, "\x89PNG"},
		{"/static/style.css", "text/css; charset=utf-8", 200, "prefers-color-scheme: dark"},
		{"/static/site.js", "text/javascript; charset=utf-8", 200, "berthIndex"},
		{"/static/berth.png", "image/png", 200, "\x89PNG"},
		{"/plugins/acme/nope", "text/html; charset=utf-8", 404, "Catalog acme does not list"},
		{"/plugins/zzz/acme-notes", "text/html; charset=utf-8", 404, "There is no catalog"},
		{"/plugins/acme/acme-notes@9.9.9", "text/html; charset=utf-8", 404, "has no version 9.9.9"},
		{"/icons/acme/acme-fmt.png", "text/plain; charset=utf-8", 404, "not found"},
		{"/icons/acme/acme-notes.svg", "text/plain; charset=utf-8", 404, "not found"},
		{"/nope", "text/html; charset=utf-8", 404, "There is no page /nope here."},
		{"/static/nope.js", "text/plain; charset=utf-8", 404, "not found"},
	} {
		r := get(t, srv, c.path)
		if r.status != c.status || r.header.Get("Content-Type") != c.ctype || !strings.Contains(r.body, c.want) {
			t.Errorf("GET %s: %d %q, want %d %q with %q; body:\n%.400s", c.path, r.status, r.header.Get("Content-Type"), c.status, c.ctype, c.want, r.body)
		}
	}
}

// TestHeaders: every route, found or not, carries the security headers;
// only GET and HEAD are served.
func TestHeaders(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	paths := []string{"/", "/?q=notes", "/catalogs", "/plugins/acme/acme-notes", "/icons/acme/acme-notes.png", "/static/style.css", "/static/site.js", "/nope", "/?tier=gold"}
	check := func(method, path string, r response) {
		t.Helper()
		for k, want := range map[string]string{
			"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"X-Frame-Options":         "DENY",
		} {
			if got := r.header.Get(k); got != want {
				t.Errorf("%s %s: %s is %q, want %q", method, path, k, got, want)
			}
		}
	}
	for _, p := range paths {
		check("GET", p, get(t, srv, p))
		h := do(t, srv, "HEAD", p, nil)
		check("HEAD", p, h)
		if h.body != "" || (h.status != get(t, srv, p).status) {
			t.Errorf("HEAD %s: %d with a body of %d bytes", p, h.status, len(h.body))
		}
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
			r := do(t, srv, m, p, nil)
			check(m, p, r)
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q; want 405 and GET, HEAD", m, p, r.status, r.header.Get("Allow"))
			}
		}
	}
}

// TestHostAndOrigin: the DNS-rebinding and cross-origin checks of berth
// serve (internal/loopback).
func TestHostAndOrigin(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, c := range []struct {
		hdr    map[string]string
		status int
	}{
		{map[string]string{"Host": "localhost:" + port}, 200},
		{map[string]string{"Host": "[::1]:" + port}, 200},
		{map[string]string{"Origin": "http://127.0.0.1:" + port}, 200},
		{map[string]string{"Host": "rebind.attacker.example:" + port}, 403},
		{map[string]string{"Host": "attacker.example"}, 403},
		{map[string]string{"Origin": "https://attacker.example"}, 403},
		{map[string]string{"Origin": "null"}, 403},
	} {
		for _, p := range []string{"/", "/plugins/acme/acme-notes", "/static/site.js"} {
			if r := do(t, srv, "GET", p, c.hdr); r.status != c.status {
				t.Errorf("GET %s %v: %d, want %d", p, c.hdr, r.status, c.status)
			}
		}
	}
}

// TestSearchRanking: the index ranks as berth search does (the same
// marketplace.Cache.Search), for every query here.
func TestSearchRanking(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	for _, q := range []string{"", "notes", "acme", "acme-notes", "NOTES search", "cloud", "reference", "format", "acme network", "zzz", "a", "  notes  "} {
		found, err := f.cache.Search(marketplace.Query{Text: q}, &marketplace.ResolveOptions{Now: f.clk.now()})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, r := range found.Results {
			want = append(want, r.Catalog+"/"+r.Name)
		}
		r := get(t, srv, "/?q="+url.QueryEscape(q))
		if got := keys(r.body); !slices.Equal(got, want) {
			t.Errorf("q=%q: the page ranks %v, berth search %v", q, got, want)
		}
	}
}

func TestFilters(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"tier=official", []string{"acme/acme-cloud", "acme/everything"}},
		{"tier=verified", []string{"acme/acme-notes"}},
		{"catalog=beta", []string{"beta/acme-notes"}},
		{"tag=notes", []string{"acme/acme-cloud", "acme/acme-notes", "beta/acme-notes", "acme/old-sync"}},
		{"kind=remote", []string{"acme/acme-cloud", "acme/old-sync"}},
		{"kind=native", []string{"acme/acme-fmt"}},
		{"kind=stdio&tier=community", []string{"beta/acme-notes", "acme/hostile"}},
		{"status=none", []string{"acme/old-sync"}},
		{"status=active&catalog=acme&tier=official", []string{"acme/acme-cloud", "acme/everything"}},
		{"status=deprecated", nil},
		{"q=notes&tag=search", []string{"acme/acme-notes"}},
		{"sort=updated&tag=notes", []string{"beta/acme-notes", "acme/old-sync", "acme/acme-cloud", "acme/acme-notes"}},
		{"sort=relevance&tag=notes", []string{"acme/acme-cloud", "acme/acme-notes", "beta/acme-notes", "acme/old-sync"}},
	} {
		r := get(t, srv, "/?"+c.query)
		if r.status != 200 {
			t.Errorf("%s: %d", c.query, r.status)
		}
		if got := keys(r.body); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
	}
	// Facet counts: each counts what the other filters leave.
	r := get(t, srv, "/?tier=official")
	for _, want := range []string{`data-label="remote server">remote server (1)`, `data-label="local server (stdio)">local server (stdio) (1)`, `data-label="verified">verified (1)`, `data-label="official">official (2)`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("tier=official: no %q", want)
		}
	}
	// The empty state says what to do.
	r = get(t, srv, "/?q=zzz")
	if !strings.Contains(r.body, `0 of 7 plugins in 2 catalogs match “zzz”.`) || !strings.Contains(r.body, "Try fewer or shorter words") || strings.Contains(r.body, `id="empty" hidden`) {
		t.Errorf("no empty state for zzz:\n%s", r.body)
	}
	for _, bad := range []string{"tier=gold", "kind=python", "status=lost", "sort=stars", "catalog=Bad_Name", "tag=Not%20a%20tag", "q=" + strings.Repeat("x", 300)} {
		r := get(t, srv, "/?"+bad)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `class="problem"`) {
			t.Errorf("%s: %d, want 400 with the problem named", bad, r.status)
		}
	}
}

func TestEmptyCache(t *testing.T) {
	s := New(marketplace.OpenCache(filepath.Join(t.TempDir(), "catalogs"), nil), nil)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, p := range []string{"/", "/catalogs"} {
		r := get(t, srv, p)
		if r.status != 200 || !strings.Contains(r.body, "catalogs yet") || !strings.Contains(r.body, "berth marketplace add NAME SOURCE --root-sha256 HEX") {
			t.Errorf("%s: %d\n%s", p, r.status, r.body)
		}
	}
}

// TestBuiltinOnFreshCache: on a fresh cache the built-in catalog (the
// one berth marketplace list shows) is on the index with its badge and
// install command, not "No catalogs yet"; once removed, it is not.
func TestBuiltinOnFreshCache(t *testing.T) {
	c := marketplace.OpenCache(filepath.Join(t.TempDir(), "catalogs"), nil)
	if err := c.EnsureBuiltin(context.Background()); err != nil {
		t.Fatal(err)
	}
	bc, err := builtin.Load()
	if err != nil || len(bc.Plugins) == 0 {
		t.Fatalf("builtin.Load: %v", err)
	}
	srv := httptest.NewServer(New(c, nil).Handler())
	defer srv.Close()
	r := get(t, srv, "/")
	if r.status != 200 || strings.Contains(r.body, "No catalogs yet") || !strings.Contains(r.body, "built in</li>") {
		t.Errorf("/: %d, want the built-in catalog\n%s", r.status, r.body)
	}
	for _, e := range bc.Plugins {
		if want := "berth install " + e.Name + "@" + e.Version + " --catalog builtin --enable"; !strings.Contains(r.body, want) {
			t.Errorf("/ lacks %q", want)
		}
	}
	if err := c.Remove(context.Background(), builtin.Name); err != nil {
		t.Fatal(err)
	}
	if r := get(t, srv, "/"); strings.Contains(r.body, "built in</li>") {
		t.Errorf("/ shows the built-in catalog after it was removed")
	}
}

// TestPluginDisclosure: the plugin page says everything berth show says,
// in its words: every line of the review, the versions with their status
// and reason, the tools with their hints, the signers, the install
// command.
func TestPluginDisclosure(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	for _, c := range []struct {
		catalog, ref, install string
	}{
		{"acme", "acme-notes", "berth install acme-notes@^1.2 --catalog acme"},
		{"acme", "acme-notes@1.0.0", "berth install acme-notes@^1.2 --catalog acme"},
		{"beta", "acme-notes", "berth install acme-notes@^0.9 --catalog beta"},
		{"acme", "acme-cloud", "berth install acme-cloud@^2.1"},
		{"acme", "acme-fmt", "berth install acme-fmt@^0.3"},
		{"acme", "everything", "berth install everything@^2026.8"},
		{"acme", "old-sync", ""},
		{"acme", "hostile", "berth install hostile@^1.0"},
	} {
		name, version, _ := strings.Cut(c.ref, "@")
		p, ci, err := f.cache.Plugin(c.catalog, name)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := marketplace.Show(p, ci, version, &marketplace.ResolveOptions{Now: f.clk.now()})
		if err != nil {
			t.Fatal(err)
		}
		body := get(t, srv, "/plugins/"+c.catalog+"/"+c.ref).body
		want := []string{sh.Title(), sh.ReviewHeading(), sh.ToolsHeading(), marketplace.SignersHeading}
		var markup []string
		for _, l := range sh.Review.Lines() {
			want = append(want, l.Text)
			if l.Kind == review.LineField && l.Label != "" {
				markup = append(markup, "<dt>"+l.Label+"</dt>")
			}
		}
		for _, v := range sh.Versions {
			want = append(want, v.StatusText(), v.Note(name), v.Version)
		}
		for _, tool := range sh.Tools {
			want = append(want, tool.Name, tool.Description)
			for _, h := range tool.Hints() {
				markup = append(markup, `">`+h+"</span>")
			}
		}
		for _, s := range p.Signers {
			want = append(want, s.String())
		}
		if c.install != "" {
			markup = append(markup, `<code id="install-cmd">`+escape(c.install+" --enable")+"</code>")
		} else {
			want = append(want, sh.NoPick())
		}
		for _, w := range want {
			if w == "" {
				continue
			}
			if !strings.Contains(body, escape(w)) {
				t.Errorf("%s/%s: the page lacks %q", c.catalog, c.ref, w)
			}
		}
		for _, m := range markup {
			if !strings.Contains(body, m) {
				t.Errorf("%s/%s: the page lacks %s", c.catalog, c.ref, m)
			}
		}
		if strings.Contains(body, "<form") || strings.Contains(body, "<button type=\"submit\"") {
			t.Errorf("%s/%s: a plugin page has a form or a submit button", c.catalog, c.ref)
		}
	}
	// Everything the review reports shows: downloaded packages, hosts,
	// environment sources, filters, native tools.
	for page, wants := range map[string][]string{
		"acme/everything": {"@modelcontextprotocol/server-everything@2026.8.31 at trust (berth trust, berth install), staged; the server starts offline", "mcp-server-fetch==2025.4.7 at trust", "not declared: any host (default profile)", "nothing else under your home"},
		"acme/acme-cloud": {"mcp.acme.example only; redirects stay within the origin", "a bearer token from your $ACME_TOKEN", "the header X-Team from your $ACME_TEAM", "all it offers except admin_*"},
		"acme/acme-notes": {"NOTES_TOKEN from your $ACME_NOTES_TOKEN", "only search_*, add_note", `<span class="badge bad">destructive</span>`, `<span class="badge ok">read-only</span>`, "it lost notes with a colon in their name"},
		"acme/acme-fmt":   {`run the native tool provider &#34;fmt&#34; (go-plugin over gRPC)`, "it runs confined to the authority it declares", "${bundle} (read-only), ${workspace}", "<dt>writes</dt><dd>${cache}, ${tmp} (its own cache and temp, always granted); nothing else</dd>", "none: no network at all"},
		"acme/old-sync":   {"revoked: the sync server was taken over; do not use", "berth install old-sync would pick no version"},
	} {
		body := get(t, srv, "/plugins/"+page).body
		for _, w := range wants {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", page, w)
			}
		}
	}
}

var (
	eventAttr = regexp.MustCompile(`<[a-zA-Z][^>]*\son[a-z]+\s*=`)
	remoteSrc = regexp.MustCompile(`(?i)<[a-z]+[^>]*\s(src|srcset|poster|data|action)\s*=\s*"(https?:|//)`)
)

// escape is how the page writes text: html/template's escaping, after
// the invisible characters are made visible (render).
func escape(s string) string {
	s = review.PrintableLines(s)
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// TestCatalogTextIsData: text from the catalog is escaped everywhere and
// the README is sanitized.
func TestCatalogTextIsData(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	for _, p := range []string{"/", "/?q=hostile", "/plugins/acme/hostile", "/plugins/acme/acme-notes", "/catalogs"} {
		body := get(t, srv, p).body
		for _, bad := range []string{"<script>alert", "<img src=x", "<iframe", "javascript:", "data:text/html", "<style>", "</td></tr></table><script>"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s carries %q", p, bad)
			}
		}
		if m := eventAttr.FindString(body); m != "" {
			t.Errorf("%s has an event handler attribute: %s", p, m)
		}
		if m := remoteSrc.FindString(body); m != "" {
			t.Errorf("%s loads from another origin: %s", p, m)
		}
		if strings.Count(body, "<script") != 1 {
			t.Errorf("%s: %d script elements, want only site.js", p, strings.Count(body, "<script"))
		}
	}
	body := get(t, srv, "/plugins/acme/hostile").body
	if strings.ContainsRune(body, '\u202e') || !strings.Contains(body, `\u202etxt.exe`) {
		t.Error("a bidirectional override in the catalog reaches the page raw")
	}
	for _, want := range []string{"&lt;script&gt;alert(&#34;desc&#34;)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;", "&lt;b&gt;bold&lt;/b&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("hostile: no escaped %q", want)
		}
	}
	readme := get(t, srv, "/plugins/acme/acme-notes").body
	for _, want := range []string{
		`<a href="https://acme.example/notes/guide" rel="nofollow noreferrer noopener" target="_blank">guide</a>`,
		`<a href="https://cdn.acme.example/diagram.png" rel="nofollow noreferrer noopener" target="_blank">image: diagram</a>`,
		"<table>", "berth install acme-notes@^1.2",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README: no %q", want)
		}
	}
	if strings.Contains(readme, `<img`) && !strings.Contains(readme, `<img class="icon`) {
		t.Error("the README renders an image")
	}
}

func TestStaleBanner(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	const banner = "Catalog beta is stale"
	for path, want := range map[string]bool{
		"/":                        true,
		"/?catalog=beta":           true,
		"/?catalog=acme":           false,
		"/?q=cloud":                false,
		"/plugins/beta/acme-notes": true,
		"/plugins/acme/acme-notes": false,
		"/catalogs":                true,
	} {
		if got := strings.Contains(get(t, srv, path).body, banner); got != want {
			t.Errorf("%s: banner %v, want %v", path, got, want)
		}
	}
	if !strings.Contains(get(t, srv, "/?catalog=beta").body, "stale catalog") {
		t.Error("beta's card has no stale badge")
	}
}

// TestBadgesFromVerification: a copy altered after berth verified it
// loses its "signed" badge on every page; the tier shown is the signed
// catalog's.
func TestBadgesFromVerification(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	if body := get(t, srv, "/plugins/acme/acme-notes").body; !strings.Contains(body, `<li class="badge ok">signed catalog</li>`) {
		t.Fatal("no signed badge on a good copy")
	}
	dirs, _ := filepath.Glob(filepath.Join(f.dir, "home", "catalogs", "acme", "v-*", "catalog.json"))
	if len(dirs) != 1 {
		t.Fatal(dirs)
	}
	data, _ := os.ReadFile(dirs[0])
	// Someone with write access to the cache promotes a plugin: the
	// catalog no longer matches its signed hash.
	os.WriteFile(dirs[0], []byte(strings.Replace(string(data), `"tier":"community"`, `"tier":"official"`, 1)), 0o600)
	_, s := served(t, f)
	srv2 := httptest.NewServer(s.Handler())
	defer srv2.Close()
	for _, p := range []string{"/plugins/acme/acme-fmt", "/?catalog=acme"} {
		body := get(t, srv2, p).body
		if strings.Contains(body, `class="badge ok">signed catalog`) || !strings.Contains(body, "NOT verified") {
			t.Errorf("%s: an altered copy still shows signed", p)
		}
	}
	if body := get(t, srv2, "/plugins/acme/acme-fmt").body; !strings.Contains(body, "catalog.json differs from the length and hashes the signed targets give") {
		t.Errorf("the plugin page does not say what failed")
	}
	if body := get(t, srv2, "/catalogs").body; strings.Count(body, `<li class="badge bad">NOT verified</li>`) != 1 || strings.Count(body, `<li class="badge ok">signed catalog</li>`) != 1 {
		t.Errorf("the catalogs page should show acme unverified and beta signed")
	}
}

func TestListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "[::]:0", "example.com:80", "nonsense"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		} else if addr != "nonsense" && !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("Listen(%q): %v", addr, err)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		ln.Close()
	}
}

// TestGolden compares the index and a plugin page with testdata/*.html
// (go test ./internal/browse -run TestGolden -update rewrites them).
func TestGolden(t *testing.T) {
	f := fixtureFor(t)
	srv, _ := served(t, f)
	for file, path := range map[string]string{"index.golden.html": "/", "plugin.golden.html": "/plugins/acme/acme-notes"} {
		body := get(t, srv, path).body
		p := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if body != string(want) {
			t.Errorf("%s differs from %s; if the change is meant, run: go test ./internal/browse -run TestGolden -update\n%s", path, p, firstDiff(string(want), body))
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return ""
}
