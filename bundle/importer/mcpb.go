package importer

import (
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/internal/lexical"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// MCPBServerName is the name of the one server of an imported MCP Bundle.
const MCPBServerName = "server"

// mcpbFields are the top-level fields of each MCPB manifest version, as
// the strict schemas of the mcpb tool define them.
var mcpbFields = func() map[string][]string {
	base := []string{"$schema", "dxt_version", "manifest_version", "name", "display_name", "version", "description", "long_description", "author", "repository", "homepage", "documentation", "support", "icon", "screenshots", "server", "tools", "tools_generated", "prompts", "prompts_generated", "keywords", "license", "compatibility", "user_config"}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	return map[string][]string{
		"0.1": with("_meta"),
		"0.2": with("privacy_policies"),
		"0.3": with("privacy_policies", "icons", "localization", "_meta"),
		"0.4": with("privacy_policies", "icons", "localization", "_meta"),
	}
}()

var (
	// substRe finds ${...} references, and an unterminated "${".
	substRe     = regexp.MustCompile(`\$\{([^}]*)(\}|$)`)
	iconSizeRe  = regexp.MustCompile(`^\d+x\d+$`)
	bcp47Re     = regexp.MustCompile(`^[A-Za-z0-9]{2,8}(?:-[A-Za-z0-9]{1,8})*$`)
	userDirVars = []string{"HOME", "DESKTOP", "DOCUMENTS", "DOWNLOADS"}
)

// userOption is one user_config option (MCPB) or userConfig option
// (Claude Code plugins, the same shape).
type userOption struct {
	key       string
	loc       string
	typ       string
	multiple  bool
	sensitive bool
	required  bool
	hasDef    bool
	def       string          // as text; a list joined with ", "
	defKind   strictjson.Kind // the JSON kind of the default: String, Number, Bool or Array
	defList   []string        // the default, when it is an array
	envName   string          // the host variable it is read from in env
	ref       string          // ${user_config.KEY}
	input     *bundle.ImportInput
	uses      []string
	// envKeys are the env variables of the server that read it (MCPB).
	envKeys []string
}

// mcpbImport converts one MCPB manifest.
type mcpbImport struct {
	c    *conversion
	d    *doc
	dir  string
	name string
	imp  *bundle.ImportedFrom
	opts map[string]*userOption
	// order is the order of opts in the manifest.
	order []string
	// version is the manifest version.
	version string
	// consts are the literal env values the operator confirms
	// (constants.go).
	consts []*bundle.ImportInput
}

func convertMCPB(dir string) *conversion {
	c := newConversion()
	d := &doc{file: mcpbManifest, rules: mcpbRules, ps: &c.ps}
	data, err := fsx.ReadIn(dir, mcpbManifest, maxForeignSize)
	if err != nil {
		d.add("", bundle.RuleMCPBSyntax, "cannot read manifest.json (%v); it must be a regular file at the bundle's root", err)
		return c
	}
	root := d.parse(data)
	if root == nil {
		return c
	}
	if root.Kind != strictjson.Object {
		d.add("", bundle.RuleMCPBSyntax, "manifest.json must hold a JSON object, not %s", root.Kind)
		return c
	}
	version, ok := mcpbVersion(d, root)
	if !ok {
		return c
	}
	x := &mcpbImport{c: c, d: d, dir: dir, opts: map[string]*userOption{}, version: version}
	x.imp = &bundle.ImportedFrom{Format: bundle.FormatMCPB, FormatVersion: version, Manifest: mcpbManifest}
	top, _ := x.object(root, "", mcpbFields[version]...)
	m := &bundle.Manifest{ManifestVersion: 1, ImportedFrom: x.imp}
	x.top(m, top)
	x.userConfig(top)
	x.server(m, top, version)
	x.surface(top)
	x.compatibility(top)
	x.metadata(top)
	for _, k := range x.order {
		o := x.opts[k]
		o.input.Becomes = becomes(o)
		x.imp.Inputs = append(x.imp.Inputs, *o.input)
	}
	for _, in := range x.consts {
		x.imp.Inputs = append(x.imp.Inputs, *in)
	}
	c.at("importedFrom", d.loc(""))
	c.manifest = m
	return c
}

// mcpbVersion reads manifest_version and its deprecated alias dxt_version.
func mcpbVersion(d *doc, root *strictjson.Node) (string, bool) {
	var got []string
	var where []string
	for i, k := range root.Keys {
		if k != "manifest_version" && k != "dxt_version" {
			continue
		}
		v := root.Values[i]
		if v.Kind != strictjson.String {
			d.add(k, bundle.RuleMCPBVersion, "%s must be a string such as \"0.3\", not %s", k, v.Kind)
			return "", false
		}
		if _, ok := mcpbFields[v.Str]; !ok {
			d.add(k, bundle.RuleMCPBVersion, "%s %q is not an MCPB manifest version berth reads (0.1, 0.2, 0.3, 0.4); berth does not guess at the fields of another version", k, v.Str)
			return "", false
		}
		got = append(got, v.Str)
		where = append(where, k)
	}
	switch {
	case len(got) == 0:
		d.add("manifest_version", bundle.RuleMCPBVersion, "manifest_version is required (or its deprecated alias dxt_version): the MCPB manifest version, such as \"0.3\"")
		return "", false
	case len(got) == 2 && got[0] != got[1]:
		d.add(where[1], bundle.RuleMCPBVersion, "%s is %q but %s is %q; they must be equal (mcpb itself refuses this), or keep only manifest_version", where[1], got[1], where[0], got[0])
		return "", false
	}
	return got[0], true
}

func (x *mcpbImport) top(m *bundle.Manifest, top obj) {
	c, d := x.c, x.d
	var name string
	if c.carry(top, "name", true, &name) {
		bundleName(m, x.imp, name)
		x.name = m.Name
	}
	c.carry(top, "version", true, &m.Version)
	c.carry(top, "description", true, &m.Description)
	c.carry(top, "license", false, &m.License)
	if !top.has("author") {
		d.add("author", bundle.RuleMCPBRequiredField, "author is required: {\"name\": \"…\"}")
	} else if a, ok := x.object(top.keys["author"], "author", "name", "email", "url"); ok {
		name, _ := a.str("name", true)
		m.Publisher = &bundle.Publisher{Name: name}
		c.at("publisher", d.loc("author"))
		c.at("publisher.name", d.loc("author.name"))
		if e, ok := a.str("email", false); ok {
			if _, err := mail.ParseAddress(e); err != nil {
				d.add("author.email", bundle.RuleMCPBWrongType, "author.email %q is not an email address", e)
			}
			x.notCarried(d.loc("author.email"), "metadata", "", "berth's publisher has a name and a URL only")
		}
		if u, ok := a.str("url", false); ok && x.url("author.url", u) {
			if isHTTPS(u) {
				m.Publisher.URL = u
				c.at("publisher.url", d.loc("author.url"))
			} else {
				x.notCarried(d.loc("author.url"), "metadata", "", "berth shows only https:// publisher URLs")
			}
		}
	}
	if u, ok := top.str("homepage", false); ok && x.url("homepage", u) {
		if isHTTPS(u) {
			m.Homepage = u
			c.at("homepage", d.loc("homepage"))
		} else {
			x.notCarried(d.loc("homepage"), "metadata", "", "berth shows only an https:// homepage")
		}
	}
}

// url checks a field that mcpb requires to be a URL.
func (x *mcpbImport) url(path, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") {
		x.d.add(path, bundle.RuleMCPBWrongType, "%s %q is not an absolute URL", path, raw)
		return false
	}
	return true
}

