// Package foreign reads the formats of the unsigned sources a berth
// cache lists beside its signed catalogs: the pages of an MCP Registry's
// /v0/servers (ParseRegistryPage, DecodeRegistryPage, AssembleRegistry)
// and a Claude Code marketplace.json (ParseClaudeMarketplace), leniently:
// an entry berth cannot carry is a Problem and skipped. What they list
// becomes UnsignedPlugin entries. It fetches nothing: the cache
// (marketplace) fetches, with its guarded client, and installs an entry
// only by the digest the operator pins.
package foreign
