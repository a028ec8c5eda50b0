package importer

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/internal/lexical"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// claudeFields are the fields of .claude-plugin/plugin.json (SchemaStore
// claude-code-plugin-manifest.json).
var claudeFields = []string{"$schema", "name", "version", "description", "author", "homepage", "repository", "license", "keywords", "dependencies", "commands", "agents", "skills", "outputStyles", "themes", "hooks", "mcpServers", "lspServers", "monitors", "channels", "settings", "userConfig"}

// envRefRe is a value that is exactly ${VAR} or ${VAR:-default}.
var envRefRe = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}$`)

// bearerRefRe is an Authorization value "Bearer ${VAR}".
var bearerRefRe = regexp.MustCompile(`^[Bb]earer (\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\})$`)

// maxListed caps how many components of one kind the review lists.
const maxListed = 200

type claudeImport struct {
	c     *conversion
	d     *doc // plugin.json
	dir   string
	name  string
	imp   *bundle.ImportedFrom
	m     *bundle.Manifest
	opts  map[string]*userOption
	order []string
	// vars are the ${VAR} inputs, by name, in the order met.
	vars     map[string]*bundle.ImportInput
	varOrder []string
	// from records which file defined each server, by berth name;
	// source has each one's name in the source.
	from, source map[string]string
	// leave are the servers to leave out (berth import --without).
	leave map[string]*leftOut
	// listed are the component files already listed.
	listed map[string]bool
	// consts are the literal env values the operator confirms
	// (constants.go), with where each was found.
	consts []claudeConst
}

// leftOut is a server berth import --without leaves out.
type leftOut struct {
	// reason says why it could not be imported, from a conversion with
	// it; "" when it had no problem of its own.
	reason string
	// met is set once the server was found.
	met bool
}

// convertClaudeWithout converts the plugin in dir leaving out the servers
// named in without (their names in the source, or the berth names those
// map to). Each is listed under notCarriedOver with the problems it had;
// a name that is no server of the plugin is an error.
func convertClaudeWithout(dir string, without []string) (*conversion, error) {
	full := convertClaude(dir, nil)
	leave := map[string]*leftOut{}
	for _, w := range without {
		leave[w] = &leftOut{}
	}
	for src, loc := range full.servers {
		var why []string
		for _, p := range full.ps.list {
			if p.Path == loc || strings.HasPrefix(p.Path, loc+".") || strings.HasPrefix(p.Path, loc+"[") {
				why = append(why, p.Message+" ["+p.Rule+"]")
			}
		}
		mapped, _ := ServerName(src)
		for _, k := range []string{src, mapped} {
			if l := leave[k]; l != nil {
				l.reason = strings.Join(why, "; ")
			}
		}
	}
	c := convertClaude(dir, leave)
	var unknown []string
	for _, w := range without {
		if !leave[w].met {
			unknown = append(unknown, fmt.Sprintf("%q", w))
		}
	}
	if len(unknown) > 0 {
		var names []string
		for src := range full.servers {
			names = append(names, fmt.Sprintf("%q", src))
		}
		slices.Sort(names)
		return nil, fmt.Errorf("--without %s: the plugin has no such server (its servers: %s)", strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	return c, nil
}

// convertClaude converts the plugin in dir; the servers in leave (by
// their names in the source or in berth) are left out and listed.
func convertClaude(dir string, leave map[string]*leftOut) *conversion {
	c, d, top, ok := readTop(dir, claudeManifest, claudeRules, claudeFields...)
	if !ok {
		return c
	}
	c.servers = map[string]string{}
	x := &claudeImport{c: c, d: d, dir: dir, leave: leave, vars: map[string]*bundle.ImportInput{}, from: map[string]string{}, source: map[string]string{}, listed: map[string]bool{}}
	x.imp = &bundle.ImportedFrom{Format: bundle.FormatClaudePlugin, Manifest: claudeManifest}
	x.m = &bundle.Manifest{ManifestVersion: 1, ImportedFrom: x.imp}
	x.top(top)
	if n, ok := top.keys["userConfig"]; ok {
		if uc, ok := d.object(n, "userConfig"); ok {
			x.order, x.opts = readUserOptions(d, uc, "userConfig", x.name)
		}
	}
	x.servers(top)
	x.components(top)
	for _, k := range x.order {
		o := x.opts[k]
		o.input.Becomes = becomes(o)
		x.imp.Inputs = append(x.imp.Inputs, *o.input)
	}
	for _, v := range x.varOrder {
		x.imp.Inputs = append(x.imp.Inputs, *x.vars[v])
	}
	x.constants()
	c.at("importedFrom", d.loc(""))
	c.manifest = x.m
	return c
}

// readTop starts the conversion of a source manifest, file, which must
// hold one JSON object whose keys are all in fields. It returns the
// conversion, the file's doc and its top object; ok is false, with the
// problem in c, when the file cannot be read as such an object.
func readTop(dir, file string, rules foreignRules, fields ...string) (c *conversion, d *doc, top obj, ok bool) {
	c = newConversion()
	d = &doc{file: file, rules: rules, ps: &c.ps}
	root := readForeign(d, dir, file)
	if root == nil {
		return c, d, obj{}, false
	}
	top, ok = d.object(root, "", fields...)
	return c, d, top, ok
}

// readForeign reads and parses a JSON file of the tree; nil when it cannot.
func readForeign(d *doc, dir, rel string) *strictjson.Node {
	data, err := fsx.ReadIn(dir, rel, maxForeignSize)
	if err != nil {
		d.add("", d.rules.syntax, "cannot read %s (%v); it must be a regular file", rel, err)
		return nil
	}
	root := d.parse(data)
	if root != nil && root.Kind != strictjson.Object {
		d.add("", d.rules.syntax, "%s must hold a JSON object, not %s", rel, root.Kind)
		return nil
	}
	return root
}

func (x *claudeImport) top(top obj) {
	c, d, m := x.c, x.d, x.m
	var name string
	if c.carry(top, "name", true, &name) {
		bundleName(m, x.imp, name)
		x.name = m.Name
	}
	switch {
	case c.carry(top, "version", false, &m.Version):
		if strings.TrimSpace(m.Version) == "" {
			d.add("version", bundle.RuleClaudeVersionMissing, "version is empty; write a strict semver version (\"1.0.0\"), or remove the field and berth derives one from the plugin's content (docs/manifest.md, \"Versionless plugins\")")
		}
	case !top.has("version"):
		x.deriveVersion()
	}
	c.carry(top, "description", false, &m.Description)
	c.carry(top, "license", false, &m.License)
	if n, ok := top.keys["author"]; ok {
		if a, ok := d.object(n, "author", "name", "email", "url"); ok {
			name, _ := a.str("name", true)
			m.Publisher = &bundle.Publisher{Name: name}
			c.at("publisher", d.loc("author"))
			c.at("publisher.name", d.loc("author.name"))
			if _, ok := a.str("email", false); ok {
				x.notCarried(d.loc("author.email"), "metadata", "", "berth's publisher has a name and a URL only")
			}
			if u, ok := a.str("url", false); ok {
				if isHTTPS(u) {
					m.Publisher.URL = u
					c.at("publisher.url", d.loc("author.url"))
				} else {
					x.notCarried(d.loc("author.url"), "metadata", "", "berth shows only https:// publisher URLs")
				}
			}
		}
	}
	if u, ok := top.str("homepage", false); ok {
		if isHTTPS(u) {
			m.Homepage = u
			c.at("homepage", d.loc("homepage"))
		} else {
			x.notCarried(d.loc("homepage"), "metadata", "", "berth shows only an https:// homepage")
		}
	}
	if _, ok := top.str("repository", false); ok {
		x.notCarried(d.loc("repository"), "metadata", "", "berth's manifest has no repository field")
	}
	if _, ok := top.strs("keywords"); ok {
		x.notCarried(d.loc("keywords"), "metadata", "", "berth's manifest has no keywords (a catalog has tags)")
	}
	top.str("$schema", false)
}

// deriveVersion gives a plugin whose plugin.json has no version the
// version 0.0.0-berth.<12 hex digits> of its content digest
// (DerivedVersion), and records the digest in
// importedFrom.derivedVersion. bundle.Open replaces both by those of the
// final bundle (bundle.DerivedDigest), which also covers the generated
// berth.json: --without, --pin and what berth writes there.
func (x *claudeImport) deriveVersion() {
	digest, err := ContentDigest(context.Background(), x.dir)
	if err != nil {
		x.d.add("version", bundle.RuleClaudeVersionMissing, "the plugin has no version, and berth cannot derive one from its content (%v); add \"version\": \"1.0.0\" (strict semver) to .claude-plugin/plugin.json", err)
		return
	}
	x.m.Version = DerivedVersion(digest)
	x.imp.DerivedVersion = &bundle.DerivedVersion{ContentDigest: digest}
	x.c.at("version", x.d.loc(""))
}

func (x *claudeImport) notCarried(field, kind, name, reason string) {
	x.imp.NotCarriedOver = append(x.imp.NotCarriedOver, bundle.NotCarried{Field: field, Kind: kind, Name: name, Reason: reason})
}

// pluginPath checks a path value of plugin.json: "./" and a clean path
// inside the plugin that exists. It returns the path without "./".
func (x *claudeImport) pluginPath(p, v string) (string, bool) {
	rel, ok := strings.CutPrefix(v, "./")
	if !ok || !lexical.CleanRel(rel) {
		x.d.add(p, bundle.RuleClaudePath, "%q must be \"./\" and a clean path inside the plugin (no \"..\", \"//\" or trailing '/')", v)
		return "", false
	}
	if !fsx.ExistsIn(x.dir, rel) {
		x.d.add(p, bundle.RuleClaudePath, "%q names nothing in the plugin; add it or fix the path", v)
		return "", false
	}
	return rel, true
}

// servers reads the MCP servers: .mcp.json at the plugin root, and
// mcpServers of plugin.json (a path, an inline object, or an array of
// those), which supplements it.
func (x *claudeImport) servers(top obj) {
	if fsx.ExistsIn(x.dir, claudeMCPFile) {
		x.serverFile(claudeMCPFile)
	}
	n, ok := top.keys["mcpServers"]
	if !ok {
		return
	}
	var items []*strictjson.Node
	var paths []string
	if n.Kind == strictjson.Array {
		for i, e := range n.Elems {
			items = append(items, e)
			paths = append(paths, index("mcpServers", i))
		}
	} else {
		items, paths = []*strictjson.Node{n}, []string{"mcpServers"}
	}
	for i, e := range items {
		switch e.Kind {
		case strictjson.String:
			if strings.HasSuffix(strings.ToLower(e.Str), ".mcpb") || strings.Contains(e.Str, "://") {
				x.d.add(paths[i], bundle.RuleClaudePath, "%q is an MCP Bundle; berth does not fetch or unpack bundles inside a plugin: import the .mcpb on its own (berth import), and remove it here", e.Str)
				continue
			}
			if rel, ok := x.pluginPath(paths[i], e.Str); ok {
				x.serverFile(rel)
			}
		case strictjson.Object:
			o, _ := x.d.object(e, paths[i])
			keys, vals := o.members()
			for j, k := range keys {
				x.server(x.d, k, strictjson.JoinPath(paths[i], k), vals[j])
			}
		default:
			x.d.wrong(paths[i], "a path, an object of servers, or an array of those", e)
		}
	}
}

// serverFile reads a file of MCP servers, in the documented form
// {"mcpServers": {...}} or the flat form {"name": {...}}.
func (x *claudeImport) serverFile(rel string) {
	d := &doc{file: rel, rules: claudeRules, ps: x.d.ps}
	root := readForeign(d, x.dir, rel)
	if root == nil {
		return
	}
	base := ""
	if slices.Contains(root.Keys, "mcpServers") {
		o, _ := d.object(root, "", "mcpServers")
		root, base = o.keys["mcpServers"], "mcpServers"
	}
	o, ok := d.object(root, base)
	if !ok {
		return
	}
	keys, vals := o.members()
	for i, k := range keys {
		x.server(d, k, strictjson.JoinPath(base, k), vals[i])
	}
}

// server converts one MCP server definition.
func (x *claudeImport) server(d *doc, srcName, p string, n *strictjson.Node) {
	name, ok := ServerName(srcName)
	if !ok {
		name = srcName // the validator refuses it (server-name-format)
	}
	if prev, dup := x.from[name]; dup {
		if x.source[name] == srcName {
			d.add(p, bundle.RuleClaudeServerDuplicate, "the server %q is also defined in %s; Claude Code would keep one of them, berth does not guess which: rename or remove one", srcName, prev)
		} else {
			d.add(p, bundle.RuleClaudeServerDuplicate, "the servers %q (%s) and %q both become the berth server name %q (docs/manifest.md, \"Names of other formats\"); rename one", x.source[name], prev, srcName, name)
		}
		return
	}
	x.from[name], x.source[name] = d.loc(p), srcName
	x.c.servers[srcName] = d.loc(p)
	if l := x.leftOut(srcName, name); l != nil {
		reason := "left out by berth import --without: the operator imported the rest of the plugin without it"
		if l.reason != "" {
			reason += "; berth could not import it: " + l.reason
		}
		x.notCarried(d.loc(p), "server", srcName, reason)
		return
	}
	if name != srcName {
		if x.imp.ServerNames == nil {
			x.imp.ServerNames = map[string]string{}
		}
		x.imp.ServerNames[name] = srcName
	}
	o, ok := d.object(n, p, "type", "command", "args", "env", "url", "headers", "headersHelper", "oauth")
	if !ok {
		return
	}
	typ, _ := o.str("type", false)
	sp := strictjson.JoinPath("mcpServers", name)
	x.c.at(sp, d.loc(p))
	if x.m.MCPServers == nil {
		x.m.MCPServers = map[string]*bundle.Server{}
		x.c.at("mcpServers", d.loc(""))
	}
	stdioKeys := []string{"command", "args", "env"}
	remoteKeys := []string{"url", "headers", "headersHelper", "oauth"}
	misfit := func(keys []string, kind string) {
		for _, k := range keys {
			if o.has(k) {
				d.add(o.at(k), bundle.RuleClaudeServerType, "%s is not a field of a %s server; remove it, or fix \"type\"", k, kind)
			}
		}
	}
	switch typ {
	case "", "stdio":
		misfit(remoteKeys, "stdio")
		x.stdio(d, o, sp, name)
	case "http", "sse":
		misfit(stdioKeys, typ)
		x.remote(d, o, sp, name, typ)
	case "ws":
		d.add(o.at("type"), bundle.RuleClaudeServerType, "berth has no WebSocket transport; use the server's http (Streamable HTTP) or sse endpoint")
	default:
		d.add(o.at("type"), bundle.RuleClaudeServerType, "type %q is not stdio, http or sse", typ)
	}
}

func (x *claudeImport) stdio(d *doc, o obj, sp, name string) {
	s := &bundle.Server{Stdio: &bundle.Stdio{}}
	x.m.MCPServers[name] = s
	x.c.at(sp+".stdio", o.d.loc(o.path))
	if cmd, ok := o.str("command", true); ok {
		s.Stdio.Command = x.subst(d, cmd, o.at("command"), true)
	}
	x.c.at(sp+".stdio.command", d.loc(o.at("command")))
	if args, ok := o.strs("args"); ok {
		for i, a := range args {
			ap := index(o.at("args"), i)
			s.Stdio.Args = append(s.Stdio.Args, x.subst(d, a, ap, false))
			x.c.at(index(sp+".stdio.args", i), d.loc(ap))
		}
	}
	x.c.at(sp+".stdio.args", d.loc(o.at("args")))
	keys, env, _ := o.strMap("env")
	x.c.at(sp+".stdio.env", d.loc(o.at("env")))
	for _, k := range keys {
		kp := strictjson.JoinPath(o.at("env"), k)
		if literalConstant(env[k]) {
			x.constant(d, kp, k, env[k], name, &s.Stdio.Env, sp+".stdio.env")
			continue
		}
		from, ok := x.envSource(d, kp, env[k], fmt.Sprintf("the environment variable %s of the server %q", k, name), false)
		if !ok {
			continue
		}
		x.c.fromEnv(&s.Stdio.Env, sp+".stdio.env", k, from, d.loc(kp))
	}
}

func (x *claudeImport) remote(d *doc, o obj, sp, name, typ string) {
	r := &bundle.Remote{Transport: bundle.TransportStreamableHTTP}
	if typ == "sse" {
		r.Transport = bundle.TransportSSE
	}
	x.m.MCPServers[name] = &bundle.Server{Remote: r}
	x.c.at(sp+".remote", d.loc(o.path))
	x.c.at(sp+".remote.transport", d.loc(o.at("type")))
	if u, ok := o.str("url", true); ok {
		if u == "" {
			d.add(o.at("url"), bundle.RuleClaudeRequiredField, "the url is empty: Claude Code fills in such a connector itself, and berth has no endpoint to review or connect to; write the server's https URL")
		} else if strings.Contains(u, "${") {
			d.add(o.at("url"), bundle.RuleClaudeVariable, "the url holds a ${…} variable; berth's review shows the one endpoint a remote talks to, so the url must be written out (a credential in it belongs in a header from the environment)")
		} else {
			r.URL = u
			if ep, err := bundle.ParseEndpoint(u); err == nil {
				r.Network = &bundle.Network{Hosts: []string{ep.Host}}
			}
		}
	}
	x.c.at(sp+".remote.url", d.loc(o.at("url")))
	x.c.at(sp+".remote.network", d.loc(o.at("url")))
	keys, hs, _ := o.strMap("headers")
	x.c.at(sp+".remote.headers", d.loc(o.at("headers")))
	for _, k := range keys {
		hp := strictjson.JoinPath(o.at("headers"), k)
		v := hs[k]
		if strings.EqualFold(k, "authorization") {
			if m := bearerRefRe.FindStringSubmatch(v); m != nil {
				from, ok := x.envSource(d, hp, m[1], fmt.Sprintf("the bearer token of the server %q", name), true)
				if ok {
					r.Auth = &bundle.RemoteAuth{BearerFromEnv: from}
					x.c.at(sp+".remote.auth", d.loc(hp))
				}
				continue
			}
			if envRefRe.MatchString(v) {
				// The whole value from one variable ("${CONTEXT7_API_KEY:-}"):
				// an Authorization header read from the environment.
				from, ok := x.envSource(d, hp, v, fmt.Sprintf("the whole Authorization header (a credential) of the server %q", name), true)
				if ok {
					x.c.fromEnv(&r.Headers, sp+".remote.headers", k, from, d.loc(hp))
				}
				continue
			}
		}
		from, ok := x.envSource(d, hp, v, fmt.Sprintf("the header %s of the server %q", k, name), true)
		if !ok {
			continue
		}
		x.c.fromEnv(&r.Headers, sp+".remote.headers", k, from, d.loc(hp))
	}
	if o.has("headersHelper") {
		d.add(o.at("headersHelper"), bundle.RuleClaudeRemoteAuth, "headersHelper is a command Claude Code runs to make headers; berth runs no such command and cannot review what it sends: take the headers from the environment instead (\"headers\": {\"X-Key\": \"${X_KEY}\"})")
	}
	if o.has("oauth") {
		x.oauth(d, o, sp, name, r)
		return
	}
	if r.Auth == nil && !o.has("headersHelper") && !credentialHeader(keys) {
		// Claude Code signs in to any remote that answers 401 with its
		// protected-resource metadata, oauth settings or not (the MCP
		// authorization spec); one that sends no credential may be such
		// a server, and "oauth": {} lets berth sign in then.
		r.Auth = &bundle.RemoteAuth{OAuth: &bundle.OAuth{}}
		x.c.at(sp+".remote.auth", d.loc(o.path))
	}
}

// credentialHeader reports whether one of the header names sends a
// credential: Authorization, or a name that says it holds one (X-API-Key,
// X-Auth-Token, ...).
func credentialHeader(names []string) bool {
	for _, k := range names {
		if strings.EqualFold(k, "authorization") {
			return true
		}
		if _, yes := bundle.LooksLikeCredential(k, ""); yes {
			return true
		}
	}
	return false
}

// oauth maps a remote's Claude Code oauth settings to auth.oauth
// (docs/manifest.md, "Signing in"): clientId → clientId, callbackPort →
// redirectPort, authServerMetadataUrl → the issuer it is the metadata of
// (pinned), scopes (one space-separated string) → scopes. xaa, cross-app
// access, is another grant than berth's and is refused; a key Claude
// Code's settings do not define is listed as not carried over.
func (x *claudeImport) oauth(d *doc, srv obj, sp, name string, r *bundle.Remote) {
	p := srv.at("oauth")
	n := srv.keys["oauth"]
	if n.Kind != strictjson.Object {
		d.wrong(p, "an object", n)
		return
	}
	known := []string{"clientId", "callbackPort", "authServerMetadataUrl", "scopes", "xaa"}
	o, _ := d.object(n, p)
	for _, k := range n.Keys {
		if slices.Contains(known, k) {
			continue
		}
		delete(o.keys, k)
		x.notCarried(d.loc(strictjson.JoinPath(p, k)), "unknown-field", k, fmt.Sprintf("not a field of Claude Code's oauth settings of a server; berth reads none of it, and the sign-in to the server %q does not depend on it", name))
	}
	if xaa, ok := o.keys["xaa"]; ok && !(xaa.Kind == strictjson.Bool && !xaa.Bool) {
		d.add(o.at("xaa"), bundle.RuleClaudeRemoteAuth, "xaa asks Claude Code to sign in with cross-app access (enterprise-managed authorization: a token of the company's identity provider exchanged for one of the server, RFC 8693 and the ID-JAG grant), a grant berth does not do; berth signs in as you in the browser (authorization code with PKCE): remove xaa, and the server is signed in to with berth login")
		return
	}
	a := &bundle.OAuth{}
	ap := sp + ".remote.auth.oauth"
	x.c.at(sp+".remote.auth", d.loc(p))
	x.c.at(ap, d.loc(p))
	if id, ok := o.str("clientId", false); ok {
		a.ClientID = id
		x.c.at(ap+".clientId", d.loc(o.at("clientId")))
	}
	if num, ok := o.number("callbackPort"); ok {
		port, err := strconv.Atoi(num)
		if err != nil {
			d.wrong(o.at("callbackPort"), "an integer", o.keys["callbackPort"])
		} else {
			a.RedirectPort = port
			x.c.at(ap+".redirectPort", d.loc(o.at("callbackPort")))
		}
	}
	if u, ok := o.str("authServerMetadataUrl", false); ok {
		iss, why := issuerOfMetadataURL(u)
		if why != "" {
			d.add(o.at("authServerMetadataUrl"), bundle.RuleClaudeRemoteAuth, "%s", why)
		} else {
			a.Issuer = iss
			x.c.at(ap+".issuer", d.loc(o.at("authServerMetadataUrl")))
		}
	}
	if sc, ok := o.str("scopes", false); ok {
		a.Scopes = strings.Fields(sc)
		if len(a.Scopes) == 0 {
			d.add(o.at("scopes"), bundle.RuleClaudeRemoteAuth, "scopes is empty; Claude Code needs at least one scope here: write them space-separated (\"repo read:org\"), or leave scopes out to ask for those the server names")
		}
		x.c.at(ap+".scopes", d.loc(o.at("scopes")))
	}
	if r.Auth == nil {
		r.Auth = &bundle.RemoteAuth{}
	}
	r.Auth.OAuth = a
}

// issuerOfMetadataURL returns the issuer whose authorization server
// metadata is at u, by the well-known locations RFC 8414 (section 3.1)
// and OpenID Connect Discovery define: https://as/.well-known/
// oauth-authorization-server[/path] and https://as/.well-known/
// openid-configuration[/path] insert the well-known segment before the
// issuer's path, https://as/path/.well-known/openid-configuration appends
// it. berth pins the issuer and finds its metadata there itself, checking
// that the metadata names the same issuer; a URL of another form is
// refused with why, since berth would fetch the metadata from another
// place than the plugin says.
func issuerOfMetadataURL(u string) (issuer, why string) {
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "https" || pu.Host == "" || pu.User != nil || pu.RawQuery != "" || pu.ForceQuery || pu.Fragment != "" || strings.ContainsAny(u, "?#") {
		return "", fmt.Sprintf("authServerMetadataUrl %q is not an https URL without user name, query or fragment; Claude Code and berth fetch an authorization server's metadata over https only: write the https URL of the server's metadata", u)
	}
	const oauthAS, oidc = "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"
	path := pu.EscapedPath()
	var rest string
	switch {
	case path == oauthAS || strings.HasPrefix(path, oauthAS+"/"):
		rest = strings.TrimPrefix(path, oauthAS)
	case path == oidc || strings.HasPrefix(path, oidc+"/"):
		rest = strings.TrimPrefix(path, oidc)
	case strings.HasSuffix(path, oidc):
		rest = strings.TrimSuffix(path, oidc)
	default:
		return "", fmt.Sprintf("authServerMetadataUrl %q is not at a well-known metadata location (https://HOST/.well-known/oauth-authorization-server[/PATH] of RFC 8414, or https://HOST[/PATH]/.well-known/openid-configuration of OpenID Connect); berth pins the authorization server by its issuer and reads its metadata from there, so it cannot tell which issuer this document belongs to: use the server's well-known metadata URL, or leave authServerMetadataUrl out to use the authorization server the server names", u)
	}
	iss := pu.Scheme + "://" + pu.Host + rest
	if _, err := bundle.ParseIssuer(iss); err != nil {
		return "", fmt.Sprintf("authServerMetadataUrl %q is the metadata of the issuer %q, which berth cannot pin: %v", u, iss, err)
	}
	return iss, ""
}

// envSource maps an env or header value to the host variable it is read
// from: exactly ${VAR} or ${VAR:-default} (VAR itself), or
// ${user_config.KEY} (the option's variable).
func (x *claudeImport) envSource(d *doc, p, v, use string, secret bool) (string, bool) {
	if key, ok := userConfigRef(v); ok {
		o := x.opts[key]
		if o == nil {
			d.add(p, bundle.RuleClaudeVariable, "${user_config.%s} names no option of userConfig; declare it there or fix the name", key)
			return "", false
		}
		o.input.FromEnv = o.envName
		o.uses = append(o.uses, use+", read from your $"+o.envName)
		return o.envName, true
	}
	m := envRefRe.FindStringSubmatch(v)
	if m == nil {
		if strings.Contains(v, "${") {
			d.add(p, bundle.RuleClaudeLiteralValue, "berth reads a value from one host variable, so this must be exactly \"${VAR}\" or \"${VAR:-default}\" (or, for Authorization, \"Bearer ${VAR}\"); it mixes text and variables (not shown: it may be a secret)")
		} else {
			d.add(p, bundle.RuleClaudeLiteralValue, "a literal value cannot be carried over (not shown: it may be a secret): berth passes only values from the host's environment; write \"${VAR}\" and set VAR on the host")
		}
		return "", false
	}
	name := m[1]
	if name == "CLAUDE_PROJECT_DIR" {
		d.add(p, bundle.RuleClaudeVariable, "${CLAUDE_PROJECT_DIR} is the project, which berth calls the workspace; berth passes it in the command line (${workspace}), not in the environment: pass it as an argument (\"args\": [\"--root\", \"${CLAUDE_PROJECT_DIR}\"])")
		return "", false
	}
	if name == "CLAUDE_PLUGIN_ROOT" || name == "CLAUDE_PLUGIN_DATA" {
		d.add(p, bundle.RuleClaudeLiteralValue, "${%s} is a path Claude Code fills in, not a host variable; berth passes only values from the host's environment", name)
		return "", false
	}
	in := x.vars[name]
	if in == nil {
		in = &bundle.ImportInput{Name: "${" + name + "}", FromEnv: name}
		x.vars[name] = in
		x.varOrder = append(x.varOrder, name)
	}
	if secret {
		in.Sensitive, in.Default = true, ""
	} else if m[2] != "" && !in.Sensitive {
		in.Default = m[3]
	}
	uses := use + ", read from your $" + name
	if m[2] != "" {
		uses += " (berth does not use the default: it starts the server only when $" + name + " is set)"
	}
	if in.Becomes == "" {
		in.Becomes = uses
	} else if !strings.Contains(in.Becomes, uses) {
		in.Becomes += "; " + uses
	}
	return name, true
}

// leftOut returns the --without entry of the server srcName (berth name
// name), or nil.
func (x *claudeImport) leftOut(srcName, name string) *leftOut {
	a, b := x.leave[srcName], x.leave[name]
	for _, l := range []*leftOut{a, b} {
		if l != nil {
			l.met = true
		}
	}
	if a != nil {
		return a
	}
	return b
}

// projectDir lists ${CLAUDE_PROJECT_DIR} among the inputs, once: it
// became ${workspace}.
func (x *claudeImport) projectDir() {
	const name = "CLAUDE_PROJECT_DIR"
	if x.vars[name] != nil {
		return
	}
	x.vars[name] = &bundle.ImportInput{Name: "${" + name + "}", Becomes: "${workspace} in the arguments: the workspace the plugin is enabled for (Claude Code's project)"}
	x.varOrder = append(x.varOrder, name)
}

// subst applies ${CLAUDE_PLUGIN_ROOT} → ${bundle},
// ${CLAUDE_PROJECT_DIR} → ${workspace} and the user options to
// a command or argument; any other variable is a problem, since argv is
// visible to every local user.
func (x *claudeImport) subst(d *doc, s, p string, isCommand bool) string {
	return substitute(s, func(name string, terminated bool) (string, bool) {
		switch {
		case !terminated:
			d.add(p, bundle.RuleClaudeVariable, "\"${%s\" has no closing '}'; berth does not guess what was meant", name)
			return "", false
		case name == "CLAUDE_PLUGIN_ROOT":
			return "${bundle}", true
		case name == "CLAUDE_PROJECT_DIR":
			x.projectDir()
			return "${workspace}", true
		case name == "CLAUDE_PLUGIN_DATA":
			d.add(p, bundle.RuleClaudeVariable, "${CLAUDE_PLUGIN_DATA} is Claude Code's data folder for the plugin, which berth does not have; keep data in the workspace (${workspace}) or let the server choose its own folder")
			return "", false
		}
		if key, ok := strings.CutPrefix(name, "user_config."); ok {
			o := x.opts[key]
			if o == nil {
				d.add(p, bundle.RuleClaudeVariable, "${user_config.%s} names no option of userConfig; declare it there or fix the name", key)
				return "", false
			}
			return userOptionArg(d, o, p, isCommand, bundle.RuleClaudeVariable)
		}
		d.add(p, bundle.RuleClaudeVariable, "${%s} in a command line cannot be carried over: argv is visible to every local user, so berth allows no environment variables there; pass the value in env (\"env\": {\"NAME\": \"${%s}\"})", name, strings.SplitN(name, ":-", 2)[0])
		return "", false
	})
}

// components lists what berth does not run: commands, agents, skills,
// hooks, output styles, themes, monitors, LSP servers, channels,
// settings and dependencies.
func (x *claudeImport) components(top obj) {
	const never = "never run by berth"
	x.listDir("commands", "command", ".md", "a Claude Code slash command; "+never)
	x.listDir("agents", "agent", ".md", "a Claude Code subagent; "+never)
	x.listSkills("skills")
	x.listDir("output-styles", "output-style", ".md", "a Claude Code output style; "+never)
	for _, k := range []string{"commands", "agents", "skills", "outputStyles", "themes"} {
		n, ok := top.keys[k]
		if !ok {
			continue
		}
		kind := map[string]string{"commands": "command", "agents": "agent", "skills": "skill", "outputStyles": "output-style", "themes": "theme"}[k]
		x.pathsOrObject(n, k, kind, "a Claude Code "+kind+"; "+never)
	}
	if fsx.ExistsIn(x.dir, "hooks/hooks.json") {
		x.hooksFile("hooks/hooks.json")
	}
	if n, ok := top.keys["hooks"]; ok {
		x.hooks(x.d, n, "hooks")
	}
	if fsx.ExistsIn(x.dir, ".lsp.json") {
		x.namedFile(".lsp.json", "lsp-server", "a language server Claude Code would start; "+never)
	}
	if n, ok := top.keys["lspServers"]; ok {
		x.named(x.d, n, "lspServers", "lsp-server", "a language server Claude Code would start; "+never)
	}
	if fsx.ExistsIn(x.dir, "monitors/monitors.json") {
		x.notCarried("monitors/monitors.json", "monitor", "", "monitors are commands Claude Code would run in the background; "+never)
	}
	for _, k := range []string{"monitors", "channels", "settings", "dependencies"} {
		if top.has(k) {
			reason := map[string]string{
				"monitors":     "monitors are commands Claude Code would run in the background; " + never,
				"channels":     "channels push messages into a Claude Code session; berth has none",
				"settings":     "Claude Code settings; berth changes no client settings",
				"dependencies": "other Claude Code plugins; berth installs each bundle on its own",
			}[k]
			x.notCarried(x.d.loc(k), strings.TrimSuffix(k, "s"), "", reason)
		}
	}
}

// listDir lists the files with suffix under a default component folder.
// The folder is walked inside the plugin only (os.Root), and symlinks in
// it are not followed.
func (x *claudeImport) listDir(dir, kind, suffix, reason string) {
	if fi, err := fsx.LstatIn(x.dir, dir); err != nil || !fi.IsDir() {
		return
	}
	root, err := os.OpenRoot(x.dir)
	if err != nil {
		return
	}
	defer root.Close()
	n := 0
	fs.WalkDir(root.FS(), dir, func(rel string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(e.Name(), suffix) {
			return nil
		}
		name := strings.TrimSuffix(strings.TrimPrefix(rel, dir+"/"), suffix)
		n++
		if n <= maxListed {
			x.notCarried(rel, kind, strings.ReplaceAll(name, "/", ":"), reason)
		}
		return nil
	})
	if n > maxListed {
		x.notCarried(dir, kind, "", fmt.Sprintf("and %d more in %s/; %s", n-maxListed, dir, reason))
	}
}

// listSkills lists skills/<name>/SKILL.md, inside the plugin only.
func (x *claudeImport) listSkills(dir string) {
	root, err := os.OpenRoot(x.dir)
	if err != nil {
		return
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !fsx.ExistsIn(x.dir, dir+"/"+e.Name()+"/SKILL.md") {
			continue
		}
		if n++; n <= maxListed {
			x.notCarried(dir+"/"+e.Name()+"/SKILL.md", "skill", e.Name(), "a Claude Code skill (instructions and files for the model); never run by berth")
		}
	}
	if n > maxListed {
		x.notCarried(dir, "skill", "", fmt.Sprintf("and %d more skills", n-maxListed))
	}
}

// pathsOrObject lists a plugin.json component field: a path, an array of
// paths, or an object of named entries.
func (x *claudeImport) pathsOrObject(n *strictjson.Node, p, kind, reason string) {
	switch n.Kind {
	case strictjson.String:
		if rel, ok := x.pluginPath(p, n.Str); ok {
			x.notCarried(rel, kind, strings.TrimSuffix(path.Base(rel), ".md"), reason)
		}
	case strictjson.Array:
		for i, e := range n.Elems {
			if e.Kind != strictjson.String {
				x.d.wrong(index(p, i), "a path", e)
				continue
			}
			if rel, ok := x.pluginPath(index(p, i), e.Str); ok {
				x.notCarried(rel, kind, strings.TrimSuffix(path.Base(rel), ".md"), reason)
			}
		}
	case strictjson.Object:
		for i, k := range n.Keys {
			if i >= maxListed {
				break
			}
			x.notCarried(x.d.loc(strictjson.JoinPath(p, k)), kind, k, reason)
		}
	default:
		x.d.wrong(p, "a path, an array of paths or an object", n)
	}
}

// listedFile reads and parses rel, a JSON file inside the plugin, the
// first time it is named: first is false when rel was listed already, and
// root is nil when berth cannot read or parse it. Its problems are not
// kept: a file berth only lists is never a reason to refuse the plugin.
func (x *claudeImport) listedFile(rel string) (d *doc, root *strictjson.Node, first bool) {
	if x.listed[rel] {
		return nil, nil, false
	}
	x.listed[rel] = true
	d = &doc{file: rel, rules: claudeRules, ps: &problems{}}
	if data, err := fsx.ReadIn(x.dir, rel, maxForeignSize); err == nil {
		root = d.parse(data)
	}
	return d, root, true
}

func (x *claudeImport) hooksFile(rel string) {
	d, root, first := x.listedFile(rel)
	if !first {
		return
	}
	if root == nil {
		x.notCarried(rel, "hook", "", "a hooks file berth could not read; hooks are commands Claude Code runs on events, and berth never runs them")
		return
	}
	x.hooks(d, root, "")
}

// hooks lists hook events and the commands Claude Code would run. Hooks
// are listed, never run, so a file berth cannot read is listed as such
// rather than refused.
func (x *claudeImport) hooks(d *doc, n *strictjson.Node, p string) {
	if n.Kind == strictjson.String {
		if rel, ok := x.pluginPath(p, n.Str); ok {
			x.hooksFile(rel)
		}
		return
	}
	if n.Kind == strictjson.Array {
		for i, e := range n.Elems {
			x.hooks(d, e, index(p, i))
		}
		return
	}
	if n.Kind != strictjson.Object {
		x.notCarried(d.loc(p), "hook", "", "hooks berth could not read; berth never runs hooks")
		return
	}
	if i := slices.Index(n.Keys, "hooks"); i >= 0 && n.Values[i].Kind == strictjson.Object {
		n, p = n.Values[i], strictjson.JoinPath(p, "hooks")
	}
	for i, event := range n.Keys {
		var cmds []string
		for _, group := range n.Values[i].Elems {
			for j, k := range group.Keys {
				if k != "hooks" {
					continue
				}
				for _, h := range group.Values[j].Elems {
					for l, hk := range h.Keys {
						if hk == "command" && h.Values[l].Kind == strictjson.String {
							cmds = append(cmds, h.Values[l].Str)
						}
					}
				}
			}
		}
		reason := "a HOOK: code Claude Code would run on this event"
		if len(cmds) > 0 {
			reason += " (" + strings.Join(quoteAll(cmds), ", ") + ")"
		}
		x.notCarried(d.loc(strictjson.JoinPath(p, event)), "hook", event, reason+"; berth never runs hooks")
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// namedFile lists the entries of a JSON file of named definitions.
func (x *claudeImport) namedFile(rel, kind, reason string) {
	d, root, first := x.listedFile(rel)
	if !first {
		return
	}
	if root == nil || root.Kind != strictjson.Object {
		x.notCarried(rel, kind, "", reason+" (a file berth could not read)")
		return
	}
	x.named(d, root, "", kind, reason)
}

func (x *claudeImport) named(d *doc, n *strictjson.Node, p, kind, reason string) {
	switch n.Kind {
	case strictjson.String:
		if rel, ok := x.pluginPath(p, n.Str); ok {
			x.namedFile(rel, kind, reason)
		}
	case strictjson.Array:
		for i, e := range n.Elems {
			x.named(d, e, index(p, i), kind, reason)
		}
	case strictjson.Object:
		for i, k := range n.Keys {
			if i < maxListed {
				x.notCarried(d.loc(strictjson.JoinPath(p, k)), kind, k, reason)
			}
		}
	default:
		x.notCarried(d.loc(p), kind, "", reason)
	}
}