func isHTTPS(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil
}

func (x *mcpbImport) notCarried(field, kind, name, reason string) {
	x.imp.NotCarriedOver = append(x.imp.NotCarriedOver, bundle.NotCarried{Field: field, Kind: kind, Name: name, Reason: reason})
}

// object reads an object of the manifest that does not say what runs
// (the top level, author, compatibility, tools, …) as Claude Desktop's
// reader does: mcpb's loose schemas let any key through. A key that the
// manifest version does not define is accepted, listed as not carried
// over, and read no further; the keys of allowed are checked as the strict
// schema has them. server, mcp_config and its platform overrides stay
// strict (doc.object): a key there could change how the server runs, in
// Claude Desktop or a later version, and berth does not guess.
func (x *mcpbImport) object(n *strictjson.Node, path string, allowed ...string) (obj, bool) {
	o, ok := x.d.object(n, path)
	if !ok {
		return o, false
	}
	for _, k := range n.Keys {
		if slices.Contains(allowed, k) {
			continue
		}
		delete(o.keys, k)
		kp := strictjson.JoinPath(path, k)
		reason := "not a field of MCP Bundle manifests; Claude Desktop's reader lets it through and uses none of it, and berth reads none of it"
		if path == "" {
			if vs := mcpbVersionsOf(k); len(vs) > 0 {
				reason = fmt.Sprintf("defined by MCPB manifest version %s, not %s; Claude Desktop's reader accepts it in %s, and it does not change what runs", strings.Join(vs, ", "), x.version, x.version)
			}
		}
		x.notCarried(x.d.loc(kp), "unknown-field", k, reason)
	}
	return o, true
}

// mcpbVersionsOf lists the manifest versions that define a top-level key.
func mcpbVersionsOf(key string) []string {
	var vs []string
	for _, v := range slices.Sorted(maps.Keys(mcpbFields)) {
		if slices.Contains(mcpbFields[v], key) {
			vs = append(vs, v)
		}
	}
	return vs
}

// userConfig reads the user_config options.
func (x *mcpbImport) userConfig(top obj) {
	n, ok := top.keys["user_config"]
	if !ok {
		return
	}
	uc, ok := x.d.object(n, "user_config")
	if !ok {
		return
	}
	x.order, x.opts = readUserOptions(x.d, x.looseOptions(uc), "user_config", x.name)
	x.checkEnvNames()
}

