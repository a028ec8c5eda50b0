package ocitest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/berth-mcp/berth/internal/ocitest"
)

// orasRun runs the oras CLI with a HOME of its own (no registry
// credentials of the host) and returns its standard output.
func orasRun(t *testing.T, oras string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(oras, args...)
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, ".docker"), "PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oras %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

// discovered is what `oras discover --format json` prints (oras v1.3).
type discovered struct {
	Digest    string `json:"digest"`
	Referrers []struct {
		Digest       string `json:"digest"`
		ArtifactType string `json:"artifactType"`
	} `json:"referrers"`
}

// checkORAS fetches the manifest of p by digest and discovers its
// signature with the oras CLI; flags give the registry's transport.
func checkORAS(t *testing.T, oras, ref string, p pushed, flags ...string) {
	t.Helper()
	out := orasRun(t, oras, append([]string{"manifest", "fetch", ref + "@" + p.manifest.Digest.String()}, flags...)...)
	var m ocispec.Manifest
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("oras manifest fetch: %v\n%s", err, out)
	}
	if m.ArtifactType != "application/vnd.berth.bundle.v1" || len(m.Layers) != 1 || m.Layers[0].Digest != p.blobDesc.Digest {
		t.Fatalf("oras manifest fetch: %s", out)
	}
	out = orasRun(t, oras, append([]string{"discover", "--format", "json", "--artifact-type", sigType, ref + ":v1"}, flags...)...)
	var d discovered
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("oras discover: %v\n%s", err, out)
	}
	if d.Digest != p.manifest.Digest.String() || len(d.Referrers) != 1 ||
		d.Referrers[0].Digest != p.signature.Digest.String() || d.Referrers[0].ArtifactType != sigType {
		t.Fatalf("oras discover: %s, want the signature %s", out, p.signature.Digest)
	}
}

func TestORAS(t *testing.T) {
	start := time.Now()
	oras := ocitest.BuildORAS(t)
	t.Logf("oras CLI ready after %v: %s", time.Since(start).Round(time.Millisecond), oras)
	ctx := context.Background()
	for _, withAPI := range []bool{true, false} {
		name := "api"
		if !withAPI {
			name = "tag-schema"
		}
		t.Run(name, func(t *testing.T) {
			reg := ocitest.NewRegistry(t, ocitest.Options{Referrers: withAPI})
			p := pushArtifact(t, ctx, reg.Repository(t, "team/tools"), "v1")
			checkORAS(t, oras, reg.Host()+"/team/tools", p, "--plain-http")
		})
	}
	t.Run("distribution", func(t *testing.T) {
		d := ocitest.StartDistribution(t)
		cfg := d.DockerConfigDir(t)
		p := pushArtifact(t, ctx, distributionRepo(t, d, "team/tools", cfg), "v1")
		checkORAS(t, oras, d.Host+"/team/tools", p, "--ca-file", d.CAFile, "--registry-config", filepath.Join(cfg, "config.json"))
	})
}
