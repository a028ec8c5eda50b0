package store

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/adrg/xdg"
)

// Paths derives every path of berth's on-disk state from one root
// ($BERTH_HOME). Nothing else in berth computes a state path. Paths is
// plain data, safe to copy and to share.
//
//	store/sha256/<hex>/            staged snapshots, read-only
//	store/sha256/<hex>.meta.json   their listing and stat fingerprints
//	store/sha256/.tmp-*            staging in progress (removed by gc)
//	trust/<name>/<version>.json    trust records
//	trust/<name>/<version>.sigstore.json   the signature, for offline re-verify
//	state.json                     generation, enablements, pinned surfaces
//	config.json                    signer policy, tool policy
//	roots/<signer>.trusted_root.json   trusted roots of identity signers
//	logs/                          server stderr logs
//	approvals/                     pending approvals
//	audit.log                      approval decisions and lifted revocations, JSON lines
//	fetchers/                      runtime fetchers' config (npmrc, uv.toml, ...) and run/ directories
//	catalogs/                      verified copies of added catalogs (package marketplace)
//	servers/<plugin>/<server>/cache/   a local server's own cache (XDG_CACHE_HOME), kept between starts
//	servers/<plugin>/<server>/tmp/     a local server's own temp directory (TMPDIR), emptied at each start
type Paths struct {
	Root string
}

// NewPaths returns the Paths under root, made absolute.
func NewPaths(root string) (Paths, error) {
	if root == "" {
		return Paths{}, fmt.Errorf("the berth state root is empty; set BERTH_HOME to a directory")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Paths{}, err
	}
	return Paths{Root: abs}, nil
}

// DefaultRoot returns $BERTH_HOME, or the platform's user data directory
// + "/berth" (~/.local/share/berth on Linux, ~/Library/Application
// Support/berth on macOS, %LOCALAPPDATA%\berth on Windows).
func DefaultRoot(getenv func(string) string) string {
	if h := getenv("BERTH_HOME"); h != "" {
		return h
	}
	return filepath.Join(xdg.DataHome, "berth")
}

// Store is the directory of staged snapshots.
func (p Paths) Store() string { return filepath.Join(p.Root, "store", "sha256") }

// Snapshot is the staged snapshot of a digest. The zero Digest is a
// programmer error and panics.
func (p Paths) Snapshot(d Digest) string {
	return filepath.Join(p.Store(), d.mustHex())
}

// SnapshotMeta holds a snapshot's listing and stat fingerprints.
func (p Paths) SnapshotMeta(d Digest) string {
	return filepath.Join(p.Store(), d.mustHex()+".meta.json")
}

// TrustDir holds the trust records of every plugin.
func (p Paths) TrustDir() string { return filepath.Join(p.Root, "trust") }

// PluginTrustDir holds the trust records of one plugin.
func (p Paths) PluginTrustDir(name string) string { return filepath.Join(p.TrustDir(), name) }

// Record is the trust record of name@version.
func (p Paths) Record(name, version string) string {
	return filepath.Join(p.PluginTrustDir(name), version+".json")
}

// Signature is the stored signature of name@version.
func (p Paths) Signature(name, version string) string {
	return filepath.Join(p.PluginTrustDir(name), version+".sigstore.json")
}

// TrustedRoot is the copy of a trusted_root.json that an identity signer
// uses, kept under the root so the policy never depends on a file elsewhere.
func (p Paths) TrustedRoot(signer string) string {
	return filepath.Join(p.Root, "roots", signer+".trusted_root.json")
}

// State is state.json.
func (p Paths) State() string { return filepath.Join(p.Root, "state.json") }

// Config is config.json.
func (p Paths) Config() string { return filepath.Join(p.Root, "config.json") }

// Lock is the file lock that serializes every state change.
func (p Paths) Lock() string { return filepath.Join(p.Root, ".lock") }