// userOptionFields are the fields of a user_config option.
var userOptionFields = []string{"type", "title", "description", "required", "default", "multiple", "sensitive", "min", "max"}

// looseOptions returns user_config with the keys of each option that MCPB
// does not define left out, and listed as not carried over (as Claude
// Desktop's reader passes them by).
func (x *mcpbImport) looseOptions(uc obj) obj {
	keys, vals := uc.members()
	n := &strictjson.Node{Kind: strictjson.Object}
	for i, k := range keys {
		v := vals[i]
		if v.Kind == strictjson.Object {
			o, _ := x.object(v, strictjson.JoinPath("user_config", k), userOptionFields...)
			ks, vs := o.members()
			v = &strictjson.Node{Kind: strictjson.Object, Keys: ks, Values: vs}
		}
		n.Keys = append(n.Keys, k)
		n.Values = append(n.Values, v)
	}
	out, _ := x.d.object(n, uc.path)
	return out
}

// readUserOptions reads MCPB user_config or Claude Code userConfig
// options (the same shape).
func readUserOptions(d *doc, uc obj, base, bundleName string) ([]string, map[string]*userOption) {
	var order []string
	opts := map[string]*userOption{}
	keys, vals := uc.members()
	for i, k := range keys {
		p := strictjson.JoinPath(base, k)
		o, ok := d.object(vals[i], p, userOptionFields...)
		if !ok {
			continue
		}
		uo := &userOption{key: k, loc: d.loc(p), envName: inputEnvName(bundleName, k), ref: "${user_config." + k + "}"}
		uo.typ, _ = o.str("type", true)
		if uo.typ != "" && !slices.Contains([]string{"string", "number", "boolean", "directory", "file"}, uo.typ) {
			d.add(o.at("type"), d.rules.wrongType, "type %q is not one of string, number, boolean, directory, file", uo.typ)
		}
		title, _ := o.str("title", true)
		desc, _ := o.str("description", true)
		uo.required, _ = o.boolean("required")
		uo.multiple, _ = o.boolean("multiple")
		uo.sensitive, _ = o.boolean("sensitive")
		o.number("min")
		o.number("max")
		if dn, ok := o.keys["default"]; ok {
			if s, ok := scalarText(dn); ok {
				uo.hasDef, uo.def, uo.defKind = true, s, dn.Kind
			} else if list, ok := d.strList(dn, o.at("default")); ok {
				uo.hasDef, uo.def, uo.defKind, uo.defList = true, strings.Join(list, ", "), strictjson.Array, list
			}
		}
		uo.input = &bundle.ImportInput{Name: base + "." + k, Type: uo.typ, Title: title, Description: desc, Required: uo.required, Sensitive: uo.sensitive}
		if uo.hasDef && !uo.sensitive {
			uo.input.Default = uo.def
		}
		order = append(order, k)
		opts[k] = uo
	}
	return order, opts
}

func (x *mcpbImport) checkEnvNames() {
	seen := map[string]string{}
	for _, k := range x.order {
		name := inputEnvName(x.name, k)
		if other, dup := seen[name]; dup {
			x.d.add(strictjson.JoinPath("user_config", k), bundle.RuleMCPBUserConfigName, "user_config keys %q and %q both become the environment variable %s; rename one", other, k, name)
			continue
		}
		seen[name] = k
	}
}

// becomes says what an option is in berth's terms.
func becomes(o *userOption) string {
	if len(o.uses) == 0 {
		return "not used by the server's command, arguments or environment"
	}
	return strings.Join(slices.Compact(o.uses), "; ")
}

