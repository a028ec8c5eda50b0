package runtimefetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadUnpinnedRequests(t *testing.T) {
	for _, tc := range []struct {
		cmd                 string
		args                []string
		eco, name, req, out string
		arg                 int
	}{
		{"npx", []string{"-y", "@acme/notes@latest", "--stdio"}, EcosystemNPM, "@acme/notes", "latest", "@acme/notes@1.4.2", 1},
		{"npx", []string{"-y", "cowsay"}, EcosystemNPM, "cowsay", "", "cowsay@1.4.2", 1},
		{"npx", []string{"-y", "cowsay@^1.2"}, EcosystemNPM, "cowsay", "^1.2", "cowsay@1.4.2", 1},
		{"npx", []string{"-y", "--package=@acme/notes@next", "notes"}, EcosystemNPM, "@acme/notes", "next", "--package=@acme/notes@1.4.2", 1},
		{"npx", []string{"--package", "a@1", "a"}, EcosystemNPM, "a", "1", "a@1.4.2", 1},
		{"npm", []string{"exec", "-y", "--", "a@latest"}, EcosystemNPM, "a", "latest", "a@1.4.2", 3},
		{"deno", []string{"run", "-A", "npm:a@^2"}, EcosystemNPM, "a", "^2", "npm:a@1.4.2", 2},
		{"uvx", []string{"mcp-server-fetch"}, EcosystemPyPI, "mcp-server-fetch", "", "mcp-server-fetch==1.4.2", 0},
		{"uvx", []string{"mcp-server-fetch@latest"}, EcosystemPyPI, "mcp-server-fetch", "latest", "mcp-server-fetch==1.4.2", 0},
		{"uv", []string{"tool", "run", "--from", "a[cli]>=1,<2", "a"}, EcosystemPyPI, "a", ">=1,<2", "a[cli]==1.4.2", 3},
		{"pipx", []string{"run", "a~=1.2"}, EcosystemPyPI, "a", "~=1.2", "a==1.4.2", 1},
		{"docker", []string{"run", "-i", "--rm", "ghcr.io/acme/notes:v1"}, EcosystemOCI, "ghcr.io/acme/notes", "v1", "ghcr.io/acme/notes:v1@sha256:" + strings.Repeat("a", 64), 3},
		{"docker", []string{"run", "-i", "mcp/fetch"}, EcosystemOCI, "mcp/fetch", "", "mcp/fetch@sha256:" + strings.Repeat("a", 64), 2},
	} {
		_, err := Read(tc.cmd, tc.args)
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Unpinned == nil {
			t.Errorf("%s %q: %v, want an Unpinned refusal", tc.cmd, tc.args, err)
			continue
		}
		u := ce.Unpinned
		if u.Ecosystem != tc.eco || u.Name != tc.name || u.Requested != tc.req || u.Arg != tc.arg {
			t.Errorf("%s %q: %+v", tc.cmd, tc.args, u)
			continue
		}
		res := "1.4.2"
		if tc.eco == EcosystemOCI {
			res = "sha256:" + strings.Repeat("a", 64)
		}
		got := u.Apply(tc.args, res)
		if got[tc.arg] != tc.out {
			t.Errorf("%s %q: pinned %q, want %q", tc.cmd, tc.args, got[tc.arg], tc.out)
		}
		if f, err := Read(tc.cmd, got); err != nil || f == nil {
			t.Errorf("%s %q: the pinned command is refused: %v", tc.cmd, got, err)
		} else if err := CheckPinned(f, u.Name+u.Extras(), u.Requested, res); err != nil {
			t.Errorf("%s %q: CheckPinned: %v", tc.cmd, got, err)
		}
		if tc.args[tc.arg] == got[tc.arg] {
			t.Errorf("Apply changed its input")
		}
	}
	// Refused, and nothing berth could pin: no Unpinned.
	for _, argv := range [][]string{
		{"npx", "-y", "github:acme/notes"}, {"npx", "-y", "./local"}, {"npx", "-y", "a@npm:b@1"},
		{"npx", "-y", "https://x.example/a.tgz"}, {"uvx", "git+https://github.com/a/b"}, {"uvx", "a===1"},
		{"go", "run", "example.com/x@latest"}, {"deno", "run", "jsr:@a/b"},
		{"docker", "run", "img:latest"}, // no -i: pinning would not make it run
	} {
		_, err := Read(argv[0], argv[1:])
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Unpinned != nil {
			t.Errorf("%q: %v (unpinned %+v), want a refusal without a pin", argv, err, ce)
		}
	}
}

