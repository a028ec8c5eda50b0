package foreign

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/berth-mcp/berth/marketplace/catalog"
)

// UnsignedPlugin is one entry of an unsigned source, as berth caches it.
type UnsignedPlugin struct {
	// Name is the berth plugin name: for a registry entry the one
	// importer.RegistryPluginName maps its registry name to.
	Name string `json:"name"`
	// SourceName is the name the source gives it: the registry name
	// (io.github.acme/weather), or the marketplace.json plugin name.
	SourceName  string `json:"sourceName"`
	Description string `json:"description"`
	Homepage    string `json:"homepage,omitempty"`
	// Dir is the plugin's directory (a marketplace.json entry), absolute.
	Dir string `json:"dir,omitempty"`
	// Versions, highest first.
	Versions []*UnsignedVersion `json:"versions"`
}

// UnsignedVersion is one version of an unsigned entry.
type UnsignedVersion struct {
	Version string `json:"version"`
	// SourceVersion is the version as the registry wrote it, when it is
	// not Version: "v1.0.0" for 1.0.0. The registry serves the version
	// under this name.
	SourceVersion string `json:"sourceVersion,omitempty"`
	// Status is active or deprecated (deleted versions are dropped).
	Status catalog.Status `json:"status"`
	// StatusMessage is the registry's reason for the status, if any.
	StatusMessage string `json:"statusMessage,omitempty"`
	// Released is the registry's publishedAt; for a marketplace.json
	// entry, which has no release time, when berth first listed it.
	Released time.Time `json:"released"`
	Updated  time.Time `json:"updated,omitzero"`
	IsLatest bool      `json:"isLatest,omitempty"`
	// ServerJSON is the registry entry's server.json, compacted: the
	// bundle berth builds for the version.
	ServerJSON json.RawMessage `json:"serverJSON,omitempty"`
	// ServerRef is where a listing being fetched keeps ServerJSON on disk
	// while ServerJSON is nil (RegistryItem.TakeServer); never cached.
	ServerRef int64 `json:"-"`
}

// Version returns the version v of the entry, or nil.
func (p *UnsignedPlugin) Version(v string) *UnsignedVersion {
	for _, x := range p.Versions {
		if x.Version == v {
			return x
		}
	}
	return nil
}

// entryText checks a description or similar text from an unsigned source.
func entryText(s string, max int) error {
	if len([]rune(s)) > max {
		return fmt.Errorf("it is %d characters, over the limit of %d", len([]rune(s)), max)
	}
	return nil
}

func problemf(plugin, path, rule, format string, args ...any) *catalog.Problem {
	return &catalog.Problem{Plugin: plugin, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)}
}

func isHTTPSURL(s string) bool {
	return strings.HasPrefix(s, "https://") && len(s) > len("https://") && !strings.ContainsAny(s, " \t\r\n")
}