// server converts server and its mcp_config.
func (x *mcpbImport) server(m *bundle.Manifest, top obj, version string) {
	c, d := x.c, x.d
	if !top.has("server") {
		d.add("server", bundle.RuleMCPBRequiredField, "server is required: {\"type\", \"entry_point\", \"mcp_config\"}")
		return
	}
	srv, ok := d.object(top.keys["server"], "server", "type", "entry_point", "mcp_config")
	if !ok {
		return
	}
	types := []string{"node", "python", "binary"}
	if version == "0.4" {
		types = append(types, "uv")
	}
	if t, ok := srv.str("type", true); ok && !slices.Contains(types, t) {
		d.add("server.type", bundle.RuleMCPBWrongType, "server.type %q is not one of %s in manifest version %s", t, strings.Join(types, ", "), version)
	}
	if ep, ok := srv.str("entry_point", true); ok {
		x.entryPoint(ep)
	}
	sp := strictjson.JoinPath("mcpServers", MCPBServerName)
	s := &bundle.Server{Stdio: &bundle.Stdio{}}
	if dn, ok := top.str("display_name", false); ok {
		s.Description = dn
	}
	m.MCPServers = map[string]*bundle.Server{MCPBServerName: s}
	c.at("mcpServers", d.loc("server"))
	c.at(sp, d.loc("server"))
	c.at(sp+".description", d.loc("display_name"))
	if !srv.has("mcp_config") {
		d.add("server.mcp_config", bundle.RuleMCPBRequiredField, "server.mcp_config is required: berth runs exactly the command it names, and does not guess one from the server type (for a uv server Claude Desktop would run uv, which resolves the dependencies when it starts); add an mcp_config whose command runs what the bundle ships, such as {\"command\": \"python3\", \"args\": [\"${__dirname}/src/server.py\"], \"env\": {\"PYTHONPATH\": \"${__dirname}/lib\"}}, or a pinned uvx NAME==VERSION")
		return
	}
	mc, ok := d.object(srv.keys["mcp_config"], "server.mcp_config", "command", "args", "env", "platform_overrides")
	if !ok {
		return
	}
	c.at(sp+".stdio", d.loc("server.mcp_config"))
	// The base config, then the override for this platform, wholesale.
	cmdPath, argsPath, envPath := "server.mcp_config.command", "server.mcp_config.args", "server.mcp_config.env"
	command, hasCommand := mc.str("command", true)
	args, _ := mc.strs("args")
	envKeys, env, _ := mc.strMap("env")
	if n, ok := mc.keys["platform_overrides"]; ok {
		x.imp.Platform = goosPlatform()
		po, _ := d.object(n, "server.mcp_config.platform_overrides")
		keys, vals := po.members()
		for i, pl := range keys {
			pp := strictjson.JoinPath("server.mcp_config.platform_overrides", pl)
			o, ok := d.object(vals[i], pp, "command", "args", "env")
			if !ok {
				continue
			}
			oc, hasC := o.str("command", false)
			oa, hasA := o.strs("args")
			ok2, oe, hasE := o.strMap("env")
			if pl != x.imp.Platform {
				x.notCarried(d.loc(pp), "platform-override", pl, "for another platform than this one ("+x.imp.Platform+")")
				continue
			}
			if hasC {
				command, hasCommand, cmdPath = oc, true, pp+".command"
			}
			if hasA {
				args, argsPath = oa, pp+".args"
			}
			if hasE {
				envKeys, env, envPath = ok2, oe, pp+".env"
			}
		}
	}
	if hasCommand {
		s.Stdio.Command = x.subst(command, cmdPath, true)
	}
	c.at(sp+".stdio.command", d.loc(cmdPath))
	for i := range args {
		for _, a := range x.arg(args, i, index(argsPath, i)) {
			c.at(index(sp+".stdio.args", len(s.Stdio.Args)), d.loc(index(argsPath, i)))
			s.Stdio.Args = append(s.Stdio.Args, a)
		}
	}
	c.at(sp+".stdio.args", d.loc(argsPath))
	c.at(sp+".stdio.env", d.loc(envPath))
	for _, k := range envKeys {
		kp := strictjson.JoinPath(envPath, k)
		key, ok := userConfigRef(env[k])
		switch {
		case !ok && bundle.BundlePathKey(k):
			x.bundlePathEnv(s.Stdio, sp+".stdio.env", k, env[k], kp)
		case ok && x.opts[key] != nil:
			from := inputEnvName(x.name, key)
			c.fromEnv(&s.Stdio.Env, sp+".stdio.env", k, from, d.loc(kp))
			o := x.opts[key]
			o.input.FromEnv = from
			o.envKeys = append(o.envKeys, k)
			if o.typ == "directory" {
				// The folder is a host path the operator names; a
				// sandbox path is only one of berth's variables, so
				// the server's sandbox cannot name it.
				x.imp.NotCarriedOver = append(x.imp.NotCarriedOver, bundle.NotCarried{Field: d.loc(kp), Kind: "sandbox-path", Name: key,
					Reason: fmt.Sprintf("the folder of the directory option %s is passed in $%s, but it is not part of the server's sandbox: confined to its default profile, the server reaches only the workspace, its own cache and temp, so name a folder inside the workspace, or loosen the server with berth config (docs/sandbox.md)", o.ref, k)})
			}
		case ok:
			d.add(kp, bundle.RuleMCPBVariable, "${user_config.%s} names no option of user_config; declare it there or fix the name", key)
		case literalConstant(env[k]):
			if from, ok := x.constant(kp, k, env[k]); ok {
				c.fromEnv(&s.Stdio.Env, sp+".stdio.env", k, from, d.loc(kp))
			}
		default:
			d.add(kp, bundle.RuleMCPBEnvValue, "berth passes a server only values from the host's environment or values you confirm, so an env value must be exactly \"${user_config.KEY}\" (which berth reads from $%s_KEY) or a fixed value without ${…} (which you confirm at install); this value mixes text and variables (not shown: it may be a secret). Move fixed settings into the server's code or files of the bundle", envPrefix(x.name))
		}
	}
	x.confirmOptions()
}

