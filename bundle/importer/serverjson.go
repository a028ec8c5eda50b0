package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// RegistrySchema is the newest server.json schema berth reads; it reads
// every published version (RegistrySchemaVersions).
const RegistrySchema = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

var (
	registryNameRe = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)
	sha256HexRe    = regexp.MustCompile(`^[a-f0-9]{64}$`)
	ociDigestRe    = regexp.MustCompile(`@sha256:[a-f0-9]{64}$`)
	templateRe     = regexp.MustCompile(`\{([^{}]+)\}`)
	nonAlnumRunRe  = regexp.MustCompile(`[^a-z0-9]+`)
	registryFields = struct {
		root, repo, icon, pkg, transport, remote, arg, kv, input []string
	}{
		root:      []string{"$schema", "name", "description", "version", "title", "websiteUrl", "repository", "icons", "packages", "remotes", "_meta"},
		repo:      []string{"url", "source", "id", "subfolder"},
		icon:      []string{"src", "mimeType", "sizes", "theme"},
		pkg:       []string{"registryType", "identifier", "transport", "version", "registryBaseUrl", "fileSha256", "runtimeHint", "runtimeArguments", "packageArguments", "environmentVariables"},
		transport: []string{"type", "url", "headers"},
		remote:    []string{"type", "url", "headers", "variables"},
		arg:       []string{"type", "name", "valueHint", "isRepeated", "description", "isRequired", "format", "value", "isSecret", "default", "placeholder", "choices", "variables"},
		kv:        []string{"name", "description", "isRequired", "format", "value", "isSecret", "default", "placeholder", "choices", "variables"},
		input:     []string{"description", "isRequired", "format", "value", "isSecret", "default", "placeholder", "choices"},
	}
	defaultRegistries = map[string]string{"npm": "https://registry.npmjs.org", "pypi": "https://pypi.org"}
)

// RegistryPluginName maps an MCP Registry server name to a berth plugin
// name by foreignName, the one rule berth uses everywhere for names of
// other formats (the importers, and registry catalogs in show, search and
// install): lower-cased, every run of
// characters other than a-z and 0-9 replaced with one '-', '-' trimmed
// from both ends; a result longer than 64 characters keeps its first 55
// (then '-' trimmed) and gets '-' and 8 hex digits of the SHA-256 of the
// registry name. "io.github.acme/weather" becomes "io-github-acme-weather".
// A name that is not a registry name (a reverse-DNS namespace, '/', and a
// name: 3 to 200 characters of letters, digits, '.', '_' and '-') is an
// error. Different registry names can map to the same plugin name
// ("io.github.acme/weather" and "io.github/acme.weather"); a registry
// catalog skips every entry whose mapped name collides with another's.
func RegistryPluginName(registryName string) (string, error) {
	if !registryNameRe.MatchString(registryName) || len(registryName) < 3 || len(registryName) > 200 {
		return "", fmt.Errorf("%q is not an MCP Registry server name: a reverse-DNS namespace, '/', and a name (3-200 characters of letters, digits, '.', '_' and '-'), like \"io.github.acme/weather\"", registryName)
	}
	n := foreignName(registryName, maxPluginName)
	if n == "" {
		return "", fmt.Errorf("the MCP Registry server name %q has no letter or digit to make a berth plugin name of", registryName)
	}
	return n, nil
}

// OpenServerJSON opens the bundle that an MCP Registry server.json
// describes, as Open does for a server.json file: data is the server.json
// document (for example one server object of the registry API's
// /v0.1/servers response), name says where it came from in messages. The
// bundle's tree is server.json and the generated berth.json; its digest
// is what `berth import` of the same document writes. The caller must
// Close the bundle.
func OpenServerJSON(ctx context.Context, name string, data []byte, opts *bundle.Options) (*bundle.Bundle, error) {
	o := bundle.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Formats == nil {
		// The document is read as the file would be by a program that
		// registered these formats, whether or not this one did.
		o.Formats = All()
	}
	opts = &o
	dir, err := os.MkdirTemp(opts.TempDir, "berth-serverjson-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, registryManifest)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return nil, err
	}
	b, err := bundle.Open(ctx, file, opts)
	if b != nil {
		b.Source = name
	}
	if ie, ok := err.(*bundle.InvalidError); ok {
		ie.Source = name
	}
	return b, err
}

