package fetched

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/fsx"
)

// The operator's own user-level settings of the package managers (the
// file ~/.npmrc, or the one NPM_CONFIG_USERCONFIG names; pip's user
// pip.conf and PIP_INDEX_URL, PIP_CERT, PIP_PROXY; uv's uv.toml and
// UV_DEFAULT_INDEX, UV_INDEX_URL) reach a resolution at trust through an
// allow-list: where the packages come from (registry, scoped registries,
// index), how to trust the connection (a CA), how to get there (a proxy)
// and, for npm, an auth token per registry host. Nothing else: no
// strict-ssl, node-options, script-shell, trusted-host or anything that
// changes what runs or how. $BERTH_HOME/fetchers wins over them key by
// key. The workspace's files are never read (docs/sandbox.md, "The
// operator's settings").

// Setting is one allow-listed setting.
type Setting struct {
	Key, Value string
}

// UserSettings are the allow-listed settings of one of the operator's
// files (or environment).
type UserSettings struct {
	// File is where they come from: a path, or "environment".
	File string
	// Settings are kept, in the order they are given to the package
	// manager (one per key, the file's last).
	Settings []Setting
	// Ignored are the keys of the file that are not on the allow-list
	// (names only), and the kept keys whose value berth could not use,
	// with why.
	Ignored []string
}

// Keys are the names of the settings, secrets included (never a value).
func (u *UserSettings) Keys() []string {
	var out []string
	for _, s := range u.Settings {
		out = append(out, s.Key)
	}
	return out
}

// Summary is "registry, cafile from /home/u/.npmrc" ("" for none).
func (u *UserSettings) Summary() string {
	if u == nil || len(u.Settings) == 0 {
		return ""
	}
	return strings.Join(u.Keys(), ", ") + " from " + u.File
}

// Get is the value of key, "" when not set.
func (u *UserSettings) Get(key string) string {
	if u == nil {
		return ""
	}
	for _, s := range u.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// Operator are the operator's user-level settings berth passes on.
type Operator struct {
	// NPM are ~/.npmrc's allow-listed keys; NodeCA is
	// NODE_EXTRA_CA_CERTS.
	NPM    *UserSettings
	NodeCA string
	// Pip are pip's (index-url, cert, proxy) and UV uv's (index-url)
	// from the user files and the environment.
	Pip *UserSettings
	UV  *UserSettings
	// Proxy are HTTPS_PROXY, HTTP_PROXY and NO_PROXY (any letter case)
	// of the operator's environment.
	Proxy []string
}

// maxUserConfig caps an operator's configuration file.
const maxUserConfig = 1 << 20

// ReadOperator reads the operator's user-level settings with getenv (the
// operator's environment; HOME names the home directory). A file that is
// missing is no settings; one that another user may write, or that berth
// cannot read, is an error that names it.
func ReadOperator(getenv func(string) string) (*Operator, error) {
	env := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return getenv(strings.ToLower(k))
	}
	o := &Operator{NodeCA: env("NODE_EXTRA_CA_CERTS")}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"} {
		if v := getenv(k); v != "" {
			o.Proxy = append(o.Proxy, k+"="+v)
		}
	}
	home := env("HOME")
	npmrc := env("NPM_CONFIG_USERCONFIG")
	if npmrc == "" && filepath.IsAbs(home) {
		npmrc = filepath.Join(home, ".npmrc")
	}
	if npmrc != "" {
		data, err := readUserFile(npmrc)
		if err != nil {
			return nil, err
		}
		if data != nil {
			o.NPM = NPMUserSettings(ParseNPMRC(string(data)), getenv)
			o.NPM.File = npmrc
		}
	}
	var err error
	if o.Pip, err = pipUserSettings(env, home); err != nil {
		return nil, err
	}
	if o.UV, err = uvUserSettings(env, home); err != nil {
		return nil, err
	}
	return o, nil
}