func TestCheckPinnedRefusesForgedRecords(t *testing.T) {
	f, err := Read("npx", []string{"-y", "a@1.4.2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][3]string{
		{"b", "latest", "1.4.2"},   // another package
		{"a", "latest", "1.4.3"},   // another version
		{"a", "latest", "^1"},      // not exact
		{"a", "git:x", "1.4.2"},    // a request berth never pins
		{"a", "latest", ""},        // no result
		{"", "latest", "1.4.2"},    // no package
		{"a@1", "latest", "1.4.2"}, // not a name
	} {
		if err := CheckPinned(f, c[0], c[1], c[2]); err == nil {
			t.Errorf("CheckPinned(%q) accepted", c)
		}
	}
	if err := CheckPinned(f, "a", "latest", "1.4.2"); err != nil {
		t.Error(err)
	}
}

// packument is an abbreviated packument of name with the versions and
// dist-tags.
func packument(name string, tags map[string]string, versions ...string) string {
	var vs, ts []string
	for _, v := range versions {
		vs = append(vs, fmt.Sprintf("%q: {\"name\": %q, \"version\": %q, \"dist\": {}}", v, name, v))
	}
	for k, v := range tags {
		ts = append(ts, fmt.Sprintf("%q: %q", k, v))
	}
	return fmt.Sprintf(`{"name": %q, "dist-tags": {%s}, "versions": {%s}, "modified": "2026-01-01T00:00:00Z"}`, name, strings.Join(ts, ","), strings.Join(vs, ","))
}

func unpinnedOf(t *testing.T, argv ...string) *Unpinned {
	t.Helper()
	_, err := Read(argv[0], argv[1:])
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Unpinned == nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return ce.Unpinned
}

func TestResolveNPMAgainstStub(t *testing.T) {
	docs := map[string]string{
		"/@acme%2fnotes": packument("@acme/notes", map[string]string{"latest": "1.4.2", "next": "2.0.0-rc.1"}, "1.0.0", "1.4.2", "1.5.0", "2.0.0-rc.1"),
		"/liar":          packument("liar", map[string]string{"latest": "9.9.9"}, "1.0.0"),
		"/other":         packument("someone-else", map[string]string{"latest": "1.0.0"}, "1.0.0"),
		"/broken":        `{"name": "broken", "versions": `,
		"/hop":           "",
	}
	var accept []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = append(accept, r.Header.Get("Accept"))
		switch r.URL.EscapedPath() {
		case "/hop":
			http.Redirect(w, r, "http://[::1]:1/hop", http.StatusFound)
			return
		case "/huge":
			w.Write([]byte(`{"name":"huge","x":"`))
			w.Write(make([]byte, MaxPackumentSize))
			return
		}
		doc, ok := docs[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.npm.install-v1+json")
		w.Write([]byte(doc))
	}))
	defer srv.Close()
	r, err := NewResolver(&ResolverOptions{NPMRegistry: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ spec, want string }{
		{"@acme/notes@latest", "1.4.2"},
		{"@acme/notes", "1.4.2"},
		{"@acme/notes@next", "2.0.0-rc.1"}, // a tag that points at a prerelease asks for it
		{"@acme/notes@^1.0.0", "1.4.2"},    // latest satisfies: npm takes it
		{"@acme/notes@~1.5", "1.5.0"},
		{"@acme/notes@>=1.5", "1.5.0"}, // never the prerelease 2.0.0-rc.1
		{"@acme/notes@>=2.0.0-rc.0", "2.0.0-rc.1"},
	} {
		pin, err := r.Resolve(ctx, unpinnedOf(t, "npx", "-y", c.spec))
		if err != nil || pin.Resolved != c.want {
			t.Errorf("%s: %+v, %v; want %s", c.spec, pin, err, c.want)
		}
	}
	if !strings.HasPrefix(accept[0], "application/vnd.npm.install-v1+json") {
		t.Errorf("Accept %q", accept[0])
	}
	for _, c := range []struct{ spec, want string }{
		{"liar@latest", "points at 9.9.9, a version it does not list"},
		{"other@latest", `with the document of "someone-else"`},
		{"broken@latest", "is not a packument"},
		{"missing@latest", "404"},
		{"@acme/notes@beta", `no dist-tag "beta"`},
		{"@acme/notes@^3", `no version of @acme/notes that the registry lists satisfies "^3"`},
		{"hop@latest", "refused a redirect"},
		{"huge@latest", "more than"},
	} {
		_, err := r.Resolve(ctx, unpinnedOf(t, "npx", "-y", c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.spec, err, c.want)
		}
	}
}

