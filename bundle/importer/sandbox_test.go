package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
)

// TestMCPBDirectorySandbox: an MCPB directory option becomes ${workspace}
// in the arguments, which the server's default profile lets it read and
// write; one passed in the environment names a host folder the sandbox
// cannot name, and is listed as not carried over, never dropped silently.
// The imported server declares no sandbox: the default profile.
func TestMCPBDirectorySandbox(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "server"), 0o755)
	os.WriteFile(filepath.Join(dir, "server", "index.js"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{
  "manifest_version": "0.3", "name": "dirs", "version": "1.0.0", "description": "d",
  "author": {"name": "A"},
  "server": {"type": "node", "entry_point": "server/index.js",
    "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js", "${user_config.root}"], "env": {"DATA_DIR": "${user_config.data}"}}},
  "user_config": {
    "root": {"type": "directory", "title": "Root", "description": "the folder to serve", "required": true},
    "data": {"type": "directory", "title": "Data", "description": "where data lives", "required": true}
  }
}`), 0o644)
	b, err := bundle.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := b.Manifest.MCPServers["server"]
	if s == nil || s.Sandbox != nil {
		t.Fatalf("the imported server's sandbox = %+v; want none (the default profile)", s)
	}
	if got := strings.Join(s.Stdio.Args, " "); !strings.Contains(got, "${workspace}") {
		t.Errorf("args %q: the directory option is not ${workspace}", got)
	}
	found := false
	for _, nc := range b.Manifest.ImportedFrom.NotCarriedOver {
		if nc.Kind == "sandbox-path" && nc.Name == "data" && strings.Contains(nc.Reason, "DATA_DIR") {
			found = true
		}
	}
	if !found {
		t.Errorf("the directory in DATA_DIR is not listed as not carried over: %+v", b.Manifest.ImportedFrom.NotCarriedOver)
	}
	root := false
	for _, in := range b.Manifest.ImportedFrom.Inputs {
		if in.Name == "user_config.root" {
			root = true
			if !strings.Contains(in.Becomes, "${workspace}") {
				t.Errorf("the root option does not become the workspace, which the default profile lets the server read and write: %v", in.Becomes)
			}
		}
	}
	if !root {
		t.Errorf("no input user_config.root: %+v", b.Manifest.ImportedFrom.Inputs)
	}
}
