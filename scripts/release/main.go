// Command release builds berth's release: static binaries (CGO_ENABLED=0)
// for linux and darwin (amd64, arm64) and windows (amd64), a SHA256SUMS
// file in sha256sum's format, and SHA256SUMS.sigstore.json, the checksums
// signed with berth's own signing (trust.Sign: a Sigstore bundle v0.3 with
// a key's message signature, the format cosign verify-blob --bundle
// reads). The builds are reproducible: -trimpath, -buildvcs=false, no
// build ID, a version stamp that is a flag, never the time or the
// commit, and an environment of its own (buildEnv: GOAMD64=v1,
// GOARM64=v8.0, no GOEXPERIMENT, GOFIPS140 or CGO_* flags from the
// builder's shell), so two builds of one tree with one Go give the same
// checksums (-check builds again with an empty build cache and compares).
// BUILDINFO, listed in SHA256SUMS and so signed, names that Go and those
// settings: another Go patch release gives other binaries, and whoever
// rebuilds a release from its tag needs to know which Go to use.
//
//	go run ./scripts/release -version 0.1.0 -key release.key -out dist
//	go run ./scripts/release -throwaway-key -check   # CI: a key made for this run, nothing published
//
// make release runs it (see the Makefile).
package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/trust"
)

// Target is one platform of the release.
type Target struct{ OS, Arch string }

// Targets are the platforms berth is released for.
var Targets = []Target{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}

// versionVar is the variable the version stamp sets (berth version prints it).
const versionVar = "github.com/berth-mcp/berth/internal/cli.release"

// SumsFile and SigFile are the checksums and their signature.
const (
	SumsFile = "SHA256SUMS"
	SigFile  = "SHA256SUMS.sigstore.json"
	PubFile  = "berth-release.pub"
	InfoFile = "BUILDINFO"
)

func main() {
	version := flag.String("version", bundle.BerthVersion, "the `VERSION` stamped into the binaries and their names")
	out := flag.String("out", "dist", "the `DIR` to write the release to (replaced)")
	key := flag.String("key", "", "the PEM private `KEY` that signs SHA256SUMS (ECDSA P-256/P-384 or RSA; berth keygen makes one)")
	throwaway := flag.Bool("throwaway-key", false, "sign with a key made for this run and thrown away (CI: checks the signing, publishes nothing)")
	check := flag.Bool("check", false, "build again with an empty build cache and fail unless the checksums are the same")
	par := flag.Int("p", runtime.NumCPU(), "how many packages go build compiles at once (go build -p)")
	only := flag.String("targets", "", "build only these `OS/ARCH,...` (default: every release target)")
	flag.Parse()
	if *only != "" {
		var keep []Target
		for _, t := range strings.Split(*only, ",") {
			os_, arch, _ := strings.Cut(t, "/")
			found := false
			for _, r := range Targets {
				if r.OS == os_ && r.Arch == arch {
					keep, found = append(keep, r), true
				}
			}
			if !found {
				fmt.Fprintf(os.Stderr, "release: -targets: %q is not a release target (linux/amd64, linux/arm64, darwin/amd64, darwin/arm64, windows/amd64)\n", t)
				os.Exit(2)
			}
		}
		Targets = keep
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *version, *out, *key, *throwaway, *check, *par); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, version, out, keyPath string, throwaway, check bool, par int) error {
	if (keyPath == "") == !throwaway {
		return errors.New("give -key KEY (the release key) or -throwaway-key (a key for this run only), one of them")
	}
	if err := checkVersion(version); err != nil {
		return err
	}
	start := time.Now()
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	names, err := buildAll(ctx, version, out, "", par)
	if err != nil {
		return err
	}
	goVer, err := goVersion(ctx)
	if err != nil {
		return err
	}
	info := formatBuildInfo(version, goVer)
	if err := os.WriteFile(filepath.Join(out, InfoFile), info, 0o644); err != nil {
		return err
	}
	binaries := len(names)
	names = append(names, InfoFile)
	sums, err := Sums(out, names)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, SumsFile), sums, 0o644); err != nil {
		return err
	}
	fmt.Printf("built %d binaries with %s in %s\n", binaries, goVer, time.Since(start).Round(time.Second))
	if check {
		t := time.Now()
		again, err := os.MkdirTemp("", "berth-release-check-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(again)
		cache := filepath.Join(again, "gocache")
		if _, err := buildAll(ctx, version, again, cache, par); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(again, InfoFile), info, 0o644); err != nil {
			return err
		}
		sums2, err := Sums(again, names)
		if err != nil {
			return err
		}
		if !bytes.Equal(sums, sums2) {
			return fmt.Errorf("the build is not reproducible: a second build with an empty cache gives other checksums:\n%s\nthan the first:\n%s", sums2, sums)
		}
		fmt.Printf("reproducible: a second build with an empty build cache gives the same %s (%s)\n", SumsFile, time.Since(t).Round(time.Second))
	}
	var keyPEM []byte
	if throwaway {
		dir, err := os.MkdirTemp("", "berth-release-key-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if keyPath, _, err = trust.WriteKeyPair(filepath.Join(dir, "throwaway")); err != nil {
			return err
		}
	}
	if keyPEM, err = os.ReadFile(keyPath); err != nil {
		return err
	}
	sig, pub, err := SignSums(ctx, sums, keyPEM)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, SigFile), sig, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, PubFile), pub, 0o644); err != nil {
		return err
	}
	what := "the release key"
	if throwaway {
		what = "a THROWAWAY key made for this run (not a publication)"
	}
	fmt.Printf("signed %s with %s; verified it with berth's verifier\nwrote %s: %s\n", SumsFile, what, out, strings.Join(append(names, SumsFile, SigFile, PubFile), " "))
	return nil
}

