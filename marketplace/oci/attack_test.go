package oci

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/ocitest"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// A registry that serves altered content of another length (what a
// substituted payload usually is) trips oras-go's own Content-Length and
// Docker-Content-Digest checks before berth's digest check: that must still
// be a refusal (ErrIntegrity, exit 4), not a network failure (exit 1).
func TestTamperedContentOfAnotherLengthRefused(t *testing.T) {
	reg, ref, cat := pushedCatalog(t, ocitest.Options{Referrers: true})
	// An archive with a longer payload.
	reg.Tamper(func(r *http.Request, body []byte) []byte {
		if strings.Contains(r.URL.Path, "/blobs/") && bytes.Equal(body, []byte("archive-bytes")) {
			return []byte("archive-bytes and a payload")
		}
		return body
	})
	if _, err := readRel(t, cat, "bundles/acme/1.0.0/acme-1.0.0.tar.gz"); !isKind(err, ErrIntegrity) {
		t.Errorf("a longer archive: %v, want an integrity refusal", err)
	}
	// A metadata file with a longer body.
	reg.Tamper(func(r *http.Request, body []byte) []byte {
		if strings.Contains(r.URL.Path, "/blobs/") && bytes.HasPrefix(body, []byte(`{"signed":{"meta":{"snapshot.json"`)) {
			return append(bytes.Clone(body), ' ')
		}
		return body
	})
	if _, err := readRel(t, cat, "timestamp.json"); !isKind(err, ErrIntegrity) {
		t.Errorf("a longer timestamp.json: %v, want an integrity refusal", err)
	}
	// The metadata manifest of another length, read at its known size.
	reg.Tamper(func(r *http.Request, body []byte) []byte {
		if strings.Contains(r.URL.Path, "/manifests/sha256:") && bytes.Contains(body, []byte(ArtifactTypeMetadata)) && bytes.Contains(body, []byte(`"layers"`)) {
			return append(bytes.Clone(body), ' ')
		}
		return body
	})
	_, err := OpenCatalog(context.Background(), ref, cat.IndexDigest(), nil, nil)
	t.Logf("metadata manifest: %v", err)
	if !isKind(err, ErrIntegrity) {
		t.Errorf("a longer metadata manifest: %v, want an integrity refusal", err)
	}
	reg.Tamper(nil)
}

// An auth field of the Docker config that is base64 of a bare token (no
// "user:"), a common mistake: oras-go's error quotes the decoded secret,
// and berth must not print it.
func TestMalformedDockerAuthNotPrinted(t *testing.T) {
	const secret = "ghp_TopSecretTokenValue1234"
	for _, o := range []ocitest.Options{
		{BasicAuth: &[2]string{"curator", "s3cret"}},
		{TokenAuth: true, BasicAuth: &[2]string{"curator", "s3cret"}},
	} {
		reg := ocitest.NewRegistry(t, o)
		cfg := t.TempDir()
		data := `{"auths":{"` + reg.Host() + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(secret)) + `"}}}`
		if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		ref, _ := ParseRef("oci://" + reg.Host() + "/acme/catalog")
		_, err := OpenCatalog(context.Background(), ref, "", nil, &Options{DockerConfig: cfg})
		if err == nil {
			t.Fatal("opened with unreadable credentials")
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("token auth %v: the error prints the credential: %v", o.TokenAuth, err)
		}
		if !strings.Contains(err.Error(), "docker login") {
			t.Errorf("token auth %v: the error does not say how to fix it: %v", o.TokenAuth, err)
		}
	}
}

// PullBundle reads the signature after the archive; a download longer
// than one request's timeout (a large bundle, a slow link) must not make
// the signature's request fail on a deadline that ran out meanwhile.
func TestPullBundleSignatureAfterLongDownload(t *testing.T) {
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	res := pushedBundle(t, "oci://"+reg.Host()+"/acme/bundles:1.0.0")
	// Every answer takes 300ms, each well under the 1.5s request timeout
	// (the referrers listing, two requests on this registry without the
	// API, is the most one timeout covers); the whole pull (6 requests)
	// takes longer than 1.5s.
	reg.SetDelay(300 * time.Millisecond)
	pb, err := PullBundle(context.Background(), res.Ref, io.Discard, &Options{RequestTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if string(pb.Signature) != `{"sig":1}` {
		t.Fatalf("signature %q", pb.Signature)
	}
}

// chunkedProxy forwards to reg and sends every blob's body without a
// Content-Length (chunked), as a registry may: then oras-go cannot compare
// the length with the descriptor's, and berth's own reader must hold.
func chunkedProxy(t *testing.T, reg *ocitest.Registry) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forward(w, r, reg.Server.URL, http.DefaultTransport, func(k string) bool {
			return k == "Content-Length" && strings.Contains(r.URL.Path, "/blobs/")
		})
	}))
	t.Cleanup(srv.Close)
	_, host, _ := strings.Cut(srv.URL, "://")
	return host
}