// readUserFile reads an operator's file: nil for a missing one.
func readUserFile(name string) ([]byte, error) {
	if !filepath.IsAbs(name) {
		return nil, fmt.Errorf("%s is not an absolute path; berth reads the operator's package manager settings from absolute paths only", name)
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("berth reads the allowed settings of %s for its fetches: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; berth reads the allowed settings of the operator's package manager configuration from regular files only", name)
	}
	if owner, me, ok := fsx.Owner(fi); ok && owner != me && owner != 0 {
		return nil, fmt.Errorf("%s belongs to another user, who could steer berth's fetches; make it yours (chown $USER %s) or move it away", name, name)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s may be written by other users (mode %04o), who could steer berth's fetches; make it yours alone: chmod go-w %s", name, fi.Mode().Perm(), name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxUserConfig+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxUserConfig {
		return nil, fmt.Errorf("%s is larger than %d bytes; berth does not read it", name, maxUserConfig)
	}
	return data, nil
}

// NPMRCEntry is one top-level key of an npmrc.
type NPMRCEntry struct {
	Key, Value string
	// Array is set for "key[]=value".
	Array bool
}

// ParseNPMRC reads an npmrc as npm's ini parser does: "key = value" lines
// ("key" alone is "true"), ; and # comments, a double-quoted value is a
// JSON string, a single-quoted one is taken as it is, an unquoted one ends
// at an unescaped ; or #. Keys under a [section] are not npm settings and
// are left out. Values are not expanded.
func ParseNPMRC(data string) []NPMRCEntry {
	var out []NPMRCEntry
	for line := range strings.SplitSeq(data, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' && strings.HasSuffix(line, "]") {
			break // a section: nothing after it is a top-level setting
		}
		k, v, ok := strings.Cut(line, "=")
		k = iniValue(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if !ok {
			v = "true"
		} else {
			v = iniValue(v)
		}
		e := NPMRCEntry{Key: k, Value: v}
		if strings.HasSuffix(k, "[]") {
			e.Key, e.Array = strings.TrimSuffix(k, "[]"), true
		}
		if e.Key == "" {
			continue
		}
		out = append(out, e)
	}
	return out
}

// iniValue unquotes or uncomments a value as npm's ini does.
func iniValue(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
		return v[1 : len(v)-1]
	}
	var b strings.Builder
	esc := false
	for _, r := range v {
		if esc {
			if !strings.ContainsRune(`\;#`, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
			esc = false
			continue
		}
		if r == ';' || r == '#' {
			break
		}
		if r == '\\' {
			esc = true
			continue
		}
		b.WriteRune(r)
	}
	if esc {
		b.WriteByte('\\')
	}
	return strings.TrimSpace(b.String())
}

var (
	npmScopeKey  = regexp.MustCompile(`^@[a-z0-9][a-z0-9._~-]*:registry$`)
	npmTokenKey  = regexp.MustCompile(`^//[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~@%+-]+)*/:_authToken$`)
	npmEnvExpr   = regexp.MustCompile(`\$\{([^${}?]+)(\?)?\}`)
	npmPlainKeys = []string{"registry", "ca", "cafile", "proxy", "https-proxy", "noproxy"}
)

// npmAllowed reports whether key is on the allow-list of npm settings.
func npmAllowed(key string) bool {
	return slices.Contains(npmPlainKeys, key) || npmScopeKey.MatchString(key) || npmTokenKey.MatchString(key)
}

// NPMUserSettings keeps the allow-listed entries of an npmrc, with ${VAR}
// (and ${VAR?}, empty when unset) expanded from env as npm does. A key
// whose value names an unset variable, or whose value would not reach npm
// as it is (a line break, a ${ left after expansion), is ignored, and
// Ignored says why.
func NPMUserSettings(entries []NPMRCEntry, getenv func(string) string) *UserSettings {
	u := &UserSettings{}
	var ca []string
	seen := map[string]bool{}
	for _, e := range entries {
		if !npmAllowed(e.Key) || (e.Array && e.Key != "ca") {
			if !seen[e.Key] {
				u.Ignored = append(u.Ignored, printable(e.Key, 64))
				seen[e.Key] = true
			}
			continue
		}
		v, why := expandNPM(e.Value, getenv)
		if why != "" {
			u.Ignored = append(u.Ignored, e.Key+" ("+why+")")
			continue
		}
		if e.Key == "ca" && e.Array {
			ca = append(ca, v)
			continue
		}
		u.Settings = slices.DeleteFunc(u.Settings, func(s Setting) bool { return s.Key == e.Key })
		u.Settings = append(u.Settings, Setting{Key: e.Key, Value: v})
	}
	if len(ca) > 0 && u.Get("ca") == "" {
		u.Settings = append(u.Settings, Setting{Key: "ca", Value: strings.Join(ca, "\n")})
	}
	return u
}