func TestNewResolverRefusesPlainHTTPOffLoopback(t *testing.T) {
	for _, o := range []ResolverOptions{
		{NPMRegistry: "http://registry.npmjs.org/"},
		{UVIndex: "ftp://pypi.example/simple"},
		{PipIndex: "https://user:pw@pypi.example/simple"},
		{NPMScopes: map[string]string{"@a": "http://10.0.0.1/"}},
	} {
		if _, err := NewResolver(&o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestResolvePyPIAgainstStub(t *testing.T) {
	page := `{"meta": {"api-version": "1.1"}, "name": "mcp-server-fetch", "versions": ["1.0", "1.2", "1.3", "2.0b1", "2.1"], "files": [
	 {"filename": "mcp_server_fetch-1.0-py3-none-any.whl", "hashes": {}},
	 {"filename": "mcp_server_fetch-1.2.tar.gz", "hashes": {}},
	 {"filename": "mcp_server_fetch-1.3-py3-none-any.whl", "hashes": {}, "yanked": "broken"},
	 {"filename": "mcp_server_fetch-2.0b1-py3-none-any.whl", "hashes": {}},
	 {"filename": "mcp_server_fetch-2.1-py3-none-any.whl", "hashes": {}, "yanked": true},
	 {"filename": "other-9.0-py3-none-any.whl", "hashes": {}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/mcp-server-fetch/":
			if r.Header.Get("Accept") != "application/vnd.pypi.simple.v1+json" {
				t.Errorf("Accept %q", r.Header.Get("Accept"))
			}
			w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
			w.Write([]byte(page))
		case "/simple/html-only/":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<a href="html_only-1.0.tar.gz">html_only-1.0.tar.gz</a>`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	r, err := NewResolver(&ResolverOptions{UVIndex: srv.URL + "/simple", PipIndex: srv.URL + "/nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ spec, want string }{
		{"mcp-server-fetch", "1.2"}, // 1.3 and 2.1 are yanked, 2.0b1 a prerelease
		{"mcp_server.fetch@latest", "1.2"},
		{"mcp-server-fetch<1.2", "1.0"},
		{"mcp-server-fetch>=2.0b1", "2.0b1"},
		{"mcp-server-fetch[cli]~=1.0", "1.2"},
		{"mcp-server-fetch==1.*", "1.2"},
	} {
		pin, err := r.Resolve(ctx, unpinnedOf(t, "uvx", c.spec))
		if err != nil || pin.Resolved != c.want {
			t.Errorf("%s: %+v, %v; want %s", c.spec, pin, err, c.want)
		}
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"uvx", "mcp-server-fetch>=3"}, `no release that satisfies ">=3"`},
		{[]string{"uvx", "html-only"}, "not the JSON simple API"},
		{[]string{"uvx", "missing"}, "404"},
		{[]string{"pipx", "run", "mcp-server-fetch"}, "/nowhere/"}, // pipx reads pip.conf's index
	} {
		_, err := r.Resolve(ctx, unpinnedOf(t, c.argv...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.argv, err, c.want)
		}
	}
}

func TestPEP440Order(t *testing.T) {
	order := []string{"1.0.dev1", "1.0a1", "1.0a2.dev1", "1.0a2", "1.0b1", "1.0rc1", "1.0", "1.0.post1", "1.0.1", "1.1", "2"}
	for i := range order {
		for j := range order {
			a, _ := parsePyVersion(order[i])
			b, _ := parsePyVersion(order[j])
			if got := comparePy(a, b); got != cmpInt(i, j) {
				t.Errorf("compare(%s, %s) = %d", order[i], order[j], got)
			}
		}
	}
	// >V excludes post-releases of V; prereleases only when asked.
	if v, err := PickPyPI("x", []string{"1.0", "1.0.post1", "1.1"}, ">1.0"); err != nil || v != "1.1" {
		t.Errorf(">1.0: %s, %v", v, err)
	}
	if v, err := PickPyPI("x", []string{"1.0", "1.0.post1", "1.1a1"}, ">1.0"); err == nil {
		t.Errorf(">1.0 picked %s", v)
	}
	if v, err := PickPyPI("x", []string{"1.0", "1.0.post1", "1.1a1"}, ">=1.0"); err != nil || v != "1.0.post1" {
		t.Errorf(">=1.0: %s, %v", v, err)
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// registryStub is an OCI distribution registry that needs a bearer token
// from its realm, as Docker Hub and ghcr.io do.
func registryStub(t *testing.T, manifest []byte, mediaType, stated string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/token":
			if r.URL.Query().Get("scope") != "repository:acme/notes:pull" || r.URL.Query().Get("service") != "stub" {
				http.Error(w, "bad scope", http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"token": "t0k"}`))
		case r.Header.Get("Authorization") != "Bearer t0k":
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="stub",scope="repository:acme/notes:pull"`, srv.URL))
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/v2/acme/notes/manifests/v1":
			if !strings.Contains(r.Header.Get("Accept"), "application/vnd.oci.image.index.v1+json") {
				t.Errorf("Accept %q", r.Header.Get("Accept"))
			}
			w.Header().Set("Content-Type", mediaType)
			if stated != "" {
				w.Header().Set("Docker-Content-Digest", stated)
			}
			w.Write(manifest)
		default:
			http.NotFound(w, r)
		}
	}))
	return srv
}

