package repo

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// Rules of berth catalog export-registry: why a plugin version is not
// written as a registry entry (docs/marketplace.md, "Readable by other
// clients"). Each skipped version is named with one of them.
const (
	RuleExportEntry         = "export-entry"
	RuleExportRevoked       = "export-revoked"
	RuleExportArchive       = "export-archive"
	RuleExportNativeTool    = "export-native-tool"
	RuleExportServers       = "export-servers"
	RuleExportLocalProgram  = "export-local-program"
	RuleExportPackageType   = "export-package-type"
	RuleExportRunnerOptions = "export-runner-options"
	RuleExportPlaceholder   = "export-placeholder"
	RuleExportBundleFile    = "export-bundle-file"
	RuleExportName          = "export-name"
	RuleExportMCPB          = "export-mcpb"
)

// BundleMetaKey is the key of the server.json's _meta under which an
// exported entry names the berth bundle it was made from.
const BundleMetaKey = "dev.berth/bundle"

// registryNameRe is the server.json name pattern (schema 2025-12-11).
var (
	registryNameRe = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
	namespaceRe    = regexp.MustCompile(`^[a-zA-Z0-9.-]+$`)
)

// Limits of the server.json schema the export keeps to.
const (
	maxRegistryName        = 200
	maxRegistryDescription = 100
	maxStatusMessage       = 500
)

// DefaultNamespace is the reverse-DNS namespace of the registry names
// export-registry derives for a catalog named catalogName, when the
// curator gives none: "dev.berth.catalog.<catalogName>".
func DefaultNamespace(catalogName string) string {
	return "dev.berth.catalog." + catalogName
}

// CheckNamespace checks a reverse-DNS namespace for registry names: the
// part of the server.json name pattern before '/'.
func CheckNamespace(ns string) error {
	if !namespaceRe.MatchString(ns) || !strings.Contains(ns, ".") || strings.HasPrefix(ns, ".") || strings.HasSuffix(ns, ".") || strings.Contains(ns, "..") {
		return fmt.Errorf("the namespace %q is not a reverse-DNS name (letters, digits, '.' and '-', with at least one '.', like com.acme or io.github.acme)", ns)
	}
	return nil
}

// ExportName is the registry name of a plugin in an export: ns + "/" +
// plugin, checked by CheckExportName.
func ExportName(ns, plugin string) (string, error) {
	if err := CheckNamespace(ns); err != nil {
		return "", err
	}
	n := ns + "/" + plugin
	if err := CheckExportName(n); err != nil {
		return "", err
	}
	return n, nil
}

// CheckExportName checks that name is a server.json name the export can
// write: the schema's pattern and length, and both parts usable as a
// path segment of a static host ("." and ".." are not, nor "index.json",
// the file name a document is written under).
func CheckExportName(name string) error {
	if !registryNameRe.MatchString(name) || len(name) < 3 || len(name) > maxRegistryName {
		return fmt.Errorf("%q is not an MCP Registry server name: a reverse-DNS namespace, '/', and a name (3-200 characters of letters, digits, '.', '_' and '-')", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, exportIndexFile) {
			return fmt.Errorf("the server name %q has the part %q, which a static web server cannot serve as a path segment of its own", name, seg)
		}
	}
	return nil
}

// exportIndexFile is the file each document of an export is written to,
// in the directory of its URL path.
const exportIndexFile = "index.json"

// ExportURLPath is the URL path under which a client asks for one
// document of an export, as the MCP Registry API spells it: api is "v0"
// or "v0.1"; with name "" it is the listing, with version "" the list of
// name's versions, else that version (or "latest"). The name is
// URL-encoded as one path segment (io.github.acme%2Fnotes), and so is
// the version (1.0.0%2Bbuild).
func ExportURLPath(api, name, version string) string {
	p := api + "/servers"
	if name == "" {
		return p
	}
	p += "/" + escapeSegment(name) + "/versions"
	if version != "" {
		p += "/" + escapeSegment(version)
	}
	return p
}

// escapeSegment URL-encodes s as one path segment, '/' and '+' included
// (the registry's own examples write %2F and %2B).
func escapeSegment(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
}

