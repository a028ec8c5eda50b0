package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle/internal/lexical"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// The formats berth imports (docs/manifest.md, "Importing other formats").
const (
	FormatBerth        = "berth"
	FormatMCPB         = "mcpb"
	FormatClaudePlugin = "claude-plugin"
	FormatMCPRegistry  = "mcp-registry"
)

// ImportedFrom records where an imported bundle came from and what of its
// source is not in berth's terms. berth writes it into the berth.json it
// generates (berth import, and the tree that validate, review and trust
// read for a source of another format); the review shows it. Nothing in it
// changes what runs: the platforms and runtimes it names are only checked.
type ImportedFrom struct {
	// Format is "mcpb", "claude-plugin" or "mcp-registry".
	Format string `json:"format"`
	// FormatVersion is the source's format version: the MCPB
	// manifest_version ("0.3") or the server.json schema date
	// ("2025-12-11"); Claude Code plugins have none.
	FormatVersion string `json:"formatVersion,omitempty"`
	// FormatVersionInferred is set when the source did not name its
	// format version (a server.json with an empty or no $schema) and
	// berth read it as the one version it is valid under.
	FormatVersionInferred bool `json:"formatVersionInferred,omitempty"`
	// Manifest is the source's manifest file, relative to the bundle root:
	// "manifest.json", ".claude-plugin/plugin.json" or "server.json".
	Manifest string `json:"manifest"`
	// SourceName is the source's own name when it is not the bundle's
	// name (an MCP Registry name such as "io.github.acme/weather", a
	// plugin or MCPB name such as "Slack MCP Server"), which berth mapped
	// to its name grammar (docs/manifest.md, "Names of other formats").
	SourceName string `json:"sourceName,omitempty"`
	// ServerNames maps each server name berth mapped to its name grammar
	// to the source's own name ("google-calendar": "google calendar").
	ServerNames map[string]string `json:"serverNames,omitempty"`
	// DerivedVersion is set when the source has no version and berth
	// derived the bundle's (a versionless Claude Code plugin).
	DerivedVersion *DerivedVersion `json:"derivedVersion,omitempty"`
	// SourceVersion is the source's version as it wrote it, when berth
	// reads it as another: a server.json "v1.0.0" is version 1.0.0.
	SourceVersion string `json:"sourceVersion,omitempty"`
	// Platform is set when the import depended on the platform berth ran
	// on (MCPB platform_overrides, ${pathSeparator}): "darwin", "linux"
	// or "win32".
	Platform string `json:"platform,omitempty"`
	// Inputs are the values the source asks its user for, and what each
	// became in berth's terms.
	Inputs []ImportInput `json:"inputs,omitempty"`
	// Declared is the tool and prompt surface the source declares.
	Declared *Declared `json:"declared,omitempty"`
	// Compatibility is what the source says it needs from the host.
	Compatibility *Compatibility `json:"compatibility,omitempty"`
	// NotCarriedOver lists what of the source berth does not take over,
	// with the reason; none of it is run by berth.
	NotCarriedOver []NotCarried `json:"notCarriedOver,omitempty"`
	// Pinned lists the runtime fetches that the source left unpinned and
	// berth pinned when it imported it (berth import --pin), sorted by
	// server: what the source asked for and the exact result. It has no
	// time, so that two imports of one resolution give one digest; when
	// it was resolved is in the trust record.
	Pinned []PinnedFetch `json:"pinned,omitempty"`
}

// PinnedFetch is one runtime fetch berth pinned on import.
type PinnedFetch struct {
	// Server is the server of mcpServers whose command fetches it.
	Server string `json:"server"`
	// Package is the npm package, the PyPI project (with its extras) or
	// the image (without its tag).
	Package string `json:"package"`
	// Requested is what the source asked for: an npm dist-tag or range,
	// a PEP 440 specifier or "latest", an image tag; absent when the
	// source named no version.
	Requested string `json:"requested,omitempty"`
	// Resolved is the exact version, or the image's sha256 digest, that
	// the command now names.
	Resolved string `json:"resolved"`
}

// DerivedVersion says how berth derived the version of a source that has
// none: "0.0.0-berth." and the first 12 hex digits of ContentDigest
// (DerivedVersionOf; docs/manifest.md, "Versionless plugins").
type DerivedVersion struct {
	// ContentDigest is the digest of the canonical listing of the
	// generated bundle's files, its berth.json written with "version"
	// and this field blank (DerivedDigest).
	ContentDigest string `json:"contentDigest"`
}

