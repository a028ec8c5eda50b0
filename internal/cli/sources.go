package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/secrets"
)

// sourceJSON says where one fromEnv source would be resolved from here,
// without reading its value: the environment berth runs in first, then
// berth's secret store (its index only).
type sourceJSON struct {
	// Name is the variable.
	Name string `json:"name"`
	// Uses say which servers read it, and as what.
	Uses []string `json:"uses"`
	// Set reports whether it would be resolved.
	Set bool `json:"set"`
	// From is "environment" or "store" when Set.
	From string `json:"from,omitempty"`
	// Store is where the secret store keeps it ("keychain" or "file"),
	// when it does.
	Store secrets.Backend `json:"store,omitempty"`
	// Fix is the command that sets it, when it is not set.
	Fix string `json:"fix,omitempty"`
	// NotBound reports that the secret store holds it, but not for this
	// plugin: its servers would not receive it (Fix binds it).
	NotBound bool `json:"notBound,omitempty"`
}

// sourceStates says for each source of d whether it is set and where
// from, reading no value: the environment is asked whether the variable
// exists, the secret store's index whether it holds the name.
func (a *app) sourceStates(d *review.Disclosure) ([]sourceJSON, error) {
	plugin := d.Name
	sec, err := a.secrets()
	if err != nil {
		return nil, err
	}
	signers, err := a.pluginSigners(plugin)
	if err != nil {
		return nil, err
	}
	out := []sourceJSON{}
	for _, s := range d.Sources() {
		j := sourceJSON{Name: s.Name, Uses: s.Uses}
		e, inStore, err := sec.Lookup(s.Name)
		if err != nil {
			return nil, err
		}
		if inStore {
			j.Store = e.Backend
		}
		_, inEnv := os.LookupEnv(s.Name)
		switch {
		case inEnv:
			j.Set, j.From = true, pool.FromEnvironment
		case inStore && boundHere(&e, plugin, signers):
			j.Set, j.From = true, pool.FromStore
		case inStore:
			j.NotBound, j.Fix = true, secrets.BindCommand(s.Name, plugin)
		default:
			j.Fix = "berth secret set " + s.Name
		}
		out = append(out, j)
	}
	return out, nil
}

// beforeFirstUse is how install and upgrade end, as review does: the
// variables that the servers of d read, each with whether it is set here
// and, when it is not, the command that sets it (writeSourceStates), and
// the remotes to sign in to; nothing is printed when quiet. The states are
// returned for --json.
func (a *app) beforeFirstUse(d *review.Disclosure, quiet bool) []sourceJSON {
	ss, err := a.sourceStates(d)
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: cannot check which variables %s reads are set here: %v\n", d.Name, err)
		return []sourceJSON{}
	}
	if quiet {
		return ss
	}
	writeSourceStates(a.stdout, ss)
	for _, s := range d.Servers {
		if s.Remote != nil && s.Remote.OAuth != nil {
			fmt.Fprintf(a.stdout, "Server %s signs in with OAuth: sign in before first use with berth login %s%s%s (or when a client that can ask calls it).\n", s.Name, d.Name, pool.Sep, s.Name)
		}
	}
	return ss
}

// writeSourceStates prints the sources of a review with their state here.
func writeSourceStates(w io.Writer, ss []sourceJSON) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintln(w, "\nVariables it reads, as berth would resolve them here (the environment first, then berth's secret store; values are never shown):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range ss {
		text := sourceText(s.Set, s.From, s.Store, s.Name)
		if s.NotBound {
			text = "stored in berth's secret store (" + string(s.Store) + "), but not for this plugin, whose servers do not receive it: " + s.Fix
		}
		fmt.Fprintf(tw, "  %s\t%s\n", s.Name, text)
	}
	tw.Flush()
}

func sourceText(set bool, from string, store secrets.Backend, name string) string {
	switch {
	case !set:
		return "not set: berth secret set " + name
	case from == pool.FromEnvironment && store != "":
		return "set in the environment (berth's secret store also has it, in the " + string(store) + "; the environment wins)"
	case from == pool.FromEnvironment:
		return "set in the environment"
	case store != "":
		return "stored in berth's secret store (" + string(store) + ")"
	}
	return "stored in berth's secret store"
}

// boundHere reports whether the stored secret e reaches plugin, whose
// trusted versions are signed by signers: bound to one of them, or, for a
// plugin not trusted, bound to it by name.
func boundHere(e *secrets.Entry, plugin string, signers []string) bool {
	if len(signers) == 0 {
		return slices.Contains(e.Plugins, plugin)
	}
	return slices.ContainsFunc(signers, func(s string) bool { return e.Binds(plugin, s) })
}