// expandNPM expands ${VAR} in v from env; why is set when the value is
// not used.
func expandNPM(v string, getenv func(string) string) (string, string) {
	if strings.Contains(v, `\$`) {
		return "", "an escaped $ berth does not read"
	}
	why := ""
	v = npmEnvExpr.ReplaceAllStringFunc(v, func(m string) string {
		sub := npmEnvExpr.FindStringSubmatch(m)
		if val := getenv(sub[1]); val != "" {
			return val
		}
		if sub[2] == "" && why == "" {
			why = "${" + printable(sub[1], 64) + "} is not set"
		}
		return ""
	})
	if why != "" {
		return "", why
	}
	if strings.Contains(v, "${") {
		return "", "a ${ berth cannot expand"
	}
	if !utf8.ValidString(v) {
		return "", "not UTF-8"
	}
	if strings.ContainsAny(v, "\r\x00") || (strings.Contains(v, "\n") && !strings.Contains(v, "-----BEGIN")) {
		return "", "a line break in the value"
	}
	return v, ""
}

// npmrcFor is the npm user configuration of a resolution: the operator's
// allow-listed settings that berth's own file does not set, then berth's
// file as it is. Each value is written as a JSON string, which npm's ini
// reads back exactly.
func npmrcFor(op *UserSettings, berth []byte) []byte {
	own := map[string]bool{}
	for _, e := range ParseNPMRC(string(berth)) {
		own[e.Key] = true
	}
	var b strings.Builder
	if op != nil {
		for _, s := range op.Settings {
			if own[s.Key] {
				continue
			}
			q, _ := json.Marshal(s.Value)
			fmt.Fprintf(&b, "%s=%s\n", s.Key, q)
		}
	}
	b.Write(berth)
	if len(berth) > 0 && berth[len(berth)-1] != '\n' {
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// pipKeys are the allow-listed keys of pip's configuration.
var pipKeys = []string{"index-url", "cert", "proxy"}

// pipConfKeys reads the allow-listed keys of a pip.conf's [global]
// section ("key = value" or "key: value"), and the names of the others.
func pipConfKeys(data string) (kept []Setting, ignored []string) {
	section := ""
	for line := range strings.SplitSeq(data, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if i := strings.Index(line, ":"); i >= 0 && (!ok || i < len(k)) {
			k, v, ok = line[:i], line[i+1:], true
		}
		if !ok || section != "global" {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !slices.Contains(pipKeys, k) {
			ignored = append(ignored, printable(k, 64))
			continue
		}
		if v == "" || strings.ContainsAny(v, "\x00") {
			continue
		}
		kept = slices.DeleteFunc(kept, func(s Setting) bool { return s.Key == k })
		kept = append(kept, Setting{Key: k, Value: v})
	}
	return kept, ignored
}

// pipUserSettings are pip's: the user's pip.conf
// ($XDG_CONFIG_HOME/pip/pip.conf, ~/.config/pip/pip.conf, ~/.pip/pip.conf,
// the first that exists; never PIP_CONFIG_FILE's, which may name any
// file), then PIP_INDEX_URL, PIP_CERT and PIP_PROXY over it, as pip reads
// them.
func pipUserSettings(env func(string) string, home string) (*UserSettings, error) {
	u := &UserSettings{}
	var files []string
	if x := env("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		files = append(files, filepath.Join(x, "pip", "pip.conf"))
	}
	if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".config", "pip", "pip.conf"), filepath.Join(home, ".pip", "pip.conf"))
	}
	for _, f := range files {
		data, err := readUserFile(f)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue
		}
		u.Settings, u.Ignored = pipConfKeys(string(data))
		u.File = f
		break
	}
	fromEnv := false
	for _, k := range pipKeys {
		v := env("PIP_" + strings.ToUpper(strings.ReplaceAll(k, "-", "_")))
		if v == "" || strings.ContainsAny(v, "\x00\n\r") {
			continue
		}
		u.Settings = slices.DeleteFunc(u.Settings, func(s Setting) bool { return s.Key == k })
		u.Settings = append(u.Settings, Setting{Key: k, Value: v})
		fromEnv = true
	}
	if fromEnv {
		u.File = joinSource(u.File, "PIP_* variables")
	}
	return u, nil
}