// bundlePathEnv maps PYTHONPATH or NODE_PATH: every element of the list
// (split on the platform's list separator, as Python and Node split it)
// must be ${__dirname}/PATH with a clean PATH inside the bundle, and the
// whole becomes {"bundlePath": [PATH, ...]}. Anything else stays refused
// by the environment-key rule: the value would load code from outside
// what was reviewed.
func (x *mcpbImport) bundlePathEnv(st *bundle.Stdio, berthPath, key, value, loc string) {
	var paths []string
	for i, el := range strings.Split(value, string(os.PathListSeparator)) {
		el = strings.NewReplacer("${/}", "/", "${pathSeparator}", "/").Replace(el)
		rel, inBundle := strings.CutPrefix(el, "${__dirname}/")
		var why string
		switch {
		case el == "":
			why = "is empty, which Python and Node read as the working directory"
		case el == "${__dirname}":
			why = "is the bundle's root; name the folder inside it that holds the modules, such as ${__dirname}/server/lib"
		case !inBundle && strings.HasPrefix(el, "${"):
			why = "starts with a variable other than ${__dirname}, so it is a place outside the bundle"
		case !inBundle && (filepath.IsAbs(el) || strings.HasPrefix(el, "/")):
			why = "is an absolute path outside the bundle"
		case !inBundle:
			why = "is relative to the working directory, not to the bundle; write it as ${__dirname}/PATH"
		case strings.Contains(rel, "${"):
			why = "holds a variable after ${__dirname}/"
		case !lexical.CleanRel(rel):
			why = "is not a clean path inside the bundle (no \"..\", \".\", \"//\", trailing '/' or backslash)"
		}
		if why != "" {
			x.d.add(loc, bundle.RuleEnvKeyForbidden, "%s may be set only to folders inside the bundle, each element of the list being ${__dirname}/PATH (berth writes {\"bundlePath\": [PATH]}); element %d %s. Ship the modules in the bundle and name them so, or remove %s", key, i+1, why, key)
			return
		}
		paths = append(paths, rel)
	}
	if st.Env == nil {
		st.Env = map[string]bundle.EnvSource{}
	}
	st.Env[key] = bundle.EnvSource{BundlePath: paths}
	x.c.at(strictjson.JoinPath(berthPath, key), loc)
	for i := range paths {
		x.c.at(index(strictjson.JoinPath(berthPath, key)+".bundlePath", i), loc)
	}
}

// userConfigRef reports whether s is exactly ${user_config.KEY}.
func userConfigRef(s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, "${user_config.")
	if !ok || !strings.HasSuffix(rest, "}") {
		return "", false
	}
	key := strings.TrimSuffix(rest, "}")
	return key, key != "" && !strings.ContainsAny(key, "{}")
}

func (x *mcpbImport) entryPoint(ep string) {
	p := "server.entry_point"
	if !lexical.CleanRel(ep) {
		x.d.add(p, bundle.RuleMCPBEntryPoint, "entry_point %q must be a clean relative path inside the bundle (no \"..\", \"./\", \"//\", leading '/' or backslash)", ep)
		return
	}
	fi, err := fsx.LstatIn(x.dir, ep)
	switch {
	case err != nil:
		x.d.add(p, bundle.RuleMCPBEntryPoint, "entry_point %q is not in the bundle; add the file or fix the path", ep)
		return
	case fi.IsDir():
		x.d.add(p, bundle.RuleMCPBEntryPoint, "entry_point %q is a directory; name the server's entry file", ep)
		return
	}
	x.notCarried(x.d.loc(p), "metadata", "", "checked to be in the bundle ("+ep+"); berth runs what mcp_config names, not the entry point")
}

// subst applies the MCPB substitutions to a command or argument:
// ${__dirname} → ${bundle}, ${pathSeparator} and ${/} → the platform's
// separator, ${user_config.KEY} as its type allows (docs/manifest.md).
// Any other variable is a problem.
func (x *mcpbImport) subst(s, path string, isCommand bool) string {
	return substitute(s, func(name string, terminated bool) (string, bool) {
		switch {
		case !terminated:
			x.d.add(path, bundle.RuleMCPBVariable, "\"${%s\" has no closing '}'; berth does not guess what was meant", name)
			return "", false
		case name == "__dirname":
			return "${bundle}", true
		case name == "pathSeparator" || name == "/":
			x.imp.Platform = goosPlatform()
			return string(filepath.Separator), true
		case slices.Contains(userDirVars, name):
			x.d.add(path, bundle.RuleMCPBVariable, "${%s} cannot be carried over: berth puts no host paths into a server's command line (argv is visible to every local user, and the folder differs per user); ship what the server needs in the bundle (${__dirname}/…), or take the folder from a user_config option of type directory, which berth maps to ${workspace}", name)
			return "", false
		}
		if key, ok := strings.CutPrefix(name, "user_config."); ok {
			o := x.opts[key]
			if o == nil {
				x.d.add(path, bundle.RuleMCPBVariable, "${user_config.%s} names no option of user_config; declare it there or fix the name", key)
				return "", false
			}
			return userOptionArg(x.d, o, path, isCommand, bundle.RuleMCPBUserConfigArg)
		}
		x.d.add(path, bundle.RuleMCPBVariable, "${%s} is not a variable berth can carry over (Claude Desktop passes it unreplaced, as that text); MCPB defines ${__dirname}, ${pathSeparator}, ${/} and ${user_config.KEY} (and the host folders ${HOME}, ${DESKTOP}, ${DOCUMENTS}, ${DOWNLOADS}, which berth refuses); write ${__dirname}/… for a path in the bundle, or take a folder from a directory option, which berth maps to ${workspace}", name)
		return "", false
	})
}

