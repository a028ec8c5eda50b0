package marketplace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

const registryFixtures = "../testdata/registry"

// fakeRegistry serves the recorded pages of testdata/registry on
// loopback: /v0/servers, the page chosen by the cursor parameter through
// cursors.json. Tests may replace a page's bytes (edit) or the handler.
type fakeRegistry struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	pages   map[string][]byte // by cursor
	queries []string
}

func newFakeRegistry(t testing.TB) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{t: t, pages: map[string][]byte{}}
	var cursors map[string]string
	data, err := os.ReadFile(filepath.Join(registryFixtures, "cursors.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cursors); err != nil {
		t.Fatal(err)
	}
	for c, file := range cursors {
		page, err := os.ReadFile(filepath.Join(registryFixtures, file))
		if err != nil {
			t.Fatal(err)
		}
		f.pages[c] = page
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRegistry) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, r.URL.RawQuery)
	if r.URL.Path != "/v0/servers" || r.URL.Query().Get("limit") != "100" {
		http.Error(w, `{"error": "not found"}`, http.StatusNotFound)
		return
	}
	page, ok := f.pages[r.URL.Query().Get("cursor")]
	if !ok {
		http.Error(w, `{"error": "invalid cursor"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(page)
}

// edit changes the page of cursor with fn on its decoded form.
func (f *fakeRegistry) edit(cursor string, fn func(doc map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var doc map[string]any
	if err := json.Unmarshal(f.pages[cursor], &doc); err != nil {
		f.t.Fatal(err)
	}
	fn(doc)
	data, _ := json.Marshal(doc)
	f.pages[cursor] = data
}

func newRegistryCache(t testing.TB, o *CacheOptions) *Cache {
	if o == nil {
		o = &CacheOptions{}
	}
	return OpenCache(filepath.Join(t.TempDir(), "catalogs"), o)
}

func addRegistry(t testing.TB, c *Cache, url string) *RefreshResult {
	t.Helper()
	src, err := ParseRegistrySource(url)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.AddRegistry(context.Background(), "reg", src)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func problemSet(ps []*catalog.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Plugin+" "+p.Rule)
	}
	sort.Strings(out)
	return out
}

// The recorded registry lists across three pages; deleted versions
// vanish, every malformed item is named and skipped, and the rest list.
func TestRegistryAdd(t *testing.T) {
	f := newFakeRegistry(t)
	c := newRegistryCache(t, nil)
	r := addRegistry(t, c, f.srv.URL)
	if len(f.queries) != 3 || f.queries[1] != "cursor=io.github.acme%2Fnotes%3A1.0.0&limit=100" {
		t.Errorf("queries %q", f.queries)
	}
	if !r.Unsigned || r.Kind != KindRegistry || r.Stale {
		t.Errorf("info %+v", r.CatalogInfo)
	}
	want := []string{
		" registry-entry-syntax",
		"com.example/nometa registry-entry-meta",
		"com.example/status registry-entry-meta",
		"io.github.acme/tools registry-name-collision",
		"io.github.acme/weather registry-entry-duplicate",
		"io.github.bob/unpinned registry-entry-version",
		"io.github/acme.tools registry-name-collision",
	}
	if got := problemSet(r.Problems); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range r.Problems {
		if !strings.HasPrefix(p.Path, "page ") && p.Rule != foreign.RuleRegistryNameCollision {
			t.Errorf("problem %s has no page location", p)
		}
	}
	res, err := c.Search(Query{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range res.Results {
		names = append(names, x.Name+"@"+x.Latest+":"+string(x.Status))
		// ranged's only version asks for a range of its npm package:
		// berth cannot build it, and search says so.
		if want := x.Name == "io-github-acme-ranged"; want != strings.Contains(x.Unbuildable, "[registry-version-unpinned]") {
			t.Errorf("%s is marked unbuildable %q", x.Name, x.Unbuildable)
		}
		if !x.Unsigned {
			t.Errorf("%s is not marked unsigned", x.Name)
		}
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "acme-notes@9.9.9:active com-example-remote@2.0.0:active io-github-acme-notes@1.0.0:deprecated io-github-acme-ranged@: io-github-acme-weather@1.4.0:active" {
		t.Errorf("search lists %s", got)
	}
	// A registry name finds the entry it maps to.
	res, err = c.Search(Query{Text: "io.github.acme/weather"}, nil)
	if err != nil || len(res.Results) != 1 || res.Results[0].Name != "io-github-acme-weather" || res.Results[0].SourceName != "io.github.acme/weather" || res.Results[0].Match != MatchExact {
		t.Errorf("search by registry name: %+v %v", res, err)
	}
	// Signed-catalog calls refuse the unsigned source instead of misreading it.
	if _, _, err := c.Plugin("reg", "io-github-acme-weather"); !errors.Is(err, ErrUnsignedSource) {
		t.Errorf("Plugin: %v", err)
	}
	if _, err := c.Load("reg"); !errors.Is(err, ErrUnsignedSource) {
		t.Errorf("Load: %v", err)
	}
}

// Show works from the cache with the registry gone, computes the digest
// of the bundle the server.json describes, and takes both names; install
// needs --allow-unsigned and exactly that digest, and records unsigned.
func TestRegistryShowInstall(t *testing.T) {
	f := newFakeRegistry(t)
	dir := t.TempDir()
	c := OpenCache(filepath.Join(dir, "catalogs"), nil)
	addRegistry(t, c, f.srv.URL)
	f.srv.Close() // offline from here on
	ctx := context.Background()
	sh, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/weather", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh2, err := c.ShowUnsigned(ctx, "reg", "io-github-acme-weather", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Digest != sh2.Digest || sh.Shown != "1.4.0" || sh.Install != "1.4.0" || !sh.Unsigned || sh.SourceName != "io.github.acme/weather" {
		t.Errorf("show %+v / %+v", sh, sh2)
	}
	// The digest is the one berth import of the same server.json gives.
	p, _, err := c.UnsignedEntry("reg", "io-github-acme-weather")
	if err != nil {
		t.Fatal(err)
	}
	b, err := importer.OpenServerJSON(ctx, "test", p.Version("1.4.0").ServerJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Digest != sh.Digest {
		t.Errorf("show digest %s, OpenServerJSON %s", sh.Digest, b.Digest)
	}
	b.Close()
	if sh.Review == nil || sh.Review.ImportedFrom == nil || sh.Review.ImportedFrom.SourceName != "io.github.acme/weather" || sh.Review.Name != "io-github-acme-weather" {
		t.Errorf("the review does not show both names: %+v", sh.Review)
	}
	// Another registry name that maps to the same berth name is not it.
	if _, err := c.ShowUnsigned(ctx, "reg", "io.github/acme.weather", "", nil, nil); !errors.Is(err, ErrNoPlugin) {
		t.Errorf("show of a look-alike registry name: %v", err)
	}
	// A remote server's secret header becomes an environment source.
	if rem, err := c.ShowUnsigned(ctx, "reg", "com.example/remote", "", nil, nil); err != nil || rem.Digest == "" {
		t.Errorf("remote: %+v %v", rem, err)
	}
	// An entry the importer refuses is shown, but fails closed.
	var ie *bundle.InvalidError
	if out, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/ranged", "", nil, nil); !errors.As(err, &ie) || out == nil || out.Digest != "" {
		t.Errorf("ranged: %+v %v", out, err)
	}
	dep, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/notes", "", nil, nil)
	if err != nil || len(dep.Warnings) != 1 || !strings.Contains(dep.Warnings[0], "Use io.github.acme/notes2 instead") {
		t.Errorf("deprecated show: %+v %v", dep, err)
	}

	st := store.Open(store.Paths{Root: filepath.Join(dir, "home")}, nil)
	npmRegistryFor(t, st.Paths().Root, "@acme/weather-mcp@1.4.0")
	req := UnsignedInstallRequest{Catalog: "reg", Name: "io.github.acme/weather"}
	_, err = c.InstallUnsigned(ctx, st, req)
	var pe *UnsignedPinError
	if !errors.As(err, &pe) || pe.Digest != sh.Digest || !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "--allow-unsigned --digest "+sh.Digest) {
		t.Fatalf("install without a pin: %v", err)
	}
	wrong, _ := store.ParseDigest("sha256:" + strings.Repeat("0", 64))
	req.AllowUnsigned, req.Digest = true, wrong
	var dm *store.DigestMismatchError
	if _, err := c.InstallUnsigned(ctx, st, req); !errors.As(err, &dm) {
		t.Fatalf("install with another digest: %v", err)
	}
	req.Digest, _ = store.ParseDigest(sh.Digest)
	res, err := c.InstallUnsigned(ctx, st, req)
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Trust.Record
	if !rec.Unsigned || rec.Name != "io-github-acme-weather" || rec.Version != "1.4.0" || rec.Digest != sh.Digest || rec.Catalog != nil ||
		rec.Source != f.srv.URL+"/v0/servers/io.github.acme%2Fweather/versions/1.4.0" {
		t.Errorf("record %+v", rec)
	}
	// An exact older version by constraint.
	req.Constraint, req.Name = "1.3.0", "io-github-acme-weather"
	if _, err := c.InstallUnsigned(ctx, st, req); !errors.As(err, &dm) {
		t.Errorf("1.3.0 pinned to 1.4.0's digest: %v", err)
	}
}

// An update lists the registry again: a version deleted since vanishes, a
// status change shows, and a refused listing keeps the cached copy.
func TestRegistryUpdate(t *testing.T) {
	f := newFakeRegistry(t)
	c := newRegistryCache(t, nil)
	addRegistry(t, c, f.srv.URL)
	ctx := context.Background()
	r, err := c.Refresh(ctx, "reg")
	if err != nil || r.Changed {
		t.Fatalf("unchanged refresh: %+v %v", r, err)
	}
	f.edit("", func(doc map[string]any) {
		items := doc["servers"].([]any)
		meta := items[1].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol.registry/official"].(map[string]any)
		meta["status"] = "deleted"
	})
	f.edit("io.github/acme.tools:6.6.6", func(doc map[string]any) {
		items := doc["servers"].([]any)
		meta := items[0].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol.registry/official"].(map[string]any)
		meta["status"] = "deprecated"
	})
	if r, err = c.Refresh(ctx, "reg"); err != nil || !r.Changed {
		t.Fatalf("refresh: %+v %v", r, err)
	}
	p, _, err := c.UnsignedEntry("reg", "io-github-acme-weather")
	if err != nil || len(p.Versions) != 1 || p.Versions[0].Version != "1.3.0" {
		t.Errorf("after 1.4.0 was deleted: %+v %v", p, err)
	}
	res, _ := c.Search(Query{Text: "com-example-remote"}, nil)
	if len(res.Results) != 1 || res.Results[0].Status != catalog.StatusDeprecated {
		t.Errorf("deprecated remote: %+v", res.Results)
	}
	// A refused listing changes nothing.
	f.edit("", func(doc map[string]any) { delete(doc, "servers") })
	var se *SourceRefusedError
	if _, err := c.Refresh(ctx, "reg"); !errors.As(err, &se) || !errors.Is(err, trust.ErrUntrusted) {
		t.Fatalf("refresh of a broken page: %v", err)
	}
	if p, _, err := c.UnsignedEntry("reg", "io-github-acme-weather"); err != nil || p.Versions[0].Version != "1.3.0" {
		t.Errorf("the copy changed: %+v %v", p, err)
	}
}

// A lying registry: endless pages, a cursor loop, a huge page, a redirect
// off its origin, plain http off loopback.
func TestRegistryRefusals(t *testing.T) {
	ctx := context.Background()
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	add := func(c *Cache, url string) error {
		src, err := ParseRegistrySource(url)
		if err != nil {
			return err
		}
		_, err = c.AddRegistry(ctx, "reg", src)
		return err
	}
	var n int
	endless := serve(func(w http.ResponseWriter, r *http.Request) {
		n++
		fmt.Fprintf(w, `{"servers": [], "metadata": {"nextCursor": "c%d"}}`, n)
	})
	c := newRegistryCache(t, &CacheOptions{RegistryMaxPages: 7})
	var se *SourceRefusedError
	if err := add(c, endless); !errors.As(err, &se) || !strings.Contains(err.Error(), "still paginating after 7 pages") || n != 7 {
		t.Errorf("endless: %v after %d pages", err, n)
	}
	loop := serve(func(w http.ResponseWriter, r *http.Request) {
		next := map[string]string{"": "a", "a": "b", "b": "a"}[r.URL.Query().Get("cursor")]
		fmt.Fprintf(w, `{"servers": [], "metadata": {"nextCursor": %q}}`, next)
	})
	if err := add(c, loop); !errors.As(err, &se) || !strings.Contains(err.Error(), `cursor "a" again (first on page 1)`) {
		t.Errorf("loop: %v", err)
	}
	huge := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"servers": [], "pad": "`))
		w.Write([]byte(strings.Repeat("x", foreign.MaxRegistryPage)))
		w.Write([]byte(`"}`))
	})
	if err := add(c, huge); !errors.As(err, &se) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("huge: %v", err)
	}
	other := serve(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"servers": []}`)) })
	redirect := serve(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+r.URL.String(), http.StatusFound)
	})
	if err := add(c, redirect); err == nil || !strings.Contains(err.Error(), "refused a redirect") {
		t.Errorf("redirect: %v", err)
	}
	for _, bad := range []string{"http://registry.example.com", "ftp://127.0.0.1/", "file:///tmp", "./dir", "https://user:pw@registry.example"} {
		if _, err := ParseRegistrySource(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if names, _ := c.Names(); len(names) != 0 {
		t.Errorf("a refused add left %v", names)
	}
	// The good registry still adds into the same cache.
	if err := add(c, other); err != nil {
		t.Fatal(err)
	}
}

// A name in a signed catalog and in a registry needs --catalog: berth does
// not pick either.
func TestRegistryNameCollidesWithCatalog(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	e.addCatalog()
	f := newFakeRegistry(t)
	addRegistry(t, e.cache, f.srv.URL)
	var ae *AmbiguousError
	if _, err := e.cache.FindCatalog("acme-notes", ""); !errors.As(err, &ae) || strings.Join(ae.Catalogs, ",") != "acme,reg" {
		t.Fatalf("FindCatalog: %v", err)
	}
	if got, err := e.cache.FindCatalog("acme-notes", "acme"); err != nil || got != "acme" {
		t.Errorf("--catalog acme: %s %v", got, err)
	}
	if k, _ := e.cache.Kind("acme"); k != KindTUF {
		t.Errorf("kind %s", k)
	}
	if k, _ := e.cache.Kind("reg"); k != KindRegistry {
		t.Errorf("kind %s", k)
	}
	// ApplyStatus and Update go through an unsigned source harmlessly.
	if _, err := e.cache.Update(e.ctx, e.store(), "reg"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkParseRegistryPage: one full page (100 server versions, the
// API's maximum) decoded and checked.
func BenchmarkParseRegistryPage(b *testing.B) {
	data := syntheticPage(100)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		pg, ps, err := foreign.DecodeRegistryPage(data, 1)
		if err != nil || len(ps) != 0 || len(pg.Items) != 100 {
			b.Fatal(err, ps)
		}
	}
}

// BenchmarkRegistryAdd: adding a registry of 20 pages (2,000 server
// versions) served on loopback, written to the cache.
func BenchmarkRegistryAdd(b *testing.B) {
	const pages = 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Query().Get("cursor"), "c%d", &n)
		doc := map[string]any{}
		json.Unmarshal(syntheticPageFrom(n*100, 100), &doc)
		if n+1 < pages {
			doc["metadata"] = map[string]any{"nextCursor": fmt.Sprintf("c%d", n+1)}
		}
		json.NewEncoder(w).Encode(doc)
	}))
	defer srv.Close()
	src, _ := ParseRegistrySource(srv.URL)
	for b.Loop() {
		c := newRegistryCache(b, nil)
		r, err := c.AddRegistry(context.Background(), "reg", src)
		if err != nil || r.Plugins != pages*100 {
			b.Fatal(err)
		}
	}
}

func syntheticPage(n int) []byte { return syntheticPageFrom(0, n) }

func syntheticPageFrom(from, n int) []byte {
	var items []any
	for i := from; i < from+n; i++ {
		name := fmt.Sprintf("io.github.acme%d/server-%d", i, i)
		items = append(items, map[string]any{
			"server": map[string]any{
				"$schema": importer.RegistrySchema, "name": name, "description": "A server of the benchmark", "version": "1.0.0",
				"packages": []any{map[string]any{"registryType": "npm", "identifier": fmt.Sprintf("@acme/server-%d", i), "version": "1.0.0", "transport": map[string]any{"type": "stdio"},
					"environmentVariables": []any{map[string]any{"name": "API_KEY", "isSecret": true, "isRequired": true}}}},
			},
			"_meta": map[string]any{"io.modelcontextprotocol.registry/official": map[string]any{"status": "active", "publishedAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-01T00:00:00Z", "isLatest": true}},
		})
	}
	data, _ := json.Marshal(map[string]any{"servers": items, "metadata": map[string]any{"count": n}})
	return data
}

// A version the registry writes with a leading "v" lists and installs as
// the semantic version, and the trust record names the registry's URL of
// it, as the registry spells it.
func TestRegistryVPrefixInstall(t *testing.T) {
	f := newFakeRegistry(t)
	f.edit("", func(doc map[string]any) {
		for _, it := range doc["servers"].([]any) {
			s := it.(map[string]any)["server"].(map[string]any)
			if s["name"] == "io.github.acme/weather" && s["version"] == "1.4.0" {
				s["version"] = "v1.4.0"
			}
		}
	})
	c := newRegistryCache(t, nil)
	addRegistry(t, c, f.srv.URL)
	ctx := context.Background()
	sh, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/weather", "1.4.0", nil, nil)
	if err != nil || sh.Digest == "" {
		t.Fatalf("show: %+v %v", sh, err)
	}
	st := store.Open(store.Paths{Root: filepath.Join(t.TempDir(), "home")}, nil)
	npmRegistryFor(t, st.Paths().Root, "@acme/weather-mcp@1.4.0")
	req := UnsignedInstallRequest{Catalog: "reg", Name: "io.github.acme/weather", Constraint: "1.4.0", AllowUnsigned: true}
	req.Digest, _ = store.ParseDigest(sh.Digest)
	res, err := c.InstallUnsigned(ctx, st, req)
	if err != nil {
		t.Fatal(err)
	}
	if rec := res.Trust.Record; rec.Version != "1.4.0" || rec.Source != f.srv.URL+"/v0/servers/io.github.acme%2Fweather/versions/v1.4.0" {
		t.Errorf("record version %q source %q", rec.Version, rec.Source)
	}
}
