package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/berth-mcp/berth/trust"
)

// CatalogOrigin is where a catalog install came from, as its trust record
// keeps it: the catalog, the key IDs of its root role and the targets
// version of the verified copy the version was resolved in. Trust records
// it only for a bundle it checked against a pinned digest and a set of
// allowed signers (TrustOptions.Catalog).
type CatalogOrigin struct {
	// Name is the catalog's name in the operator's marketplace.
	Name string `json:"name"`
	// RootKeyIDs are the TUF key IDs of the catalog's root role.
	RootKeyIDs []string `json:"rootKeyIDs"`
	// TargetsVersion is the version of the verified targets metadata.
	TargetsVersion int64 `json:"targetsVersion"`
	// Constraint is the version constraint the version was resolved for
	// ("" means any).
	Constraint string `json:"constraint,omitempty"`
	// AllowStale is true when the operator allowed a catalog copy past its
	// expiry (berth install --allow-stale); StaleSince is when that copy
	// expired, when it had.
	AllowStale bool       `json:"allowStale,omitempty"`
	StaleSince *time.Time `json:"staleSince,omitempty"`
	// Tools is the tool list the catalog's curator gave the version when
	// it was installed (a JSON array of marketplace/catalog.Tool; "[]"
	// when it listed none), which no bundle carries: upgrade diffs the
	// new version's list against it, never against what the catalog says
	// now. nil in a record written by a berth that did not keep it.
	Tools json.RawMessage `json:"tools,omitempty"`
}

// SignerNotAllowedError refuses a bundle whose signature verified, but by
// a signer that TrustOptions.AllowedSigners does not list: a catalog
// allows only certain signers to publish a plugin. It wraps
// trust.ErrUntrusted.
type SignerNotAllowedError struct {
	Source  string
	Offered *SignerRef
	Allowed []SignerRef
}

func (e *SignerNotAllowedError) Error() string {
	var names []string
	for _, a := range e.Allowed {
		names = append(names, a.identity())
	}
	allowed := "nobody"
	if len(names) > 0 {
		allowed = strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s is signed by %s, but only %s may sign it; the bundle is not the one its catalog vouches for, so berth does not install it",
		e.Source, e.Offered, allowed)
}

// Unwrap returns trust.ErrUntrusted.
func (e *SignerNotAllowedError) Unwrap() error { return trust.ErrUntrusted }

// ScopedSignerName is the policy name berth gives a signer it adds scoped
// to plugin: the plugin's name (cut to 47 characters) and 16 hex digits
// of the signer's key fingerprint or identity, so that two signers never
// share a name and the same signer always gets the same one.
func ScopedSignerName(plugin string, s trust.Signer) string {
	id := string(s.Kind) + "\x00" + s.Fingerprint
	if s.Kind == trust.KindIdentity {
		id = string(s.Kind) + "\x00" + s.Issuer + "\x00" + s.SAN + "\x00" + s.SANRegex
	}
	sum := sha256.Sum256([]byte(id))
	if len(plugin) > 47 {
		plugin = strings.TrimRight(plugin[:47], "-")
	}
	return plugin + "-" + hex.EncodeToString(sum[:8])
}

// sameSigner reports whether two policy entries are the same signer with
// the same scope (their names aside).
func sameSigner(a, b trust.Signer) bool {
	return a.Kind == b.Kind && a.Fingerprint == b.Fingerprint && a.PublicKey == b.PublicKey &&
		a.Issuer == b.Issuer && a.SAN == b.SAN && a.SANRegex == b.SANRegex && a.TrustedRoot == b.TrustedRoot &&
		a.Plugin == b.Plugin && sameTime(a.NotBefore, b.NotBefore) && sameTime(a.NotAfter, b.NotAfter)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