func TestResolveImageAgainstStub(t *testing.T) {
	manifest := []byte(`{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}`)
	sum := sha256.Sum256(manifest)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	r, err := NewResolver(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv := registryStub(t, manifest, "application/vnd.oci.image.index.v1+json", digest)
	host := strings.TrimPrefix(srv.URL, "http://")
	pin, err := r.Resolve(ctx, unpinnedOf(t, "docker", "run", "-i", host+"/acme/notes:v1"))
	srv.Close()
	if err != nil || pin.Resolved != digest || pin.Spec != host+"/acme/notes:v1@"+digest {
		t.Fatalf("%+v, %v", pin, err)
	}
	// A registry that states another digest than its bytes have, or
	// serves something that is not a manifest, is refused.
	for _, c := range []struct {
		body           []byte
		ct, stated, ok string
	}{
		{manifest, "application/vnd.oci.image.index.v1+json", "sha256:" + strings.Repeat("0", 64), "states the digest"},
		{manifest, "text/plain", "", "not an image manifest"},
		{[]byte(`{"schemaVersion": 1}`), "application/vnd.oci.image.manifest.v1+json", "", "schemaVersion 1"},
		{manifest, "application/vnd.oci.image.manifest.v1+json", "", "says it is"},
	} {
		srv := registryStub(t, c.body, c.ct, c.stated)
		host := strings.TrimPrefix(srv.URL, "http://")
		_, err := r.Resolve(ctx, unpinnedOf(t, "docker", "run", "-i", host+"/acme/notes:v1"))
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), c.ok) {
			t.Errorf("%s: %v, want %q", c.ct, err, c.ok)
		}
	}
}