// checkVersion refuses a version that is not plain semver: it names files.
func checkVersion(v string) error {
	if v == "" || strings.Trim(v, "0123456789.-+abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" || strings.HasPrefix(v, "-") || strings.Contains(v, "..") {
		return fmt.Errorf("version %q: give a semantic version such as 0.1.0", v)
	}
	return nil
}

// BinaryName is the file name of berth for t.
func BinaryName(version string, t Target) string {
	n := fmt.Sprintf("berth-%s-%s-%s", version, t.OS, t.Arch)
	if t.OS == "windows" {
		n += ".exe"
	}
	return n
}

// buildAll builds every target into dir, with the build cache cache (""
// for go's own).
func buildAll(ctx context.Context, version, dir, cache string, par int) ([]string, error) {
	var names []string
	for _, t := range Targets {
		name := BinaryName(version, t)
		args := []string{"build", "-trimpath", "-buildvcs=false", "-p", fmt.Sprint(par),
			"-ldflags", ldflags(version), "-o", filepath.Join(dir, name), "./cmd/berth"}
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Env = buildEnv(os.Environ(), t, cache)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go %s (GOOS=%s GOARCH=%s): %w", strings.Join(args, " "), t.OS, t.Arch, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// ldflags are the linker flags of every release binary.
func ldflags(version string) string {
	return "-s -w -buildid= -X " + versionVar + "=" + version
}

// pinnedEnv are the settings every release build gets, whatever the
// builder's shell holds: they change the bytes of the binaries.
var pinnedEnv = []string{"CGO_ENABLED=0", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOFIPS140=off",
	"GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off"}

// buildEnv is environ without the variables that change what go build
// makes (GOOS, GOARCH, every CGO_*, GOAMD64, GOARM64, GOEXPERIMENT,
// GOFIPS140, GOFLAGS, GOTOOLCHAIN, GOWORK, GOCACHE, and the other
// architectures' levels), then pinnedEnv and t's GOOS and GOARCH; cache
// is the build cache ("" for go's own). A zero t is for go env.
func buildEnv(environ []string, t Target, cache string) []string {
	drop := map[string]bool{"GOOS": true, "GOARCH": true, "GOAMD64": true, "GOARM64": true, "GOARM": true, "GO386": true,
		"GOMIPS": true, "GOMIPS64": true, "GOPPC64": true, "GORISCV64": true, "GOWASM": true, "GOEXPERIMENT": true,
		"GOFIPS140": true, "GOFLAGS": true, "GOTOOLCHAIN": true, "GOWORK": true}
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "CGO_") || (cache != "" && k == "GOCACHE") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, pinnedEnv...)
	if t.OS != "" {
		env = append(env, "GOOS="+t.OS, "GOARCH="+t.Arch)
	}
	if cache != "" {
		env = append(env, "GOCACHE="+cache)
	}
	return env
}

// goVersion is the Go that builds the release (go env GOVERSION, in the
// same environment as the builds).
func goVersion(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Env = buildEnv(os.Environ(), Target{}, "")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// formatBuildInfo is the BUILDINFO of a release of version built by
// goVersion (go1.26.8): that Go and how it built, so that whoever
// rebuilds the release from its tag uses the same.
func formatBuildInfo(version, goVersion string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "berth %s\n", version)
	fmt.Fprintf(&b, "go %s\n", goVersion)
	fmt.Fprintf(&b, "build go build -trimpath -buildvcs=false -ldflags '%s' ./cmd/berth\n", ldflags(version))
	fmt.Fprintf(&b, "env %s\n", strings.Join(pinnedEnv, " "))
	fmt.Fprintf(&b, "rebuild with %s first on PATH, in berth's tree at this release's tag: make release VERSION=%s, then compare the SHA256SUMS lines\n", goVersion, version)
	return b.Bytes()
}

// Sums is the SHA256SUMS of the files names in dir, in sha256sum's format
// ("HEX  NAME", sorted by name), which sha256sum -c checks.
func Sums(dir string, names []string) ([]byte, error) {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	var b bytes.Buffer
	for _, n := range sorted {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return b.Bytes(), nil
}

// SignSums signs sums with keyPEM (trust.Sign) and checks the signature
// with berth's verifier against the key's public half, which it returns
// as PEM.
func SignSums(ctx context.Context, sums, keyPEM []byte) (sig, pubPEM []byte, err error) {
	pubPEM, err = publicOf(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	sig, err = trust.Sign(ctx, sums, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	if _, err := VerifySums(ctx, sums, sig, pubPEM); err != nil {
		return nil, nil, fmt.Errorf("the signature just made does not verify: %w", err)
	}
	return sig, pubPEM, nil
}

// VerifySums checks sig, a Sigstore bundle, over sums against the public
// key pubPEM, offline, with berth's verifier (sigstore-go).
func VerifySums(ctx context.Context, sums, sig, pubPEM []byte) (*trust.Result, error) {
	s, err := trust.NewKeySigner("berth-release", pubPEM, nil)
	if err != nil {
		return nil, err
	}
	v, err := trust.NewVerifier([]trust.Signer{s}, nil)
	if err != nil {
		return nil, err
	}
	return v.Verify(ctx, sums, sig)
}

// publicOf is the PEM public key of a PEM private key.
func publicOf(keyPEM []byte) ([]byte, error) {
	blk, _ := pem.Decode(keyPEM)
	if blk == nil {
		return nil, errors.New("the key is not PEM")
	}
	var k any
	var err error
	switch blk.Type {
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	der, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