// ExportFile is the file, relative to the export's root and
// slash-separated, that a static web server maps the URL path p to: the
// path decoded as web servers decode it (so %2F becomes a directory
// separator), and index.json in that directory. It is an error for a
// path that does not decode to clean, relative segments.
func ExportFile(p string) (string, error) {
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", err
	}
	if dec == "" || path.Clean(dec) != dec || strings.HasPrefix(dec, "/") || strings.HasPrefix(dec, "../") || dec == ".." || strings.ContainsAny(dec, "\\\x00") {
		return "", fmt.Errorf("the URL path %q does not decode to a clean relative path", p)
	}
	for _, seg := range strings.Split(dec, "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, exportIndexFile) {
			return "", fmt.Errorf("the URL path %q has the segment %q", p, seg)
		}
	}
	return dec + "/" + exportIndexFile, nil
}

// serverDoc is the server.json of an exported entry (schema 2025-12-11).
type serverDoc struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Title       string         `json:"title,omitempty"`
	Version     string         `json:"version"`
	WebsiteURL  string         `json:"websiteUrl,omitempty"`
	Packages    []*registryPkg `json:"packages,omitempty"`
	Remotes     []*remoteDoc   `json:"remotes,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

type registryPkg struct {
	RegistryType         string       `json:"registryType"`
	Identifier           string       `json:"identifier"`
	Version              string       `json:"version,omitempty"`
	FileSHA256           string       `json:"fileSha256,omitempty"`
	RuntimeHint          string       `json:"runtimeHint,omitempty"`
	Transport            transportDoc `json:"transport"`
	PackageArguments     []*argDoc    `json:"packageArguments,omitempty"`
	EnvironmentVariables []*kvDoc     `json:"environmentVariables,omitempty"`
}

type transportDoc struct {
	Type string `json:"type"`
}

type argDoc struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type kvDoc struct {
	Name        string               `json:"name"`
	Description string               `json:"description,omitempty"`
	IsRequired  bool                 `json:"isRequired,omitempty"`
	IsSecret    bool                 `json:"isSecret,omitempty"`
	Value       string               `json:"value,omitempty"`
	Variables   map[string]*inputDoc `json:"variables,omitempty"`
}

type inputDoc struct {
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
}

type remoteDoc struct {
	Type    string   `json:"type"`
	URL     string   `json:"url"`
	Headers []*kvDoc `json:"headers,omitempty"`
}

// exportRefusal says why a bundle cannot be written as a registry entry.
type exportRefusal struct {
	rule, reason string
}

func refuse(rule, format string, args ...any) *exportRefusal {
	return &exportRefusal{rule: rule, reason: fmt.Sprintf(format, args...)}
}

// registrySourceName is the registry name the bundle was imported from,
// "" when it was not imported from an MCP Registry server.json.
func registrySourceName(m *bundle.Manifest) string {
	if m.ImportedFrom == nil || m.ImportedFrom.Format != bundle.FormatMCPRegistry {
		return ""
	}
	return m.ImportedFrom.SourceName
}

// serverOf inverts the server.json importer (importer.OpenServerJSON):
// the one server of m as a registry package or remote. A bundle whose
// server runs anything else (a program of the bundle or the host, a
// package berth fetches from a registry the MCP Registry has no type
// for), has several servers or native tools, or needs a berth
// placeholder or a file of the bundle, is refused with the reason.
func serverOf(m *bundle.Manifest) ([]*registryPkg, []*remoteDoc, *exportRefusal) {
	if len(m.NativeTools) > 0 {
		return nil, nil, refuse(RuleExportNativeTool, "it has native tools (%s), programs of the bundle that berth runs itself; a registry entry describes MCP servers only", strings.Join(sortedKeys(m.NativeTools), ", "))
	}
	switch len(m.MCPServers) {
	case 0:
		return nil, nil, refuse(RuleExportServers, "it has no MCP server")
	case 1:
	default:
		return nil, nil, refuse(RuleExportServers, "it runs %d servers together (%s); the packages and remotes of a registry entry are alternatives for one server, so the plugin is not one entry", len(m.MCPServers), strings.Join(sortedKeys(m.MCPServers), ", "))
	}
	name := sortedKeys(m.MCPServers)[0]
	s := m.MCPServers[name]
	if s.Remote != nil {
		r, bad := remoteOf(name, s.Remote)
		if bad != nil {
			return nil, nil, bad
		}
		return nil, []*remoteDoc{r}, nil
	}
	if s.Stdio == nil {
		return nil, nil, refuse(RuleExportServers, "its server %q is neither stdio nor remote", name)
	}
	p, bad := packageOf(name, s.Stdio)
	if bad != nil {
		return nil, nil, bad
	}
	return []*registryPkg{p}, nil, nil
}

func packageOf(server string, st *bundle.Stdio) (*registryPkg, *exportRefusal) {
	f, err := runtimefetch.Read(st.Command, st.Args)
	if err != nil {
		return nil, refuse(RuleExportLocalProgram, "its server %q runs %q in a form berth refuses (%v)", server, st.Command, err)
	}
	if f == nil {
		return nil, refuse(RuleExportLocalProgram, "its server %q runs the program %s, not a package from a registry; other clients have only the registry entry, not the bundle's files", server, st.Command)
	}
	if st.Cwd != "" {
		return nil, refuse(RuleExportPlaceholder, "its server %q runs in the directory %s; a registry package has no working directory", server, st.Cwd)
	}
	if f.Program != "" {
		return nil, refuse(RuleExportRunnerOptions, "its server %q runs the program %s of the package %s; a registry package runs the package's own entry point", server, f.Program, f.Package)
	}
	p := &registryPkg{Transport: transportDoc{Type: "stdio"}}
	var dockerEnv []string
	switch f.Ecosystem {
	case runtimefetch.EcosystemNPM:
		if f.Tool != "npx" || (len(f.Options) > 0 && !slices.Equal(f.Options, []string{"-y"})) {
			return nil, refuse(RuleExportRunnerOptions, "its server %q runs %s %s; an npm package of a registry entry is run as npx -y PACKAGE@VERSION", server, f.Tool, strings.Join(append(f.Options, f.Package), " "))
		}
		id, v, ok := cutVersion(f.Package, "@")
		if !ok || !bundle.IsStrictSemver(v) {
			return nil, refuse(RuleExportPackageType, "its server %q runs the npm package %s, not pinned to one version", server, f.Package)
		}
		p.RegistryType, p.Identifier, p.Version, p.RuntimeHint = "npm", id, v, "npx"
	case runtimefetch.EcosystemPyPI:
		hint := map[string]string{"uvx": "uvx", "pipx run": "pipx"}[f.Tool]
		if hint == "" || len(f.Options) > 0 {
			return nil, refuse(RuleExportRunnerOptions, "its server %q runs %s %s; a PyPI package of a registry entry is run as uvx (or pipx run) PACKAGE==VERSION", server, f.Tool, strings.Join(append(f.Options, f.Package), " "))
		}
		id, v, ok := strings.Cut(f.Package, "==")
		if !ok || strings.ContainsAny(id, "[]=<>~!; ") || !runtimefetch.IsExactPyPIVersion(v) {
			return nil, refuse(RuleExportPackageType, "its server %q runs the PyPI requirement %s, not one project at one exact version", server, f.Package)
		}
		p.RegistryType, p.Identifier, p.Version, p.RuntimeHint = "pypi", id, v, hint
	case runtimefetch.EcosystemOCI:
		env, ok := dockerOptions(f.Options)
		if f.Tool != "docker run" || !ok {
			return nil, refuse(RuleExportRunnerOptions, "its server %q runs %s %s; an image of a registry entry is run as docker run --rm -i [-e NAME]... IMAGE", server, f.Tool, strings.Join(append(f.Options, f.Package), " "))
		}
		dockerEnv = env
		p.RegistryType, p.Identifier, p.RuntimeHint = "oci", f.Package, "docker"
	default:
		return nil, refuse(RuleExportPackageType, "its server %q runs the %s package %s; the MCP Registry has no package type for %s (npm, pypi, oci and mcpb)", server, f.Ecosystem, f.Package, f.Ecosystem)
	}
	for _, a := range f.Args {
		if strings.Contains(a, "${") {
			return nil, refuse(RuleExportPlaceholder, "its server %q is given the argument %q, which berth fills in (${...}); other clients do not", server, a)
		}
		p.PackageArguments = append(p.PackageArguments, &argDoc{Type: "positional", Value: a})
	}
	for _, k := range sortedKeys(st.Env) {
		e := st.Env[k]
		if len(e.BundlePath) > 0 {
			return nil, refuse(RuleExportBundleFile, "its server %q is given the environment variable %s as a path inside the bundle; other clients do not have the bundle's files", server, k)
		}
		if f.Ecosystem == runtimefetch.EcosystemOCI && !slices.Contains(dockerEnv, k) {
			continue // docker passes the container no other variable
		}
		p.EnvironmentVariables = append(p.EnvironmentVariables, envInput(k, e.FromEnv))
	}
	for _, k := range dockerEnv {
		if _, ok := st.Env[k]; !ok {
			return nil, refuse(RuleExportRunnerOptions, "its server %q passes the container the variable %s (docker run -e %s), which berth does not set from the environment", server, k, k)
		}
	}
	return p, nil
}

// envInput is the registry's description of an environment variable the
// server reads, which berth takes from the operator's variable from.
func envInput(key, from string) *kvDoc {
	kv := &kvDoc{Name: key, IsRequired: true}
	if from != "" {
		kv.Description = "berth passes it from the variable " + from
	}
	if _, yes := bundle.LooksLikeCredential(key, ""); yes {
		kv.IsSecret = true
	}
	return kv
}

// dockerOptions reads the options of docker run the importer writes
// (--rm, -i, and -e NAME for each variable, in any order), returning the
// variables; ok is false for any other option.
func dockerOptions(opts []string) (env []string, ok bool) {
	var rm, i bool
	for k := 0; k < len(opts); k++ {
		switch o := opts[k]; {
		case o == "--rm":
			rm = true
		case o == "-i" || o == "--interactive":
			i = true
		case o == "-e" || o == "--env":
			if k+1 >= len(opts) || strings.Contains(opts[k+1], "=") {
				return nil, false
			}
			env = append(env, opts[k+1])
			k++
		default:
			return nil, false
		}
	}
	return env, rm && i
}

func remoteOf(server string, r *bundle.Remote) (*remoteDoc, *exportRefusal) {
	d := &remoteDoc{Type: r.Transport, URL: r.URL}
	switch r.Transport {
	case bundle.TransportStreamableHTTP, bundle.TransportSSE:
	default:
		return nil, refuse(RuleExportServers, "its server %q uses the transport %q", server, r.Transport)
	}
	if strings.Contains(r.URL, "${") || strings.ContainsAny(r.URL, "{} \t\r\n") {
		return nil, refuse(RuleExportPlaceholder, "its server %q has the URL %q, which is not one fixed URL", server, r.URL)
	}
	for _, h := range sortedKeys(r.Headers) {
		e := r.Headers[h]
		if len(e.BundlePath) > 0 {
			return nil, refuse(RuleExportBundleFile, "its server %q sends the header %s from a file of the bundle", server, h)
		}
		d.Headers = append(d.Headers, envInput(h, e.FromEnv))
	}
	if r.Auth != nil && r.Auth.BearerFromEnv != "" {
		d.Headers = append(d.Headers, &kvDoc{Name: "Authorization", Value: "Bearer {token}", IsRequired: true, IsSecret: true,
			Variables: map[string]*inputDoc{"token": {Description: "the bearer token (berth passes it from the variable " + r.Auth.BearerFromEnv + ")", IsRequired: true, IsSecret: true}}})
	}
	return d, nil
}

// cutVersion splits an npm spec "name@version" at its last sep (a scope's
// leading '@' is part of the name).
func cutVersion(spec, sep string) (name, version string, ok bool) {
	i := strings.LastIndex(spec, sep)
	if i <= 0 {
		return "", "", false
	}
	return spec[:i], spec[i+1:], true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// shorten cuts s to at most max characters, ending it with "…" when cut.
func shorten(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:max-1])) + "…"
}

// exportSchema is the $schema every exported server.json names.
const exportSchema = importer.RegistrySchema