// uvUserSettings are uv's: the user's uv.toml ($XDG_CONFIG_HOME/uv/uv.toml
// or ~/.config/uv/uv.toml) index, UV_DEFAULT_INDEX or UV_INDEX_URL over
// it, and SSL_CERT_FILE as its cert (uv reads it; pip, which resolves for
// berth, is given it as --cert).
func uvUserSettings(env func(string) string, home string) (*UserSettings, error) {
	u := &UserSettings{}
	var files []string
	if x := env("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		files = append(files, filepath.Join(x, "uv", "uv.toml"))
	}
	if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".config", "uv", "uv.toml"))
	}
	for _, f := range files {
		data, err := readUserFile(f)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue
		}
		idx, err := uvIndexOf(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if idx != "" {
			u.Settings = append(u.Settings, Setting{Key: "index-url", Value: idx})
			u.File = f
		}
		break
	}
	env1 := ""
	for _, k := range []string{"UV_DEFAULT_INDEX", "UV_INDEX_URL"} {
		if v := env(k); v != "" && !strings.ContainsAny(v, "\x00\n\r ") {
			u.Settings = []Setting{{Key: "index-url", Value: v}}
			env1 = k
			break
		}
	}
	if c := env("SSL_CERT_FILE"); filepath.IsAbs(c) {
		u.Settings = append(u.Settings, Setting{Key: "cert", Value: c})
		env1 = joinSource(env1, "SSL_CERT_FILE")
	}
	if env1 != "" {
		u.File = joinSource(u.File, env1)
	}
	return u, nil
}

func joinSource(a, b string) string {
	if a == "" {
		return b
	}
	return a + " and " + b
}

func uvIndexOf(toml string) (string, error) {
	r, err := runtimefetch.FetchersConfig{UVToml: toml}.Registries()
	if err != nil {
		return "", err
	}
	return r.UVIndex, nil
}

// operator is the operator's settings read with o.Getenv, or from Env
// (this process's environment when Env is nil).
func (o *Options) operator() (*Operator, error) {
	if o.Getenv != nil {
		return ReadOperator(o.Getenv)
	}
	if o.Env == nil {
		return ReadOperator(os.Getenv)
	}
	return ReadOperator(func(key string) string {
		for _, kv := range o.Env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				return v
			}
		}
		return ""
	})
}

