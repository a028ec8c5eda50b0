package marketplace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/internal/registrytest"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

const tinyMCPB = "../testdata/import/good/tiny-tools-0.4.1.mcpb"

// mcpbRegistry serves on loopback a registry that lists one entry per
// server.json of docs (each may name {{ORIGIN}}, the server's own
// origin), and the files of files under /files/.
type mcpbRegistry struct {
	srv   *httptest.Server
	files map[string][]byte
	// redirect, when set, answers /files/ with a redirect there.
	redirect string
	hits     atomic.Int64
}

func newMCPBRegistry(t *testing.T, files map[string][]byte, docs ...string) *mcpbRegistry {
	t.Helper()
	r := &mcpbRegistry{files: files}
	var list registrytest.Listing
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if name, ok := strings.CutPrefix(req.URL.Path, "/files/"); ok {
			r.hits.Add(1)
			if r.redirect != "" {
				http.Redirect(w, req, r.redirect, http.StatusFound)
				return
			}
			data, ok := r.files[name]
			if !ok {
				http.NotFound(w, req)
				return
			}
			w.Write(data)
			return
		}
		list.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	for i, d := range docs {
		d = strings.ReplaceAll(d, "{{ORIGIN}}", r.srv.URL)
		item := fmt.Sprintf(`{"server": %s, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "publishedAt": "2026-11-0%dT00:00:00Z", "isLatest": true}}}`, d, i+1)
		list.Items = append(list.Items, json.RawMessage(item))
	}
	return r
}

func mcpbDoc(name, url, sha string) string {
	return fmt.Sprintf(`{"$schema": %q, "name": %q, "description": "a bundle", "version": "1.0.0",
		"packages": [{"registryType": "mcpb", "identifier": %q, "fileSha256": %q, "transport": {"type": "stdio"}}]}`, importer.RegistrySchema, name, url, sha)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// An entry whose only package is one MCP Bundle: show downloads it from
// the registry's loopback origin, checks its fileSha256, imports it and
// shows its review and digest (the digest berth import of the .mcpb
// gives); install installs it pinned, under the bundle's own name.
func TestRegistryMCPBInstall(t *testing.T) {
	data, err := os.ReadFile(tinyMCPB)
	if err != nil {
		t.Fatal(err)
	}
	reg := newMCPBRegistry(t, map[string][]byte{"tiny.mcpb": data}, mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sha256Hex(data)))
	c := newRegistryCache(t, nil)
	addRegistry(t, c, reg.srv.URL)
	ctx := context.Background()
	tmp := t.TempDir()
	bopts := &bundle.Options{TempDir: tmp}
	sh, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/tiny", "", nil, bopts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := bundle.Open(ctx, tinyMCPB, &bundle.Options{Formats: importer.All()})
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if sh.Digest != want.Digest || sh.Install != "1.0.0" || sh.MCPB == nil || sh.MCPB.Name != "tiny-tools" || sh.MCPB.Version != "0.4.1" {
		t.Fatalf("show: %+v (mcpb %+v), want the digest %s", sh, sh.MCPB, want.Digest)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("show left %d files in the temp dir", len(ents))
	}
	res, err := c.Search(Query{Text: "tiny"}, nil)
	if err != nil || len(res.Results) != 1 || res.Results[0].Latest != "1.0.0" || res.Results[0].Unbuildable != "" || reg.hits.Load() != 1 {
		t.Errorf("search (which downloads nothing): %+v %v, %d downloads", res, err, reg.hits.Load())
	}

	st := store.Open(store.Paths{Root: filepath.Join(t.TempDir(), "state")}, nil)
	req := UnsignedInstallRequest{Catalog: "reg", Name: "io.github.acme/tiny", AllowUnsigned: true, Bundle: bopts}
	req.Digest, _ = store.ParseDigest(sh.Digest)
	got, err := c.InstallUnsigned(ctx, st, req)
	if err != nil {
		t.Fatal(err)
	}
	if rec := got.Trust.Record; !rec.Unsigned || rec.Name != "tiny-tools" || rec.Digest != sh.Digest || !strings.Contains(rec.Source, "/v0/servers/io.github.acme%2Ftiny/versions/1.0.0") {
		t.Errorf("record %+v", rec)
	}

	// Another registry entry whose MCP Bundle calls itself tiny-tools
	// cannot replace the one installed from the first entry.
	reg2 := newMCPBRegistry(t, map[string][]byte{"tiny.mcpb": data}, mcpbDoc("io.github.evil/tiny", "{{ORIGIN}}/files/tiny.mcpb", sha256Hex(data)))
	c2 := newRegistryCache(t, nil)
	addRegistry(t, c2, reg2.srv.URL)
	req.Name = "io.github.evil/tiny"
	if _, err := c2.InstallUnsigned(ctx, st, req); !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "already installed from") {
		t.Errorf("an MCP Bundle of another entry under an installed name: %v", err)
	}
}

