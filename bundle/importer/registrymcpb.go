package importer

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/loopback"
)

// RegistryMCPB is the one MCP Bundle a registry server.json publishes as
// its only way to run: berth downloads it from URL, checks that its
// SHA-256 is SHA256 before anything reads it, and imports it as a .mcpb.
type RegistryMCPB struct {
	// Name is the server.json's registry name.
	Name string
	// URL is the package's identifier, an https:// URL.
	URL string
	// SHA256 is the package's fileSha256: 64 lower-case hex digits.
	SHA256 string
}

// RegistryMCPBPackage reports whether the server.json data installs as an
// MCP Bundle. It decides from berth's own reading of the document, the
// one berth import does (its $schema resolved to a published version, or
// the one version it is inferred to be; a field of another version
// refused; field names exact, as that version spells them): the document
// is one MCP Bundle when that reading finds no problem and its only
// package is one mcpb package (registryType, or registry_type in
// 2025-07-09, "mcpb", with a valid fileSha256 and the stdio transport),
// with no other package and no remote. Any other document, including
// one that reading refuses, is not: RegistryMCPBPackage returns nil and
// no error, and the caller builds the bundle of the server.json itself,
// which reports every problem (an mcpb package without fileSha256, rule
// registry-mcpb-digest; several mcpb packages, rule registry-mcpb-choice;
// an unknown $schema; ...) before anything is downloaded. For one MCP
// Bundle it returns the bundle to download, or an error when its
// identifier is not an https:// URL without credentials (plain http only
// on a loopback address), rule registry-package-source.
func RegistryMCPBPackage(data []byte) (*RegistryMCPB, error) {
	c := convertRegistryData(data)
	if len(c.ps.list) > 0 || c.manifest == nil || c.manifest.ImportedFrom == nil || len(c.manifest.MCPServers) > 0 {
		return nil, nil
	}
	var bundles []bundle.NotCarried
	for _, it := range c.manifest.ImportedFrom.NotCarriedOver {
		if it.Kind == "mcpb-package" {
			bundles = append(bundles, it)
		}
	}
	if len(bundles) != 1 {
		// No package, or several MCP Bundles (refused by the reading:
		// registry-mcpb-choice, so not reached).
		return nil, nil
	}
	p := bundles[0]
	u, err := url.Parse(p.Name)
	// Plain http is allowed on a loopback address only (a local mirror, a
	// test), as for catalog sources.
	okScheme := err == nil && (u.Scheme == "https" || (u.Scheme == "http" && loopback.IsHost(u.Hostname())))
	if !okScheme || u.Host == "" || u.User != nil || strings.ContainsAny(p.Name, " \t\r\n") {
		return nil, &MCPBPackageError{Rule: bundle.RuleRegistryPackageSource, Message: fmt.Sprintf("the MCP Bundle's identifier %q is not an https:// URL without credentials; berth downloads MCP Bundles only over https (plain http only on a loopback address)", p.Name)}
	}
	return &RegistryMCPB{Name: c.manifest.ImportedFrom.SourceName, URL: p.Name, SHA256: p.SHA256}, nil
}

// MCPBPackageError says why the MCP Bundle of a registry entry cannot be
// fetched, with the rule (docs/rules.md).
type MCPBPackageError struct {
	Rule, Message string
}

func (e *MCPBPackageError) Error() string { return e.Message + " [" + e.Rule + "]" }
