package runtimefetch

import (
	"fmt"
	"strconv"
	"strings"
)

// FetchersConfig are the fetchers' configuration files as berth gives
// them to the package managers ($BERTH_HOME/fetchers, docs/pool.md): the
// contents of npmrc, uv.toml and pip.conf ("" for a missing or empty
// file).
type FetchersConfig struct {
	NPMRC, UVToml, PipConf string
}

// Registries reads the registries the fetchers' configuration names, as
// the package managers read them: npmrc's registry= and @scope:registry=
// lines (the last one wins, as in npm's ini files), uv.toml's index-url,
// or the url of its [[index]] marked default = true, and pip.conf's
// index-url of [global]. Anything else in the files (credentials, other
// settings) is not read; berth sends no credentials when it pins.
func (c FetchersConfig) Registries() (*ResolverOptions, error) {
	o := &ResolverOptions{}
	for n, line := range strings.Split(c.NPMRC, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), unquoteINI(strings.TrimSpace(v))
		switch {
		case k == "registry":
			o.NPMRegistry = v
		case strings.HasPrefix(k, "@") && strings.HasSuffix(k, ":registry"):
			scope := strings.TrimSuffix(k, ":registry")
			if !npmName.MatchString(scope + "/x") {
				return nil, fmt.Errorf("npmrc line %d: %q is not an npm scope", n+1, printable(scope))
			}
			if o.NPMScopes == nil {
				o.NPMScopes = map[string]string{}
			}
			o.NPMScopes[scope] = v
		}
	}
	var err error
	if o.UVIndex, err = uvIndex(c.UVToml); err != nil {
		return nil, err
	}
	section := ""
	for _, line := range strings.Split(c.PipConf, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		if ok && section == "global" && strings.TrimSpace(k) == "index-url" {
			o.PipIndex = strings.TrimSpace(v)
		}
	}
	return o, nil
}

func unquoteINI(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// uvIndex reads the default index of a uv.toml: index-url at the top, or
// the url of the [[index]] table with default = true. It reads TOML's
// basic and literal strings on one line; a value it cannot read is an
// error rather than a guess.
func uvIndex(toml string) (string, error) {
	table, top, def := "", "", ""
	var cur struct {
		url     string
		isDef   bool
		inIndex bool
	}
	flush := func() {
		if cur.inIndex && cur.isDef {
			def = cur.url
		}
		cur.url, cur.isDef, cur.inIndex = "", false, false
	}
	for n, line := range strings.Split(toml, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			flush()
			table = strings.TrimSpace(strings.Trim(line, "[]"))
			cur.inIndex = table == "index" && strings.HasPrefix(line, "[[")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if i := strings.Index(v, " #"); i >= 0 && !strings.HasPrefix(v, `"`) && !strings.HasPrefix(v, "'") {
			v = strings.TrimSpace(v[:i])
		}
		str := func() (string, error) {
			rest := func(end int) bool {
				r := strings.TrimSpace(v[end:])
				return r == "" || r[0] == '#'
			}
			switch {
			case strings.HasPrefix(v, `'''`), strings.HasPrefix(v, `"""`):
			case strings.HasPrefix(v, "'"):
				if end := strings.Index(v[1:], "'"); end >= 0 && rest(end+2) {
					return v[1 : 1+end], nil
				}
			case strings.HasPrefix(v, `"`):
				end := strings.Index(v[1:], `"`)
				if end >= 0 && rest(end+2) {
					if s, err := strconv.Unquote(v[:end+2]); err == nil {
						return s, nil
					}
				}
			}
			return "", fmt.Errorf("uv.toml line %d: berth cannot read the value of %s (%s); write it as a quoted string on one line", n+1, k, printable(v))
		}
		switch {
		case table == "" && k == "index-url":
			s, err := str()
			if err != nil {
				return "", err
			}
			top = s
		case cur.inIndex && k == "url":
			s, err := str()
			if err != nil {
				return "", err
			}
			cur.url = s
		case cur.inIndex && k == "default":
			cur.isDef = v == "true"
		}
	}
	flush()
	if def != "" {
		return def, nil
	}
	return top, nil
}
