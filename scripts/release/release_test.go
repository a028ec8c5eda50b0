package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/trust"
)

// TestSignedSums: SHA256SUMS is in sha256sum's format (sha256sum -c
// checks it), its signature is a Sigstore bundle that berth's verifier
// (sigstore-go, the format cosign verify-blob --bundle reads) accepts
// against the release key, and refuses for a changed SHA256SUMS or
// another key.
func TestSignedSums(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	names := []string{BinaryName("0.1.0", Target{"windows", "amd64"}), BinaryName("0.1.0", Target{"linux", "amd64"})}
	for i, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(strings.Repeat("x", i+1)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sums, err := Sums(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  berth-0.1.0-linux-amd64") || !strings.HasSuffix(lines[1], "  berth-0.1.0-windows-amd64.exe") {
		t.Fatalf("SHA256SUMS:\n%s", sums)
	}
	os.WriteFile(filepath.Join(dir, SumsFile), sums, 0o644)
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", SumsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, out)
		}
	}
	keyPath, _, err := trust.WriteKeyPair(filepath.Join(t.TempDir(), "release"))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(keyPath)
	sig, pub, err := SignSums(ctx, sums, key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sig), `"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"`) || !strings.Contains(string(sig), `"messageSignature"`) {
		t.Errorf("not a Sigstore bundle v0.3 with a message signature: %s", sig)
	}
	res, err := VerifySums(ctx, sums, sig, pub)
	if err != nil || res == nil {
		t.Fatalf("the release signature does not verify: %v", err)
	}
	changed := []byte(strings.Replace(string(sums), lines[0][:8], "00000000", 1))
	if _, err := VerifySums(ctx, changed, sig, pub); !errors.Is(err, trust.ErrUntrusted) {
		t.Errorf("a changed SHA256SUMS verifies: %v", err)
	}
	otherPath, _, _ := trust.WriteKeyPair(filepath.Join(t.TempDir(), "other"))
	otherKey, _ := os.ReadFile(otherPath)
	otherPub, err := publicOf(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifySums(ctx, sums, sig, otherPub); !errors.Is(err, trust.ErrUntrusted) {
		t.Errorf("the signature verifies against another key: %v", err)
	}
}

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"0.1.0", "1.2.3-rc.1"} {
		if err := checkVersion(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"", "../x", "1.0 0", "-x", "a/b"} {
		if err := checkVersion(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

// TestBuildEnv: the builder's shell cannot change the release's bytes:
// its GOAMD64, GOARM64, GOEXPERIMENT, GOFIPS140, CGO_* and GOFLAGS are
// dropped for the pinned settings, and the rest of the environment is
// kept.
func TestBuildEnv(t *testing.T) {
	shell := []string{"HOME=/home/r", "GOAMD64=v3", "GOARM64=v9.0", "GOEXPERIMENT=greenteagc", "GOFIPS140=latest",
		"CGO_CFLAGS=-O3", "CGO_ENABLED=1", "GOFLAGS=-race", "GOOS=plan9", "GOTOOLCHAIN=auto", "GOWORK=/x/go.work", "GOCACHE=/c"}
	env := buildEnv(shell, Target{"linux", "arm64"}, "/fresh")
	got := map[string][]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = append(got[k], v)
	}
	want := map[string]string{"HOME": "/home/r", "GOAMD64": "v1", "GOARM64": "v8.0", "GOEXPERIMENT": "", "GOFIPS140": "off",
		"CGO_ENABLED": "0", "GOFLAGS": "", "GOOS": "linux", "GOARCH": "arm64", "GOTOOLCHAIN": "local", "GOWORK": "off", "GOCACHE": "/fresh"}
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("%s = %q, want exactly %q", k, got[k], v)
		}
	}
	if _, ok := got["CGO_CFLAGS"]; ok {
		t.Errorf("CGO_CFLAGS kept: %q", env)
	}
	if env := buildEnv(shell, Target{}, ""); !slices.Contains(env, "GOCACHE=/c") || slices.Contains(env, "GOOS=plan9") {
		t.Errorf("go env's environment: %q", env)
	}
}

// TestBuildInfo: BUILDINFO names the Go and the pinned settings, so a
// rebuild from the tag can use the same.
func TestBuildInfo(t *testing.T) {
	info := string(formatBuildInfo("0.1.0", "go1.26.8"))
	for _, want := range []string{"berth 0.1.0\n", "go go1.26.8\n", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "CGO_ENABLED=0", "-trimpath", "make release VERSION=0.1.0"} {
		if !strings.Contains(info, want) {
			t.Errorf("BUILDINFO lacks %q:\n%s", want, info)
		}
	}
}
