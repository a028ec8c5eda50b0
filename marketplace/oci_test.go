package marketplace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/berth-mcp/berth/internal/ocitest"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/oci"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// ociCatalog pushes the test repository to a fresh in-process registry
// and returns it, the source and a cache that counts requests.
func ociCatalog(t *testing.T, e *testEnv, o ocitest.Options) (*ocitest.Registry, *Source, *Cache) {
	t.Helper()
	reg := ocitest.NewRegistry(t, o)
	e.ociConfig = t.TempDir()
	if u := o.BasicAuth; u != nil {
		e.ociConfig = ocitest.DockerConfigDir(t, reg.Host(), u[0], u[1])
	}
	loc := "oci://" + reg.Host() + "/acme/catalog"
	ociPush(t, e, loc)
	src, err := ParseSource(loc)
	if err != nil {
		t.Fatal(err)
	}
	c := OpenCache(filepath.Join(e.dir, "oci-home", "catalogs"), &CacheOptions{Now: e.clk.now, Source: SourceOptions{Counter: e.count, DockerConfig: t.TempDir()}})
	return reg, src, c
}

func ociPush(t *testing.T, e *testEnv, loc string) *oci.PushResult {
	t.Helper()

	ref, err := oci.ParseRef(loc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := oci.PushCatalog(e.ctx, e.repoDir, ref, &oci.Options{DockerConfig: e.ociConfig})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestOCICatalog(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers-api", false: "tag-schema"}[referrers], func(t *testing.T) {
			e := newEnv(t, repo.Expiries{})
			e.publish("acme-notes", "1.0.0")
			reg, src, c := ociCatalog(t, e, ocitest.Options{Referrers: referrers})
			if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
				t.Fatal(err)
			}
			// The tag was resolved once for the whole add.
			if n := reg.Stats()["HEAD /v2/acme/catalog/manifests/catalog"].Requests; n != 1 {
				t.Errorf("add resolved the tag %d times:\n%s", n, reg.Stats())
			}
			reg.Reset()
			r, err := c.Refresh(e.ctx, "acme")
			if err != nil || r.Changed {
				t.Fatalf("refresh: %v %+v", err, r)
			}
			if st := reg.Stats(); st.Total().Requests != 1 {
				t.Errorf("an unchanged refresh cost %d requests, want 1:\n%s", st.Total().Requests, st)
			}

			e.publish("acme-notes", "1.1.0")
			ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
			reg.Reset()
			r, err = c.Refresh(e.ctx, "acme")
			if err != nil || !r.Changed {
				t.Fatalf("refresh after a push: %v %+v", err, r)
			}
			l, err := c.Load("acme")
			if err != nil {
				t.Fatal(err)
			}
			v := l.Catalog.Plugin("acme-notes").Version("1.1.0")
			d, err := c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			b := openBundle(t, d.Archive)
			if err := CheckBundle("acme-notes", v, b); err != nil {
				t.Fatal(err)
			}
			if _, err := e.verifier.Verify(e.ctx, b.Listing().Bytes(), d.Signature); err != nil {
				t.Fatalf("the signature read from the referrer does not verify: %v", err)
			}
			b.Close()
			d.Close()

			// A registry that alters the archive: refused by its OCI digest.
			arch, _ := os.ReadFile(filepath.Join(e.repoDir, filepath.FromSlash(v.URLs[0])))
			reg.Tamper(func(req *http.Request, body []byte) []byte {
				if bytes.Equal(body, arch) {
					body = bytes.Clone(body)
					body[len(body)/2] ^= 1
				}
				return body
			})
			_, err = c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
			wantKind(t, err, KindDownloadMismatch)
			reg.Tamper(nil)
		})
	}
}

func TestOCICatalogRefusals(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	reg, src, c := ociCatalog(t, e, ocitest.Options{})
	old := ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	e.publish("acme-notes", "1.1.0")
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	if _, err := c.Refresh(e.ctx, "acme"); err != nil {
		t.Fatal(err)
	}

	// Rollback: the tag re-pointed at the older index.
	reg.Tag(t, "acme/catalog", old.Ref.Digest, "catalog")
	_, err := c.Refresh(e.ctx, "acme")
	wantKind(t, err, KindRollback)

	// A swapped target: catalog.json altered in place and pushed.
	e.publish("acme-notes", "1.2.0")
	pub, err := e.repo().Published()
	if err != nil {
		t.Fatal(err)
	}
	rel := repo.TargetFile(pub.Targets.Signed.Targets[catalog.TargetName])
	data := e.read(rel)
	e.write(rel, bytes.Replace(data, []byte("1.2.0"), []byte("1.2.9"), 1))
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	_, err = c.Refresh(e.ctx, "acme")
	wantKind(t, err, KindTargetMismatch)
	e.write(rel, data)
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	if _, err := c.Refresh(e.ctx, "acme"); err != nil {
		t.Fatal(err)
	}

	// Mix and match: the snapshot the timestamp names replaced by
	// another version's, pushed under its name.
	e.publish("acme-notes", "1.3.0")
	var ts struct {
		Signed struct {
			Meta map[string]struct{ Version int64 } `json:"meta"`
		} `json:"signed"`
	}
	if err := json.Unmarshal(e.read("timestamp.json"), &ts); err != nil {
		t.Fatal(err)
	}
	cur := fmt.Sprintf("%d.snapshot.json", ts.Signed.Meta["snapshot.json"].Version)
	saved := e.read(cur)
	e.write(cur, e.read(fmt.Sprintf("%d.snapshot.json", ts.Signed.Meta["snapshot.json"].Version-1)))
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	_, err = c.Refresh(e.ctx, "acme")
	wantKind(t, err, KindMixAndMatch)
	e.write(cur, saved)
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	if _, err := c.Refresh(e.ctx, "acme"); err != nil {
		t.Fatal(err)
	}

	// Bad signature: the timestamp's expiry moved a year on, unsigned.
	tsData := e.read("timestamp.json")
	forged := regexp.MustCompile(`("expires"\s*:\s*")2026`).ReplaceAll(tsData, []byte("${1}2027"))
	if bytes.Equal(forged, tsData) {
		t.Fatal("the timestamp's expiry was not found to alter")
	}
	e.write("timestamp.json", forged)
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	_, err = c.Refresh(e.ctx, "acme")
	wantKind(t, err, KindBadSignature)
	e.write("timestamp.json", tsData)
	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	if _, err := c.Refresh(e.ctx, "acme"); err != nil {
		t.Fatal(err)
	}

	// Freeze: nothing new is pushed and the timestamp expires.
	e.clk.advance(48 * time.Hour)
	_, err = c.Refresh(e.ctx, "acme")
	wantKind(t, err, KindExpired)
}

