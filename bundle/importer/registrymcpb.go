package importer

import (
	"encoding/json"
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
// MCP Bundle: its packages are mcpb packages only and it has no remotes.
// It returns nil and no error for any other document (built from the
// server.json itself: an mcpb package beside another package or a remote
// is listed as not carried over there). For an mcpb-only document it
// returns the bundle to download, or an error naming what stops berth
// from fetching it: no fileSha256 (rule registry-mcpb-digest), an
// identifier that is not an https:// URL, another transport than stdio,
// or several mcpb packages (berth does not choose between a publisher's
// alternatives, such as one per platform).
func RegistryMCPBPackage(data []byte) (*RegistryMCPB, error) {
	var doc struct {
		Name     string `json:"name"`
		Packages []struct {
			RegistryType string `json:"registryType"`
			Identifier   string `json:"identifier"`
			FileSHA256   string `json:"fileSha256"`
			Transport    *struct {
				Type string `json:"type"`
			} `json:"transport"`
		} `json:"packages"`
		Remotes []json.RawMessage `json:"remotes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Packages) == 0 || len(doc.Remotes) > 0 {
		return nil, nil
	}
	for _, p := range doc.Packages {
		if p.RegistryType != "mcpb" {
			return nil, nil
		}
	}
	if n := len(doc.Packages); n > 1 {
		return nil, &MCPBPackageError{Rule: bundle.RuleRegistryMCPBChoice, Message: fmt.Sprintf("the server.json offers %d MCP Bundles (packages of type mcpb) and nothing else; they are the publisher's alternatives (often one per platform), and berth does not choose between them: download the one for this machine, check its fileSha256, and run berth import FILE.mcpb", n)}
	}
	p := doc.Packages[0]
	if p.FileSHA256 == "" || !sha256HexRe.MatchString(p.FileSHA256) {
		return nil, &MCPBPackageError{Rule: bundle.RuleRegistryMCPBDigest, Message: fmt.Sprintf("the MCP Bundle %s has no valid fileSha256 (64 lower-case hex digits): berth downloads an MCP Bundle only by its digest; ask the publisher to add it", p.Identifier)}
	}
	if p.Transport != nil && p.Transport.Type != "stdio" {
		return nil, &MCPBPackageError{Rule: bundle.RuleRegistryTransport, Message: fmt.Sprintf("the MCP Bundle %s has the transport %q; an MCP Bundle runs over stdio", p.Identifier, p.Transport.Type)}
	}
	u, err := url.Parse(p.Identifier)
	// Plain http is allowed on a loopback address only (a local mirror, a
	// test), as for catalog sources.
	okScheme := err == nil && (u.Scheme == "https" || (u.Scheme == "http" && loopback.IsHost(u.Hostname())))
	if !okScheme || u.Host == "" || u.User != nil || strings.ContainsAny(p.Identifier, " \t\r\n") {
		return nil, &MCPBPackageError{Rule: bundle.RuleRegistryPackageSource, Message: fmt.Sprintf("the MCP Bundle's identifier %q is not an https:// URL without credentials; berth downloads MCP Bundles only over https (plain http only on a loopback address)", p.Identifier)}
	}
	return &RegistryMCPB{Name: doc.Name, URL: p.Identifier, SHA256: p.FileSHA256}, nil
}

// MCPBPackageError says why the MCP Bundle of a registry entry cannot be
// fetched, with the rule (docs/rules.md).
type MCPBPackageError struct {
	Rule, Message string
}

func (e *MCPBPackageError) Error() string { return e.Message + " [" + e.Rule + "]" }
