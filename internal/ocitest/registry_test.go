package ocitest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/berth-mcp/berth/internal/ocitest"
)

const sigType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// pushed is what pushArtifact put in a repository.
type pushed struct {
	blob      []byte
	blobDesc  ocispec.Descriptor
	manifest  ocispec.Descriptor
	signature ocispec.Descriptor
}

// pushArtifact pushes a one-layer artifact tagged tag and a signature
// manifest whose subject is it, through target (a repository).
func pushArtifact(t *testing.T, ctx context.Context, target oras.Target, tag string) pushed {
	t.Helper()
	var p pushed
	p.blob = []byte("bundle bytes of " + tag)
	p.blobDesc = content.NewDescriptorFromBytes("application/vnd.berth.bundle.v1.tar+gzip", p.blob)
	if err := target.Push(ctx, p.blobDesc, bytes.NewReader(p.blob)); err != nil {
		t.Fatalf("push blob: %v", err)
	}
	var err error
	p.manifest, err = oras.PackManifest(ctx, target, oras.PackManifestVersion1_1, "application/vnd.berth.bundle.v1",
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{p.blobDesc}})
	if err != nil {
		t.Fatalf("pack manifest: %v", err)
	}
	if err := target.Tag(ctx, p.manifest, tag); err != nil {
		t.Fatalf("tag: %v", err)
	}
	sig := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
	sigDesc := content.NewDescriptorFromBytes(sigType, sig)
	if err := target.Push(ctx, sigDesc, bytes.NewReader(sig)); err != nil {
		t.Fatalf("push signature blob: %v", err)
	}
	p.signature, err = oras.PackManifest(ctx, target, oras.PackManifestVersion1_1, sigType,
		oras.PackManifestOptions{Subject: &p.manifest, Layers: []ocispec.Descriptor{sigDesc}})
	if err != nil {
		t.Fatalf("pack signature manifest: %v", err)
	}
	return p
}

func referrersTag(d ocispec.Descriptor) string {
	return d.Digest.Algorithm().String() + "-" + d.Digest.Encoded()
}

func TestRegistryReferrers(t *testing.T) {
	for _, withAPI := range []bool{true, false} {
		name := "api"
		if !withAPI {
			name = "tag-schema"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			reg := ocitest.NewRegistry(t, ocitest.Options{Referrers: withAPI})
			p := pushArtifact(t, ctx, reg.Repository(t, "team/tools"), "v1")

			// A fresh client, as a reader has: it learns whether the
			// registry has the referrers API by asking.
			repo := reg.Repository(t, "team/tools")
			desc, rc, err := repo.FetchReference(ctx, "v1")
			if err != nil {
				t.Fatal(err)
			}
			rc.Close()
			if desc.Digest != p.manifest.Digest {
				t.Fatalf("tag v1 resolves to %s, pushed %s", desc.Digest, p.manifest.Digest)
			}
			got, err := content.FetchAll(ctx, repo, p.blobDesc)
			if err != nil || !bytes.Equal(got, p.blob) {
				t.Fatalf("pull blob: %q, %v", got, err)
			}
			reg.Reset()
			var refs []ocispec.Descriptor
			if err := repo.Referrers(ctx, p.manifest, sigType, func(r []ocispec.Descriptor) error {
				refs = append(refs, r...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(refs) != 1 || refs[0].Digest != p.signature.Digest || refs[0].ArtifactType != sigType {
				t.Fatalf("referrers of %s filtered by %s: %+v, want the signature %s", p.manifest.Digest, sigType, refs, p.signature.Digest)
			}
			// Without the API, the client reads the index at the
			// fallback tag; with it, it never does.
			fallback := "GET /v2/team/tools/manifests/" + referrersTag(p.manifest)
			if read := reg.Stats()[fallback].Requests > 0; read == withAPI {
				t.Errorf("fallback tag read = %v with the referrers API %v; requests:\n%s", read, withAPI, reg.Stats())
			}

			// The fallback tag exists exactly when the registry has no
			// referrers API.
			_, err = repo.Resolve(ctx, referrersTag(p.manifest))
			switch {
			case withAPI && !errors.Is(err, errdef.ErrNotFound):
				t.Errorf("tag %s with the referrers API: err = %v, want not found", referrersTag(p.manifest), err)
			case !withAPI && err != nil:
				t.Errorf("tag %s without the referrers API: %v", referrersTag(p.manifest), err)
			}
		})
	}
}

func TestRegistryTokenAuth(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{TokenAuth: true, BasicAuth: &[2]string{"ci", "s3cret"}})
	p := pushArtifact(t, ctx, reg.Repository(t, "cat"), "catalog")
	st := reg.Stats()
	if st["GET /token"].Requests == 0 {
		t.Errorf("no token fetched; requests:\n%s", st)
	}

	// Without credentials: the token endpoint refuses, so does the registry.
	anon, err := remote.NewRepository(reg.Host() + "/cat")
	if err != nil {
		t.Fatal(err)
	}
	anon.PlainHTTP = true
	_, err = anon.Resolve(ctx, "catalog")
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("anonymous resolve: err = %v, want a 401", err)
	}
	// A wrong password likewise.
	bad := reg.Repository(t, "cat")
	bad.Client = &auth.Client{Credential: auth.StaticCredential(reg.Host(), auth.Credential{Username: "ci", Password: "wrong"})}
	if _, err := bad.Resolve(ctx, "catalog"); err == nil {
		t.Fatal("resolve with a wrong password succeeded")
	}
	// The bearer token alone, as a client that cached it sends it.
	req, _ := http.NewRequest("GET", reg.Server.URL+"/v2/cat/manifests/"+p.manifest.Digest.String(), nil)
	req.Header.Set("Accept", ocispec.MediaTypeImageManifest)
	req.Header.Set("Authorization", "Bearer "+reg.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with the token: %s", resp.Status)
	}
}