func TestOCISourceErrors(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	reg, src, c := ociCatalog(t, e, ocitest.Options{BasicAuth: &[2]string{"curator", "s3cret"}})
	// No credentials: a network-class error naming docker login, not a refusal.
	_, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256})
	if err == nil || !errors.Is(err, ErrNetwork) || !strings.Contains(err.Error(), "docker login") {
		t.Fatalf("no credentials: %v", err)
	}
	for _, bad := range []string{"oci://" + reg.Host() + "/acme/catalog@sha256:" + strings.Repeat("0", 64), "oci://u:p@" + reg.Host() + "/acme/catalog"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	// Wrong credentials: the same.
	c = OpenCache(filepath.Join(e.dir, "wrong-home", "catalogs"), &CacheOptions{Now: e.clk.now, Source: SourceOptions{DockerConfig: ocitest.DockerConfigDir(t, reg.Host(), "curator", "wrong")}})
	_, err = c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256})
	if err == nil || !errors.Is(err, ErrNetwork) || !strings.Contains(err.Error(), "docker login") {
		t.Fatalf("wrong credentials: %v", err)
	}
	// The right ones.
	c = OpenCache(filepath.Join(e.dir, "right-home", "catalogs"), &CacheOptions{Now: e.clk.now, Source: SourceOptions{DockerConfig: ocitest.DockerConfigDir(t, reg.Host(), "curator", "s3cret")}})
	if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	// A registry that answers slowly: the request timeout ends the update, nothing changes.
	reg.SetDelay(2 * time.Second)
	c.o.Source.RequestTimeout = 300 * time.Millisecond
	if _, err := c.Refresh(e.ctx, "acme"); err == nil || !errors.Is(err, ErrNetwork) {
		t.Fatalf("slow registry: %v", err)
	}
}

// TestOCIMissingSignature: a registry that lost a bundle's signature
// referrer (its tag-schema index deleted): the download is refused as
// untrusted, naming the missing referrer and the push that attaches it
// again; a new push mends it.
func TestOCIMissingSignature(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	e.publish("acme-notes", "1.0.0")
	reg, src, c := ociCatalog(t, e, ocitest.Options{})
	if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	r := reg.Repository(t, "acme/catalog")
	_, raw, err := oras.FetchBytes(e.ctx, r, "catalog", oras.DefaultFetchBytesOptions)
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil || len(idx.Manifests) != 2 {
		t.Fatalf("the catalog's index: %v\n%s", err, raw)
	}
	// manifests[1] is the bundles index; its one entry the bundle manifest.
	raw, err = content.FetchAll(e.ctx, r, idx.Manifests[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("the bundles index: %v\n%s", err, raw)
	}
	fallback := strings.Replace(idx.Manifests[0].Digest.String(), ":", "-", 1)
	// The tag itself: go-containerregistry's registry keeps a tag when
	// the manifest it names is deleted by digest.
	req, _ := http.NewRequest(http.MethodDelete, reg.Server.URL+"/v2/acme/catalog/manifests/"+fallback, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := r.Resolve(e.ctx, fallback); err == nil {
		t.Fatalf("the tag %s is still there after DELETE (%s)", fallback, resp.Status)
	}
	l, err := c.Load("acme")
	if err != nil {
		t.Fatal(err)
	}
	v := l.Catalog.Plugin("acme-notes").Version("1.0.0")
	_, err = c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
	if !errors.Is(err, trust.ErrUntrusted) || !strings.Contains(err.Error(), "has no referrer of artifactType "+oci.ArtifactTypeSigstore) || !strings.Contains(err.Error(), "berth catalog push") {
		t.Fatalf("download without the signature referrer: %v", err)
	}

	ociPush(t, e, "oci://"+reg.Host()+"/acme/catalog")
	d, err := c.Download(e.ctx, "acme", v, &DownloadOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("download after a new push: %v", err)
	}
	d.Close()
}