// A metadata manifest (untrusted, from the registry) whose layer claims a
// negative or an enormous size, its blob sent chunked: berth refuses it and
// does not crash.
func TestMetadataLayerSizeOutOfRange(t *testing.T) {
	for _, size := range []int64{-2, math.MaxInt64} {
		reg := ocitest.NewRegistry(t, ocitest.Options{})
		repo := reg.Repository(t, "acme/catalog")
		ctx := context.Background()
		push := func(mediaType string, data []byte) ocispec.Descriptor {
			d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
			if err := repo.Push(ctx, d, bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			return d
		}
		ts := push(MediaTypeTUF, []byte(`{"signed":{}}`))
		ts.Size = size
		ts.Annotations = map[string]string{AnnotationTitle: "timestamp.json"}
		push(ocispec.DescriptorEmptyJSON.MediaType, ocispec.DescriptorEmptyJSON.Data)
		cfg := ocispec.DescriptorEmptyJSON
		cfg.Data = nil
		mj, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeMetadata, Config: cfg, Layers: []ocispec.Descriptor{ts}})
		md := push(ocispec.MediaTypeImageManifest, mj)
		md.ArtifactType = ArtifactTypeMetadata
		bj, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeBundles, Manifests: []ocispec.Descriptor{}})
		bi := push(ocispec.MediaTypeImageIndex, bj)
		bi.ArtifactType = ArtifactTypeBundles
		ij, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeCatalog, Manifests: []ocispec.Descriptor{md, bi}})
		id := push(ocispec.MediaTypeImageIndex, ij)
		if err := repo.Tag(ctx, id, DefaultTag); err != nil {
			t.Fatal(err)
		}
		ref, _ := ParseRef("oci://" + chunkedProxy(t, reg) + "/acme/catalog")
		cat, err := OpenCatalog(ctx, ref, "", nil, nil)
		if err == nil {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("size %d: reading timestamp.json panicked: %v", size, p)
					}
				}()
				_, err = readRel(t, cat, "timestamp.json")
			}()
		}
		if !isKind(err, ErrIntegrity) {
			t.Errorf("size %d: %v, want an integrity refusal", size, err)
		}
	}
}

// The verifying reader with sizes at the ends of int64 (a descriptor from
// a registry): an error, never a panic.
func TestVerifyReaderExtremeSizes(t *testing.T) {
	for _, size := range []int64{-2, math.MaxInt64} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("size %d: panicked: %v", size, p)
				}
			}()
			d := ocispec.Descriptor{Digest: digest.FromString("x"), Size: size}
			if _, err := io.ReadAll(newVerifyReader(strings.NewReader("x"), d, size)); !errors.Is(err, ErrIntegrity) {
				t.Errorf("size %d: %v, want an integrity error", size, err)
			}
		}()
	}
}

// A public registry that redirects a blob off its own host to plain
// http, or to a loopback (private) address over https: refused. (The
// test registry is on loopback; lookupRegistry makes it look public.) A
// registry inside a private network may send berth to a private host.
func TestRedirectOffRegistryRefused(t *testing.T) {
	saved := lookupRegistry
	lookupRegistry = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
	}
	defer func() { lookupRegistry = saved }()
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	dir, _ := fakeCatalog(t)
	ref, _ := ParseRef("oci://" + reg.Host() + "/acme/catalog")
	if _, err := PushCatalog(context.Background(), dir, ref, nil); err != nil {
		t.Fatal(err)
	}
	blob := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, reg.Server.URL+r.URL.Path, http.StatusFound)
	}))
	defer blob.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	var target string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") {
			http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		forward(w, r, reg.Server.URL, http.DefaultTransport, nil)
	}))
	defer front.Close()
	_, host, _ := strings.Cut(front.URL, "://")
	fref, _ := ParseRef("oci://" + host + "/acme/catalog")
	cat, err := OpenCatalog(context.Background(), fref, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, want string }{
		{plain.URL, "berth follows only https"},
		{blob.URL, "private, loopback or link-local"},
	} {
		target = c.target
		if _, err := readRel(t, cat, "timestamp.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a redirect to %s: %v, want %q", c.target, err, c.want)
		}
	}

	// The same registry inside a private network (its address is
	// loopback, as it resolves): its storage on another private host,
	// over https, is followed.
	lookupRegistry = saved
	store := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forward(w, r, reg.Server.URL, http.DefaultTransport, nil)
	}))
	defer store.Close()
	pool := x509.NewCertPool()
	pool.AddCert(store.Certificate())
	target = store.URL
	cat, err = OpenCatalog(context.Background(), fref, "", nil, &Options{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readRel(t, cat, "timestamp.json"); err != nil || got == "" {
		t.Fatalf("a private registry's redirect to its private storage: %q, %v", got, err)
	}
}
