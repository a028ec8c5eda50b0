package browse

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzSearchQuery: any search text and filter values give a page (200) or
// a refusal that names the problem (400), never a server error, and the
// text the person typed never comes back as markup.
func FuzzSearchQuery(f *testing.F) {
	fx := newFixture(f)
	h := fx.site().Handler()
	for _, seed := range [][2]string{
		{"notes", ""}, {"", "tier=official"}, {"<script>alert(1)</script>", "kind=stdio"}, {"acme notes", "sort=updated"},
		{"\"'><img src=x onerror=alert(1)>", "status=none"}, {"\x00\xff", "tag=notes"}, {"{{.}}", "catalog=acme"}, {"é ü 日本", "tier=gold"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, q, rawFilters string) {
		v, err := url.ParseQuery(rawFilters)
		if err != nil {
			v = url.Values{}
		}
		v.Set("q", q)
		req := httptest.NewRequest("GET", "/?"+v.Encode(), nil)
		req.Host = "127.0.0.1:8080"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("q=%q filters=%q: status %d\n%s", q, rawFilters, w.Code, w.Body.String())
		}
		body := w.Body.String()
		if strings.ContainsAny(q, "<>\"'&") && len(q) > 3 && strings.Contains(body, q) {
			t.Fatalf("q=%q comes back unescaped", q)
		}
		if w.Code == http.StatusOK && !strings.Contains(body, `id="results"`) {
			t.Fatalf("q=%q: a page without results", q)
		}
	})
}