// fetchEnv are the variables of the operator's environment a package
// manager gets at trust: the proxies and NODE_EXTRA_CA_CERTS.
func (op *Operator) fetchEnv() map[string]string {
	set := map[string]string{}
	if op == nil {
		return set
	}
	for _, kv := range op.Proxy {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	if op.NodeCA != "" {
		set["NODE_EXTRA_CA_CERTS"] = op.NodeCA
	}
	return set
}

// npmUserConfig writes the npm user configuration of a resolution into
// tmp (a private directory removed after it): the operator's allow-listed
// settings that $BERTH_HOME/fetchers/npmrc does not set, then that file.
func npmUserConfig(fetchers string, op *Operator, tmp string) (string, error) {
	berth, err := os.ReadFile(filepath.Join(fetchers, NPMUserConfig))
	if err != nil {
		return "", err
	}
	name := filepath.Join(tmp, "npmrc")
	var u *UserSettings
	if op != nil {
		u = op.NPM
	}
	return name, os.WriteFile(name, npmrcFor(u, berth), 0o600)
}

var (
	npmTLSFailure  = regexp.MustCompile(`SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|UNABLE_TO_VERIFY_LEAF_SIGNATURE|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_HAS_EXPIRED|ERR_TLS_CERT_ALTNAME_INVALID|self[- ]signed certificate|unable to (get local issuer|verify the first) certificate`)
	npmAuthFailure = regexp.MustCompile(`\bE401\b|\bE403\b|401 Unauthorized|403 Forbidden|ENEEDAUTH`)
	npmNetFailure  = regexp.MustCompile(`ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH`)
	npmNotFound    = regexp.MustCompile(`\bE404\b|404 Not Found`)
	npmProtected   = regexp.MustCompile(`registry option is protected`)
)

// userFile names the operator's npm user file, for a hint.
func userFile(op *Operator) string {
	if op != nil && op.NPM != nil && op.NPM.File != "" {
		return op.NPM.File
	}
	return "~/.npmrc"
}

// npmHint says, for npm's output of a failed install, which setting is
// involved and how to set it for berth.
func npmHint(out []byte, registry, fetchers string, op *Operator) string {
	own := filepath.Join(fetchers, NPMUserConfig)
	user := "~/.npmrc"
	var u *UserSettings
	if op != nil && op.NPM != nil {
		u, user = op.NPM, op.NPM.File
	}
	using := ""
	if s := u.Summary(); s != "" {
		using = " (berth used the npm settings " + s + ")"
	}
	registry = RedactURL(registry)
	host := registryHost(registry)
	switch {
	case npmTLSFailure.Match(out):
		return fmt.Sprintf("the registry %s presented a TLS certificate npm does not trust (a TLS-inspecting proxy or a private registry): give berth its CA with cafile=/path/to/ca.pem in %s or %s, or NODE_EXTRA_CA_CERTS=/path/to/ca.pem in berth's environment; berth never turns strict-ssl off%s", registry, user, own, using)
	case npmAuthFailure.Match(out):
		return fmt.Sprintf("the registry %s refused the request (no or a wrong auth token): set //%s/:_authToken=${NPM_TOKEN} in %s or %s (berth gives it to the fetch at trust only, never to a server)%s", registry, host, user, own, using)
	case npmNetFailure.Match(out):
		return fmt.Sprintf("npm could not reach the registry %s (its name did not resolve, or the connection failed; %s): behind a proxy set https-proxy=http://proxy:port in %s or %s (or HTTPS_PROXY in berth's environment), or name a reachable mirror with registry=URL%s", registry, proxyInEffect(op), user, own, using)
	case npmNotFound.Match(out):
		return fmt.Sprintf("the registry %s has no such package or version: check the version, or for a package of a private registry set @scope:registry=URL in %s or %s%s", registry, user, own, using)
	}
	return fmt.Sprintf("check that the version exists on the registry %s (npm's settings for berth: %s, then the allowed keys of %s)%s", registry, own, user, using)
}

// proxyInEffect names the proxy settings a resolution ran with and where
// each came from (names only): the one at fault when the registry cannot
// be reached.
func proxyInEffect(op *Operator) string {
	var used []string
	if op != nil {
		for _, k := range []string{"https-proxy", "proxy", "noproxy"} {
			if op.NPM.Get(k) != "" {
				used = append(used, k+" from "+op.NPM.File)
			}
		}
		for _, kv := range op.Proxy {
			k, _, _ := strings.Cut(kv, "=")
			used = append(used, k+" from berth's environment")
		}
	}
	if len(used) == 0 {
		return "no proxy was set"
	}
	return "the proxy settings in effect: " + strings.Join(used, ", ")
}

// registryHost is the host[:port][/path] of a registry URL, as npm's
// per-registry keys name it.
func registryHost(registry string) string {
	_, rest, ok := strings.Cut(registry, "://")
	if !ok {
		return "registry.example"
	}
	return strings.TrimSuffix(rest, "/")
}

// Describe says, one line per package manager, which of the operator's
// settings reach a resolution and from which file, and which keys of
// berth's own files in fetchers win over them: names only, and a value
// only for a CA file path (NODE_EXTRA_CA_CERTS), never a token.
func Describe(op *Operator, fetchers string) []string {
	var lines []string
	own := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(fetchers, name))
		if err != nil {
			return nil
		}
		var keys []string
		switch name {
		case NPMUserConfig:
			for _, e := range ParseNPMRC(string(b)) {
				keys = append(keys, printable(e.Key, 64))
			}
		case "uv.toml":
			if idx, err := uvIndexOf(string(b)); err == nil && idx != "" {
				keys = append(keys, "index-url")
			}
		default:
			kept, _ := pipConfKeys(string(b))
			for _, s := range kept {
				keys = append(keys, s.Key)
			}
		}
		return slices.Compact(keys)
	}
	line := func(label string, u *UserSettings, extra []string, file string) {
		var parts []string
		if s := u.Summary(); s != "" {
			parts = append(parts, s)
		}
		if u != nil && len(u.Ignored) > 0 {
			parts = append(parts, "not used: "+strings.Join(u.Ignored, ", "))
		}
		parts = append(parts, extra...)
		if keys := own(file); len(keys) > 0 {
			parts = append(parts, strings.Join(keys, ", ")+" from "+filepath.Join(fetchers, file)+" (wins)")
		}
		if len(parts) > 0 {
			lines = append(lines, label+" settings: "+strings.Join(parts, "; "))
		}
	}
	var npmExtra, pyExtra []string
	if op.NodeCA != "" {
		npmExtra = append(npmExtra, "NODE_EXTRA_CA_CERTS="+op.NodeCA)
	}
	for _, kv := range op.Proxy {
		k, _, _ := strings.Cut(kv, "=")
		npmExtra = append(npmExtra, k+" from the environment")
		pyExtra = append(pyExtra, k+" from the environment")
	}
	line("npm", op.NPM, npmExtra, NPMUserConfig)
	line("pip", op.Pip, pyExtra, "pip.conf")
	line("uv", op.UV, nil, "uv.toml")
	return lines
}

