package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxNameLen is the longest name a client sees.
const MaxNameLen = 64

// Sep separates the parts of every name the pool exports: the plugin, the
// provider (a server, or a native tool provider) and the tool, prompt or
// resource owner, as in "acme-notes__notes__search". Plugin names never
// contain '_' and provider names never contain "__", so the first '_' of
// a name ends its plugin and the next "__" its provider.
const Sep = "__"

// nameRe is the form of every name the pool exports.
var nameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether s is a name a client may see:
// ^[a-zA-Z0-9_-]{1,64}$.
func ValidName(s string) bool { return nameRe.MatchString(s) }

// ServerID is the identity of a plugin's server or native tool provider,
// "<plugin>__<provider>": the prefix of its tools' and prompts' names, the
// name its resources are decided by in the tool policy, and the name of
// its log. It is shortened like ExportName when longer than 64 characters.
func ServerID(plugin, provider string) string { return shorten(plugin + Sep + provider) }

// ExportName is the name a client sees for an upstream tool or prompt of a
// plugin's server or native tool provider: "<plugin>__<provider>__<tool>".
// Characters outside [a-zA-Z0-9_-] become '_', and a name that had such
// characters or is longer than 64 bytes is cut to 55 bytes and given "-"
// and the first 8 hex digits of the sha256 of the full, unmodified name,
// so the result is deterministic and two different upstream names rarely
// meet. When they meet anyway, the catalog reports a collision and exports
// neither. A name never says more than which plugin it belongs to: the
// catalog keeps each entry's plugin, and the tool policy matches a rule
// only against the names of the plugin the rule belongs to.
func ExportName(plugin, provider, upstream string) string {
	return shorten(plugin + Sep + provider + Sep + upstream)
}

// NativeProviderID is the identity of a plugin's native tool provider:
// ServerID of its key under the manifest's nativeTools. A bundle may not
// give a server and a native tool provider the same name
// (bundle.RuleNativeToolNameTaken), so identities never meet.
func NativeProviderID(plugin, entry string) string { return ServerID(plugin, entry) }

// NativeSurfaceKey is the key of a native tool provider's pinned tool
// surface in the state (store.Enablement.Surfaces), "native:<entry>".
// Servers' surfaces are kept under their names, which never contain ':'.
func NativeSurfaceKey(entry string) string { return "native:" + entry }

// ParseName splits an exported name at its separators: the plugin (up to
// the first '_', which must start "__"), the provider (up to the next
// "__") and the rest. ok is false when the name has no plugin part. A
// shortened name splits as it reads; rest may then be cut.
func ParseName(name string) (plugin, provider, rest string, ok bool) {
	i := strings.IndexByte(name, '_')
	if i <= 0 || !strings.HasPrefix(name[i:], Sep) {
		return "", "", "", false
	}
	plugin, after := name[:i], name[i+len(Sep):]
	provider, rest, _ = strings.Cut(after, Sep)
	return plugin, provider, rest, true
}

// shorten makes full a name a client may see (see ExportName).
func shorten(full string) string {
	clean := sanitize(full)
	if clean == full && len(full) <= MaxNameLen {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	const keep = MaxNameLen - 9
	if len(clean) > keep {
		clean = clean[:keep]
	}
	return clean + "-" + hex.EncodeToString(sum[:4])
}

// sanitize replaces every character outside [a-zA-Z0-9_-] (each rune of a
// multi-byte character once) with '_'.
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
