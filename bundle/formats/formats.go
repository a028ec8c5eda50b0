// Package formats registers with package bundle the formats of other
// tools that berth reads (package bundle/importer): MCP Bundles, Claude
// Code plugins and MCP Registry server.json. Import it for its effect, as
// berth's CLI does, and bundle.Load and bundle.Open read those sources:
//
//	import _ "github.com/berth-mcp/berth/bundle/formats"
//
// A new format is a package with a bundle.Format, registered here.
package formats

import (
	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
)

func init() {
	for _, f := range importer.All() {
		bundle.RegisterFormat(f)
	}
}