type registryImport struct {
	c       *conversion
	d       *doc
	v       *registryVersion
	name    string
	imp     *bundle.ImportedFrom
	m       *bundle.Manifest
	counts  map[string]int
	envSeen map[string]string
}

func convertRegistry(dir string) *conversion {
	c, d, top, ok := readTop(dir, registryManifest, registryRules)
	if !ok {
		return c
	}
	return registryTop(c, d, top)
}

// convertRegistryData reads the server.json document data as
// convertRegistry reads the file server.json.
func convertRegistryData(data []byte) *conversion {
	c := newConversion()
	d := &doc{file: registryManifest, rules: registryRules, ps: &c.ps}
	root := d.parse(data)
	if root == nil {
		return c
	}
	if root.Kind != strictjson.Object {
		d.add("", d.rules.syntax, "%s must hold a JSON object, not %s", registryManifest, root.Kind)
		return c
	}
	top, ok := d.object(root, "")
	if !ok {
		return c
	}
	return registryTop(c, d, top)
}

// registryTop reads the document's root top by the schema version its
// $schema names (or the one it is inferred to be).
func registryTop(c *conversion, d *doc, top obj) *conversion {
	n, has := top.keys["$schema"]
	switch {
	case !has:
		return inferRegistry(d.file, top.n, "absent")
	case n.Kind != strictjson.String:
		d.wrong("$schema", "a string", n)
		return c
	case n.Str == "":
		return inferRegistry(d.file, top.n, "empty")
	}
	v := registryVersionOf(n.Str)
	if v == nil {
		schemaProblem(d, n.Str)
		return c
	}
	return readRegistry(d.file, top.n, v)
}

// readRegistry reads the server.json document root as the schema
// version v.
func readRegistry(file string, root *strictjson.Node, v *registryVersion) *conversion {
	c := newConversion()
	d := &doc{file: file, rules: registryRules, ps: &c.ps}
	x := &registryImport{c: c, d: d, v: v, counts: map[string]int{}, envSeen: map[string]string{}}
	x.imp = &bundle.ImportedFrom{Format: bundle.FormatMCPRegistry, FormatVersion: v.date, Manifest: registryManifest}
	x.m = &bundle.Manifest{ManifestVersion: 1, ImportedFrom: x.imp}
	top, ok := x.object(root, "", kindRoot)
	if !ok {
		return c
	}
	x.top(top)
	if elems, ok := top.array("packages"); ok {
		for i, e := range elems {
			x.pkg(index("packages", i), e)
		}
		x.mcpbChoice(top, len(elems))
	}
	if elems, ok := top.array("remotes"); ok {
		for i, e := range elems {
			x.remote(index("remotes", i), e)
		}
	}
	c.at("importedFrom", d.loc(""))
	c.at("mcpServers", d.loc(""))
	c.manifest = x.m
	return c
}

