package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

// Name limits of berth's grammar (docs/manifest.md): a plugin name is 1-64
// characters, a server name 1-32.
const (
	maxPluginName = 64
	maxServerName = 32
)

// foreignName is berth's one rule for turning a name another tool
// accepts into berth's name grammar (docs/manifest.md, "Names of other
// formats"): lower-cased, every run of characters other than a-z and 0-9
// replaced with one '-', '-' trimmed from both ends; a result longer than
// max keeps its first max-9 characters (then '-' trimmed) and gets '-' and
// the first 8 hex digits of the SHA-256 of the name as given. It returns
// "" when the name has no letter or digit a-z, 0-9. "google calendar"
// becomes "google-calendar", "Synapse.org" "synapse-org",
// "io.github.acme/weather" "io-github-acme-weather".
func foreignName(name string, max int) string {
	n := strings.Trim(nonAlnumRunRe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > max {
		sum := sha256.Sum256([]byte(name))
		n = strings.TrimRight(n[:max-9], "-") + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return n
}

// PluginName maps the name a Claude Code plugin or an MCP Bundle gives
// itself to a berth plugin name: a name that already is one is kept as it
// is; any other is mapped by foreignName ("Slack MCP Server" →
// "slack-mcp-server"). ok is false when the name has no letter or digit
// to make a berth name of.
func PluginName(name string) (string, bool) {
	if bundle.IsValidName(name) {
		return name, true
	}
	n := foreignName(name, maxPluginName)
	return n, n != ""
}

// ServerName maps a Claude Code server name to a berth server name: one
// that already is one (1-32 lower-case letters, digits, '_' or '-', no
// "__") is kept as it is; any other is mapped by foreignName ("PubMed" →
// "pubmed", "google calendar" → "google-calendar"). ok is false when the
// name has no letter or digit.
func ServerName(name string) (string, bool) {
	if bundle.IsValidServerName(name) {
		return name, true
	}
	n := foreignName(name, maxServerName)
	return n, n != ""
}

// bundleName sets the name of the generated manifest from src, the
// source's own name, mapped by PluginName; the source's name is kept in
// importedFrom.sourceName when it differs, so the review shows both. A
// name with nothing to map is kept as given, and the validator refuses
// it (name-format) at the source's field.
func bundleName(m *bundle.Manifest, imp *bundle.ImportedFrom, src string) {
	n, ok := PluginName(src)
	if !ok {
		m.Name = src
		return
	}
	m.Name = n
	if n != src {
		imp.SourceName = src
	}
}
