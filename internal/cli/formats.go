package cli

// berth reads MCP Bundles, Claude Code plugins and MCP Registry
// server.json wherever it reads a bundle (validate, review, import,
// install, ...): the formats register themselves with package bundle.
import _ "github.com/berth-mcp/berth/bundle/formats"