func (x *registryImport) top(top obj) {
	c, d, m := x.c, x.d, x.m
	if s, ok := top.str("name", true); ok {
		if !registryNameRe.MatchString(s) || len(s) < 3 || len(s) > 200 {
			d.add("name", bundle.RuleRegistryWrongType, "name %q must be a reverse-DNS namespace, '/', and a name (3-200 characters of letters, digits, '.', '_' and '-'), like \"io.github.acme/weather\"", s)
		}
		x.name, _ = RegistryPluginName(s) // a bad name was reported above
		m.Name = x.name
		x.imp.SourceName = s
	}
	c.at("name", d.loc("name"))
	if c.carry(top, "version", true, &m.Version) {
		// The registry accepts a "v" before a semantic version
		// ("v1.0.0"); berth's version is the semantic version, and the
		// review shows what the source wrote.
		if rest, ok := strings.CutPrefix(m.Version, "v"); ok && bundle.IsStrictSemver(rest) {
			x.imp.SourceVersion, m.Version = m.Version, rest
		}
	}
	c.carry(top, "description", true, &m.Description)
	if s, ok := top.str("status", false); ok {
		x.notCarried(d.loc("status"), "metadata", s, "the registry keeps a server's status; berth reads it from the registry's listing, not from the file")
	}
	if t, ok := top.str("title", false); ok {
		x.notCarried(d.loc("title"), "metadata", t, "berth shows the plugin's name and description")
	}
	if u, ok := top.str("websiteUrl", false); ok {
		if isHTTPS(u) {
			m.Homepage = u
			c.at("homepage", d.loc(top.at("websiteUrl")))
		} else {
			x.notCarried(d.loc(top.at("websiteUrl")), "metadata", "", "berth shows only an https:// homepage")
		}
	}
	if n, ok := top.keys["repository"]; ok {
		// The registry writes "repository": {} for a server without
		// one; a repository that is given has its url and source.
		if o, ok := x.object(n, "repository", kindRepo); ok && len(o.n.Keys) > 0 {
			o.str("url", true)
			o.str("source", true)
			o.str("id", false)
			o.str("subfolder", false)
		}
		x.notCarried(d.loc("repository"), "metadata", "", "berth's manifest has no repository field")
	}
	if elems, ok := top.array("icons"); ok {
		for i, e := range elems {
			if o, ok := x.object(e, index("icons", i), kindIcon); ok {
				o.str("src", true)
				o.str("mimeType", false)
				o.strs("sizes")
				o.str("theme", false)
			}
		}
		x.notCarried(d.loc("icons"), "metadata", "", "berth shows no icons")
	}
	if n, ok := top.keys["_meta"]; ok {
		d.object(n, "_meta")
		x.notCarried(d.loc("_meta"), "metadata", "", "publisher data; berth reads none")
	}
}

func (x *registryImport) notCarried(field, kind, name, reason string) {
	x.imp.NotCarriedOver = append(x.imp.NotCarriedOver, bundle.NotCarried{Field: field, Kind: kind, Name: name, Reason: reason})
}

// serverName names the n-th server of a kind: "npm", "npm-2", ...
func (x *registryImport) serverName(kind string) string {
	x.counts[kind]++
	if n := x.counts[kind]; n > 1 {
		return kind + "-" + strconv.Itoa(n)
	}
	return kind
}