// exactRefRe is an argument that is exactly one ${user_config.KEY}: the
// only place where Claude Desktop expands a list value, into one argument
// per element (mcpb's replaceVariables).
var exactRefRe = regexp.MustCompile(`^\$\{user_config\.([^}]+)\}$`)

// arg converts the argument args[i] (at path) into the arguments of the
// generated server: none, when it holds an optional option that has no
// value; one per element of a list that Claude Desktop would expand; one
// otherwise.
func (x *mcpbImport) arg(args []string, i int, path string) []string {
	a := args[i]
	exact := exactRefRe.FindStringSubmatch(a)
	for _, m := range substRe.FindAllStringSubmatch(a, -1) {
		key, ok := strings.CutPrefix(m[1], "user_config.")
		o := x.opts[key]
		if !ok || m[2] != "}" || o == nil || o.sensitive || o.required || o.typ == "directory" || hasValue(o) {
			continue
		}
		// Claude Desktop has no value for it and would pass the text
		// ${user_config.KEY} unreplaced; berth leaves the argument out.
		if exact != nil && i > 0 && isBareFlag(args[i-1]) {
			x.d.add(path, bundle.RuleMCPBUserConfigArg, "%s is optional and has no default, so berth would leave this argument out, but then %q before it would take the next argument as its value; write the two as one argument (\"%s=%s\"), or give the option a default", o.ref, args[i-1], args[i-1], o.ref)
			return []string{a}
		}
		o.uses = append(o.uses, fmt.Sprintf("left out of the arguments when it has no value: it is optional and has no default (Claude Desktop would pass the text %s unreplaced); the argument is %q", o.ref, a))
		return nil
	}
	if exact != nil {
		if o := x.opts[exact[1]]; o != nil && o.multiple && !o.sensitive {
			return x.listArg(o, path)
		}
	}
	return []string{x.subst(a, path, false)}
}

// listArg maps an argument that is exactly a multiple option.
func (x *mcpbImport) listArg(o *userOption, path string) []string {
	switch {
	case o.typ == "directory":
		o.uses = append(o.uses, "${workspace} in the arguments: the folder the plugin is enabled for (Claude Desktop passes each folder the user chose as its own argument; berth passes the one workspace)")
		return []string{"${workspace}"}
	case o.typ == "file" && o.hasDef && o.def != "":
		x.d.add(path, bundle.RuleMCPBUserConfigArg, "%s is a list of files whose default names files on the host, and berth puts no host paths into a server's command line; ship the files in the bundle (${__dirname}/…), or take a folder from a directory option, which berth maps to ${workspace}", o.ref)
	case secretName(o.key):
		x.d.add(path, bundle.RuleMCPBUserConfigArg, "%s is not marked sensitive, but its name says it holds a credential, and argv is visible to every local user; pass it in env instead (berth reads it from $%s), or mark it sensitive", o.ref, o.envName)
	case o.hasDef && o.defKind == strictjson.Array && len(o.defList) > 0:
		list, ok := x.defaultList(o)
		if !ok {
			return []string{o.ref}
		}
		o.uses = append(o.uses, fmt.Sprintf("the fixed arguments %q (its default, one argument per element, as Claude Desktop expands it; berth has no per-user setting for arguments)", list))
		return list
	case o.hasDef && o.defKind != strictjson.Array:
		// A single default: Claude Desktop passes it as one argument,
		// as it would for an option that is not a list.
		o.multiple = false
		defer func() { o.multiple = true }()
		return []string{x.subst(o.ref, path, false)}
	default:
		x.d.add(path, bundle.RuleMCPBUserConfigArg, "%s is a required list with no default, and berth has no per-user setting for arguments; give it a default, or pass it in env; to go on, import it with berth import SOURCE --out DIR, write the values into the arguments of the generated berth.json, and review that", o.ref)
	}
	return []string{o.ref}
}

// defaultList is the default of a multiple option as arguments; ok is
// false when one of them cannot be fixed (the problem is added).
func (x *mcpbImport) defaultList(o *userOption) ([]string, bool) {
	for _, v := range o.defList {
		if strings.Contains(v, "${") {
			x.d.add(o.loc, bundle.RuleMCPBUserConfigArg, "the default of %s holds a variable, which Claude Desktop passes unreplaced; write the values out", o.ref)
			return nil, false
		}
	}
	return slices.Clone(o.defList), true
}

// hasValue reports whether an option has a value when the user gives
// none: a default other than "" and [] (Claude Desktop treats those as
// no value).
func hasValue(o *userOption) bool { return o.hasDef && o.def != "" }

// isBareFlag reports whether an argument is an option that may take the
// next argument as its value: "-x" or "--name", without "=".
func isBareFlag(a string) bool {
	return strings.HasPrefix(a, "-") && len(a) > 1 && !strings.Contains(a, "=")
}