// Logs is the directory of server logs.
func (p Paths) Logs() string { return filepath.Join(p.Root, "logs") }

// Log is the stderr log of one server or native tool provider
// ("<plugin>__<provider>").
func (p Paths) Log(server string) string { return filepath.Join(p.Logs(), server+".log") }

// Approvals is the directory of the approval queue.
func (p Paths) Approvals() string { return filepath.Join(p.Root, "approvals") }

// Fetchers holds the package managers' configuration that berth gives
// runtime-fetched servers (the operator's to edit: a mirror registry),
// and run/, their empty working directories.
func (p Paths) Fetchers() string { return filepath.Join(p.Root, "fetchers") }

// Servers holds the local servers' own writable directories: each
// server's cache and temp directory, private to the operator (0700).
func (p Paths) Servers() string { return filepath.Join(p.Root, "servers") }

// ServerCache is the cache directory of one local server or native-tool
// provider (its XDG_CACHE_HOME), kept between starts. plugin and server
// are validated names of a manifest (no separator, no "..").
func (p Paths) ServerCache(plugin, server string) string {
	return filepath.Join(p.Servers(), plugin, server, "cache")
}

// ServerTmp is the temp directory of one local server or native-tool
// provider (its TMPDIR), emptied at each start.
func (p Paths) ServerTmp(plugin, server string) string {
	return filepath.Join(p.Servers(), plugin, server, "tmp")
}

// Audit is the append-only log of approval decisions.
func (p Paths) Audit() string { return filepath.Join(p.Root, "audit.log") }

// Secrets is the directory of berth's secret store (package secrets): the
// index of stored names and the file fallback of their values.
func (p Paths) Secrets() string { return filepath.Join(p.Root, "secrets") }

// Backups is where berth connect keeps copies of the client configuration
// files it edited, the last few per file.
func (p Paths) Backups() string { return filepath.Join(p.Root, "backups") }

// Catalogs is the directory of the verified catalog copies, which package
// marketplace lays out inside.
func (p Paths) Catalogs() string { return filepath.Join(p.Root, "catalogs") }

// ServeToken is the bearer token of `berth serve`'s HTTP listeners when no
// --token-file is given: created on first use (mode 0600), then reused.
func (p Paths) ServeToken() string { return filepath.Join(p.Root, "serve.token") }

// Serving holds one file per running `berth serve`, <pid>.json: the
// sessions it serves (mcpexport.ServeRecord), read by berth status.
func (p Paths) Serving() string { return filepath.Join(p.Root, "serving") }

// Digest is a bundle digest: "sha256:" and 64 lower-case hex digits.
// Only a Digest names a snapshot's path, and the only way to make one is
// ParseDigest, so a damaged file on disk can never make a path outside the
// store, nor a panic. The zero Digest is no digest.
type Digest struct{ hex string }

// ParseDigest checks "sha256:<64 lower-case hex>" and returns it as a
// Digest.
func ParseDigest(s string) (Digest, error) {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 || strings.ToLower(h) != h {
		return Digest{}, fmt.Errorf("%q is not a digest: write sha256: followed by 64 lower-case hex digits (berth digest prints one)", s)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return Digest{}, fmt.Errorf("%q is not a digest: write sha256: followed by 64 lower-case hex digits (berth digest prints one)", s)
	}
	return Digest{hex: h}, nil
}

// String returns "sha256:<hex>", or "" for the zero Digest.
func (d Digest) String() string {
	if d.hex == "" {
		return ""
	}
	return "sha256:" + d.hex
}

// IsZero reports whether d is the zero Digest.
func (d Digest) IsZero() bool { return d.hex == "" }

func (d Digest) mustHex() string {
	if d.hex == "" {
		panic("store: a path of the zero Digest")
	}
	return d.hex
}

// ensure creates the root with mode 0700 when missing.
func (p Paths) ensure() error {
	return os.MkdirAll(p.Root, 0o700)
}
