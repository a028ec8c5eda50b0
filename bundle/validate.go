package bundle

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Masterminds/semver/v3"
	"github.com/berth-mcp/berth/bundle/internal/lexical"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/strictjson"
)

var (
	nameRe       = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
	serverNameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$`)
	toolPatRe    = regexp.MustCompile(`^[A-Za-z0-9_.*?-]+$`)
	headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	varRe        = regexp.MustCompile(`\$\{([^}]*)\}?`)
)

// IsStrictSemver reports whether v is a semver 2.0 version with no "v".
// It is berth's one rule for a plugin's version.
func IsStrictSemver(v string) bool { return lexical.StrictSemver(v) }

// VersionLess reports whether version a sorts before version b by semver
// 2.0 precedence. When either is not strict semver (see IsStrictSemver) it
// falls back to comparing the strings, so the order stays total. It is
// berth's one rule for ordering a plugin's versions.
//
// Two derived versions (IsDerivedVersion) are never less than each other:
// a stable sort keeps them in the order their source gave them.
func VersionLess(a, b string) bool {
	if IsDerivedVersion(a) && IsDerivedVersion(b) {
		return false
	}
	va, ea := semver.StrictNewVersion(a)
	vb, eb := semver.StrictNewVersion(b)
	if ea != nil || eb != nil {
		return a < b
	}
	return va.LessThan(vb)
}

// IsValidName reports whether name is a plugin name: lower-case letters,
// digits and inner hyphens, 1 to 64 characters. It is berth's one rule for
// a plugin's name, in manifests, trust records and on command lines.
func IsValidName(name string) bool { return nameRe.MatchString(name) }

// IsValidServerName reports whether name is a server name a manifest may
// use: 1 to 32 lower-case letters, digits, '_' or '-', starting and ending
// with a letter or digit, with no "__" (the separator of exported names),
// and not one of the reserved names sampling and elicitation.
func IsValidServerName(name string) bool {
	return serverNameRe.MatchString(name) && !strings.Contains(name, "__") && name != "sampling" && name != "elicitation"
}

// IsValidEnvName reports whether s is an environment variable name berth
// accepts: a letter or '_', then letters, digits and '_'.
func IsValidEnvName(s string) bool { return lexical.EnvName(s) }

// forbiddenHeaders are headers berth controls itself.
var forbiddenHeaders = []string{"host", "authorization", "cookie", "content-length", "transfer-encoding", "connection"}

// secretQueryWords mark query parameters that look like credentials.
var secretQueryWords = []string{"token", "key", "secret", "password", "passwd", "auth", "sig", "credential", "session"}

// Default timeouts and their ranges.
const (
	DefaultStartupTimeout = 30 * time.Second
	DefaultCallTimeout    = 60 * time.Second
)

// runtimeProbe checks the runtimes an imported source declares
// (runtimefetch.CheckRuntime).
type runtimeProbe struct {
	ctx     context.Context
	version runtimefetch.RuntimeVersionFunc
}

func (p runtimeProbe) check(name, constraint string) error {
	return runtimefetch.CheckRuntime(p.ctx, p.version, name, constraint)
}

type validator struct {
	ps      *problems
	present map[string]bool
	tree    *Tree
	probe   runtimeProbe
	// formats are the formats Load reads besides berth's own.
	formats []*Format
}

// validate applies the semantic rules of manifest v1; probe checks the
// runtimes an imported bundle declares, and formats are those that
// importedFrom may name besides the known ones. Problems at paths whose value
// could not be decoded were reported already and are dropped.
func validate(d *decoded, tree *Tree, berthVersion string, probe runtimeProbe, formats []*Format) {
	if d.bad[""] {
		return
	}
	var ps problems
	v := &validator{ps: &ps, present: d.present, tree: tree, probe: probe, formats: formats}
	defer func() {
		for _, p := range ps.list {
			if !underBad(d.bad, p.Path) {
				d.problems.list = append(d.problems.list, p)
			}
		}
	}()
	m := d.manifest
	v.top(m, berthVersion)
	v.importedFrom(m.ImportedFrom)
	v.pinned(m)
	if m.ImportedFrom != nil {
		v.confirmInputs(m)
	}
	for _, name := range slices.Sorted(maps.Keys(m.MCPServers)) {
		v.server("mcpServers."+name, name, m.MCPServers[name])
	}
	for _, name := range slices.Sorted(maps.Keys(m.NativeTools)) {
		p := strictjson.JoinPath("nativeTools", name)
		switch {
		case !serverNameRe.MatchString(name):
			v.ps.add(p, RuleNativeToolNameFormat, "native tool name %q must be 1-32 lower-case letters, digits, '_' or '-', starting and ending with a letter or digit; rename it", name)
		case strings.Contains(name, "__"):
			v.ps.add(p, RuleNativeToolNameFormat, "native tool name %q has \"__\", which separates the provider from the tool in exported names (<plugin>__<provider>__<tool>); rename it, e.g. %q", name, strings.ReplaceAll(name, "__", "_"))
		}
		if _, taken := m.MCPServers[name]; taken {
			v.ps.add(p, RuleNativeToolNameTaken, "a server is named %q too, and exported names would not say which one a tool belongs to (<plugin>__%s__<tool>); rename one of them", name, name)
		}
		nt := m.NativeTools[name]
		if nt == nil {
			continue
		}
		if nt.Executable == "" {
			v.ps.add(p+".executable", RuleRequiredField, "executable is required: the ${bundle}/… path of the tool provider binary")
			continue
		}
		v.bundleExecutable(p+".executable", nt.Executable, RuleNativeExecutable)
		if nt.Sandbox != nil {
			v.sandbox(p+".sandbox", nt.Sandbox, false)
		}
	}
}

func (v *validator) top(m *Manifest, berthVersion string) {
	if !v.present["manifestVersion"] {
		v.ps.add("manifestVersion", RuleRequiredField, "manifestVersion is required; add \"manifestVersion\": 1")
	} else if m.ManifestVersion != 1 {
		v.ps.add("manifestVersion", RuleManifestVersion, "manifestVersion is %d, but this berth reads only version 1; set it to 1 or upgrade berth", m.ManifestVersion)
	}
	switch {
	case m.Name == "":
		v.required("name", "the bundle's name, e.g. \"acme-notes\"")
	case !nameRe.MatchString(m.Name):
		v.ps.add("name", RuleNameFormat, "name %q must be 1-64 lower-case letters, digits and '-', starting and ending with a letter or digit", m.Name)
	}
	switch {
	case m.Version == "":
		v.required("version", "a semver 2.0 version, e.g. \"1.4.2\"")
	case !lexical.StrictSemver(m.Version):
		hint := "; write the release's version so"
		switch {
		case strings.HasPrefix(m.Version, "v") || strings.HasPrefix(m.Version, "V"):
			hint = " (drop the leading \"v\")"
		case strings.Contains(m.Version, "{{") || strings.Contains(m.Version, "${"):
			hint = "; it is an unfilled template placeholder: use the manifest of a built release, whose version is filled in"
		}
		v.ps.add("version", RuleVersionSemver, "version %q is not strict semver 2.0 like \"1.4.2\" or \"2.0.0-rc.1\"%s", m.Version, hint)
	}
	v.derivedVersion(m)
	n := utf8.RuneCountInString(m.Description)
	switch {
	case !v.present["description"]:
		v.required("description", "one line saying what the plugin does (1-1024 characters)")
	case n < 1 || n > 1024:
		v.ps.add("description", RuleDescriptionLength, "description has %d characters; it must have 1 to 1024", n)
	}
	if m.Publisher != nil {
		if m.Publisher.Name == "" {
			v.required("publisher.name", "who publishes the bundle")
		}
		if m.Publisher.URL != "" || v.present["publisher.url"] {
			v.httpsURL("publisher.url", m.Publisher.URL)
		}
	}
	if m.Homepage != "" || v.present["homepage"] {
		v.httpsURL("homepage", m.Homepage)
	}
	if m.Requires != nil && (m.Requires.Berth != "" || v.present["requires.berth"]) {
		c, err := semver.NewConstraint(m.Requires.Berth)
		if err != nil {
			v.ps.add("requires.berth", RuleRequiresConstraint, "%q is not a semver constraint; write one like \">=0.1.0\" or \"^1.2\"", m.Requires.Berth)
		} else if bv, err := semver.StrictNewVersion(berthVersion); err != nil {
			v.ps.add("requires.berth", RuleRequiresUnsatisfied, "cannot check %q: this berth's version %q is not semver", m.Requires.Berth, berthVersion)
		} else if !c.Check(bv) {
			v.ps.add("requires.berth", RuleRequiresUnsatisfied, "the bundle needs berth %s, but this is berth %s; upgrade berth or use a release of the bundle made for this version", m.Requires.Berth, berthVersion)
		}
	}
	if len(m.MCPServers) == 0 && len(m.NativeTools) == 0 {
		v.ps.add(".", RuleNoComponents, "the bundle declares nothing to run; add at least one entry to mcpServers or nativeTools")
	}
}

func (v *validator) required(p, what string) {
	v.ps.add(p, RuleRequiredField, "%s is required: %s", p, what)
}

func (v *validator) httpsURL(p, raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		v.ps.add(p, RuleHTTPSURL, "%q is not an https URL; write a full https://host/… address", raw)
	}
}

func (v *validator) server(p, name string, s *Server) {
	switch {
	case !serverNameRe.MatchString(name):
		v.ps.add(p, RuleServerNameFormat, "server name %q must be 1-32 lower-case letters, digits, '_' or '-', starting and ending with a letter or digit; rename it", name)
	case strings.Contains(name, "__"):
		v.ps.add(p, RuleServerNameFormat, "server name %q has \"__\", which separates the server from the tool in exported names (<plugin>__<server>__<tool>); rename it, e.g. %q", name, strings.ReplaceAll(name, "__", "_"))
	case name == "sampling" || name == "elicitation":
		// <plugin>__sampling and <plugin>__elicitation name the policy of
		// the plugin's sampling and elicitation requests (docs/relay.md);
		// a server of that name would share its resource rule with them.
		v.ps.add(p, RuleServerNameFormat, "server name %q is reserved: <plugin>__%s is the policy name of the plugin's %s requests; rename it, e.g. %q", name, name, name, name+"-server")
	}
	if s == nil {
		return
	}
	switch {
	case s.Stdio == nil && s.Remote == nil:
		v.ps.add(p, RuleServerTransport, "a server must set exactly one of \"stdio\" (a local process) and \"remote\" (an HTTP endpoint); it sets neither")
	case s.Stdio != nil && s.Remote != nil:
		v.ps.add(p, RuleServerTransport, "a server must set exactly one of \"stdio\" and \"remote\"; it sets both; split it into two servers")
	}
	if s.Stdio != nil {
		v.stdio(p+".stdio", s.Stdio)
	}
	if s.Remote != nil {
		v.remote(p+".remote", s.Remote)
	}
	if s.Tools != nil {
		for i, pat := range s.Tools.Allow {
			v.toolPattern(fmt.Sprintf("%s.tools.allow[%d]", p, i), pat)
		}
		for i, pat := range s.Tools.Deny {
			v.toolPattern(fmt.Sprintf("%s.tools.deny[%d]", p, i), pat)
		}
	}
	if s.Sandbox != nil {
		v.sandbox(p+".sandbox", s.Sandbox, s.Remote != nil && s.Stdio == nil)
	}
	if s.Timeouts != nil {
		v.timeout(p+".timeouts.startup", s.Timeouts.Startup, time.Second, 10*time.Minute)
		v.timeout(p+".timeouts.call", s.Timeouts.Call, time.Second, time.Hour)
	}
}

func (v *validator) toolPattern(p, pat string) {
	if !toolPatRe.MatchString(pat) {
		v.ps.add(p, RuleToolPattern, "%q is not a tool name or glob; use only letters, digits, '_', '.', '-' and the wildcards '*' and '?'", pat)
	}
}

func (v *validator) timeout(p, raw string, lo, hi time.Duration) {
	if raw == "" && !v.present[p] {
		return
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		v.ps.add(p, RuleTimeoutFormat, "%q is not a duration; write one like \"30s\" or \"2m\"", raw)
		return
	}
	if d < lo || d > hi {
		v.ps.add(p, RuleTimeoutRange, "%s is outside the allowed range %s to %s", d, lo, hi)
	}
}

// ParseTimeouts returns a server's startup and call timeouts, with defaults.
// The manifest must have been validated.
func (s *Server) ParseTimeouts() (startup, call time.Duration) {
	startup, call = DefaultStartupTimeout, DefaultCallTimeout
	if s.Timeouts != nil {
		if d, err := time.ParseDuration(s.Timeouts.Startup); err == nil {
			startup = d
		}
		if d, err := time.ParseDuration(s.Timeouts.Call); err == nil {
			call = d
		}
	}
	return startup, call
}

func (v *validator) stdio(p string, s *Stdio) {
	if s.Command == "" {
		v.ps.add(p+".command", RuleCommandRequired, "command is required: \"${bundle}/path/to/server\" for a bundled program, or a program name like \"node\"")
	} else if v.vars(p+".command", s.Command) {
		switch {
		case strings.HasPrefix(s.Command, "${bundle}"):
			v.bundleExecutable(p+".command", s.Command, RuleCommandNotExecutable)
		case strings.HasPrefix(s.Command, "${workspace}"):
			// A workspace program: disclosed by the review; only its path
			// can be checked here.
			if rel, ok := strings.CutPrefix(s.Command, "${workspace}/"); !ok || !lexical.CleanRel(rel) {
				v.ps.add(p+".command", RuleCommandForm, "command %q must be \"${workspace}/path\" with a clean path inside the workspace (no \"..\", \".\", \"//\" or trailing '/')", s.Command)
			}
		case strings.ContainsAny(s.Command, `/\`) || strings.TrimSpace(s.Command) != s.Command || s.Command == "." || s.Command == "..":
			v.ps.add(p+".command", RuleCommandForm, "command %q must be \"${bundle}/…\" for a program in the bundle, or a bare program name found on PATH (like \"node\"); host paths are not allowed", s.Command)
		}
		v.command(p, s)
	}
	for i, a := range s.Args {
		ap := fmt.Sprintf("%s.args[%d]", p, i)
		if v.vars(ap, a) {
			v.bundleRef(ap, a, false)
		}
	}
	if s.Cwd != "" || v.present[p+".cwd"] {
		if v.vars(p+".cwd", s.Cwd) {
			switch {
			case strings.HasPrefix(s.Cwd, "${bundle}"):
				v.bundleRef(p+".cwd", s.Cwd, true)
			case strings.HasPrefix(s.Cwd, "${workspace}"):
				if rel, ok := strings.CutPrefix(s.Cwd, "${workspace}/"); s.Cwd != "${workspace}" && (!ok || !lexical.CleanRel(rel)) {
					v.ps.add(p+".cwd", RuleVariablePlacement, "cwd %q must be ${workspace} or \"${workspace}/dir\" with a clean path inside the workspace (no \"..\", \".\", \"//\" or trailing '/')", s.Cwd)
				}
			default:
				v.ps.add(p+".cwd", RuleVariablePlacement, "cwd must start with ${bundle} or ${workspace}; it defaults to ${bundle}")
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		kp := strictjson.JoinPath(p+".env", k)
		if e := s.Env[k]; e.BundlePath != nil || v.present[kp+".bundlePath"] {
			v.bundlePathEnv(kp, k, e)
			continue
		}
		v.envKey(kp, k)
		v.envSource(kp+".fromEnv", s.Env[k])
	}
}

// bundlePathEnv checks a {"bundlePath": [...]} value: PYTHONPATH or
// NODE_PATH only, and every element a clean path of the bundle. An empty
// element would mean the server's working directory (which may be the
// workspace), a ".." or an absolute path a place outside what was
// reviewed, and a list separator inside an element two elements.
func (v *validator) bundlePathEnv(p, k string, e EnvSource) {
	if !lexical.EnvName(k) {
		v.ps.add(p, RuleEnvNameFormat, "environment variable name %q must match [A-Za-z_][A-Za-z0-9_]*", k)
		return
	}
	if !BundlePathKey(k) {
		v.ps.add(p+".bundlePath", RuleEnvBundlePath, "bundlePath may set only PYTHONPATH and NODE_PATH (where Python and Node find modules), not %s; read %s from the host with {\"fromEnv\": NAME}, or pass the path as an argument (\"--x=${bundle}/…\")", k, k)
		return
	}
	if e.FromEnv != "" || v.present[p+".fromEnv"] {
		v.ps.add(p, RuleEnvBundlePath, "%s sets both fromEnv and bundlePath; keep bundlePath: %s may be set only to paths inside the bundle", k, k)
	}
	if len(e.BundlePath) == 0 {
		v.ps.add(p+".bundlePath", RuleEnvBundlePath, "bundlePath of %s is empty; list the folders of the bundle, such as [\"server/lib\"], or remove %s", k, k)
	}
	for i, el := range e.BundlePath {
		ep := fmt.Sprintf("%s.bundlePath[%d]", p, i)
		switch {
		case el == "":
			v.ps.add(ep, RuleEnvBundlePath, "an empty element of %s means the server's working directory, which may be the workspace; name a folder of the bundle, such as \"server/lib\"", k)
		case strings.ContainsAny(el, ":;"):
			v.ps.add(ep, RuleEnvBundlePath, "%q holds a list separator (':' or ';'), which would split it into two elements of %s; write each folder as its own element", el, k)
		case path.IsAbs(el) || strings.HasPrefix(el, `\`):
			v.ps.add(ep, RuleEnvBundlePath, "%q is an absolute path; %s may name only paths inside the bundle, relative to its root, such as \"server/lib\"", el, k)
		case el == ".." || strings.HasPrefix(el, "../") || strings.Contains(el, "/../") || strings.HasSuffix(el, "/.."):
			v.ps.add(ep, RuleEnvBundlePath, "%q leads out of the bundle with \"..\"; %s may name only paths inside the bundle", el, k)
		case !lexical.CleanRel(el):
			v.ps.add(ep, RuleEnvBundlePath, "%q is not a clean path inside the bundle (no \".\", \"//\", trailing '/' or backslash); write it as %q", el, strings.Trim(path.Clean("/"+strings.ReplaceAll(el, `\`, "/")), "/"))
		case v.tree != nil && v.tree.Listing != nil && !v.tree.Exists(el):
			v.ps.add(ep, RuleBundlePathMissing, "%q is not in the bundle; add it or fix the path", el)
		}
	}
}

func (v *validator) envKey(p, k string) {
	if !lexical.EnvName(k) {
		v.ps.add(p, RuleEnvNameFormat, "environment variable name %q must match [A-Za-z_][A-Za-z0-9_]*", k)
		return
	}
	if what, pattern, ok := forbiddenEnvKey(k); ok {
		fix := "remove it, and pass what the server needs as an argument or a variable of its own"
		if BundlePathKey(k) {
			fix = "it may name only paths inside the bundle: write {\"bundlePath\": [\"server/lib\"]} (docs/manifest.md), or remove it"
		}
		v.ps.add(p, RuleEnvKeyForbidden, "a bundle may not set %s (%s, in any letter case): it configures %s, which changes which code the server runs or where that code comes from; %s", k, pattern, what, fix)
	}
}

func (v *validator) envSource(p string, e EnvSource) {
	if !lexical.EnvName(e.FromEnv) {
		v.ps.add(p, RuleEnvNameFormat, "fromEnv must name a host environment variable matching [A-Za-z_][A-Za-z0-9_]*, got %q", e.FromEnv)
	}
}

// vars checks the ${...} variables in s: only ${bundle} and ${workspace},
// each at the start of s or right after '='. It reports false when s has a
// problem.
func (v *validator) vars(p, s string) bool {
	ok := true
	for _, m := range varRe.FindAllStringSubmatchIndex(s, -1) {
		full := s[m[0]:m[1]]
		name := s[m[2]:m[3]]
		if !strings.HasSuffix(full, "}") || (name != "bundle" && name != "workspace") {
			v.ps.add(p, RuleVariableUnknown, "%q uses the variable %s; only ${bundle} and ${workspace} are allowed here, since argv is visible to every local user; pass secrets with env {\"fromEnv\": …}", s, full)
			ok = false
			continue
		}
		if m[0] != 0 && s[m[0]-1] != '=' {
			v.ps.add(p, RuleVariablePlacement, "%q: %s must start the value or follow '=' (as in --root=%s)", s, full, full)
			ok = false
		}
	}
	return ok
}

// bundleRef checks every ${bundle} path in an argument: clean, and present
// in the bundle.
func (v *validator) bundleRef(p, s string, wantDir bool) {
	i := strings.Index(s, "${bundle}")
	if i < 0 {
		return
	}
	rest := s[i+len("${bundle}"):]
	if rest == "" {
		return
	}
	rel, ok := v.cleanBundlePath(p, s, rest)
	if !ok {
		return
	}
	if v.tree == nil || v.tree.Listing == nil {
		return
	}
	if !v.tree.Exists(rel) {
		v.ps.add(p, RuleBundlePathMissing, "%q names %q, which is not in the bundle; add the file or fix the path", s, rel)
		return
	}
	if wantDir && !v.tree.IsDir(rel) {
		v.ps.add(p, RuleCwdNotDirectory, "%q names %q, which is not a directory", s, rel)
	}
}

func (v *validator) cleanBundlePath(p, s, rest string) (string, bool) {
	if !strings.HasPrefix(rest, "/") {
		v.ps.add(p, RuleVariablePlacement, "%q: ${bundle} must be followed by '/' and a path, or stand alone", s)
		return "", false
	}
	rel := rest[1:]
	if !lexical.CleanRel(rel) {
		v.ps.add(p, RuleBundlePathUnclean, "%q is not a clean path inside the bundle (no \"..\", \".\", \"//\" or trailing '/'); write it as %q", s, "${bundle}/"+strings.Trim(path.Clean("/"+rel), "/"))
		return "", false
	}
	return rel, true
}

// bundleExecutable requires s to be ${bundle}/path naming a regular file
// with an exec bit (not a symlink).
func (v *validator) bundleExecutable(p, s, rule string) {
	if !strings.HasPrefix(s, "${bundle}/") {
		v.ps.add(p, rule, "%q must be a path in the bundle: \"${bundle}/bin/…\"", s)
		return
	}
	if !v.vars(p, s) {
		return
	}
	rel, ok := v.cleanBundlePath(p, s, strings.TrimPrefix(s, "${bundle}"))
	if !ok || v.tree == nil || v.tree.Listing == nil {
		return
	}
	e, found := v.tree.Listing.Lookup(rel)
	switch {
	case !found && v.tree.IsDir(rel):
		v.ps.add(p, rule, "%s is a directory; name the executable file inside it", rel)
	case !found:
		v.ps.add(p, RuleBundlePathMissing, "%q names %q, which is not in the bundle; add the file or fix the path", s, rel)
	case e.Mode == ModeSymlink:
		v.ps.add(p, rule, "%s is a symlink; name the regular file it points to, so the reviewed program is the one that runs", rel)
	case e.Mode != ModeExec:
		v.ps.add(p, rule, "%s is not executable; set its exec bit (chmod +x %s) before packing", rel, rel)
	}
}

func (v *validator) remote(p string, r *Remote) {
	switch r.Transport {
	case TransportStreamableHTTP, TransportSSE:
	case "":
		v.ps.add(p+".transport", RuleRemoteTransport, "transport is required: \"streamable-http\" or \"sse\"")
	default:
		v.ps.add(p+".transport", RuleRemoteTransport, "transport %q is not \"streamable-http\" or \"sse\"", r.Transport)
	}
	host, ok := v.remoteURL(p+".url", r.URL)
	folded := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
		hp := strictjson.JoinPath(p+".headers", k)
		other, dup := folded[strings.ToLower(k)]
		folded[strings.ToLower(k)] = k
		switch {
		case dup:
			v.ps.add(hp, RuleDuplicateKey, "the header %q is also set as %q; header names ignore case, so only one of them would be sent; keep one", k, other)
		case !headerNameRe.MatchString(k):
			v.ps.add(hp, RuleHeaderNameFormat, "%q is not a valid HTTP header name", k)
		case strings.EqualFold(k, "authorization") && r.Auth != nil && r.Auth.OAuth != nil:
			v.ps.add(hp, RuleOAuthExclusive, "the Authorization header is set here, and auth.oauth signs in and sends the token it gets in the same header; keep one: remove the header to sign in, or remove auth.oauth to send $%s", r.Headers[k].FromEnv)
		case strings.EqualFold(k, "authorization") && r.Auth != nil && r.Auth.BearerFromEnv != "":
			// The whole Authorization value may come from one host
			// variable (a header is always an environment source), but
			// only when auth sets no bearer token: one source for it.
			v.ps.add(hp, RuleHeaderForbidden, "the Authorization header is set here and by auth.bearerFromEnv; keep one: the header (the whole value from $%s) or the bearer token", r.Headers[k].FromEnv)
		case strings.EqualFold(k, "authorization"):
		case containsFold(forbiddenHeaders, k):
			v.ps.add(hp, RuleHeaderForbidden, "a bundle may not set the %s header; remove it; berth sets it itself", k)
		}
		if r.Headers[k].BundlePath != nil || v.present[hp+".bundlePath"] {
			v.ps.add(hp+".bundlePath", RuleEnvBundlePath, "a header is read from the host environment only; write {\"fromEnv\": NAME}")
			continue
		}
		v.envSource(hp+".fromEnv", r.Headers[k])
	}
	if r.Auth != nil && (r.Auth.BearerFromEnv != "" || v.present[p+".auth.bearerFromEnv"]) && !lexical.EnvName(r.Auth.BearerFromEnv) {
		v.ps.add(p+".auth.bearerFromEnv", RuleEnvNameFormat, "bearerFromEnv must name a host environment variable matching [A-Za-z_][A-Za-z0-9_]*, got %q", r.Auth.BearerFromEnv)
	}
	if r.Auth != nil && r.Auth.OAuth != nil {
		v.oauth(p+".auth", r.Auth)
	}
	if r.Network == nil || len(r.Network.Hosts) == 0 {
		want := ""
		if ok {
			want = fmt.Sprintf(": \"network\": {\"hosts\": [%q]}", host)
		}
		v.ps.add(p+".network.hosts", RuleNetworkHostsMissing, "network.hosts is required and must list the endpoint's host%s", want)
		return
	}
	if !ok {
		return
	}
	got := append([]string(nil), r.Network.Hosts...)
	sort.Strings(got)
	if len(got) != 1 || got[0] != host {
		v.ps.add(p+".network.hosts", RuleNetworkHostsMismatch, "network.hosts is %q, but the endpoint's normalized host set is [%q] (lower case, IDNA to ASCII, no trailing dot, no port); write [%q]", r.Network.Hosts, host, host)
	}
}

// remoteURL checks a remote endpoint and returns its normalized host.
func (v *validator) remoteURL(p, raw string) (string, bool) {
	if raw == "" {
		v.ps.add(p, RuleRemoteURL, "url is required: the https:// address of the MCP endpoint")
		return "", false
	}
	ep, err := ParseEndpoint(raw)
	if err != nil {
		pe := err.(*endpointError)
		v.ps.add(p, pe.rule, "%s", pe.msg)
		return "", false
	}
	return ep.Host, true
}

func underBad(bad map[string]bool, p string) bool {
	for k := range bad {
		if p == k || strings.HasPrefix(p, k+".") || strings.HasPrefix(p, k+"[") {
			return true
		}
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// command applies the rules of runtime fetches and wrappers to a stdio
// command (package runtimefetch), and refuses a cwd for a fetched package, which
// always runs in an empty directory of berth's.
func (v *validator) command(p string, s *Stdio) {
	f, err := runtimefetch.Read(s.Command, s.Args)
	if err != nil {
		ce := err.(*runtimefetch.CommandError)
		v.ps.add(p+"."+ce.Field, ce.Rule, "%s", ce.Message)
		return
	}
	if f != nil && (s.Cwd != "" || v.present[p+".cwd"]) {
		v.ps.add(p+".cwd", RuleRuntimeFetchCwd, "%s runs %q in a new empty directory of berth's, never in the bundle or the workspace (whose node_modules, .npmrc or pyproject.toml would change what runs); remove cwd and pass the directory the server works on as an argument, like \"--root=${workspace}\"", f.Tool, f.Package)
	}
}

// derivedVersion checks that the form 0.0.0-berth.* (DerivedVersionPrefix)
// is reserved to versions berth derived: such a version needs
// importedFrom.derivedVersion, and its digits must be those of its
// contentDigest (DerivedVersionOf); importedFrom.derivedVersion needs such
// a version. berth orders derived versions by what the source offers
// now, not by semver, so a hand-written one could pass an older content
// off as newer.
func (v *validator) derivedVersion(m *Manifest) {
	var dv *DerivedVersion
	if m.ImportedFrom != nil {
		dv = m.ImportedFrom.DerivedVersion
	}
	derived := strings.HasPrefix(m.Version, DerivedVersionPrefix)
	switch {
	case derived && dv == nil:
		v.ps.add("version", RuleVersionDerived, "version %q has the form 0.0.0-berth.*, which berth reserves for the versions it derives for versionless plugins (docs/manifest.md, \"Versionless plugins\"), and the manifest has no importedFrom.derivedVersion; give the bundle a release version such as \"1.0.0\"", m.Version)
	case derived && DerivedVersionOf(dv.ContentDigest) != m.Version:
		v.ps.add("version", RuleVersionDerived, "version %q is not the version derived from importedFrom.derivedVersion.contentDigest %q (that is %q); import the source again with berth import, or give the bundle a release version", m.Version, dv.ContentDigest, DerivedVersionOf(dv.ContentDigest))
	case !derived && dv != nil:
		v.ps.add("importedFrom.derivedVersion", RuleVersionDerived, "importedFrom.derivedVersion is set, but version %q is not a derived version (0.0.0-berth.*); remove importedFrom.derivedVersion, or import the source again with berth import", m.Version)
	}
}

// oauth checks a remote's auth.oauth (docs/manifest.md, "Signing in"):
// the one source of the remote's credential, and each optional field well
// formed. Every field may be left out: "oauth": {} discovers everything.
func (v *validator) oauth(p string, a *RemoteAuth) {
	o, op := a.OAuth, p+".oauth"
	if a.BearerFromEnv != "" || v.present[p+".bearerFromEnv"] {
		v.ps.add(op, RuleOAuthExclusive, "auth sets both oauth and bearerFromEnv, two sources of the one Authorization header; keep oauth to sign in (berth keeps the token it gets in its secret store), or bearerFromEnv to send a token from $%s", a.BearerFromEnv)
	}
	seen := map[string]int{}
	for i, sc := range o.Scopes {
		sp := fmt.Sprintf("%s.scopes[%d]", op, i)
		if j, dup := seen[sc]; dup {
			v.ps.add(op+".scopes", RuleOAuthScope, "scopes[%d] and scopes[%d] are the same scope %q; keep one", j, i, sc)
			continue
		}
		seen[sc] = i
		if why := scopeProblem(sc); why != "" {
			v.ps.add(sp, RuleOAuthScope, "%s; a scope is one token of printable ASCII without spaces, '\"' or '\\' (RFC 6749 section 3.3): write each scope as its own element, like [\"repo\", \"read:org\"]", why)
		}
	}
	if o.ClientID != "" || v.present[op+".clientId"] {
		if why := ClientIDProblem(o.ClientID); why != "" {
			v.ps.add(op+".clientId", RuleOAuthClientID, "%s", why)
		}
	}
	if o.RedirectPort != 0 || v.present[op+".redirectPort"] {
		if o.RedirectPort < 1024 || o.RedirectPort > 65535 {
			v.ps.add(op+".redirectPort", RuleOAuthRedirectPort, "redirectPort %d is not a port from 1024 to 65535; the loopback redirect (http://127.0.0.1:PORT/callback) needs an unprivileged port: write the port the client is registered with, or leave redirectPort out for any free port", o.RedirectPort)
		}
	}
	if o.Issuer != "" || v.present[op+".issuer"] {
		if _, err := ParseIssuer(o.Issuer); err != nil {
			v.ps.add(op+".issuer", RuleOAuthIssuer, "%s", err.(*endpointError).msg)
		}
	}
}

// scopeProblem says what makes sc not an OAuth scope token (RFC 6749
// section 3.3: 1*( %x21 / %x23-5B / %x5D-7E )), or "".
func scopeProblem(sc string) string {
	if sc == "" {
		return "the scope is empty"
	}
	for i := 0; i < len(sc); i++ {
		c := sc[i]
		switch {
		case c == ' ':
			return fmt.Sprintf("the scope %q holds a space, which separates scopes in a request", sc)
		case c < 0x20 || c == 0x7f:
			return "" // a control-character problem already
		case c >= 0x80:
			return fmt.Sprintf("the scope %q holds a character outside ASCII", sc)
		case c == '"' || c == '\\':
			return fmt.Sprintf("the scope %q holds %q", sc, c)
		}
	}
	return ""
}

// ClientIDProblem says what makes id unfit for a pre-registered public
// OAuth client ID in a bundle, or "": it must be 1 to 255 characters of
// printable ASCII without spaces (RFC 6749's VSCHAR, less the space), and
// must not look like a secret, since a bundle is public and a client ID
// in it is a public client's. Only the value's form is read (credential
// prefixes such as sk- or ghp_, a JWT, a key block, a URL with a
// password); a long random-looking run is not refused, since real client
// IDs (GUIDs, GitHub's Iv1./Ov23 IDs) are such runs. The answer never
// holds the value.
func ClientIDProblem(id string) string {
	switch {
	case id == "":
		return "clientId is empty; write the client ID the authorization server registered for this plugin, or leave clientId out to register with the server at sign-in"
	case len(id) > 255:
		return fmt.Sprintf("clientId has %d characters, more than 255; write the client ID the authorization server registered", len(id))
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= 0x20 || id[i] >= 0x7f {
			return "clientId holds a space, a control character or a character outside ASCII (not shown); a client ID is printable ASCII (RFC 6749): write it as the authorization server issued it"
		}
	}
	if why, yes := secretValue(id); yes {
		return "clientId looks like a secret (" + why + "; not shown), and a bundle is public: a clientId is a public client's identifier, never a client secret or a token; remove it (the operator can configure a confidential client of their own) and rotate the secret"
	}
	return ""
}
