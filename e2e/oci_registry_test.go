//go:build unix

// Tests of catalogs in OCI registries end to end: the berth CLI as a
// process against the CNCF distribution registry (Debian's
// docker-registry 2.8: TLS from a test CA, htpasswd basic auth, no
// referrers API, so the tag-schema fallback) and go-containerregistry's
// in-process registry (referrers API), and what berth pushes read back by
// the oras CLI.

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"oras.land/oras-go/v2"

	"github.com/berth-mcp/berth/internal/ocitest"
)

// ociCLI runs the berth CLI (this test binary through a symlink) in a
// BERTH_HOME of its own, in dir, with extra environment variables.
type ociCLI struct {
	t    *testing.T
	bin  string
	home string
	dir  string
	env  map[string]string
}

func newOCICLI(t *testing.T, dir string) *ociCLI {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &ociCLI{t: t, bin: t.TempDir(), home: t.TempDir(), dir: dir, env: map[string]string{}}
	if err := os.Symlink(exe, filepath.Join(c.bin, berthName)); err != nil {
		t.Fatal(err)
	}
	return c
}

// withHome returns a berth with the same settings and a new, empty
// BERTH_HOME: another machine reading the same registry.
func (c *ociCLI) withHome() *ociCLI {
	n := *c
	n.home = c.t.TempDir()
	n.env = map[string]string{}
	for k, v := range c.env {
		n.env[k] = v
	}
	return &n
}

