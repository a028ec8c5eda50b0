package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
)

// initJSON is what init --json prints.
type initJSON struct {
	// Dir is the bundle directory, absolute.
	Dir string `json:"dir"`
	// Name is the plugin name written into the manifest.
	Name string `json:"name"`
	// Manifest is the manifest written.
	Manifest string `json:"manifest"`
	// Readme is the README written; absent when one was already there.
	Readme string `json:"readme,omitempty"`
	// Kept are the files init found already there and left as they were
	// (a README.md of the directory).
	Kept []string `json:"kept,omitempty"`
}

func newInitCmd(a *app) *cobra.Command {
	opts := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Start a bundle: a berth.json with one stdio server, and a README explaining it",
		Long: `Init writes DIR/berth.json (DIR defaults to the current directory, and is
made if missing): a manifest with one local (stdio) server whose command is
left empty, and DIR/README.md beside it, which explains each field and shows
a remote server. Fill in the command (and the rest), then run
'berth validate DIR': it accepts the bundle once the command names a real
program. Init never overwrites a file: beside a README.md of your own it
writes berth.json alone and says so; a berth.json already there is refused.

The plugin's name is --name, or DIR's name made into a valid plugin name.

Exit codes: 0 written, 1 berth.json is already there, 2 usage.`,
		Example: `  berth init acme-notes
  berth init --name acme-notes .
  berth validate acme-notes`,
		Args: rangeArgs(0, 1, "at most one DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			return runInit(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Name, "name", "", "the plugin's name (default: DIR's name)")
	a.jsonFlag(cmd, &opts.JSON, initJSON{})
	return cmd
}

// initOptions are the inputs of berth init.
type initOptions struct {
	// Args are the positional arguments: none, or one DIR.
	Args []string
	JSON bool
	Name string
}

func runInit(_ context.Context, a *app, opts *initOptions) error {
	dir := "."
	if len(opts.Args) == 1 {
		dir = opts.Args[0]
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if opts.Name == "" {
		opts.Name = pluginName(filepath.Base(abs))
	} else if !bundle.IsValidName(opts.Name) {
		return usagef("--name %q is not a plugin name: use 1-64 lower-case letters, digits and '-', starting and ending with a letter or digit", opts.Name)
	}
	manifest, readme := filepath.Join(abs, "berth.json"), filepath.Join(abs, "README.md")
	if _, err := os.Lstat(manifest); err == nil {
		return fmt.Errorf("%s already exists; berth init never overwrites a file: move it aside, or start in another DIR", manifest)
	}
	// A README.md of the directory (a repository's own) is kept, and
	// berth.json written beside it.
	out := initJSON{Dir: abs, Name: opts.Name, Manifest: manifest, Readme: readme}
	if _, err := os.Lstat(readme); err == nil {
		out.Readme, out.Kept = "", []string{readme}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", abs, err)
	}
	if err := atomicfile.WriteNew(manifest, []byte(initManifest(opts.Name)), 0o644); err != nil {
		return initExists(err)
	}
	if out.Readme != "" {
		if err := atomicfile.WriteNew(readme, []byte(initReadme(opts.Name)), 0o644); err != nil {
			os.Remove(manifest)
			return initExists(err)
		}
	}
	_ = atomicfile.SyncDir(abs)
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	if out.Readme == "" {
		fmt.Fprintf(a.stdout, "Wrote %s alone: %s is already there, and berth init never overwrites a file (berth's docs/manifest.md explains every field).\nNext: fill in mcpServers.main.stdio.command, then run: berth validate %s\n", manifest, readme, dir)
		return nil
	}
	fmt.Fprintf(a.stdout, "Wrote %s and %s.\nNext: fill in mcpServers.main.stdio.command (README.md explains every field), then run: berth validate %s\n", manifest, readme, dir)
	return nil
}

func initExists(err error) error {
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w; berth init never overwrites a file", err)
	}
	return err
}

var notNameChars = regexp.MustCompile(`[^a-z0-9]+`)

// pluginName makes a directory's name into a plugin name.
func pluginName(base string) string {
	n := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if len(n) > 64 {
		n = strings.TrimRight(n[:64], "-")
	}
	if !bundle.IsValidName(n) {
		return "my-plugin"
	}
	return n
}