// secretNameWords mark an option whose name says it holds a credential.
var secretNameWords = []string{"token", "secret", "password", "passwd", "credential", "apikey", "api_key", "api-key", "private_key", "private-key"}

// secretName reports whether an option's key says it holds a credential.
func secretName(key string) bool {
	lower := strings.ToLower(key)
	return slices.ContainsFunc(secretNameWords, func(w string) bool { return strings.Contains(lower, w) })
}

// userOptionArg maps a user option used in a command or an argument. A
// directory becomes ${workspace}, the folder a plugin is enabled for; a
// string, number or boolean option that is not sensitive and has a
// default becomes that fixed value (berth has no per-user value for
// arguments); anything else could hold a secret or a host path, or has no
// value berth can fix, and argv is visible to every local user.
func userOptionArg(d *doc, o *userOption, path string, isCommand bool, rule string) (string, bool) {
	ref := o.ref
	switch {
	case isCommand:
		d.add(path, rule, "%s chooses the program to run, which a review could not show; name the program in the manifest", ref)
	case o.sensitive:
		d.add(path, rule, "%s is sensitive and would be visible to every local user in the server's command line; pass it in env instead (berth reads it from $%s)", ref, o.envName)
	case o.typ == "directory" && !o.multiple:
		o.uses = append(o.uses, "${workspace} in the arguments: the workspace the plugin is enabled for")
		return "${workspace}", true
	case o.multiple:
		d.add(path, rule, "%s is a list (multiple), and Claude Desktop expands a list only in an argument that is exactly %s; inside a longer argument it passes the text unreplaced; make the argument exactly %s", ref, ref, ref)
	case o.typ == "file":
		d.add(path, rule, "%s is a file option: its value is a path on the host, which berth puts into no server's command line; ship the file in the bundle (${__dirname}/…), or take a folder from a directory option, which berth maps to ${workspace}", ref)
	case o.typ == "number" && o.hasDef && o.defKind != strictjson.Number, o.typ == "boolean" && o.hasDef && o.defKind != strictjson.Bool:
		// The default is fixed in argv under the option's type: a
		// "number" whose default is the text "--require=x" is no number.
		d.add(path, rule, "%s is a %s option, but its default is not a JSON %s; berth fixes only a %s default in the arguments: write the default as one (%s), or read the value from an environment variable", ref, o.typ, o.typ, o.typ, map[string]string{"number": "20", "boolean": "false"}[o.typ])
	case !hasValue(o):
		d.add(path, rule, "%s has no default, and berth has no per-user setting for arguments; give it a default, or read it from an environment variable; to go on, import it with berth import SOURCE --out DIR, write the value into the arguments of the generated berth.json, and review that", ref)
	case secretName(o.key):
		d.add(path, rule, "%s is not marked sensitive, but its name says it holds a credential, and argv is visible to every local user; pass it in env instead (berth reads it from $%s), or mark it sensitive", ref, o.envName)
	case strings.Contains(o.def, "${"):
		d.add(path, rule, "the default of %s holds a variable, which Claude Desktop passes unreplaced; write the value out", ref)
	default:
		o.uses = append(o.uses, fmt.Sprintf("the fixed value %q in the arguments (its default; berth has no per-user setting for arguments)", o.def))
		return o.def, true
	}
	return "", false
}

// substitute replaces each ${name} of s with what f returns for it;
// terminated is false for a "${" without its "}". A reference f refuses
// is kept as written (f reports the problem).
func substitute(s string, f func(name string, terminated bool) (string, bool)) string {
	var b strings.Builder
	last := 0
	for _, m := range substRe.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		last = m[1]
		if v, ok := f(s[m[2]:m[3]], m[4] != m[5]); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[m[0]:m[1]])
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// surface reads the declared tools and prompts.
func (x *mcpbImport) surface(top obj) {
	decl := &bundle.Declared{}
	if elems, ok := top.array("tools"); ok {
		for i, e := range elems {
			o, ok := x.object(e, index("tools", i), "name", "description")
			if !ok {
				continue
			}
			name, _ := o.str("name", true)
			desc, _ := o.str("description", false)
			decl.Tools = append(decl.Tools, bundle.DeclaredItem{Name: name, Description: desc})
		}
	}
	if elems, ok := top.array("prompts"); ok {
		for i, e := range elems {
			o, ok := x.object(e, index("prompts", i), "name", "description", "arguments", "text")
			if !ok {
				continue
			}
			name, _ := o.str("name", true)
			desc, _ := o.str("description", false)
			o.strs("arguments")
			o.str("text", true)
			decl.Prompts = append(decl.Prompts, bundle.DeclaredItem{Name: name, Description: desc})
		}
	}
	decl.ToolsGenerated, _ = top.boolean("tools_generated")
	decl.PromptsGenerated, _ = top.boolean("prompts_generated")
	if len(decl.Tools)+len(decl.Prompts) > 0 || decl.ToolsGenerated || decl.PromptsGenerated {
		x.imp.Declared = decl
	}
}

