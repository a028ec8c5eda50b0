// Package importer reads the manifests of other tools as berth bundles:
// MCP Bundles (.mcpb files and their directories, with the signature block
// mcpb sign appends), Claude Code plugins, and MCP Registry server.json
// documents. Each is a bundle.Format that converts the source's manifest
// into a berth.json, which package bundle then validates as any bundle
// (docs/manifest.md, "Importing other formats").
//
// A program makes bundle.Load read these formats by importing package
// bundle/formats, which registers them; this package only defines them.
package importer

import (
	"fmt"

	"github.com/berth-mcp/berth/bundle"
)

// MCPB is the MCP Bundle format: a .mcpb zip, or a directory, holding
// manifest.json.
var MCPB = &bundle.Format{
	Name:     bundle.FormatMCPB,
	Manifest: mcpbManifest,
	Title:    "an MCP Bundle manifest",
	Claims: func(data []byte) bool {
		return bundle.LooksLike(data, "manifest_version", "dxt_version")
	},
	ArchiveExt: ".mcpb",
	ZipTrailer: mcpbTrailer,
	File: func(source string, data []byte) (bool, error) {
		if bundle.LooksLike(data, "manifest_version", "dxt_version") {
			return false, fmt.Errorf("%s is an MCP Bundle manifest, not a bundle; point berth at the .mcpb file or the directory that holds manifest.json", source)
		}
		return false, nil
	},
	Convert: func(dir string) *bundle.Conversion { return convertMCPB(dir).result() },
}

// ClaudePlugin is the Claude Code plugin format: a directory holding
// .claude-plugin/plugin.json, and its MCP servers in .mcp.json or where
// plugin.json says.
var ClaudePlugin = &bundle.Format{
	Name:     bundle.FormatClaudePlugin,
	Manifest: claudeManifest,
	Title:    "a Claude Code plugin manifest",
	Hint: func(has func(rel string) bool) *bundle.Problem {
		if !has(claudeMCPFile) {
			return nil
		}
		return &bundle.Problem{Path: claudeManifest, Rule: bundle.RuleClaudeManifestMissing, Message: "this looks like a Claude Code plugin (it has .mcp.json), but it has no .claude-plugin/plugin.json; add one with at least \"name\" and \"version\", or write a berth.json (docs/manifest.md)"}
	},
	File: func(source string, data []byte) (bool, error) {
		if bundle.LooksLike(data, "mcpServers") {
			return false, fmt.Errorf("%s holds MCP servers of a Claude Code plugin, not a bundle; point berth at the plugin's directory (the one that holds .claude-plugin/plugin.json)", source)
		}
		return false, nil
	},
	Convert: func(dir string) *bundle.Conversion { return convertClaude(dir, nil).result() },
	ConvertWithout: func(dir string, without []string) (*bundle.Conversion, error) {
		c, err := convertClaudeWithout(dir, without)
		if err != nil {
			return nil, err
		}
		return c.result(), nil
	},
}

// ServerJSON is the MCP Registry's server.json, in every schema version
// the registry has published (RegistrySchemaVersions): a file of its own,
// or a directory holding server.json.
var ServerJSON = &bundle.Format{
	Name:     bundle.FormatMCPRegistry,
	Manifest: registryManifest,
	Title:    "an MCP Registry server.json",
	Claims: func(data []byte) bool {
		return bundle.LooksLike(data, "$schema", "packages", "remotes")
	},
	File:    func(string, []byte) (bool, error) { return true, nil },
	Convert: func(dir string) *bundle.Conversion { return convertRegistry(dir).result() },
}

// All are the formats of this package, in the order bundle/formats
// registers them.
func All() []*bundle.Format { return []*bundle.Format{MCPB, ClaudePlugin, ServerJSON} }