// FillResolver fills in what berth's own files left unset in ro (the
// registries --pin resolves against) with the operator's allowed
// settings: npm's registry and scoped registries, pip's and uv's index;
// and adds the operator's CAs (npm's cafile and ca, NODE_EXTRA_CA_CERTS,
// pip's and uv's cert) to the system's roots. No token is used: pinning
// reads public metadata only.
func FillResolver(ro *runtimefetch.ResolverOptions, op *Operator) error {
	if op == nil {
		return nil
	}
	if ro.NPMRegistry == "" {
		ro.NPMRegistry = op.NPM.Get("registry")
	}
	if op.NPM != nil {
		for _, s := range op.NPM.Settings {
			if scope, ok := strings.CutSuffix(s.Key, ":registry"); ok && strings.HasPrefix(scope, "@") {
				if ro.NPMScopes == nil {
					ro.NPMScopes = map[string]string{}
				}
				if _, set := ro.NPMScopes[scope]; !set {
					ro.NPMScopes[scope] = s.Value
				}
			}
		}
	}
	if ro.PipIndex == "" {
		ro.PipIndex = op.Pip.Get("index-url")
	}
	if ro.UVIndex == "" {
		ro.UVIndex = op.UV.Get("index-url")
	}
	var pems [][]byte
	for _, f := range []string{op.NPM.Get("cafile"), op.NodeCA, op.Pip.Get("cert"), op.UV.Get("cert")} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("the CA file %s of your package manager settings: %w", f, err)
		}
		pems = append(pems, b)
	}
	if ca := op.NPM.Get("ca"); ca != "" {
		pems = append(pems, []byte(ca))
	}
	if len(pems) == 0 {
		return nil
	}
	pool := ro.RootCAs
	if pool == nil {
		sys, err := x509.SystemCertPool()
		if err != nil || sys == nil {
			sys = x509.NewCertPool()
		}
		pool = sys
	}
	for _, b := range pems {
		pool.AppendCertsFromPEM(b)
	}
	ro.RootCAs = pool
	return nil
}