func (x *mcpbImport) compatibility(top obj) {
	d, c := x.d, x.c
	n, ok := top.keys["compatibility"]
	if !ok {
		return
	}
	co, ok := x.object(n, "compatibility", "claude_desktop", "platforms", "runtimes")
	if !ok {
		return
	}
	comp := &bundle.Compatibility{}
	if cd, ok := co.str("claude_desktop", false); ok {
		x.notCarried(d.loc("compatibility.claude_desktop"), "metadata", "", fmt.Sprintf("the Claude Desktop version range %q; berth has its own (requires.berth)", cd))
	}
	if pls, ok := co.strs("platforms"); ok {
		for i, pl := range pls {
			if !slices.Contains([]string{"darwin", "win32", "linux"}, pl) {
				d.add(index("compatibility.platforms", i), bundle.RuleMCPBWrongType, "platform %q is not darwin, win32 or linux", pl)
			}
		}
		comp.Platforms = pls
		c.at("importedFrom.compatibility.platforms", d.loc("compatibility.platforms"))
		for i := range pls {
			c.at(index("importedFrom.compatibility.platforms", i), d.loc(index("compatibility.platforms", i)))
		}
	}
	if rn, ok := co.keys["runtimes"]; ok {
		ro, _ := x.object(rn, "compatibility.runtimes", "python", "node")
		for _, k := range []string{"node", "python"} {
			if v, ok := ro.str(k, false); ok {
				if comp.Runtimes == nil {
					comp.Runtimes = map[string]string{}
				}
				comp.Runtimes[k] = v
				c.at(strictjson.JoinPath("importedFrom.compatibility.runtimes", k), d.loc(strictjson.JoinPath("compatibility.runtimes", k)))
			}
		}
	}
	if len(comp.Platforms) > 0 || len(comp.Runtimes) > 0 {
		x.imp.Compatibility = comp
	}
}

// metadata checks the fields that do not change what runs and lists them
// as not carried over.
func (x *mcpbImport) metadata(top obj) {
	d := x.d
	meta := func(key, reason string) {
		if top.has(key) {
			x.notCarried(d.loc(key), "metadata", "", reason)
		}
	}
	top.str("long_description", false)
	meta("long_description", "berth shows the one-line description")
	if top.has("repository") {
		if o, ok := x.object(top.keys["repository"], "repository", "type", "url"); ok {
			o.str("type", true)
			if u, ok := o.str("url", true); ok {
				x.url("repository.url", u)
			}
		}
	}
	meta("repository", "berth's manifest has no repository field")
	for _, k := range []string{"documentation", "support"} {
		if u, ok := top.str(k, false); ok {
			x.url(k, u)
		}
		meta(k, "berth's manifest has no "+k+" link")
	}
	top.str("icon", false)
	meta("icon", "berth shows no icons")
	if elems, ok := top.array("icons"); ok {
		for i, e := range elems {
			o, ok := x.object(e, index("icons", i), "src", "size", "theme")
			if !ok {
				continue
			}
			o.str("src", true)
			if sz, ok := o.str("size", true); ok && !iconSizeRe.MatchString(sz) {
				d.add(o.at("size"), bundle.RuleMCPBWrongType, "size %q must be WIDTHxHEIGHT, such as \"16x16\"", sz)
			}
			if th, ok := o.str("theme", false); ok && th == "" {
				d.add(o.at("theme"), bundle.RuleMCPBWrongType, "theme may not be empty when it is given")
			}
		}
	}
	meta("icons", "berth shows no icons")
	top.strs("screenshots")
	meta("screenshots", "berth shows no screenshots")
	top.strs("keywords")
	meta("keywords", "berth's manifest has no keywords (a catalog has tags)")
	if list, ok := top.strs("privacy_policies"); ok {
		for i, u := range list {
			x.url(index("privacy_policies", i), u)
		}
	}
	meta("privacy_policies", "berth's manifest has no privacy policy links")
	if n, ok := top.keys["localization"]; ok {
		if o, ok := x.object(n, "localization", "resources", "default_locale"); ok {
			if r, ok := o.str("resources", true); ok && !strings.Contains(strings.ToLower(r), "${locale}") {
				d.add("localization.resources", bundle.RuleMCPBWrongType, "resources must include a \"${locale}\" placeholder")
			}
			if l, ok := o.str("default_locale", true); ok && !bcp47Re.MatchString(l) {
				d.add("localization.default_locale", bundle.RuleMCPBWrongType, "default_locale %q is not a BCP 47 locale such as \"en-US\"", l)
			}
		}
	}
	meta("localization", "berth shows the manifest's own text")
	if n, ok := top.keys["_meta"]; ok {
		if o, ok := d.object(n, "_meta"); ok {
			keys, vals := o.members()
			for i, k := range keys {
				if vals[i].Kind != strictjson.Object {
					d.wrong(strictjson.JoinPath("_meta", k), "an object", vals[i])
				}
			}
		}
	}
	meta("_meta", "vendor data; berth reads none")
	top.str("$schema", false)
}
