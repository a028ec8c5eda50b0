package pool

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/internal/fsx"
)

// A runtime-fetched server (npx, uvx, docker run, ...; see
// runtimefetch.Read) downloads its package when it starts. Package
// managers resolve packages and read configuration from their working
// directory and its parents (node_modules, .npmrc, pyproject.toml, uv.toml,
// deno.json) and from the user's files (~/.npmrc, ~/.config/uv/uv.toml,
// ~/.config/pip/pip.conf, go env). Run in a workspace, npx would run the
// workspace's own node_modules/<package> instead of the registry's, and
// take the registry, node-options and script-shell from its .npmrc. So
// berth runs every fetcher in a new, empty directory of its own,
// $BERTH_HOME/fetchers/run/<server>-<random>, whatever the manifest's cwd
// says (a bundle that sets one is refused, runtime-fetch-cwd), and points
// the package managers' user and global configuration at files in
// $BERTH_HOME/fetchers, which berth creates empty and which only the
// operator edits (to use a mirror registry, for example). docs/pool.md
// lists the variables.

// The configuration files in $BERTH_HOME/fetchers.
const (
	fetchNpmrc  = "npmrc"            // npm, npx, pnpm: the user config
	fetchGlobal = "npmrc-global"     // npm, npx: the global config (npm refuses one file as both)
	fetchYarnrc = "berth-yarnrc.yml" // yarn: YARN_RC_FILENAME, found as a parent of the run directory
	fetchUV     = "uv.toml"          // uv, uvx: UV_CONFIG_FILE, which replaces discovery
	fetchPip    = "pip.conf"         // pip, pipx: PIP_CONFIG_FILE, which replaces the user's file
	fetchGoEnv  = "go.env"           // go: GOENV, which replaces the user's go env file
)

var fetchConfigs = []string{fetchNpmrc, fetchGlobal, fetchYarnrc, fetchUV, fetchPip, fetchGoEnv}

// stdioSpawn resolves a stdio server's command line and environment. A
// command or an environment variable that the current rules refuse (a
// bundle trusted by an older berth) is not started. A runtime fetcher runs in a new empty directory
// with the package managers' configuration pointed at berth's files; the
// spec's cleanup removes the directory.
func (p *Pool) stdioSpawn(id string, st *bundle.Stdio, snapshot string, src *sources) (*spawnSpec, error) {
	f, err := runtimefetch.Read(st.Command, st.Args)
	if err != nil {
		return nil, permanent("server %s: berth does not run this command: %v; the bundle was trusted under earlier rules: update it and trust it again", id, err)
	}
	for _, k := range slices.Sorted(maps.Keys(st.Env)) {
		if st.Env[k].BundlePath != nil && bundle.BundlePathKey(k) {
			continue // paths of the bundle, checked when it was validated
		}
		if why, bad := bundle.EnvKeyForbidden(k); bad {
			return nil, permanent("server %s: berth does not set %s for a server: %s [%s]; the bundle was trusted under earlier rules: update it and trust it again", id, k, why, bundle.RuleEnvKeyForbidden)
		}
	}
	if f == nil {
		return resolveStdio(id, st, snapshot, p.workspace, p.baseEnv, src)
	}
	bare := *st
	bare.Cwd = "" // never where the manifest says: see above
	sp, err := resolveStdio(id, &bare, snapshot, p.workspace, p.baseEnv, src)
	if err != nil {
		return nil, err
	}
	if err := isolateFetch(p.paths.Fetchers(), id, f, sp); err != nil {
		return nil, permanent("server %s: %v", id, err)
	}
	return sp, nil
}