func (x *registryImport) pkg(p string, n *strictjson.Node) {
	d := x.d
	o, ok := x.object(n, p, kindPackage)
	if !ok {
		return
	}
	typ, _ := o.str("registryType", true)
	id, hasID := o.str("identifier", true)
	version, hasVersion := o.str("version", false)
	if t, ok := o.keys["transport"]; ok {
		if to, ok := x.object(t, o.at("transport"), kindTransport); ok {
			tt, _ := to.str("type", true)
			switch tt {
			case "stdio":
				if to.has("url") || to.has("headers") {
					d.add(to.at("type"), bundle.RuleRegistryWrongType, "a stdio transport has no url or headers")
				}
			case "streamable-http", "sse":
				d.add(to.at("type"), bundle.RuleRegistryTransport, "a package that serves %s on a local port cannot be carried over: berth runs packages over stdio; use the package's stdio mode, or publish the endpoint under remotes", tt)
				return
			case "":
			default:
				d.add(to.at("type"), bundle.RuleRegistryWrongType, "transport type %q is not stdio, streamable-http or sse", tt)
				return
			}
		}
	} else {
		d.add(o.at("transport"), bundle.RuleRegistryRequiredField, "transport is required: {\"type\": \"stdio\"}")
	}
	sha, hasSha := o.str("fileSha256", false)
	if hasSha && !sha256HexRe.MatchString(sha) {
		d.add(o.at("fileSha256"), bundle.RuleRegistryWrongType, "fileSha256 must be 64 lower-case hex digits")
	}
	if base, ok := o.str("registryBaseUrl", false); ok {
		def, known := defaultRegistries[typ]
		if !known || strings.TrimRight(base, "/") != def {
			d.add(o.at("registryBaseUrl"), bundle.RuleRegistryPackageSource, "registryBaseUrl %q is not the default registry of %s packages; berth fetches %s", base, typ, registrySourceHint(typ))
			return
		}
	}
	hint, _ := o.str("runtimeHint", false)
	if typ == "mcpb" {
		if !hasSha || !sha256HexRe.MatchString(sha) {
			if !hasSha {
				d.add(o.at("fileSha256"), bundle.RuleRegistryMCPBDigest, "an mcpb package needs fileSha256, the SHA-256 of the .mcpb file: berth fetches MCP Bundles only by digest")
			}
			return
		}
		x.imp.NotCarriedOver = append(x.imp.NotCarriedOver, bundle.NotCarried{Field: d.loc(p), Kind: "mcpb-package", Name: id, SHA256: sha,
			Reason: "an MCP Bundle is a bundle of its own: berth install of a registry entry whose only package is one MCP Bundle downloads it and checks its SHA-256; beside other packages or remotes, download it, check that its SHA-256 is " + sha + ", and import it (berth import FILE.mcpb); berth fetches nothing while it validates"})
		return
	}
	var runner string
	switch typ {
	case "npm":
		runner = "npx"
	case "pypi":
		// uvx, unless the publisher names pipx: runtimeArguments are
		// written for the runtime the hint names (docs/manifest.md).
		runner = "uvx"
		if hint == "pipx" {
			runner = "pipx"
		}
	case "oci":
		runner = "docker"
	case "":
		return
	default:
		d.add(o.at("registryType"), bundle.RuleRegistryPackageType, "berth has no pinned runner for %s packages (it runs npm with npx, pypi with uvx or pipx run, oci with docker by digest, and mcpb as bundles); use another package of the server, or its remote", typ)
		return
	}
	if !hasID {
		return
	}
	if hint != "" && hint != runner {
		x.notCarried(d.loc(o.at("runtimeHint")), "runtime-hint", hint, "berth runs "+typ+" packages with "+runner+", pinned"+hintNote(typ))
	}
	var spec string
	switch typ {
	case "npm", "pypi":
		pinnedOK := hasVersion && version != "latest" && ((typ == "npm" && bundle.IsStrictSemver(version)) || (typ == "pypi" && runtimefetch.IsExactPyPIVersion(version)))
		if !pinnedOK {
			what := "has no version"
			if hasVersion {
				what = fmt.Sprintf("has the version %q, which is not one exact version", version)
			}
			// A request berth can pin (no version, "latest", a range) is
			// still built, so that berth import --pin can pin it; the
			// problem stands unless it does (bundle.Options.Pin).
			spec = runtimefetch.PinnableSpec(typ, id, version)
			d.add(o.at("version"), bundle.RuleRegistryUnpinned, "the %s package %s %s; berth runs a package fetched at start only when it is pinned, so that what runs is what was reviewed%s", typ, id, what, pinHint(spec))
			if spec == "" {
				return
			}
		} else if typ == "npm" {
			spec = id + "@" + version
		} else {
			spec = id + "==" + version
		}
	case "oci":
		spec = id
		if !ociDigestRe.MatchString(id) {
			spec = runtimefetch.PinnableSpec(typ, id, "")
			d.add(o.at("identifier"), bundle.RuleRegistryOCIDigest, "the image %q is named by tag only; a tag can be moved to other bytes, so berth runs an image only by digest: write it as NAME@sha256:<64 hex digits>%s", id, pinHint(spec))
			if spec == "" {
				return
			}
		}
	}
	name := x.serverName(typ)
	sp := strictjson.JoinPath("mcpServers", name)
	x.c.at(sp, d.loc(p))
	s := &bundle.Server{Description: fmt.Sprintf("the %s package %s", typ, spec), Stdio: &bundle.Stdio{Command: runner}}
	x.m.MCPServers = ensureServers(x.m.MCPServers)
	x.m.MCPServers[name] = s
	x.c.at(sp+".stdio", d.loc(p))
	x.c.at(sp+".stdio.command", d.loc(o.at("registryType")))
	var argv []string
	var locs []string
	add := func(loc string, vals ...string) {
		for _, v := range vals {
			argv = append(argv, v)
			locs = append(locs, loc)
		}
	}
	switch {
	case typ == "npm":
		add(d.loc(o.at("identifier")), "-y")
	case runner == "pipx":
		add(d.loc(o.at("runtimeHint")), "run")
	case typ == "oci":
		add(d.loc(o.at("registryType")), "run", "--rm", "-i")
	}
	x.args(o, "runtimeArguments", name, add)
	var envNames []string
	if elems, ok := o.array("environmentVariables"); ok {
		for i, e := range elems {
			ep := index(o.at("environmentVariables"), i)
			key, from, ok := x.keyValue(ep, e, fmt.Sprintf("the environment variable %%s of the server %q", name), false)
			if !ok {
				continue
			}
			x.c.fromEnv(&s.Stdio.Env, sp+".stdio.env", key, from, d.loc(ep))
			envNames = append(envNames, key)
		}
	}
	if typ == "oci" {
		// docker passes a variable into the container only when asked;
		// "-e NAME" takes the value from docker's environment, so no
		// value reaches argv.
		for _, k := range envNames {
			add(d.loc(o.at("environmentVariables")), "-e", k)
		}
	}
	add(d.loc(o.at("identifier")), spec)
	x.args(o, "packageArguments", name, add)
	s.Stdio.Args = argv
	for i, l := range locs {
		x.c.at(index(sp+".stdio.args", i), l)
	}
	// A problem of the command as a whole (a runtime-fetch form berth
	// refuses) comes from the package entry: its runtimeArguments, its
	// environment variables (-e NAME) or its identifier.
	x.c.at(sp+".stdio.args", d.loc(p))
}

