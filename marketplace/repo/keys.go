package repo

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/internal/atomicfile"
)

// The four top-level TUF roles, in the order they are described.
var roleNames = []string{metadata.ROOT, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP}

// roleKey is one role's private key, loaded from KEYDIR.
type roleKey struct {
	role   string
	path   string
	signer signature.Signer
	key    *metadata.Key
	id     string
}

// keyPath is KEYDIR/<role>.key.
func keyPath(keyDir, role string) string { return filepath.Join(keyDir, role+".key") }

// generateKeys makes one Ed25519 key per role and writes each to
// KEYDIR/<role>.key (PKCS#8 PEM, mode 0600), never over an existing file.
func generateKeys(keyDir string) (map[string]*roleKey, error) {
	keys := map[string]*roleKey{}
	for _, role := range roleNames {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, err
		}
		data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		p := keyPath(keyDir, role)
		if err := writeNewFile(p, data, 0o600); err != nil {
			return nil, err
		}
		k, err := newRoleKey(role, p, priv, pub)
		if err != nil {
			return nil, err
		}
		keys[role] = k
	}
	return keys, nil
}

func newRoleKey(role, path string, priv ed25519.PrivateKey, pub ed25519.PublicKey) (*roleKey, error) {
	signer, err := signature.LoadSigner(priv, crypto.Hash(0))
	if err != nil {
		return nil, err
	}
	key, err := metadata.KeyFromPublicKey(pub)
	if err != nil {
		return nil, err
	}
	id, err := key.ID()
	if err != nil {
		return nil, err
	}
	return &roleKey{role: role, path: path, signer: signer, key: key, id: id}, nil
}

// loadKey reads KEYDIR/<role>.key and checks that root names it for role.
func loadKey(keyDir, role string, root *metadata.RootType) (*roleKey, error) {
	p := keyPath(keyDir, role)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the %s key %s is missing; this command signs the %s role, so run it where that key is (berth catalog init wrote it there)", role, p, role)
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; it should be the %s key berth catalog init wrote", p, role)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable or writable by others (mode %04o); a signing key must be private: chmod 600 %s", p, fi.Mode().Perm(), p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s is not a PKCS#8 PEM private key; it should be the %s key berth catalog init wrote", p, role)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s is not an Ed25519 key", p)
	}
	rk, err := newRoleKey(role, p, priv, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	r := root.Roles[role]
	if r == nil || !containsString(r.KeyIDs, rk.id) {
		return nil, fmt.Errorf("%s is not a %s key of this catalog (its key ID %s is not in root.json); use the KEYDIR that berth catalog init made for this catalog", p, role, rk.id[:16])
	}
	return rk, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeNewFile creates path with data, never replacing a file.
func writeNewFile(path string, data []byte, perm fs.FileMode) error {
	err := atomicfile.WriteNew(path, data, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists already; berth never overwrites a key: move it away, or use another directory", path)
	}
	return err
}

// ParseDuration reads an expiry: a Go duration ("24h", "90m", "2s") or a
// whole number of days ("7d"). It must be positive.
func ParseDuration(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not a duration: write a Go duration like 24h or 2s, or whole days like 7d", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration: write a Go duration like 24h or 2s, or whole days like 7d", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", s)
	}
	return d, nil
}
