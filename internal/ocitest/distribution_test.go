package ocitest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/berth-mcp/berth/internal/ocitest"
)

// distributionRepo is an oras-go client for name on d over TLS with d's CA,
// with the credentials of the Docker config in configDir.
func distributionRepo(t *testing.T, d *ocitest.Distribution, name, configDir string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(d.Host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	store, err := credentials.NewStore(filepath.Join(configDir, "config.json"), credentials.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: d.CAPool}
	repo.Client = &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(tr)},
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(store),
	}
	return repo
}

func TestDistribution(t *testing.T) {
	start := time.Now()
	d := ocitest.StartDistribution(t)
	t.Logf("docker-registry answered on %s after %v", d.Host, time.Since(start).Round(time.Millisecond))
	ctx := context.Background()

	repo := distributionRepo(t, d, "berth/catalog", d.DockerConfigDir(t))
	p := pushArtifact(t, ctx, repo, "catalog")

	// A reader with a client of its own.
	r := distributionRepo(t, d, "berth/catalog", d.DockerConfigDir(t))
	desc, err := r.Resolve(ctx, "catalog")
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != p.manifest.Digest {
		t.Fatalf("tag catalog resolves to %s, pushed %s", desc.Digest, p.manifest.Digest)
	}
	if _, err := content.FetchAll(ctx, r, p.blobDesc); err != nil {
		t.Fatalf("pull blob: %v", err)
	}
	var refs []ocispec.Descriptor
	if err := r.Referrers(ctx, p.manifest, sigType, func(rs []ocispec.Descriptor) error {
		refs = append(refs, rs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].Digest != p.signature.Digest {
		t.Fatalf("referrers of %s: %+v, want the signature %s", p.manifest.Digest, refs, p.signature.Digest)
	}
	// Distribution 2.8 has no referrers API: the signature is listed
	// under the tag schema's fallback tag.
	if _, err := r.Resolve(ctx, referrersTag(p.manifest)); err != nil {
		t.Fatalf("fallback tag %s: %v", referrersTag(p.manifest), err)
	}

	bad := distributionRepo(t, d, "berth/catalog", d.WrongDockerConfigDir(t))
	_, err = bad.Resolve(ctx, "catalog")
	var ee *errcode.ErrorResponse
	if !errors.As(err, &ee) || ee.StatusCode != http.StatusUnauthorized {
		t.Fatalf("resolve with a wrong password: err = %v, want a 401 error response", err)
	}
	// Without the CA the certificate is refused.
	plain, err := remote.NewRepository(d.Host + "/berth/catalog")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Resolve(ctx, "catalog"); err == nil {
		t.Fatal("resolve without the test CA succeeded")
	}
}
