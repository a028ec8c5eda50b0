package ocitest

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/berth-mcp/berth/internal/peers"
	"github.com/berth-mcp/berth/internal/procgroup"
	"github.com/berth-mcp/berth/internal/testkit"
)

// DistributionBinary is where Debian's docker-registry package installs
// the CNCF distribution registry.
const DistributionBinary = "/usr/bin/docker-registry"

// Distribution is a CNCF distribution registry (2.8, Debian's
// docker-registry package) started by [StartDistribution] on 127.0.0.1
// over HTTPS with basic auth. It has no referrers API, so clients use the
// referrers tag schema.
type Distribution struct {
	// Host is "127.0.0.1:port".
	Host string
	// CAFile is the PEM file of the CA that issued the registry's
	// certificate; CAPool holds that CA alone.
	CAFile string
	CAPool *x509.CertPool
	// User and Password are the only credentials the registry accepts
	// (htpasswd, bcrypt).
	User, Password string
	// Log is the file the registry logs to.
	Log string
	// Storage is the root of the registry's filesystem storage, where a
	// test can alter what the registry serves (see [Distribution.BlobPath]).
	Storage string
}

// StartDistribution starts docker-registry with storage, certificate and
// htpasswd file in a temporary directory, on a free port of 127.0.0.1
// (never the package's default 5000, where the package's own service may
// listen), and waits until /v2/ answers 401. The registry's process group
// is stopped when the test ends. Without [DistributionBinary] the test is
// skipped, or fails when BERTH_REQUIRE_PEERS=1 (as in CI, whose .ci/run
// installs the package).
func StartDistribution(t testing.TB) *Distribution {
	t.Helper()
	bin, err := exec.LookPath(DistributionBinary)
	if err != nil {
		peers.Unavailable(t, fmt.Sprintf("the CNCF distribution registry %s is not installed (%v); install Debian's docker-registry package: apt-get install docker-registry", DistributionBinary, err))
	}
	dir := t.TempDir()
	ca := testkit.NewTestCA(t)
	chain, key := ca.LeafPEM(t)
	pw := make([]byte, 12)
	rand.Read(pw)
	d := &Distribution{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CAPool:   ca.Pool(),
		User:     "berth-ci",
		Password: hex.EncodeToString(pw),
		Log:      filepath.Join(dir, "registry.log"),
		Storage:  filepath.Join(dir, "storage"),
	}
	// The lowest cost: distribution checks the password on every request.
	hash, err := bcrypt.GenerateFromPassword([]byte(d.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		d.CAFile:   ca.CertPEM,
		"cert.pem": chain,
		"key.pem":  key,
		"htpasswd": []byte(d.User + ":" + string(hash) + "\n"),
	}
	for name, data := range files {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// A port taken between the probe and the registry's listen makes the
	// registry exit at once; then another port is tried.
	var lastErr error
	for range 3 {
		d.Host, err = freePort()
		if err != nil {
			t.Fatal(err)
		}
		lastErr = d.start(t, bin, dir)
		if lastErr == nil {
			return d
		}
	}
	t.Fatalf("ocitest: docker-registry did not start: %v", lastErr)
	return nil
}

// start runs the registry on d.Host and waits for it; on an error the
// process is gone.
func (d *Distribution) start(t testing.TB, bin, dir string) error {
	t.Helper()
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %[1]s/storage
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %[2]s
  secret: %[3]s
  tls:
    certificate: %[1]s/cert.pem
    key: %[1]s/key.pem
auth:
  htpasswd:
    realm: berth-test
    path: %[1]s/htpasswd
`, dir, d.Host, d.Password)
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return err
	}
	logf, err := os.Create(d.Log)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve", cfg)
	// No REGISTRY_* variables of the host: they would override the file.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procgroup.Attr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		procgroup.Terminate(cmd.Process.Pid, 5*time.Second, func(d time.Duration) bool {
			select {
			case <-exited:
				return true
			case <-time.After(d):
				return false
			}
		})
		<-exited
	}

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: d.CAPool}}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(d.Log)
			return fmt.Errorf("docker-registry on %s exited before it answered: %s\n%s", d.Host, cmd.ProcessState, tail(log))
		default:
		}
		resp, err := client.Get("https://" + d.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				break
			}
			err = fmt.Errorf("GET /v2/ without credentials answered %s, want 401 Unauthorized", resp.Status)
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(d.Log)
			return fmt.Errorf("docker-registry on %s did not answer within 15s: %v\n%s", d.Host, err, tail(log))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			log, _ := os.ReadFile(d.Log)
			t.Logf("docker-registry log (%s):\n%s", d.Log, tail(log))
		}
	})
	return nil
}

// BlobPath is the file in which the registry keeps the blob (or
// manifest) with the digest "sha256:HEX": distribution serves its bytes
// as they are, so a test that edits them plays a registry whose storage
// was altered.
func (d *Distribution) BlobPath(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	if len(hex) < 2 {
		return ""
	}
	return filepath.Join(d.Storage, "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
}

// Repository returns an oras-go client for the repository name on the
// registry, over TLS with the test CA and with the registry's
// credentials: what a curator or an attacker with push rights uses.
func (d *Distribution) Repository(t testing.TB, name string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(d.Host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: d.CAPool}
	repo.Client = &auth.Client{
		Client:     &http.Client{Transport: tr},
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(d.Host, auth.Credential{Username: d.User, Password: d.Password}),
	}
	return repo
}

// DockerConfigDir writes a Docker config.json holding the registry's
// credentials into a new directory and returns the directory (what
// DOCKER_CONFIG names).
func (d *Distribution) DockerConfigDir(t testing.TB) string {
	return DockerConfigDir(t, d.Host, d.User, d.Password)
}

// WrongDockerConfigDir is [Distribution.DockerConfigDir] with a wrong
// password.
func (d *Distribution) WrongDockerConfigDir(t testing.TB) string {
	return DockerConfigDir(t, d.Host, d.User, d.Password+"-wrong")
}

// DockerConfigDir writes a Docker config.json with
// `{"auths": {host: {"auth": base64(user:password)}}}` into a new
// directory and returns the directory.
func DockerConfigDir(t testing.TB, host, user, password string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{"auths": map[string]any{
		host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
	}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tail returns the last 40 lines of a log.
func tail(b []byte) string {
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
