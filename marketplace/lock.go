package marketplace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// LockFile is the name of the lock in a workspace.
const LockFile = "berth.lock"

// LockVersion is the version of the berth.lock format.
const LockVersion = 1

// MaxLockSize is the largest berth.lock berth reads (4 MiB).
const MaxLockSize = 4 << 20

// Lock is berth.lock, lockVersion 1: a workspace's declared plugins,
// meant to be committed. Field names, nesting and meaning are a contract:
// schemas/lock.schema.json describes exactly these types, and a test
// fails when the two drift. The lock drives installs, so it is read
// strictly: any unknown field or bad value is an error.
type Lock struct {
	LockVersion int          `json:"lockVersion"`
	Plugins     []LockPlugin `json:"plugins"`
}

// LockPlugin pins one plugin: the exact bundle and where it was resolved.
type LockPlugin struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Constraint is what the user asked for (install NAME@CONSTRAINT);
	// "" means any version.
	Constraint string      `json:"constraint,omitempty"`
	Signer     LockSigner  `json:"signer"`
	Catalog    LockCatalog `json:"catalog"`
}

// LockSigner is the signer of the locked bundle: a key fingerprint, or a
// certificate identity.
type LockSigner struct {
	Kind        trust.SignerKind `json:"kind"`
	Fingerprint string           `json:"fingerprint,omitempty"`
	Issuer      string           `json:"issuer,omitempty"`
	SAN         string           `json:"san,omitempty"`
}

// LockCatalog is the catalog a plugin was resolved from: its name, the key
// IDs of its root role, and the targets version berth had verified. A
// catalog now older than that is a rollback.
type LockCatalog struct {
	Name           string   `json:"name"`
	RootKeyIDs     []string `json:"rootKeyIDs"`
	TargetsVersion int64    `json:"targetsVersion"`
}

// LockSignerOf returns the lock's form of a signer reference.
func LockSignerOf(ref *store.SignerRef) LockSigner {
	if ref.Kind == trust.KindKey {
		return LockSigner{Kind: trust.KindKey, Fingerprint: ref.Fingerprint}
	}
	return LockSigner{Kind: trust.KindIdentity, Issuer: ref.Issuer, SAN: ref.SAN}
}

// Matches reports whether a verified signer is the locked one.
func (s LockSigner) Matches(ref *store.SignerRef) bool {
	if ref == nil || ref.Kind != s.Kind {
		return false
	}
	if s.Kind == trust.KindKey {
		return ref.Fingerprint == s.Fingerprint
	}
	return ref.Issuer == s.Issuer && ref.SAN == s.SAN
}

// ErrInvalidLock marks a berth.lock that cannot be used.
var ErrInvalidLock = errors.New("invalid berth.lock")

// ParseLock decodes and checks a berth.lock strictly: every problem is
// reported, joined, and wraps ErrInvalidLock.
func ParseLock(data []byte) (*Lock, error) {
	if len(data) > MaxLockSize {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidLock, len(data), MaxLockSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	l := &Lock{}
	if err := dec.Decode(l); err != nil {
		return nil, fmt.Errorf("%w: %s; the lock is written by berth: restore it from version control", ErrInvalidLock, jsonError(err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrInvalidLock)
	}
	if l.LockVersion != LockVersion {
		return nil, fmt.Errorf("%w: lockVersion is %d, and this berth reads %d; upgrade berth if the lock is newer", ErrInvalidLock, l.LockVersion, LockVersion)
	}
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("plugins[%d]: %s", i, fmt.Sprintf(format, args...)))
	}
	seen := map[string]bool{}
	for i, p := range l.Plugins {
		if err := store.CheckRef(p.Name, p.Version); err != nil || p.Version == "" {
			bad(i, "name %q and version %q must be a plugin name and a strict semver version", p.Name, p.Version)
		}
		if seen[p.Name] {
			bad(i, "%s is locked twice; keep one entry", p.Name)
		}
		seen[p.Name] = true
		if _, err := store.ParseDigest(p.Digest); err != nil {
			bad(i, "%v", err)
		}
		if p.Constraint != "" {
			if _, err := semver.NewConstraint(p.Constraint); err != nil {
				bad(i, "constraint %q is not a semver constraint", p.Constraint)
			}
		}
		switch p.Signer.Kind {
		case trust.KindKey:
			if !hex64.MatchString(p.Signer.Fingerprint) || p.Signer.Issuer != "" || p.Signer.SAN != "" {
				bad(i, "a key signer has exactly a fingerprint sha256:<64 hex>")
			}
		case trust.KindIdentity:
			if p.Signer.Issuer == "" || p.Signer.SAN == "" || p.Signer.Fingerprint != "" {
				bad(i, "an identity signer has exactly an issuer and a san")
			}
		default:
			bad(i, "signer kind %q: write key or identity", p.Signer.Kind)
		}
		if err := CheckName(p.Catalog.Name); err != nil {
			bad(i, "catalog: %v", err)
		}
		if len(p.Catalog.RootKeyIDs) == 0 {
			bad(i, "catalog.rootKeyIDs is empty")
		}
		for _, id := range p.Catalog.RootKeyIDs {
			if len(id) != 64 || !isLowerHex(id) {
				bad(i, "catalog.rootKeyIDs: %q is not a TUF key ID (64 hex digits)", id)
			}
		}
		if p.Catalog.TargetsVersion < 1 {
			bad(i, "catalog.targetsVersion must be 1 or more")
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n  %w", ErrInvalidLock, errors.Join(errs...))
	}
	if l.Plugins == nil {
		l.Plugins = []LockPlugin{}
	}
	return l, nil
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Plugin returns the locked entry of name.
func (l *Lock) Plugin(name string) (LockPlugin, bool) {
	for _, p := range l.Plugins {
		if p.Name == name {
			return p, true
		}
	}
	return LockPlugin{}, false
}

// Set adds or replaces the entry of p.Name.
func (l *Lock) Set(p LockPlugin) {
	for i := range l.Plugins {
		if l.Plugins[i].Name == p.Name {
			l.Plugins[i] = p
			return
		}
	}
	l.Plugins = append(l.Plugins, p)
}

// Marshal returns the lock as indented JSON, plugins sorted by name and
// key IDs sorted, so a lock diffs well in version control.
func (l *Lock) Marshal() []byte {
	c := Lock{LockVersion: LockVersion, Plugins: append([]LockPlugin{}, l.Plugins...)}
	sort.Slice(c.Plugins, func(i, j int) bool { return c.Plugins[i].Name < c.Plugins[j].Name })
	for i := range c.Plugins {
		ids := append([]string(nil), c.Plugins[i].Catalog.RootKeyIDs...)
		sort.Strings(ids)
		c.Plugins[i].Catalog.RootKeyIDs = ids
	}
	return mustJSON(c)
}

// ReadLock reads DIR/berth.lock of a workspace. A missing lock returns
// (nil, nil).
func ReadLock(workspace string) (*Lock, error) {
	p := filepath.Join(workspace, LockFile)
	data, err := ReadFileLimited(p, MaxLockSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := ParseLock(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return l, nil
}

// WriteLock writes DIR/berth.lock atomically (mode 0644: it is committed).
// A lock that ParseLock would refuse is not written.
func WriteLock(workspace string, l *Lock) error {
	data := l.Marshal()
	if _, err := ParseLock(data); err != nil {
		return fmt.Errorf("refusing to write %s: %w", filepath.Join(workspace, LockFile), err)
	}
	return atomicfile.WriteFile(filepath.Join(workspace, LockFile), data, 0o644)
}