func TestImageRegistryAtPrivateAddressRefused(t *testing.T) {
	r, err := NewResolver(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The bundle names the registry: berth does not let it aim requests
	// at the metadata service or the private network.
	for _, img := range []string{"169.254.169.254/acme/notes:v1", "10.1.2.3:5000/acme/notes:v1"} {
		_, err := r.Resolve(ctx, unpinnedOf(t, "docker", "run", "-i", img))
		if err == nil || !strings.Contains(err.Error(), "public address") {
			t.Errorf("%s: %v", img, err)
		}
	}
}

func TestFetchersConfigRegistries(t *testing.T) {
	c := FetchersConfig{
		NPMRC:   "; comment\nregistry=https://old.example/\nregistry = \"https://npm.mirror.example/\"\n@acme:registry=https://acme.example/npm/\n//npm.mirror.example/:_authToken=secret\n",
		UVToml:  "[[index]]\nurl = \"https://other.example/simple\"\n\n[[index]]\nname = 'mirror'\nurl = 'https://pypi.mirror.example/simple'\ndefault = true\n",
		PipConf: "[install]\nindex-url = https://wrong.example/\n[global]\nindex-url = https://pip.mirror.example/simple\n",
	}
	o, err := c.Registries()
	if err != nil {
		t.Fatal(err)
	}
	if o.NPMRegistry != "https://npm.mirror.example/" || o.NPMScopes["@acme"] != "https://acme.example/npm/" || o.UVIndex != "https://pypi.mirror.example/simple" || o.PipIndex != "https://pip.mirror.example/simple" {
		t.Errorf("%+v", o)
	}
	o, err = FetchersConfig{UVToml: "index-url = \"https://top.example/simple\"\n"}.Registries()
	if err != nil || o.UVIndex != "https://top.example/simple" || o.NPMRegistry != "" {
		t.Errorf("%+v, %v", o, err)
	}
	if _, err := (FetchersConfig{UVToml: "index-url = \"\"\"\nhttps://x\n\"\"\"\n"}).Registries(); err == nil {
		t.Error("a multi-line string was read")
	}
}

// TestResolveRealNPM resolves one package against the real npm registry,
// which berth's tests may reach; it is skipped when it cannot be reached.
func TestResolveRealNPM(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no network")
	}
	c, err := net.DialTimeout("tcp", "registry.npmjs.org:443", 5*time.Second)
	if err != nil {
		t.Skipf("the npm registry is not reachable here (%v)", err)
	}
	c.Close()
	if os.Getenv("BERTH_TEST_OFFLINE") != "" {
		t.Skip("BERTH_TEST_OFFLINE is set")
	}
	r, err := NewResolver(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pin, err := r.Resolve(ctx, unpinnedOf(t, "npx", "-y", "@modelcontextprotocol/server-everything@^2025.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resolved against the real registry: %+v", pin)
	if !strings.HasPrefix(pin.Resolved, "2025.") || pin.Registry != "https://registry.npmjs.org/" {
		t.Errorf("%+v", pin)
	}
	f, err := Read("npx", []string{"-y", pin.Spec})
	if err != nil || f == nil || !slices.Contains([]string{pin.Spec}, f.Package) {
		t.Errorf("%+v, %v", f, err)
	}
}