// mcpbChoice refuses a document whose n packages are all MCP Bundles,
// with no remote, when there are several: they are alternatives (often
// one per platform) and berth does not choose (importer.RegistryMCPBPackage
// is the one-bundle case).
func (x *registryImport) mcpbChoice(top obj, n int) {
	if n < 2 || x.counts["remote"] > 0 || top.has("remotes") {
		return
	}
	for _, it := range x.imp.NotCarriedOver {
		if it.Kind == "mcpb-package" {
			n--
		}
	}
	if n == 0 && len(x.m.MCPServers) == 0 {
		x.d.add("packages", bundle.RuleRegistryMCPBChoice, "every package is an MCP Bundle (registryType mcpb); they are the publisher's alternatives (often one per platform), and berth does not choose between them: download the one for this machine, check its fileSha256, and run berth import FILE.mcpb")
	}
}

// hintNote says which runtimeHint changes the runner of a package type.
func hintNote(typ string) string {
	if typ == "pypi" {
		return " (pipx run when the runtimeHint is pipx)"
	}
	return ""
}

func registrySourceHint(typ string) string {
	if def, ok := defaultRegistries[typ]; ok {
		return "them only from " + def
	}
	return "the image named in identifier, by digest"
}

func ensureServers(m map[string]*bundle.Server) map[string]*bundle.Server {
	if m == nil {
		return map[string]*bundle.Server{}
	}
	return m
}

