package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxNameLen is the longest name a client sees.
const MaxNameLen = 64

// nameRe is the form of every name the pool exports.
var nameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether s is a name a client may see:
// ^[a-zA-Z0-9_-]{1,64}$.
func ValidName(s string) bool { return nameRe.MatchString(s) }

// ServerID is a plugin server's identity, "<plugin>-<server>": the prefix
// of its tools' and prompts' names and the name of its log.
func ServerID(plugin, server string) string { return plugin + "-" + server }

// ExportName is the name a client sees for an upstream tool or prompt of a
// plugin server: "<plugin>-<server>__<tool>". Characters outside
// [a-zA-Z0-9_-] become '_', and a name that had such characters or is
// longer than 64 bytes is cut to 55 bytes and given "-" and the first 8 hex
// digits of the sha256 of the full, unmodified name, so the result is
// deterministic and two different upstream names rarely meet. When they
// do meet anyway (or two prefixes coincide, as "a-b"+"c" and "a"+"b-c"),
// the catalog reports a collision and exports neither.
func ExportName(plugin, server, upstream string) string {
	return exportName(ServerID(plugin, server), upstream)
}

// NativeExportName is the name of a plugin's native tool,
// "<plugin>__<tool>", shortened like ExportName. Native tool providers
// join the same catalog, so a collision between a native name and a
// server's tool name (or two providers of a plugin offering the same
// tool) is reported too, and neither is offered.
func NativeExportName(plugin, tool string) string { return exportName(plugin, tool) }

// NativeProviderID is the identity of a plugin's native tool provider,
// "<plugin>__<entry>" where entry is its key under the manifest's
// nativeTools, shortened like ExportName so that it matches
// ^[a-zA-Z0-9_-]{1,64}$: the name of the provider in Status and of its
// log ($BERTH_HOME/logs/<id>.log). Plugin names have no '_', so it never
// equals the ID "<plugin>-<server>" of a server of the same plugin, even
// one named like the entry.
func NativeProviderID(plugin, entry string) string { return exportName(plugin, entry) }

// NativeSurfaceKey is the key of a native tool provider's pinned tool
// surface in the state (store.Enablement.Surfaces), "native:<entry>".
// Servers' surfaces are kept under their names, which never contain ':'.
func NativeSurfaceKey(entry string) string { return "native:" + entry }

func exportName(prefix, upstream string) string {
	full := prefix + "__" + upstream
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
