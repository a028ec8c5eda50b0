package oci

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/ocitest"
	"github.com/opencontainers/go-digest"
)

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeCatalog is a catalog directory's layout with placeholder content:
// this package moves bytes; the TUF checks are the caller's.
func fakeCatalog(t *testing.T) (string, map[string]string) {
	dir := t.TempDir()
	files := map[string]string{
		"1.root.json":     `{"root":1}`,
		"root.json":       `{"root":1}`,
		"timestamp.json":  `{"signed":{"meta":{"snapshot.json":{"version":2}}}}`,
		"2.snapshot.json": `{"signed":{"meta":{"targets.json":{"version":1}}}}`,
		"1.targets.json":  `{"signed":{"targets":{"catalog.json":{"hashes":{"sha256":"` + strings.Repeat("a", 64) + `"}}}}}`,
		"targets/" + strings.Repeat("a", 64) + ".catalog.json": `{"catalog":1}`,
		"bundles/acme/1.0.0/acme-1.0.0.tar.gz":                 "archive-bytes",
		"bundles/acme/1.0.0/acme-1.0.0.tar.gz.sigstore.json":   `{"sig":1}`,
		"bundles/other/2.0.0/other-2.0.0.tar.gz":               "other-archive",
		"bundles/other/2.0.0/other-2.0.0.tar.gz.sigstore.json": `{"sig":2}`,
	}
	// An older snapshot and catalog target: published once, of no use to
	// a client now, so not pushed.
	writeFile(t, dir, "1.snapshot.json", `{"signed":{"meta":{"targets.json":{"version":1}}}}`)
	writeFile(t, dir, "targets/"+strings.Repeat("b", 64)+".catalog.json", `{"catalog":0}`)
	for rel, c := range files {
		writeFile(t, dir, rel, c)
	}
	writeFile(t, dir, "catalog.json", "working copy, not pushed")
	writeFile(t, dir, "bundles/acme/1.0.0/.tmp-pack-123", "a leftover of an interrupted pack, not pushed")
	writeFile(t, dir, "berth-catalog.json", "settings, not pushed")
	return dir, files
}

func readRel(t *testing.T, cat *Catalog, rel string) (string, error) {
	t.Helper()
	rc, err := cat.Open(context.Background(), rel)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func TestPushAndOpenCatalog(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers-api", false: "tag-schema"}[referrers], func(t *testing.T) {
			reg := ocitest.NewRegistry(t, ocitest.Options{Referrers: referrers})
			dir, files := fakeCatalog(t)
			ref, err := ParseRef("oci://" + reg.Host() + "/acme/catalog")
			if err != nil {
				t.Fatal(err)
			}
			res, err := PushCatalog(context.Background(), dir, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Tag != DefaultTag || res.Bundles != 2 || res.Files != 10 {
				t.Fatalf("push result %+v", res)
			}
			// The same catalog pushed again gives the same digest and uploads nothing.
			res2, err := PushCatalog(context.Background(), dir, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res2.Ref.Digest != res.Ref.Digest || res2.Uploaded != 0 {
				t.Fatalf("second push %+v, first %+v", res2, res)
			}
			cat, err := OpenCatalog(context.Background(), ref, "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if cat.IndexDigest() != res.Ref.Digest {
				t.Fatalf("index %s, pushed %s", cat.IndexDigest(), res.Ref.Digest)
			}
			for rel, want := range files {
				got, err := readRel(t, cat, rel)
				if err != nil || got != want {
					t.Errorf("%s: %q, %v; want %q", rel, got, err, want)
				}
			}
			for _, rel := range []string{"catalog.json", "berth-catalog.json", "2.root.json", "1.snapshot.json", "targets/" + strings.Repeat("b", 64) + ".catalog.json", "bundles/none/1/x.tar.gz.sigstore.json", "bundles/acme/1.0.0/.tmp-pack-123"} {
				if _, err := readRel(t, cat, rel); !isKind(err, ErrNotFound) {
					t.Errorf("%s: %v, want not found", rel, err)
				}
			}
		})
	}
}

func isKind(err, kind error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == kind
}

func TestUnchangedCatalogCostsOneRequest(t *testing.T) {
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	dir, _ := fakeCatalog(t)
	ref, _ := ParseRef("oci://" + reg.Host() + "/acme/catalog")
	if _, err := PushCatalog(context.Background(), dir, ref, nil); err != nil {
		t.Fatal(err)
	}
	cat, err := OpenCatalog(context.Background(), ref, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := readRel(t, cat, "timestamp.json")
	idx, md := cat.Manifests()
	held := map[digest.Digest][]byte{digest.FromBytes(idx): idx, digest.FromBytes(md): md, digest.FromString(ts): []byte(ts)}
	local := func(d digest.Digest) []byte { return held[d] }
	reg.Reset()
	cat, err = OpenCatalog(context.Background(), ref, "", local, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := readRel(t, cat, "timestamp.json"); got != ts {
		t.Fatalf("timestamp %q", got)
	}
	if _, err := readRel(t, cat, "2.root.json"); !isKind(err, ErrNotFound) {
		t.Fatal(err)
	}
	if st := reg.Stats(); st.Total().Requests != 1 || st["HEAD /v2/acme/catalog/manifests/catalog"].Requests != 1 {
		t.Fatalf("an unchanged catalog cost %d requests:\n%s", st.Total().Requests, st)
	}
}

func TestTamperedBlobRefused(t *testing.T) {
	reg, ref, cat := pushedCatalog(t, ocitest.Options{Referrers: true})
	reg.Tamper(func(r *http.Request, body []byte) []byte {
		if strings.Contains(r.URL.Path, "/blobs/") && bytes.Equal(body, []byte("archive-bytes")) {
			return []byte("ARCHIVE-BYTES")
		}
		return body
	})
	if _, err := readRel(t, cat, "bundles/acme/1.0.0/acme-1.0.0.tar.gz"); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("tampered archive: %v", err)
	}
	reg.Tamper(func(r *http.Request, body []byte) []byte {
		if strings.Contains(r.URL.Path, "/manifests/") && r.Method == http.MethodGet {
			return bytes.Replace(body, []byte("metadata.v1"), []byte("metadata.v2"), 1)
		}
		return body
	})
	if _, err := OpenCatalog(context.Background(), ref, cat.IndexDigest(), nil, nil); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("tampered index: %v", err)
	}
}

