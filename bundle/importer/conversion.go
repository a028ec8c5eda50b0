package importer

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// Source manifests of the formats.
const (
	mcpbManifest     = "manifest.json"
	claudeManifest   = ".claude-plugin/plugin.json"
	claudeMCPFile    = ".mcp.json"
	registryManifest = "server.json"
)

// conversion is the result of converting one source manifest.
type conversion struct {
	manifest *bundle.Manifest
	// locs maps the JSON paths of the generated berth.json to the
	// source's file and field.
	locs map[string]string
	ps   problems
	// servers maps each server's name in the source to its location.
	servers map[string]string
}

func newConversion() *conversion {
	return &conversion{locs: map[string]string{}}
}

// result is the conversion as package bundle takes it.
func (c *conversion) result() *bundle.Conversion {
	return &bundle.Conversion{Manifest: c.manifest, Problems: c.ps.list, Locations: c.locs, Servers: c.servers}
}

// at records that the berth path p comes from the source location loc.
// The validator writes some keys as a.b.c even when they hold dots, so
// both spellings are recorded.
func (c *conversion) at(p, loc string) {
	c.locs[p] = loc
	c.locs[dotted(p)] = loc
}

// fromEnv sets key of the environment or headers map *m of a generated
// server (at the berth path p, such as "mcpServers.s.stdio.env") to be
// read from the host's variable from, and records that it comes from the
// source location loc.
func (c *conversion) fromEnv(m *map[string]bundle.EnvSource, p, key, from, loc string) {
	if *m == nil {
		*m = map[string]bundle.EnvSource{}
	}
	(*m)[key] = bundle.EnvSource{FromEnv: from}
	c.at(strictjson.JoinPath(p, key), loc)
}

// carry copies the string top[key] into *dst and records that the
// manifest field key comes from the source's key. A value that is not a
// string, or a required one that is absent, is a problem of top's doc.
func (c *conversion) carry(top obj, key string, required bool, dst *string) bool {
	s, ok := top.str(key, required)
	if ok {
		*dst = s
	}
	c.at(key, top.d.loc(top.at(key)))
	return ok
}

// dotted writes a path's quoted keys (a["x.y"]) as plain ones (a.x.y).
func dotted(p string) string {
	var b strings.Builder
	for {
		i := strings.Index(p, `["`)
		if i < 0 {
			break
		}
		j := strings.Index(p[i:], `"]`)
		if j < 0 {
			break
		}
		b.WriteString(p[:i])
		b.WriteString(".")
		key, err := strconv.Unquote(p[i+1 : i+j+1])
		if err != nil {
			key = p[i+2 : i+j]
		}
		b.WriteString(key)
		p = p[i+j+2:]
	}
	b.WriteString(p)
	return strings.TrimPrefix(b.String(), ".")
}

// problems collects Problems in the order found.
type problems struct {
	list []*bundle.Problem
}

func (ps *problems) add(path, rule, format string, args ...any) {
	ps.list = append(ps.list, &bundle.Problem{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// goosPlatform is the running platform as MCPB names platforms.
func goosPlatform() string {
	if runtime.GOOS == "windows" {
		return "win32"
	}
	return runtime.GOOS
}