func TestRegistryBasicAuthWrongPassword(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{BasicAuth: &[2]string{"ci", "s3cret"}})
	pushArtifact(t, ctx, reg.Repository(t, "cat"), "catalog")
	// The credentials of the Docker config work.
	cfg := reg.DockerConfigDir(t)
	store, err := credentials.NewStore(filepath.Join(cfg, "config.json"), credentials.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := reg.Repository(t, "cat")
	good.Client = &auth.Client{Credential: credentials.Credential(store)}
	if _, err := good.Resolve(ctx, "catalog"); err != nil {
		t.Fatalf("resolve with the Docker config's credentials: %v", err)
	}
	bad := reg.Repository(t, "cat")
	bad.Client = &auth.Client{Credential: auth.StaticCredential(reg.Host(), auth.Credential{Username: "ci", Password: "wrong"})}
	_, err = bad.Resolve(ctx, "catalog")
	var ee *errcode.ErrorResponse
	if !errors.As(err, &ee) || ee.StatusCode != http.StatusUnauthorized {
		t.Fatalf("resolve with a wrong password: err = %v, want a 401 error response", err)
	}
}

func TestRegistryTamper(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	repo := reg.Repository(t, "cat")
	p := pushArtifact(t, ctx, repo, "v1")
	reg.Tamper(func(r *http.Request, body []byte) []byte {
		if strings.HasSuffix(r.URL.Path, "/blobs/"+p.blobDesc.Digest.String()) {
			return bytes.ToUpper(body)
		}
		return body
	})
	_, err := content.FetchAll(ctx, repo, p.blobDesc)
	if !errors.Is(err, content.ErrMismatchedDigest) {
		t.Fatalf("fetching a tampered blob: err = %v, want %v", err, content.ErrMismatchedDigest)
	}
	reg.Tamper(nil)
	if _, err := content.FetchAll(ctx, repo, p.blobDesc); err != nil {
		t.Fatalf("after Tamper(nil): %v", err)
	}
}