// ImportInput is one value the source asks its user for: an MCPB
// user_config option, a Claude Code ${VAR}, a server.json argument, header
// or environment variable.
type ImportInput struct {
	// Name is the input as the source names it: "user_config.api_key",
	// "${DB_URL}", "API_KEY".
	Name string `json:"name"`
	// Type is the source's type of the value: string, number, boolean,
	// directory, file, filepath.
	Type        string `json:"type,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	// Sensitive is set for MCPB sensitive options and registry secrets.
	Sensitive bool `json:"sensitive,omitempty"`
	// Default is the source's default as text. It is never kept for a
	// sensitive input, and berth never uses it as a secret.
	Default string `json:"default,omitempty"`
	// Placeholder is the source's example of a value, shown when berth
	// asks for it; it is never used as the value.
	Placeholder string `json:"placeholder,omitempty"`
	// Choices are the only values the source allows, when it lists them.
	Choices []string `json:"choices,omitempty"`
	// FromEnv is the host environment variable berth reads the value
	// from, when it became an environment source. For a Confirm input it
	// is only the name under which the operator's confirmed value is kept
	// (confirm.go): berth never reads it from the environment.
	FromEnv string `json:"fromEnv,omitempty"`
	// Confirm is set for a value the operator confirms when installing or
	// enabling the plugin: a constant the source fixes (NODE_ENV=production,
	// kept in Default) or a non-sensitive option it asks for. The
	// servers receive the confirmed value, which berth keeps in its
	// config, never in the bundle, and never the environment's $FromEnv.
	Confirm bool `json:"confirm,omitempty"`
	// Becomes says, in words, what the input is in berth's terms.
	Becomes string `json:"becomes"`
}

// Declared is the tool and prompt surface a source declares. The live
// surface is what the server lists; berth pins that at enable time.
type Declared struct {
	Tools            []DeclaredItem `json:"tools,omitempty"`
	ToolsGenerated   bool           `json:"toolsGenerated,omitempty"`
	Prompts          []DeclaredItem `json:"prompts,omitempty"`
	PromptsGenerated bool           `json:"promptsGenerated,omitempty"`
}

// DeclaredItem is one declared tool or prompt.
type DeclaredItem struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Compatibility is what a source needs from the host: berth checks the
// platforms and runtimes on the machine it runs on.
type Compatibility struct {
	// Platforms are "darwin", "linux" and "win32".
	Platforms []string `json:"platforms,omitempty"`
	// Runtimes maps "node" and "python" to a version range.
	Runtimes map[string]string `json:"runtimes,omitempty"`
}

// NotCarried is a part of the source that berth does not take over.
type NotCarried struct {
	// Field locates it in the source: "manifest.json: icon",
	// "hooks/hooks.json".
	Field string `json:"field"`
	// Kind is what it is: metadata, command, agent, skill, hook,
	// output-style, lsp-server, monitor, package, input, unknown-field
	// (a key an MCPB manifest version does not define), ...
	Kind string `json:"kind"`
	// Name names it when it has a name (a command, a hook event, the URL
	// of an MCP Bundle package).
	Name string `json:"name,omitempty"`
	// SHA256 is the digest of an MCP Bundle package (server.json
	// fileSha256): the only way berth fetches one.
	SHA256 string `json:"sha256,omitempty"`
	// Reason says why berth does not carry it over.
	Reason string `json:"reason"`
}

// EncodeManifest writes m in berth's canonical encoding: encoding/json of
// the Manifest type (fields in the order of the Go type, map keys sorted),
// two-space indentation, no HTML escaping, and a final newline. berth
// import writes generated manifests this way, so the same source always
// gives the same bytes and so the same digest.
func EncodeManifest(m *Manifest) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		panic(err) // plain data; cannot fail
	}
	return b.Bytes()
}

// goosPlatform is the running platform as MCPB names platforms.
func goosPlatform() string {
	if runtime.GOOS == "windows" {
		return "win32"
	}
	return runtime.GOOS
}

// knownFormats are the formats of package bundle/formats; a berth.json
// imported from one of them, or from a Format that Load reads, is valid
// whether or not the program reads sources of that format.
var knownFormats = []string{FormatMCPB, FormatClaudePlugin, FormatMCPRegistry}

// importedFrom checks the provenance of a berth.json: a known format, a
// manifest file that is in the bundle, and the compatibility of the
// machine berth runs on.
func (v *validator) importedFrom(imp *ImportedFrom) {
	if imp == nil {
		return
	}
	const p = "importedFrom"
	known := slices.Clone(knownFormats)
	for _, f := range v.formats {
		if !slices.Contains(known, f.Name) {
			known = append(known, f.Name)
		}
	}
	if !slices.Contains(known, imp.Format) {
		v.ps.add(p+".format", RuleImportedFrom, "format %q is not one that berth imports (%s)", imp.Format, strings.Join(known, ", "))
	}
	switch {
	case imp.Manifest == "":
		v.ps.add(p+".manifest", RuleImportedFrom, "manifest is required: the source manifest file the bundle was imported from")
	case !lexical.CleanRel(imp.Manifest):
		v.ps.add(p+".manifest", RuleImportedFrom, "manifest %q is not a clean relative path inside the bundle", imp.Manifest)
	case v.tree != nil && v.tree.Listing != nil:
		if e, ok := v.tree.Listing.Lookup(imp.Manifest); !ok || e.Mode == ModeSymlink {
			v.ps.add(p+".manifest", RuleImportedFrom, "%q, the manifest the bundle was imported from, is not a regular file of the bundle; keep it beside berth.json", imp.Manifest)
		}
	}
	if c := imp.Compatibility; c != nil {
		v.compatibility(p+".compatibility", c)
	}
}

// pinned checks each pinned fetch against the server it names: the
// server's command fetches exactly the package the source asked for,
// pinned to the result, in the form berth writes.
func (v *validator) pinned(m *Manifest) {
	if m.ImportedFrom == nil {
		return
	}
	const p = "importedFrom.pinned"
	list := m.ImportedFrom.Pinned
	seen := map[string]bool{}
	for i, pf := range list {
		ep := fmt.Sprintf("%s[%d]", p, i)
		if i > 0 && list[i-1].Server >= pf.Server {
			v.ps.add(ep+".server", RuleImportedFrom, "pinned fetches are sorted by server, one per server, as berth import writes them; %q follows %q", pf.Server, list[i-1].Server)
		}
		if seen[pf.Server] {
			continue
		}
		seen[pf.Server] = true
		s, ok := m.MCPServers[pf.Server]
		if !ok || s == nil || s.Stdio == nil {
			v.ps.add(ep+".server", RuleImportedFrom, "pinned names the server %q, which is not a stdio server of mcpServers", pf.Server)
			continue
		}
		f, err := runtimefetch.Read(s.Stdio.Command, s.Stdio.Args)
		if err != nil || f == nil {
			v.ps.add(ep+".server", RuleImportedFrom, "pinned names the server %q, whose command fetches no pinned package", pf.Server)
			continue
		}
		if err := runtimefetch.CheckPinned(f, pf.Package, pf.Requested, pf.Resolved); err != nil {
			v.ps.add(ep, RuleImportedFrom, "server %q: %v", pf.Server, err)
		}
	}
}

// compatibility checks the platforms and runtimes a source needs against
// the machine berth runs on.
func (v *validator) compatibility(p string, c *Compatibility) {
	if len(c.Platforms) > 0 {
		for i, pl := range c.Platforms {
			if !slices.Contains([]string{"darwin", "linux", "win32"}, pl) {
				v.ps.add(fmt.Sprintf("%s.platforms[%d]", p, i), RuleMCPBWrongType, "platform %q is not darwin, linux or win32", pl)
			}
		}
		if here := goosPlatform(); !slices.Contains(c.Platforms, here) {
			v.ps.add(p+".platforms", RuleMCPBPlatform, "the bundle runs only on %s, and this machine is %s; use it on one of those platforms, or ask the publisher for a build for %s", strings.Join(c.Platforms, ", "), here, here)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Runtimes)) {
		rp := strictjson.JoinPath(p+".runtimes", name)
		if err := v.probe.check(name, c.Runtimes[name]); err != nil {
			v.ps.add(rp, RuleMCPBRuntime, "%v", err)
		}
	}
}