// isolateFetch moves sp into a new empty directory under root/run and sets
// the package managers' configuration variables of f's ecosystem.
func isolateFetch(root, id string, f *runtimefetch.Fetch, sp *spawnSpec) error {
	if err := privateDir(root); err != nil {
		return err
	}
	for _, name := range fetchConfigs {
		if err := privateFile(filepath.Join(root, name)); err != nil {
			return err
		}
	}
	runs := filepath.Join(root, "run")
	if err := privateDir(runs); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(runs, unsafeChars.ReplaceAllString(id, "_")+"-")
	if err != nil {
		return fmt.Errorf("cannot create the directory a fetched package runs in: %w", err)
	}
	env, marker := fetchEnv(root, f)
	if marker != "" {
		// A project file of berth's own ends the package manager's search
		// for a project here, so that no parent directory's node_modules,
		// package.json or deno.json is used either.
		if err := os.WriteFile(filepath.Join(dir, marker), []byte("{}\n"), 0o600); err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("cannot prepare %s: %w", dir, err)
		}
	}
	sp.env = overrideEnv(sp.env, env)
	sp.dir = dir
	for _, name := range fetchConfigs {
		sp.fetchRead = append(sp.fetchRead, filepath.Join(root, name))
	}
	sp.fetchWrite = []string{dir}
	sp.cleanup = func() { os.RemoveAll(dir) }
	return nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// fetchEnv returns the variables that point f's package manager at berth's
// configuration files, and the name of the project file that stops its
// search for a project ("" for none).
func fetchEnv(root string, f *runtimefetch.Fetch) (map[string]string, string) {
	at := func(name string) string { return filepath.Join(root, name) }
	switch {
	case strings.HasPrefix(f.Tool, "deno"):
		return map[string]string{
			"DENO_NO_PACKAGE_JSON": "1",
			"DENO_NO_UPDATE_CHECK": "1",
		}, "deno.json"
	case f.Ecosystem == runtimefetch.EcosystemNPM:
		return map[string]string{
			"npm_config_userconfig":      at(fetchNpmrc),
			"npm_config_globalconfig":    at(fetchGlobal),
			"npm_config_update_notifier": "false",
			"YARN_RC_FILENAME":           fetchYarnrc,
			"COREPACK_ENABLE_AUTO_PIN":   "0",
		}, "package.json"
	case f.Ecosystem == runtimefetch.EcosystemPyPI:
		return map[string]string{
			"UV_CONFIG_FILE":      at(fetchUV),
			"UV_PYTHON_DOWNLOADS": "never",
			"PIP_CONFIG_FILE":     at(fetchPip),
		}, ""
	case f.Ecosystem == runtimefetch.EcosystemGo:
		return map[string]string{
			"GOENV":       at(fetchGoEnv),
			"GOTOOLCHAIN": "local",
			"GOWORK":      "off",
		}, ""
	}
	return nil, ""
}

// overrideEnv sets the variables of set in env ("NAME=value" entries),
// replacing every entry whose name equals one of them in any letter case
// (npm reads npm_config_* in any case, Windows all variables).
func overrideEnv(env []string, set map[string]string) []string {
	if len(set) == 0 {
		return env
	}
	folded := map[string]bool{}
	for k := range set {
		folded[strings.ToUpper(k)] = true
	}
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !folded[strings.ToUpper(k)] {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	slices.Sort(out)
	return out
}

// privateDir creates dir (mode 0700) if it is missing and requires it to be
// a directory of the current user that no one else may write to: another
// local user must not be able to plant configuration there.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symlink?); remove it, and berth creates it again", dir)
	}
	return private(dir, fi)
}

// privateFile creates an empty file (mode 0600) if it is missing and
// requires it to be a regular file of the current user that no one else may
// write to.
func privateFile(name string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot create %s: %w", name, err)
	}
	fi, err := os.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (a symlink?); remove it, and berth creates it again", name)
	}
	return private(name, fi)
}

func private(name string, fi fs.FileInfo) error {
	if owner, me, ok := fsx.Owner(fi); ok && owner != me {
		return fmt.Errorf("%s belongs to another user; remove it, and berth creates it again", name)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by other users (mode %04o); make it yours alone: chmod go-w %s", name, fi.Mode().Perm(), name)
	}
	return nil
}