// What a lying registry or host can do to an MCP Bundle download is
// refused before anything unpacks it.
func TestRegistryMCPBRefused(t *testing.T) {
	data, err := os.ReadFile(tinyMCPB)
	if err != nil {
		t.Fatal(err)
	}
	other := append(bytes.Clone(data), 0) // a zip that differs by one byte
	sum := sha256Hex(data)
	ctx := context.Background()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer elsewhere.Close()

	cases := []struct {
		name, doc string
		files     map[string][]byte
		redirect  string
		want      string
		verify    bool
	}{
		{name: "hash mismatch", doc: mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sum), files: map[string][]byte{"tiny.mcpb": other},
			want: "but the registry entry's fileSha256 is " + sum, verify: true},
		{name: "another digest", doc: mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", strings.Repeat("0", 64)), files: map[string][]byte{"tiny.mcpb": data},
			want: "has SHA-256 " + sum, verify: true},
		{name: "no digest", doc: strings.Replace(mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", ""), `"fileSha256": "", `, ``, 1), want: "[registry-mcpb-digest]"},
		{name: "empty digest", doc: mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", ""), want: "[registry-wrong-type]"},
		{name: "plain http off loopback", doc: mcpbDoc("io.github.acme/tiny", "http://example.com/tiny.mcpb", sum), want: "only over https"},
		{name: "file url", doc: mcpbDoc("io.github.acme/tiny", "file:///etc/passwd", sum), want: "[registry-package-source]"},
		{name: "loopback http off the registry's origin", doc: mcpbDoc("io.github.acme/tiny", elsewhere.URL+"/tiny.mcpb", sum), want: "plain http off the registry's loopback origin"},
		{name: "redirect off the registry's origin", doc: mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/tiny.mcpb", sum), redirect: elsewhere.URL + "/tiny.mcpb", want: "refused a redirect"},
		{name: "several bundles", doc: strings.Replace(mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/a.mcpb", sum), `"packages": [`, `"packages": [{"registryType": "mcpb", "identifier": "{{ORIGIN}}/files/b.mcpb", "fileSha256": "`+sum+`", "transport": {"type": "stdio"}}, `, 1),
			want: "[registry-mcpb-choice]"},
		{name: "not found", doc: mcpbDoc("io.github.acme/tiny", "{{ORIGIN}}/files/gone.mcpb", sum), files: map[string][]byte{}, want: "not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newMCPBRegistry(t, tc.files, tc.doc)
			reg.redirect = tc.redirect
			c := newRegistryCache(t, nil)
			addRegistry(t, c, reg.srv.URL)
			tmp := t.TempDir()
			bopts := &bundle.Options{TempDir: tmp}
			_, err := c.ShowUnsigned(ctx, "reg", "io.github.acme/tiny", "", nil, bopts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("show: %v, want %q", err, tc.want)
			}
			var ve *VerifyError
			if tc.verify && (!errors.As(err, &ve) || !errors.Is(err, trust.ErrUntrusted)) {
				t.Errorf("show: %T, want a *VerifyError (exit 4)", err)
			}
			st := store.Open(store.Paths{Root: filepath.Join(t.TempDir(), "state")}, nil)
			d, _ := store.ParseDigest("sha256:" + strings.Repeat("ab", 32))
			_, err = c.InstallUnsigned(ctx, st, UnsignedInstallRequest{Catalog: "reg", Name: "io.github.acme/tiny", AllowUnsigned: true, Digest: d, Bundle: bopts})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("install: %v, want %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("%d files left in the temp dir", len(ents))
			}
			if recs, _ := st.Records(); len(recs) != 0 {
				t.Errorf("installed %v", recs)
			}
		})
	}
}

// A body over the cap is refused while it streams, and at once when the
// server says its length.
func TestRegistryMCPBSizeCap(t *testing.T) {
	data, err := os.ReadFile(tinyMCPB)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunked := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if chunked {
				w.(http.Flusher).Flush() // no Content-Length
			}
			w.Write(data)
		}))
		c := newRegistryCache(t, nil)
		ci := &CatalogInfo{Name: "reg", Source: srv.URL + "/"}
		dir := t.TempDir()
		_, err := c.fetchRegistryMCPB(context.Background(), ci, &importer.RegistryMCPB{Name: "io.github.acme/tiny", URL: srv.URL + "/x.mcpb", SHA256: sha256Hex(data)}, dir, 100)
		var ve *VerifyError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "over the limit of 100") {
			t.Errorf("chunked %v: %v", chunked, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("chunked %v: the partial download was kept", chunked)
		}
		srv.Close()
	}
}