func TestRegistryRetag(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	repo := reg.Repository(t, "cat")
	old := pushArtifact(t, ctx, repo, "v1")
	newer := pushArtifact(t, ctx, repo, "v2")
	if old.manifest.Digest == newer.manifest.Digest {
		t.Fatal("two artifacts with one digest")
	}
	reg.Tag(t, "cat", "v1", "v2")
	d, err := repo.Resolve(ctx, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if d.Digest != old.manifest.Digest {
		t.Fatalf("v2 after re-tagging: %s, want %s", d.Digest, old.manifest.Digest)
	}
}

func TestRegistryDelay(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	repo := reg.Repository(t, "cat")
	pushArtifact(t, ctx, repo, "v1")
	reg.SetDelay(2 * time.Second)
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := repo.Resolve(tctx, "v1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("resolve against a slow registry: err = %v, want %v", err, context.DeadlineExceeded)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("the client's deadline took %v to end the request", el)
	}
	reg.SetDelay(0)
	if _, err := repo.Resolve(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryStats(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{})
	repo := reg.Repository(t, "cat")
	p := pushArtifact(t, ctx, repo, "v1")
	reg.Reset()
	if _, err := content.FetchAll(ctx, repo, p.blobDesc); err != nil {
		t.Fatal(err)
	}
	st := reg.Stats()
	blob := st["GET /v2/cat/blobs/"+p.blobDesc.Digest.String()]
	if blob.Requests != 1 || blob.ResponseBytes != int64(len(p.blob)) {
		t.Fatalf("blob GET: %+v, want 1 request of %d bytes; all:\n%s", blob, len(p.blob), st)
	}
	if tot := st.Total(); tot.Requests != 1 {
		t.Fatalf("total: %+v; all:\n%s", tot, st)
	}
	in, out := reg.WireBytes()
	if in == 0 || out <= int64(len(p.blob)) {
		t.Fatalf("wire bytes in %d out %d, want more than the body (%d)", in, out, len(p.blob))
	}
}

func TestRegistryAnonymousToken(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{TokenAuth: true})
	repo := reg.Repository(t, "cat")
	p := pushArtifact(t, ctx, repo, "v1")
	reg.Reset()
	// A new client: one 401, one token, then the answer.
	if _, err := reg.Repository(t, "cat").Resolve(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	st := reg.Stats()
	if st["GET /token"].Requests != 1 || st["HEAD /v2/cat/manifests/v1"].Requests != 2 || st.Total().Requests != 3 {
		t.Fatalf("a resolve with a token round trip, want 3 requests:\n%s", st)
	}
	// A request without the token is refused with the challenge.
	resp, err := http.Get(reg.Server.URL + "/v2/cat/manifests/" + p.manifest.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer realm="` + reg.Server.URL + `/token",service="ocitest",scope="repository:cat:pull"` // a GET needs pull only
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("GET without the token: %s, WWW-Authenticate %q, want 401 and %q", resp.Status, resp.Header.Get("WWW-Authenticate"), want)
	}
}

func TestRegistryTLS(t *testing.T) {
	ctx := context.Background()
	reg := ocitest.NewRegistry(t, ocitest.Options{TLS: true, TokenAuth: true, Referrers: true})
	p := pushArtifact(t, ctx, reg.Repository(t, "cat"), "v1")
	repo := reg.Repository(t, "cat")
	if _, err := content.FetchAll(ctx, repo, p.blobDesc); err != nil {
		t.Fatalf("pull over TLS with a token: %v", err)
	}
	if !strings.HasPrefix(reg.Server.URL, "https://127.0.0.1:") {
		t.Fatalf("URL %s", reg.Server.URL)
	}
	// Plain HTTP to it fails.
	plain, err := remote.NewRepository(reg.Host() + "/cat")
	if err != nil {
		t.Fatal(err)
	}
	plain.PlainHTTP = true
	if _, err := plain.Resolve(ctx, "v1"); err == nil {
		t.Fatal("plain HTTP to a TLS registry succeeded")
	}
}

// TestRegistryDelete: a signature deleted behind the client's back is
// gone from the referrers API, and stays listed, unfetchable, in the
// tag schema's index.
func TestRegistryDelete(t *testing.T) {
	for _, withAPI := range []bool{true, false} {
		ctx := context.Background()
		reg := ocitest.NewRegistry(t, ocitest.Options{Referrers: withAPI})
		p := pushArtifact(t, ctx, reg.Repository(t, "cat"), "v1")
		reg.Delete(t, "cat", p.signature.Digest.String())
		repo := reg.Repository(t, "cat")
		var refs []ocispec.Descriptor
		if err := repo.Referrers(ctx, p.manifest, sigType, func(r []ocispec.Descriptor) error {
			refs = append(refs, r...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if withAPI {
			if len(refs) != 0 {
				t.Errorf("referrers API after the delete: %+v, want none", refs)
			}
			continue
		}
		if len(refs) != 1 || refs[0].Digest != p.signature.Digest {
			t.Fatalf("tag schema after the delete: %+v, want the deleted signature still listed", refs)
		}
		if _, err := content.FetchAll(ctx, repo, refs[0]); !errors.Is(err, errdef.ErrNotFound) {
			t.Errorf("fetching the deleted signature: err = %v, want not found", err)
		}
	}
}