// args maps runtimeArguments or packageArguments to argv items.
func (x *registryImport) args(o obj, key, server string, add func(loc string, vals ...string)) {
	d := x.d
	elems, ok := o.array(key)
	if !ok {
		return
	}
	for i, e := range elems {
		p := index(o.at(key), i)
		a, ok := x.object(e, p, kindArg)
		if !ok {
			continue
		}
		typ, _ := a.str("type", true)
		flag, hasFlag := a.str("name", false)
		hint, _ := a.str("valueHint", false)
		in := x.input(a, p)
		label := hint
		switch typ {
		case "named":
			if !hasFlag {
				d.add(a.at("name"), bundle.RuleRegistryRequiredField, "a named argument needs its flag name, such as \"--port\"")
				continue
			}
			label = flag
		case "positional":
			if !a.has("value") && !a.has("valueHint") {
				d.add(p, bundle.RuleRegistryRequiredField, "a positional argument needs value or valueHint")
				continue
			}
			if label == "" {
				label = fmt.Sprintf("positional argument %d", i+1)
			}
		case "":
			continue
		default:
			d.add(a.at("type"), bundle.RuleRegistryWrongType, "argument type %q is not positional or named", typ)
			continue
		}
		in.Name = inputName(p, label)
		a.boolean("isRepeated")
		value, hasValue := a.str("value", false)
		vars := x.variables(a, p)
		switch {
		case in.Sensitive:
			d.add(p, bundle.RuleRegistrySecretArgv, "the argument %s is marked isSecret, and a server's command line is visible to every local user; berth passes secrets only through the environment: ask the publisher for an environment variable instead", label)
			continue
		case hasValue && hasTemplate(value, vars):
			d.add(a.at("value"), bundle.RuleRegistryArgumentInput, "the value of %s takes {variables} the user fills in, and berth has no per-user setting for arguments; fix the value, or pass the setting in an environment variable", label)
			continue
		case hasValue:
			in.Becomes = fmt.Sprintf("the fixed argument %q of the server %q", value, server)
		case in.Default != "":
			value, hasValue = in.Default, true
			in.Becomes = fmt.Sprintf("the fixed argument %q of the server %q (its default; berth has no per-user setting for arguments)", value, server)
		case in.Required:
			d.add(p, bundle.RuleRegistryArgumentInput, "the argument %s is required and has no value or default; berth has no per-user setting for arguments, so it cannot ask for one: give it a default, or pass the setting in an environment variable", label)
			continue
		default:
			in.Becomes = "left out: it is optional, and berth has no per-user setting for arguments"
			x.imp.Inputs = append(x.imp.Inputs, in)
			continue
		}
		x.imp.Inputs = append(x.imp.Inputs, in)
		if typ == "named" {
			add(d.loc(p), flag, value)
		} else {
			add(d.loc(p), value)
		}
	}
}

// input reads the Input fields shown in the review.
func (x *registryImport) input(a obj, p string) bundle.ImportInput {
	in := bundle.ImportInput{}
	in.Description, _ = a.str("description", false)
	in.Required, _ = a.boolean("isRequired")
	in.Sensitive, _ = a.boolean("isSecret")
	if f, ok := a.str("format", false); ok {
		switch f {
		case "string", "number", "boolean", "filepath":
			in.Type = f
		default:
			x.d.add(a.at("format"), bundle.RuleRegistryWrongType, "format %q is not string, number, boolean or filepath", f)
		}
	}
	if def, ok := a.str("default", false); ok && !in.Sensitive {
		in.Default = def
	}
	a.str("placeholder", false)
	a.strs("choices")
	return in
}

// variables reads the variables of an input.
func (x *registryImport) variables(a obj, p string) map[string]*bundle.ImportInput {
	out := map[string]*bundle.ImportInput{}
	n, ok := a.keys["variables"]
	if !ok {
		return out
	}
	vo, ok := x.d.object(n, a.at("variables"))
	if !ok {
		return out
	}
	keys, vals := vo.members()
	for i, k := range keys {
		in := &bundle.ImportInput{}
		if io, ok := x.object(vals[i], strictjson.JoinPath(a.at("variables"), k), kindInput); ok {
			*in = x.input(io, "")
			io.str("value", false)
		}
		out[k] = in
	}
	return out
}

// undeclaredPlaceholders returns the {placeholders} of s that name no
// variable of vars, as written ("{api_key}").
func undeclaredPlaceholders(s string, vars map[string]*bundle.ImportInput) []string {
	var out []string
	for _, m := range templateRe.FindAllStringSubmatch(s, -1) {
		if vars[m[1]] == nil && !slices.Contains(out, m[0]) {
			out = append(out, m[0])
		}
	}
	return out
}

// declaresVariable reports whether the object n has a variables object
// with the key name.
func declaresVariable(n *strictjson.Node, name string) bool {
	for i, k := range n.Keys {
		if k != "variables" || n.Values[i].Kind != strictjson.Object {
			continue
		}
		return slices.Contains(n.Values[i].Keys, name)
	}
	return false
}

func hasTemplate(s string, vars map[string]*bundle.ImportInput) bool {
	for _, m := range templateRe.FindAllStringSubmatch(s, -1) {
		if vars[m[1]] != nil {
			return true
		}
	}
	return false
}