// run runs berth and returns its output and exit code.
func (c *ociCLI) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, berthName), args...)
	cmd.Dir = c.dir
	cmd.Env = []string{
		"BERTH_HOME=" + c.home,
		"HOME=" + c.home,
		"PATH=" + c.bin + ":/usr/bin:/bin",
		"TMPDIR=" + os.TempDir(),
		"GORACE=atexit_sleep_ms=0",
	}
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		c.t.Fatalf("berth %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// ok runs berth and fails the test unless it exits 0.
func (c *ociCLI) ok(args ...string) string {
	c.t.Helper()
	out, errs, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("berth %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// refused runs berth and fails the test unless it exits with code and
// stderr matches re; it returns stderr.
func (c *ociCLI) refused(code int, re string, args ...string) string {
	c.t.Helper()
	out, errs, got := c.run(args...)
	if got != code || !regexp.MustCompile(re).MatchString(errs) {
		c.t.Fatalf("berth %s: exit %d, want %d with stderr matching %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, re, out, errs)
	}
	return errs
}

// ociCatalogDir makes, in dir, the catalog "acme" of one signed bundle
// (acme-notes 1.4.2, the fixture stdio-bundled signed by the key "acme"),
// as a curator does with the berth CLI. It returns the catalog directory.
func ociCatalogDir(t *testing.T, c *ociCLI) string {
	t.Helper()
	fixture, err := filepath.Abs("../testdata/bundles/good/stdio-bundled")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", fixture, filepath.Join(c.dir, "notes")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	c.ok("catalog", "init", "repo", "--keys", "keys", "--name", "acme")
	c.ok("keygen", "--out", "acme")
	c.ok("sign", "notes", "--key", "acme.key")
	c.ok("signers", "add-key", "acme", "acme.pub")
	c.ok("catalog", "add", "repo", "notes", "--keys", "keys", "--tag", "notes")
	return filepath.Join(c.dir, "repo")
}

// catalogPush runs berth catalog push --json and returns its answer.
func catalogPush(t *testing.T, c *ociCLI, loc string) (pushed struct {
	Ref        string `json:"ref"`
	Uploaded   int    `json:"uploaded"`
	RootSHA256 string `json:"rootSha256"`
}) {
	t.Helper()
	out := c.ok("catalog", "push", "repo", loc, "--json")
	if err := json.Unmarshal([]byte(out), &pushed); err != nil {
		t.Fatalf("berth catalog push --json: %v\n%s", err, out)
	}
	return pushed
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// archivePath is the one bundle archive of the catalog in dir.
func archivePath(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "bundles", "acme-notes", "1.4.2", "*.tar.gz"))
	if err != nil || len(m) != 1 {
		t.Fatalf("the archive of acme-notes 1.4.2 in %s: %v %v", dir, m, err)
	}
	return m[0]
}

// flipByte flips one bit in the middle of a file, keeping its size, and
// returns a function that puts it back.
func flipByte(t *testing.T, path string) (restore func()) {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(orig)
	bad[len(bad)/2] ^= 1
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// accessLine is one line of distribution's access log (combined log
// format): `127.0.0.1 - - [time] "METHOD URI PROTO" STATUS BYTES ...`.
var accessLine = regexp.MustCompile(`^\S+ - \S+ \[[^]]*\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+)`)

// requestsSince returns the requests distribution logged after the first
// n bytes of its log, as "METHOD URI STATUS", the response bytes it
// logged for them, and the log's new length.
func requestsSince(t *testing.T, d *ocitest.Distribution, n int) (reqs []string, bytesDown int, end int) {
	t.Helper()
	b, err := os.ReadFile(d.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b[n:]), "\n") {
		if m := accessLine.FindStringSubmatch(l); m != nil {
			reqs = append(reqs, m[1]+" "+m[2]+" "+m[3])
			var size int
			fmt.Sscan(m[4], &size)
			if m[1] != "HEAD" {
				bytesDown += size
			}
		}
	}
	return reqs, bytesDown, len(b)
}

// TestOCIDistribution: a signed catalog pushed by berth to a real
// registry (TLS from a test CA through SSL_CERT_FILE, basic auth through
// DOCKER_CONFIG, signatures through the referrers tag schema) and read
// from it with the same root pin: add, an unchanged update, install by
// digest through the same trust path, and the attacks a registry can
// make (a tampered blob, a re-tagged manifest, a missing referrer) with
// their refusals (exit 4), one bundle pushed and trusted by digest, and
// wrong credentials (exit 1). A registry
// that answers slowly is marketplace's TestOCISourceErrors (the CLI has
// no timeout setting to lower).
func TestOCIDistribution(t *testing.T) {
	start := time.Now()
	d := ocitest.StartDistribution(t)
	c := newOCICLI(t, t.TempDir())
	c.env["SSL_CERT_FILE"] = d.CAFile
	c.env["DOCKER_CONFIG"] = d.DockerConfigDir(t)
	dir := ociCatalogDir(t, c)
	loc := "oci://" + d.Host + "/acme/catalog"
	repo := d.Repository(t, "acme/catalog")
	ctx := context.Background()

	_, _, mark := requestsSince(t, d, 0)
	v1 := catalogPush(t, c, loc)
	reqs, down, mark := requestsSince(t, d, mark)
	t.Logf("berth catalog push (1 bundle) to docker-registry: %d requests, %d bytes of response bodies", len(reqs), down)
	if !strings.HasPrefix(v1.Ref, loc+"@sha256:") {
		t.Fatalf("pushed %s, want %s@sha256:…", v1.Ref, loc)
	}
	v1Index := v1.Ref[strings.LastIndex(v1.Ref, "@")+1:]
	c.ok("marketplace", "add", "acme", loc, "--root-sha256", v1.RootSHA256)
	reqs, down, mark = requestsSince(t, d, mark)
	t.Logf("berth marketplace add from docker-registry: %d requests, %d bytes of response bodies", len(reqs), down)

	// An unchanged update: the tag's digest only, after the 401 that asks
	// for basic auth's credentials.
	if out := c.ok("marketplace", "update", "acme"); !strings.Contains(out, "up to date") {
		t.Fatalf("update of an unchanged catalog: %s", out)
	}
	reqs, _, _ = requestsSince(t, d, mark)
	t.Logf("an unchanged update against docker-registry (TLS, basic auth): %q", reqs)
	if want := []string{"HEAD /v2/acme/catalog/manifests/catalog 401", "HEAD /v2/acme/catalog/manifests/catalog 200"}; !slices.Equal(reqs, want) {
		t.Errorf("an unchanged update sent %q, want %q", reqs, want)
	}

	// A tampered archive blob: install refused by digest.
	archive := archivePath(t, dir)
	restore := flipByte(t, d.BlobPath("sha256:"+sha256File(t, archive)))
	c.refused(4, "download-mismatch", "install", "acme-notes", "--yes")
	restore()

	// A missing referrer: the signature's fallback tag deleted. The
	// catalog requires a signature, so install is refused.
	bundleDesc := bundleManifest(t, d, v1Index)
	fallback := strings.Replace(bundleDesc, ":", "-", 1)
	refIdx, err := repo.Resolve(ctx, fallback)
	if err != nil {
		t.Fatalf("the referrers fallback tag %s: %v", fallback, err)
	}
	if err := repo.Delete(ctx, refIdx); err != nil {
		t.Fatalf("deleting the referrers index %s: %v", refIdx.Digest, err)
	}
	errs := c.refused(4, `\.sigstore\.json is not there \(the bundle manifest sha256:[0-9a-f]{64} has no referrer of artifactType application/vnd\.dev\.sigstore\.bundle\.v0\.3\+json\); the catalog names a signature .*berth catalog push attaches it again`, "install", "acme-notes", "--yes")
	t.Logf("install without the signature referrer:\n%s", errs)
	// The push the message names mends it: the same catalog, the same
	// index, the referrer attached again.
	if again := catalogPush(t, c, loc); again.Ref != v1.Ref {
		t.Fatalf("the same catalog pushed again gave %s, first %s", again.Ref, v1.Ref)
	}
	if _, err := repo.Resolve(ctx, fallback); err != nil {
		t.Fatalf("the referrers fallback tag %s after a new push: %v", fallback, err)
	}

	c.ok("install", "acme-notes", "--yes")
	if out := c.ok("list"); !regexp.MustCompile(`acme-notes +1\.4\.2`).MatchString(out) {
		t.Fatalf("berth list after install: %s", out)
	}

	// A newer catalog (a new timestamp) whose timestamp.json blob the
	// registry alters: the update is refused and the copy stays.
	c.ok("catalog", "refresh", dir, "--keys", filepath.Join(c.dir, "keys"))
	v2 := catalogPush(t, c, loc)
	restore = flipByte(t, d.BlobPath("sha256:"+sha256File(t, filepath.Join(dir, "timestamp.json"))))
	c.refused(4, "download-mismatch", "marketplace", "update", "acme")
	restore()
	_, _, mark = requestsSince(t, d, 0)
	if out := c.ok("marketplace", "update", "acme"); strings.Contains(out, "up to date") {
		t.Fatalf("update after a new push: %s", out)
	}
	reqs, down, _ = requestsSince(t, d, mark)
	t.Logf("an update to a new timestamp from docker-registry: %d requests, %d bytes of response bodies: %q", len(reqs), down, reqs)

	// A re-tagged manifest: the tag pointed back at the first index.
	if _, err := oras.Tag(ctx, repo, v1Index, "catalog"); err != nil {
		t.Fatal(err)
	}
	c.refused(4, "rollback", "marketplace", "update", "acme")
	if _, err := oras.Tag(ctx, repo, v2.Ref[strings.LastIndex(v2.Ref, "@")+1:], "catalog"); err != nil {
		t.Fatal(err)
	}
	c.ok("marketplace", "update", "acme")

	// One bundle pushed on its own, trusted by digest on another machine
	// (the signature read through the tag schema), never by tag.
	var single struct {
		Ref string `json:"ref"`
	}
	if err := json.Unmarshal([]byte(c.ok("push", "notes", "oci://"+d.Host+"/acme/notes", "--json")), &single); err != nil || !strings.Contains(single.Ref, "@sha256:") {
		t.Fatalf("berth push --json: %v %q", err, single.Ref)
	}
	other := c.withHome()
	other.ok("signers", "add-key", "acme", "acme.pub")
	other.refused(2, "names a tag, not a digest", "trust", "oci://"+d.Host+"/acme/notes:1.4.2", "--yes")
	if out := other.ok("trust", single.Ref, "--yes"); !strings.Contains(out, `Signed by key "acme"`) || !strings.Contains(out, "Trusted acme-notes@1.4.2") {
		t.Fatalf("berth trust %s: %s", single.Ref, out)
	}

	// Wrong credentials, or none: exit 1, naming docker login; not a
	// refusal of the catalog.
	bad := c.withHome()
	bad.env["DOCKER_CONFIG"] = d.WrongDockerConfigDir(t)
	errs = bad.refused(1, `docker login `+regexp.QuoteMeta(d.Host), "marketplace", "add", "acme", loc, "--root-sha256", v1.RootSHA256)
	if strings.Contains(errs, d.Password) {
		t.Fatalf("stderr shows the password: %s", errs)
	}
	c.env["DOCKER_CONFIG"] = d.WrongDockerConfigDir(t)
	c.refused(1, `docker login `+regexp.QuoteMeta(d.Host), "marketplace", "update", "acme")
	delete(c.env, "DOCKER_CONFIG")
	c.refused(1, `docker login `+regexp.QuoteMeta(d.Host), "marketplace", "update", "acme")
	t.Logf("TestOCIDistribution took %v", time.Since(start).Round(time.Millisecond))
}

// TestOCIMirror: a catalog read from docker-registry, mirrored by berth
// mirror into a directory and into a second registry
// (go-containerregistry's, anonymous): other machines add the directory,
// or the second registry, with the same root pin and install from it; one that keeps
// docker-registry as the source with the second registry as its
// --mirror reads only the mirror, without credentials for the source, and
// an archive the mirror alters is refused.
func TestOCIMirror(t *testing.T) {
	start := time.Now()
	d := ocitest.StartDistribution(t)
	c := newOCICLI(t, t.TempDir())
	c.env["SSL_CERT_FILE"] = d.CAFile
	c.env["DOCKER_CONFIG"] = d.DockerConfigDir(t)
	ociCatalogDir(t, c)
	loc := "oci://" + d.Host + "/acme/catalog"
	pushed := catalogPush(t, c, loc)
	c.ok("marketplace", "add", "acme", loc, "--root-sha256", pushed.RootSHA256)

	mirrorDir := filepath.Join(c.dir, "mirror")
	c.ok("mirror", "acme", mirrorDir)
	second := ocitest.NewRegistry(t, ocitest.Options{Referrers: true})
	mirrorLoc := "oci://" + second.Host() + "/mirrors/acme"
	c.ok("mirror", "acme", mirrorLoc)

	// The mirror directory itself, the same pin.
	h := c.withHome()
	delete(h.env, "DOCKER_CONFIG")
	h.ok("marketplace", "add", "acme", mirrorDir, "--root-sha256", pushed.RootSHA256)
	h.ok("install", "acme-notes", "--yes")

	// The second registry as the source, the same pin.
	h = c.withHome()
	delete(h.env, "DOCKER_CONFIG")
	h.ok("marketplace", "add", "acme", mirrorLoc, "--root-sha256", pushed.RootSHA256)
	h.ok("install", "acme-notes", "--yes")

	// docker-registry as the source, read through the mirror only: no
	// credentials for docker-registry, and not one request to it.
	h = c.withHome()
	h.env["DOCKER_CONFIG"] = t.TempDir()
	_, _, mark := requestsSince(t, d, 0)
	second.Reset()
	h.ok("marketplace", "add", "acme", loc, "--mirror", mirrorLoc, "--root-sha256", pushed.RootSHA256)
	h.ok("install", "acme-notes", "--yes")
	h.ok("marketplace", "update", "acme")
	if reqs, _, _ := requestsSince(t, d, mark); len(reqs) != 0 {
		t.Errorf("add, install and update through the mirror sent %d requests to the source: %q", len(reqs), reqs)
	}
	if second.Stats().Total().Requests == 0 {
		t.Error("the mirror registry served nothing")
	}

	// A mirror cannot change what the catalog says: an archive the mirror
	// registry alters is refused (exit 4), not fetched from the source.
	h = c.withHome()
	h.env["DOCKER_CONFIG"] = t.TempDir()
	h.ok("marketplace", "add", "acme", loc, "--mirror", mirrorLoc, "--root-sha256", pushed.RootSHA256)
	arch, err := os.ReadFile(archivePath(t, filepath.Join(c.dir, "repo")))
	if err != nil {
		t.Fatal(err)
	}
	second.Tamper(func(_ *http.Request, body []byte) []byte {
		if bytes.Equal(body, arch) {
			body = bytes.Clone(body)
			body[len(body)/2] ^= 1
		}
		return body
	})
	h.refused(4, "download-mismatch", "install", "acme-notes", "--yes")
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// bundleManifest returns the digest of the first bundle manifest of the
// catalog index at index (through its bundles index, manifests[1]), read
// from the registry's storage.
func bundleManifest(t *testing.T, d *ocitest.Distribution, index string) string {
	t.Helper()
	var idx struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	for _, want := range []int{2, 1} {
		b, err := os.ReadFile(d.BlobPath(index))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &idx); err != nil || len(idx.Manifests) != want {
			t.Fatalf("the index %s: %v\n%s", index, err, b)
		}
		index = idx.Manifests[len(idx.Manifests)-1].Digest
	}
	return index
}

// orasCLI runs the oras CLI with a HOME of its own and the flags that
// reach one registry.
type orasCLI struct {
	t     *testing.T
	bin   string
	home  string
	flags []string
}

func (o *orasCLI) run(args ...string) []byte {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bin, append(args, o.flags...)...)
	cmd.Env = []string{"HOME=" + o.home, "DOCKER_CONFIG=" + filepath.Join(o.home, ".docker"), "PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		o.t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// ociDescriptor, ociManifest and ociIndex are the parts of OCI's image
// spec the layout test reads, decoded here from what oras prints.
type ociDescriptor struct {
	MediaType    string            `json:"mediaType"`
	ArtifactType string            `json:"artifactType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	Annotations  map[string]string `json:"annotations"`
}

type ociManifest struct {
	MediaType    string          `json:"mediaType"`
	ArtifactType string          `json:"artifactType"`
	Config       ociDescriptor   `json:"config"`
	Layers       []ociDescriptor `json:"layers"`
	Manifests    []ociDescriptor `json:"manifests"` // an index's
	Subject      *ociDescriptor  `json:"subject"`
	Annotations  map[string]string
}

func decodeManifest(t *testing.T, what string, b []byte) ociManifest {
	t.Helper()
	var m ociManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b)
	}
	return m
}

// TestOCILayoutORAS: a catalog pushed by berth catalog push has the
// layout docs/marketplace.md documents, as the oras CLI (v1.3.6, from
// the Go module proxy) reads it: the tag names an image index of
// artifactType application/vnd.berth.catalog.v1 whose first manifest
// carries the metadata files a current client asks for as titled layers
// (oras pull writes them under their names, byte for byte the catalog
// directory's), and whose second, the bundles index, lists the bundle
// manifests oras pulls as the archive the catalog pins, with the Sigstore
// bundle as a referrer oras discover lists. Against the
// in-process registry (referrers API) and docker-registry (tag schema,
// TLS, basic auth).
func TestOCILayoutORAS(t *testing.T) {
	orasBin := ocitest.BuildORAS(t)
	t.Run("referrers-api", func(t *testing.T) {
		start := time.Now()
		reg := ocitest.NewRegistry(t, ocitest.Options{Referrers: true})
		c := newOCICLI(t, t.TempDir())
		checkLayout(t, c, reg.Host(), &orasCLI{t: t, bin: orasBin, home: t.TempDir(), flags: []string{"--plain-http"}})
		t.Logf("took %v", time.Since(start).Round(time.Millisecond))
	})
	t.Run("distribution", func(t *testing.T) {
		start := time.Now()
		d := ocitest.StartDistribution(t)
		c := newOCICLI(t, t.TempDir())
		c.env["SSL_CERT_FILE"] = d.CAFile
		c.env["DOCKER_CONFIG"] = d.DockerConfigDir(t)
		o := &orasCLI{t: t, bin: orasBin, home: t.TempDir(), flags: []string{"--ca-file", d.CAFile, "--registry-config", filepath.Join(c.env["DOCKER_CONFIG"], "config.json")}}
		checkLayout(t, c, d.Host, o)
		t.Logf("took %v", time.Since(start).Round(time.Millisecond))
	})
}

func checkLayout(t *testing.T, c *ociCLI, host string, o *orasCLI) {
	t.Helper()
	dir := ociCatalogDir(t, c)
	repo := host + "/acme/catalog"
	pushed := catalogPush(t, c, "oci://"+repo)

	// The tag: an image index of the catalog's artifact type.
	raw := o.run("manifest", "fetch", repo+":catalog")
	if s := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(s[:]) != pushed.Ref[strings.LastIndex(pushed.Ref, "@")+1:] {
		t.Fatalf("the tag catalog names %x, berth pushed %s", s, pushed.Ref)
	}
	idx := decodeManifest(t, "the index", raw)
	if idx.MediaType != "application/vnd.oci.image.index.v1+json" || idx.ArtifactType != "application/vnd.berth.catalog.v1" || len(idx.Manifests) != 2 {
		t.Fatalf("the tag catalog: %s", raw)
	}
	md, bi := idx.Manifests[0], idx.Manifests[1]
	if md.MediaType != "application/vnd.oci.image.manifest.v1+json" || md.ArtifactType != "application/vnd.berth.catalog.metadata.v1" {
		t.Fatalf("the index's first manifest is not the metadata manifest: %+v", md)
	}
	if bi.MediaType != "application/vnd.oci.image.index.v1+json" || bi.ArtifactType != "application/vnd.berth.catalog.bundles.v1" {
		t.Fatalf("the index's second manifest is not the bundles index: %+v", bi)
	}
	bundles := decodeManifest(t, "the bundles index", o.run("manifest", "fetch", repo+"@"+bi.Digest))
	archive := archivePath(t, dir)
	rel, _ := filepath.Rel(dir, archive)
	if bundles.ArtifactType != "application/vnd.berth.catalog.bundles.v1" || len(bundles.Manifests) != 1 {
		t.Fatalf("the bundles index: %+v", bundles)
	}
	bd := bundles.Manifests[0]
	if bd.MediaType != "application/vnd.oci.image.manifest.v1+json" || bd.ArtifactType != "application/vnd.berth.bundle.v1" || bd.Annotations["org.opencontainers.image.title"] != filepath.ToSlash(rel) {
		t.Fatalf("the bundles index does not list the bundle manifest of %s: %+v", rel, bd)
	}

	// The metadata manifest: one titled layer per metadata file; oras
	// pull writes them under their titles, the catalog directory's bytes.
	mm := decodeManifest(t, "the metadata manifest", o.run("manifest", "fetch", repo+"@"+md.Digest))
	if mm.ArtifactType != "application/vnd.berth.catalog.metadata.v1" || mm.Config.MediaType != "application/vnd.oci.empty.v1+json" {
		t.Fatalf("the metadata manifest: %+v", mm)
	}
	out := t.TempDir()
	o.run("pull", "--output", out, repo+"@"+md.Digest)
	var titles []string
	for _, l := range mm.Layers {
		title := l.Annotations["org.opencontainers.image.title"]
		want := "application/vnd.berth.tuf.metadata.v1+json"
		if strings.HasPrefix(title, "targets/") {
			want = "application/vnd.berth.catalog.v1+json"
		}
		if l.MediaType != want {
			t.Errorf("the layer %s is a %s, want %s", title, l.MediaType, want)
		}
		titles = append(titles, title)
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(title)))
		if err != nil {
			t.Fatalf("oras pull wrote no %s: %v", title, err)
		}
		if orig, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(title))); err != nil || !bytes.Equal(got, orig) {
			t.Errorf("%s as oras pulled it differs from the catalog directory's (%v)", title, err)
		}
	}
	slices.Sort(titles)
	if want := catalogMetadataFiles(t, dir); !slices.Equal(titles, want) {
		t.Errorf("the metadata manifest's layers are titled %q, the catalog directory has %q", titles, want)
	}

	// The bundle manifest: oras pull writes the archive the catalog pins.
	out = t.TempDir()
	o.run("pull", "--output", out, repo+"@"+bd.Digest)
	sum := sha256File(t, archive)
	if got := sha256File(t, filepath.Join(out, filepath.Base(archive))); got != sum {
		t.Errorf("oras pull of the bundle manifest wrote an archive of sha256 %s, the catalog's is %s", got, sum)
	}
	if !catalogNames(t, dir, sum) {
		t.Errorf("the catalog target does not pin the archive's sha256 %s", sum)
	}

	// Its signature: a referrer oras discover lists, whose one layer is
	// the .sigstore.json.
	var disc struct {
		Digest    string          `json:"digest"`
		Referrers []ociDescriptor `json:"referrers"`
	}
	raw = o.run("discover", "--format", "json", "--artifact-type", "application/vnd.dev.sigstore.bundle.v0.3+json", repo+"@"+bd.Digest)
	if err := json.Unmarshal(raw, &disc); err != nil || disc.Digest != bd.Digest || len(disc.Referrers) != 1 || disc.Referrers[0].ArtifactType != "application/vnd.dev.sigstore.bundle.v0.3+json" {
		t.Fatalf("oras discover of the bundle manifest: %v\n%s", err, raw)
	}
	sm := decodeManifest(t, "the signature manifest", o.run("manifest", "fetch", repo+"@"+disc.Referrers[0].Digest))
	if sm.Subject == nil || sm.Subject.Digest != bd.Digest || len(sm.Layers) != 1 || sm.Layers[0].MediaType != "application/vnd.dev.sigstore.bundle.v0.3+json" {
		t.Fatalf("the signature manifest: %+v", sm)
	}
	sig := o.run("blob", "fetch", "--output", "-", repo+"@"+sm.Layers[0].Digest)
	if orig, err := os.ReadFile(archive + ".sigstore.json"); err != nil || !bytes.Equal(sig, orig) {
		t.Errorf("the signature's layer differs from %s.sigstore.json (%v)", archive, err)
	}
}

// catalogMetadataFiles lists what berth catalog push publishes as
// metadata (docs/marketplace.md, "Layout"): every N.root.json and
// root.json, timestamp.json, the N.snapshot.json it names, the
// N.targets.json that names, and the targets/<sha256>.<name> files those
// list; as slash paths in order. Older versions in dir are not published.
func catalogMetadataFiles(t *testing.T, dir string) []string {
	t.Helper()
	roots, err := filepath.Glob(filepath.Join(dir, "*.root.json"))
	if err != nil {
		t.Fatal(err)
	}
	rels := []string{"root.json", "timestamp.json"}
	for _, p := range roots {
		rels = append(rels, filepath.Base(p))
	}
	type meta struct {
		Signed struct {
			Meta map[string]struct {
				Version int `json:"version"`
			} `json:"meta"`
			Targets map[string]struct {
				Hashes map[string]string `json:"hashes"`
			} `json:"targets"`
		} `json:"signed"`
	}
	read := func(name string) meta {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var m meta
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m
	}
	snapshot := fmt.Sprintf("%d.snapshot.json", read("timestamp.json").Signed.Meta["snapshot.json"].Version)
	targets := fmt.Sprintf("%d.targets.json", read(snapshot).Signed.Meta["targets.json"].Version)
	rels = append(rels, snapshot, targets)
	for name, tf := range read(targets).Signed.Targets {
		rels = append(rels, "targets/"+tf.Hashes["sha256"]+"."+name)
	}
	slices.Sort(rels)
	return rels
}

// catalogNames reports whether the catalog target in dir names sha.
func catalogNames(t *testing.T, dir, sha string) bool {
	t.Helper()
	targets, err := filepath.Glob(filepath.Join(dir, "targets", "*.catalog.json"))
	if err != nil || len(targets) == 0 {
		t.Fatalf("no catalog target in %s: %v", dir, err)
	}
	for _, p := range targets {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(sha)) {
			return true
		}
	}
	return false
}