func initManifest(name string) string {
	return `{
  "manifestVersion": 1,
  "name": "` + name + `",
  "version": "0.1.0",
  "description": "What this plugin does, in one line",
  "mcpServers": {
    "main": {
      "description": "What this server offers",
      "stdio": {
        "command": "",
        "args": [],
        "env": {}
      }
    }
  }
}
`
}

func initReadme(name string) string {
	return "# " + name + `

A berth plugin bundle: this directory, with berth.json, its manifest.
Fill in the command, then check it with ` + "`berth validate .`" + ` and look at
what it asks for with ` + "`berth review .`" + `. The full format is in berth's
docs/manifest.md; every rule berth checks is in docs/rules.md.

## The fields of berth.json

- ` + "`manifestVersion`" + `: always 1.
- ` + "`name`" + `: the plugin's name: 1-64 lower-case letters, digits and '-'.
  Its tools are offered to MCP clients as ` + "`<name>__<server>__<tool>`" + `
  (here ` + "`" + name + "__main__<tool>`" + `).
- ` + "`version`" + `: a semantic version (1.4.2). Each version is trusted on its own.
- ` + "`description`" + `: one line, shown in reviews and lists.
- ` + "`mcpServers`" + `: the MCP servers of the plugin, by name (here ` + "`main`" + `).
  Each has a ` + "`description`" + ` and either ` + "`stdio`" + ` (a local program) or
  ` + "`remote`" + ` (an endpoint).

### A local (stdio) server

- ` + "`command`" + `: the program to run. ` + "`${bundle}/bin/server`" + ` is a file of
  this bundle (berth checks its hash before every start);
  ` + "`${workspace}/...`" + ` a file of the workspace; a bare name like ` + "`node`" + ` a
  program on PATH; ` + "`npx`" + `/` + "`uvx`" + ` run a package pinned to an exact version
  (` + "`\"command\": \"npx\", \"args\": [\"-y\", \"@acme/notes-mcp@1.4.2\"]`" + `).
- ` + "`args`" + `: its arguments. Only ` + "`${bundle}`" + ` and ` + "`${workspace}`" + ` are
  substituted; never put a secret here (every local user can read argv).
- ` + "`env`" + `: the variables it receives, each read from a variable of the
  host, never written here:
  ` + "`\"env\": {\"NOTES_TOKEN\": {\"fromEnv\": \"ACME_NOTES_TOKEN\"}}`" + `.
  Store the value with ` + "`berth secret set ACME_NOTES_TOKEN`" + ` (or set it in
  the environment berth runs in); it reaches only this server.
- ` + "`cwd`" + ` (optional): its working directory; the bundle by default.

### A remote server

Replace ` + "`stdio`" + ` with ` + "`remote`" + `:

` + "```json" + `
"cloud": {
  "description": "Acme's hosted notes",
  "remote": {
    "url": "https://mcp.acme.example/v1",
    "transport": "streamable-http",
    "auth": {"bearerFromEnv": "ACME_TOKEN"},
    "headers": {"X-Team": {"fromEnv": "ACME_TEAM"}},
    "network": {"hosts": ["mcp.acme.example"]}
  }
}
` + "```" + `

- ` + "`url`" + `: the endpoint (https; http only for a loopback address).
- ` + "`transport`" + `: ` + "`streamable-http`" + ` or ` + "`sse`" + `.
- ` + "`auth.bearerFromEnv`" + ` and ` + "`headers`" + `: credentials, each from a host
  variable, sent only to this origin.
- ` + "`network.hosts`" + `: the hosts it may reach.

A hosted server that signs its users in with OAuth (most do: GitHub,
Linear, Notion, …) declares ` + "`\"auth\": {\"oauth\": {}}`" + ` instead of
` + "`bearerFromEnv`" + `, optionally with ` + "`scopes`" + `, a pre-registered public
` + "`clientId`" + `, a ` + "`redirectPort`" + ` and an ` + "`issuer`" + ` to pin. Each user then runs
` + "`berth login " + name + "__cloud`" + ` once (or is asked in the MCP client); berth keeps
the token in its secret store and refreshes it (berth's docs/signin.md).

## Next

` + "```" + `
berth validate .
berth review .
berth trust . --allow-unsigned --digest $(berth digest .)   # or sign it: berth sign . --key KEY
berth enable ` + name + `
` + "```" + `
`
}
