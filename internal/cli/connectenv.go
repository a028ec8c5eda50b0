package cli

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/store"
)

// secretLooking matches variable names that look like they hold a
// secret: those go to berth's secret store, never into a client's
// configuration file (plain text, often committed).
var secretLooking = regexp.MustCompile(`(?i)TOKEN|KEY|SECRET|PASSWORD`)

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// connectEnv reads the --env variables from this shell, refusing names
// that look like secrets.
func (a *app) connectEnv(names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		switch {
		case !envNameRe.MatchString(n):
			return nil, usagef("--env %q is not a variable name like NODE_OPTIONS", n)
		case secretLooking.MatchString(n):
			return nil, usagef("--env %s: %s looks like a secret (its name has TOKEN, KEY, SECRET or PASSWORD), and a client's configuration file is plain text, often committed; store it with `berth secret set %s` instead: berth serve reads it from there and gives it only to the servers that declare it", n, n, n)
		case n == "PATH":
			return nil, usagef("--env PATH: connect records PATH by itself (--no-path leaves it out)")
		case n == "BERTH_HOME":
			return nil, usagef("--env BERTH_HOME: connect records BERTH_HOME by itself when it is set")
		}
		v := a.getenv(n)
		if v == "" {
			return nil, usagef("--env %s: %s is not set in this shell, so there is no value to copy; set it first (export %s=...)", n, n, n)
		}
		out[n] = v
	}
	return out, nil
}

// missingJSON is a variable that an enabled plugin reads and that the
// client's berth will not find.
type missingJSON struct {
	Name string `json:"name"`
	// Uses say which plugin and server read it, and as what.
	Uses []string `json:"uses"`
	// Fix is the command that stores it.
	Fix string `json:"fix"`
	// Env is the --env flag that would copy it from this shell instead,
	// when it is set here and does not look like a secret.
	Env string `json:"env,omitempty"`
}

// addUses adds to uses where the servers of plugin name read each
// variable of m (not the values the operator confirms, which berth never
// reads from the environment or the secret store).
func addUses(uses map[string][]string, name string, m *bundle.Manifest) {
	confirmed := map[string]bool{}
	for _, in := range m.ConfirmInputs() {
		confirmed[in.FromEnv] = true
	}
	for _, sname := range slices.Sorted(maps.Keys(m.MCPServers)) {
		s := m.MCPServers[sname]
		pre := name + " server " + sname + ": "
		if s.Stdio != nil {
			for _, k := range slices.Sorted(maps.Keys(s.Stdio.Env)) {
				if src := s.Stdio.Env[k].FromEnv; !confirmed[src] {
					uses[src] = append(uses[src], pre+"env "+k)
				}
			}
		}
		if s.Remote != nil {
			for _, k := range slices.Sorted(maps.Keys(s.Remote.Headers)) {
				if src := s.Remote.Headers[k].FromEnv; !confirmed[src] {
					uses[src] = append(uses[src], pre+"the header "+k)
				}
			}
			if s.Remote.Auth != nil && s.Remote.Auth.BearerFromEnv != "" {
				src := s.Remote.Auth.BearerFromEnv
				uses[src] = append(uses[src], pre+"the bearer token")
			}
		}
	}
}

// missingSources lists the fromEnv sources of the plugins enabled in ws
// that are neither in berth's secret store nor in env, the environment
// the entry gives berth. Plugins whose manifest cannot be read are named
// in the warnings. With a profile, only the plugins it offers are
// checked: the entry's berth runs no other.
func (a *app) missingSources(ws, profile string, env map[string]string) ([]missingJSON, []string, error) {
	st, err := a.store()
	if err != nil {
		return nil, nil, err
	}
	state, err := st.State()
	if err != nil {
		return nil, nil, err
	}
	w := state.Workspaces[ws]
	if w == nil {
		return []missingJSON{}, nil, nil
	}
	sec, err := a.secrets()
	if err != nil {
		return nil, nil, err
	}
	uses := map[string][]string{}
	users := map[string][]string{} // the plugins that read each variable
	signers := map[string]string{} // the signer of each enabled version
	var warnings []string
	var prof *store.Profile
	if profile != "" {
		if prof = state.ProfileOf(ws, profile); prof == nil {
			return []missingJSON{}, nil, nil
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.Plugins)) {
		if !prof.IncludesPlugin(name) {
			continue
		}
		m, err := stagedManifest(st, w.Plugins[name])
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("cannot read the manifest of %s to check the variables it reads: %v", name, err))
			continue
		}
		if recs, err := st.Find(name, w.Plugins[name].Version); err == nil {
			signers[name] = recs[0].SignerIdentity()
		}
		for _, src := range manifestSources(m) {
			users[src] = append(users[src], name)
		}
		addUses(uses, name, m)
	}
	out := []missingJSON{}
	for _, n := range slices.Sorted(maps.Keys(uses)) {
		if _, ok := env[n]; ok || n == "" { // "": a {"bundlePath": [...]}, no host variable
			continue
		}
		e, inStore, err := sec.Lookup(n)
		if err != nil {
			return nil, nil, err
		}
		fix := "berth secret set " + n
		if inStore {
			// Held for other plugins only: bind it to those that read it.
			unbound := slices.DeleteFunc(slices.Clone(users[n]), func(p string) bool { return e.Binds(p, signers[p]) })
			if len(unbound) == 0 {
				continue
			}
			fix = "berth secret bind " + n + " --plugin " + strings.Join(unbound, " --plugin ")
		}
		m := missingJSON{Name: n, Uses: uses[n], Fix: fix}
		if a.getenv(n) != "" && !secretLooking.MatchString(n) {
			m.Env = "--env " + n
		}
		out = append(out, m)
	}
	return out, warnings, nil
}

// stagedManifest decodes the manifest of an enabled plugin's staged
// snapshot, checked against the staged listing.
func stagedManifest(st *store.Store, en *store.Enablement) (*bundle.Manifest, error) {
	d, err := store.ParseDigest(en.Digest)
	if err != nil {
		return nil, err
	}
	listing, err := st.Listing(d)
	if err != nil {
		return nil, err
	}
	e, ok := listing.Lookup(bundle.ManifestFile)
	if !ok {
		return nil, fmt.Errorf("the staged snapshot %s has no %s; run berth verify", en.Digest, bundle.ManifestFile)
	}
	data, err := os.ReadFile(filepath.Join(st.Paths().Snapshot(d), bundle.ManifestFile))
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(data) != e.SHA256 {
		return nil, store.Driftf("the staged %s does not match its listing; run `berth verify`", bundle.ManifestFile)
	}
	m, problems := bundle.DecodeManifest(data)
	if len(problems) > 0 || m == nil {
		return nil, fmt.Errorf("the staged %s does not decode; re-trust the bundle", bundle.ManifestFile)
	}
	return m, nil
}

// printMissing lists the variables the client's berth will lack.
func (a *app) printMissing(ws string, ms []missingJSON) {
	if len(ms) == 0 {
		return
	}
	fmt.Fprintf(a.stdout, "The plugins enabled in %s read these variables, which will be neither in berth's secret store nor in the client's environment:\n", ws)
	for _, m := range ms {
		fix := m.Fix
		if m.Env != "" {
			fix += "   (or, not being a secret, copy it from this shell: berth connect ... " + m.Env + ")"
		}
		fmt.Fprintf(a.stdout, "  %s (%s): %s\n", m.Name, strings.Join(m.Uses, "; "), fix)
	}
}