// inputName names an input by where it is and what it is called:
// "packages[0] WEATHER_API_KEY", "remotes[0] Authorization".
func inputName(p, name string) string {
	if i := strings.Index(p, "]"); i >= 0 {
		p = p[:i+1]
	}
	return p + " " + name
}

// keyValue maps an environment variable or header: with no value, or a
// value that is exactly one {variable}, it becomes an environment source
// <BUNDLE>_<NAME>; any other value is a literal berth cannot carry over.
func (x *registryImport) keyValue(p string, n *strictjson.Node, use string, header bool) (key, from string, ok bool) {
	d := x.d
	kv, ok := x.object(n, p, kindKeyValue)
	if !ok {
		return "", "", false
	}
	key, ok = kv.str("name", true)
	if !ok {
		return "", "", false
	}
	in := x.input(kv, p)
	in.Name = inputName(p, key)
	vars := x.variables(kv, p)
	value, hasValue := kv.str("value", false)
	src := key
	if hasValue {
		m := templateRe.FindStringSubmatch(value)
		if m == nil || m[0] != value || vars[m[1]] == nil {
			what := "environment variable"
			if header {
				what = "header"
			}
			if undeclared := undeclaredPlaceholders(value, vars); len(undeclared) > 0 {
				which := "the placeholder " + undeclared[0] + " in its value and declares no variable of that name"
				if len(undeclared) > 1 {
					which = "the placeholders " + strings.Join(undeclared, ", ") + " in its value and declares no variables of those names"
				}
				d.add(kv.at("value"), bundle.RuleRegistryLiteralValue, "the %s %s has %s, so nothing says what the user fills in (the rest of the value is not shown: it may be a secret); declare each under variables, or leave value out (the user supplies the whole value)", what, key, which)
				return "", "", false
			}
			d.add(kv.at("value"), bundle.RuleRegistryLiteralValue, "the %s %s has a fixed value (not shown: it may be a secret), and berth passes values only from the host's environment; leave value out (the user supplies it) or make it exactly one {variable}", what, key)
			return "", "", false
		}
		src = m[1]
		// The user supplies the variable: its description, requiredness
		// and secrecy are the input's.
		v := vars[src]
		in.Required = in.Required || v.Required
		in.Sensitive = in.Sensitive || v.Sensitive
		if in.Description == "" {
			in.Description = v.Description
		}
		if in.Type == "" {
			in.Type = v.Type
		}
		if in.Default == "" {
			in.Default = v.Default
		}
		if in.Sensitive {
			in.Default = ""
		}
	}
	from = inputEnvName(x.name, src)
	if prev, dup := x.envSeen[from]; dup && prev != p {
		d.add(p, bundle.RuleRegistryLiteralValue, "%s would be read from $%s, which %s already uses; rename one", key, from, prev)
		return "", "", false
	}
	x.envSeen[from] = p
	in.FromEnv = from
	in.Becomes = fmt.Sprintf(use, key) + ", read from your $" + from
	if !in.Required {
		in.Becomes += " (berth starts the server only when it is set)"
	}
	x.imp.Inputs = append(x.imp.Inputs, in)
	return key, from, true
}

