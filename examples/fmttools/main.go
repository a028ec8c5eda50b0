// Command fmttools is an example berth native tool provider: it formats
// JSON files and hashes files inside the workspace berth runs it for, and
// touches nothing else (no network, no path outside the workspace).
//
// berth launches it with BERTH_WORKSPACE set to the workspace directory.
// Its tools, exported by berth as <plugin>__<tool>:
//
//   - format_json: return a JSON file pretty-printed (read-only);
//   - format_json_in_place: rewrite a JSON file pretty-printed (destructive);
//   - hash_file: the SHA-256 and size of a file (read-only).
//
// Build it with `go build ./examples/fmttools` and declare the binary in a
// bundle's manifest under nativeTools. See docs/native-tools.md.
package main

import (
	"os"

	"github.com/berth-mcp/berth/nativetool"
)

func main() {
	ws := openWorkspace(os.Getenv(nativetool.EnvWorkspace))
	nativetool.Serve(ws.tools()...)
}