func TestPullBundleByDigestOnly(t *testing.T) {
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	ref, _ := ParseRef("oci://" + reg.Host() + "/acme/bundles:1.0.0")
	res := pushedBundle(t, ref.String())
	if _, err := PullBundle(context.Background(), ref, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "only by digest") {
		t.Fatalf("pull by tag: %v", err)
	}
	var buf bytes.Buffer
	pb, err := PullBundle(context.Background(), res.Ref, &buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != "archive-bytes" || string(pb.Signature) != `{"sig":1}` || pb.Name != "acme" || pb.Version != "1.0.0" || pb.FileName != "acme-1.0.0.tar.gz" {
		t.Fatalf("pulled %q %+v", buf.String(), pb)
	}
}

func TestParseRef(t *testing.T) {
	for _, c := range []struct{ in, out, err string }{
		{"oci://ghcr.io/acme/catalog", "oci://ghcr.io/acme/catalog", ""},
		{"OCI://ghcr.io/acme/catalog:v1", "oci://ghcr.io/acme/catalog:v1", ""},
		{"oci://127.0.0.1:5000/a/b@sha256:" + strings.Repeat("0", 64), "oci://127.0.0.1:5000/a/b@sha256:" + strings.Repeat("0", 64), ""},
		{"oci://user:pw@ghcr.io/acme/catalog", "", "user name or password"},
		{"oci://ghcr.io", "", "not valid"},
		{"oci://ghcr.io/acme/catalog?x=1", "", "query"},
		{"https://ghcr.io/acme", "", "not an OCI location"},
		{"oci://ghcr.io/Acme/catalog", "", "not valid"},
	} {
		r, err := ParseRef(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.err == "" && r.String() != c.out:
			t.Errorf("%s: %s, want %s", c.in, r, c.out)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	f.Add("oci://ghcr.io/acme/catalog:v1")
	f.Add("oci://127.0.0.1:5000/a/b@sha256:" + strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		r2, err := ParseRef(r.String())
		if err != nil || *r2 != *r {
			t.Fatalf("%q: %+v does not round-trip: %+v %v", s, r, r2, err)
		}
	})
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","artifactType":"application/vnd.berth.catalog.bundles.v1","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.berth.bundle.v1","digest":"sha256:` + strings.Repeat("b", 64) + `","size":3,"annotations":{"org.opencontainers.image.title":"bundles/a/1/a-1.tar.gz"}}]}`))
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.berth.catalog.metadata.v1","layers":[{"mediaType":"x","digest":"sha256:` + strings.Repeat("c", 64) + `","size":1,"annotations":{"org.opencontainers.image.title":"timestamp.json"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseIndex(data)
		if bundles, err := parseBundles(data); err == nil {
			for rel := range bundles {
				if !cleanRel(rel) || !strings.HasPrefix(rel, "bundles/") || strings.Contains(rel, "..") {
					t.Fatalf("accepted the bundle path %q", rel)
				}
			}
		}
		if files, err := parseMetadataManifest(data); err == nil {
			for rel := range files {
				if !metadataFile.MatchString(rel) && !catalogTarget.MatchString(rel) {
					t.Fatalf("accepted the metadata path %q", rel)
				}
			}
		}
	})
}

// pushedCatalog pushes the fake catalog to a fresh registry and opens it.
func pushedCatalog(t *testing.T, o ocitest.Options) (*ocitest.Registry, *Ref, *Catalog) {
	t.Helper()
	reg := ocitest.NewRegistry(t, o)
	dir, _ := fakeCatalog(t)
	ref, _ := ParseRef("oci://" + reg.Host() + "/acme/catalog")
	if _, err := PushCatalog(context.Background(), dir, ref, nil); err != nil {
		t.Fatal(err)
	}
	cat, err := OpenCatalog(context.Background(), ref, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reg, ref, cat
}

// forward sends r to the registry at base through rt and copies the
// answer to w, leaving out the response headers drop names (nil: none).
func forward(w http.ResponseWriter, r *http.Request, base string, rt http.RoundTripper, drop func(header string) bool) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), r.Body)
	req.Header = r.Header.Clone()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if drop == nil || !drop(k) {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	io.Copy(w, resp.Body)
}

// pushedBundle pushes the fake catalog's acme archive and signature as
// one bundle to loc.
func pushedBundle(t *testing.T, loc string) *PushResult {
	t.Helper()
	dir, _ := fakeCatalog(t)
	ref, _ := ParseRef(loc)
	res, err := PushBundle(context.Background(), BundleFiles{
		Archive: filepath.Join(dir, "bundles/acme/1.0.0/acme-1.0.0.tar.gz"), Signature: filepath.Join(dir, "bundles/acme/1.0.0/acme-1.0.0.tar.gz.sigstore.json"),
		Name: "acme", Version: "1.0.0",
	}, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