func (x *registryImport) remote(p string, n *strictjson.Node) {
	d := x.d
	o, ok := x.object(n, p, kindRemote)
	if !ok {
		return
	}
	typ, _ := o.str("type", true)
	r := &bundle.Remote{}
	switch typ {
	case "streamable-http":
		r.Transport = bundle.TransportStreamableHTTP
	case "sse":
		r.Transport = bundle.TransportSSE
	case "":
		return
	default:
		d.add(o.at("type"), bundle.RuleRegistryTransport, "remote type %q is not streamable-http or sse", typ)
		return
	}
	x.variables(o, p)
	u, ok := o.str("url", true)
	if !ok {
		return
	}
	if templateRe.MatchString(u) {
		d.add(o.at("url"), bundle.RuleRegistryURLVariable, "the url %q takes {variables} the user fills in; berth's review shows the one endpoint a remote talks to, so the url must be fixed (a per-user value belongs in a header)", u)
		return
	}
	name := x.serverName("remote")
	sp := strictjson.JoinPath("mcpServers", name)
	x.m.MCPServers = ensureServers(x.m.MCPServers)
	x.m.MCPServers[name] = &bundle.Server{Remote: r}
	x.c.at(sp, d.loc(p))
	x.c.at(sp+".remote", d.loc(p))
	x.c.at(sp+".remote.transport", d.loc(o.at("type")))
	r.URL = u
	if ep, err := bundle.ParseEndpoint(u); err == nil {
		r.Network = &bundle.Network{Hosts: []string{ep.Host}}
	}
	x.c.at(sp+".remote.url", d.loc(o.at("url")))
	x.c.at(sp+".remote.network", d.loc(o.at("url")))
	elems, _ := o.array("headers")
	x.c.at(sp+".remote.headers", d.loc(o.at("headers")))
	credential := false
	for i, e := range elems {
		hp := index(o.at("headers"), i)
		if bearer := x.bearer(hp, e, name); bearer != "" {
			r.Auth = &bundle.RemoteAuth{BearerFromEnv: bearer}
			x.c.at(sp+".remote.auth", d.loc(hp))
			credential = true
			continue
		}
		key, from, ok := x.keyValue(hp, e, fmt.Sprintf("the header %%s of the server %q", name), true)
		if !ok {
			credential = true // refused anyway; no guess about a sign-in
			continue
		}
		if in := x.imp.Inputs[len(x.imp.Inputs)-1]; in.Sensitive || strings.EqualFold(key, "authorization") {
			credential = true
		} else if _, yes := bundle.LooksLikeCredential(key, ""); yes {
			credential = true
		}
		x.c.fromEnv(&r.Headers, sp+".remote.headers", key, from, d.loc(hp))
	}
	if !credential {
		// server.json has no field for OAuth: a remote that sends no
		// credential may be an OAuth-protected resource, which says so
		// only when it answers 401 with its protected-resource metadata
		// (the MCP authorization spec). "oauth": {} lets berth sign in
		// then, discovering everything; a server that never asks is
		// never signed in to.
		r.Auth = &bundle.RemoteAuth{OAuth: &bundle.OAuth{}}
		x.c.at(sp+".remote.auth", d.loc(p))
	}
}

// bearer recognizes the header Authorization: "Bearer {var}" and returns
// the environment source of the token.
func (x *registryImport) bearer(p string, n *strictjson.Node, server string) string {
	if n.Kind != strictjson.Object {
		return ""
	}
	var name, value string
	for i, k := range n.Keys {
		if n.Values[i].Kind == strictjson.String {
			switch k {
			case "name":
				name = n.Values[i].Str
			case "value":
				value = n.Values[i].Str
			}
		}
	}
	if !strings.EqualFold(name, "authorization") {
		return ""
	}
	rest, ok := strings.CutPrefix(value, "Bearer ")
	m := templateRe.FindStringSubmatch(rest)
	if !ok || m == nil || m[0] != rest || !declaresVariable(n, m[1]) {
		return ""
	}
	kv, ok := x.object(n, p, kindKeyValue)
	if !ok {
		return ""
	}
	vars := x.variables(kv, p)
	v := vars[m[1]]
	if v == nil {
		return ""
	}
	in := x.input(kv, p)
	in.Name = inputName(p, name)
	in.Required = in.Required || v.Required
	if in.Description == "" {
		in.Description = v.Description
	}
	in.Sensitive, in.Default = true, ""
	from := inputEnvName(x.name, m[1])
	in.FromEnv = from
	in.Becomes = fmt.Sprintf("the bearer token of the server %q, read from your $%s", server, from)
	x.imp.Inputs = append(x.imp.Inputs, in)
	return from
}

// pinHint is the way on that a refusal of an unpinned package offers when
// berth can pin it (spec is not "").
func pinHint(spec string) string {
	if spec == "" {
		return ""
	}
	return "; or let berth resolve it against the registry now and record the exact version: berth import --pin SOURCE (berth install --pin for an entry of an unsigned catalog)"
}
