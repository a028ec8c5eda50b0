package fetched

import "github.com/berth-mcp/berth/bundle/runtimefetch"

// fetchOptions and fetchProgram: the runner's options and the program it
// names (uvx --from, pipx run --spec), until h-npm's Fetch fields land.
func fetchOptions(f *runtimefetch.Fetch) []string { return nil }
func fetchProgram(f *runtimefetch.Fetch) string   { return "" }
