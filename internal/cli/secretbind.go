package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/store"
)

// manifestSources are the variables a manifest's servers read (fromEnv,
// headers, bearerFromEnv), sorted without repeats; not the values the
// operator confirms, which berth never reads from the environment or the
// secret store.
func manifestSources(m *bundle.Manifest) []string {
	out := manifestVars(m)
	for _, in := range m.ConfirmInputs() {
		out = slices.DeleteFunc(out, func(n string) bool { return n == in.FromEnv })
	}
	return out
}

// manifestVars are the names a manifest's servers read, confirmed values
// included.
func manifestVars(m *bundle.Manifest) []string {
	var out []string
	for _, s := range m.MCPServers {
		if s.Stdio != nil {
			for _, e := range s.Stdio.Env {
				if e.FromEnv != "" { // not a {"bundlePath": [...]}
					out = append(out, e.FromEnv)
				}
			}
		}
		if s.Remote != nil {
			for _, h := range s.Remote.Headers {
				out = append(out, h.FromEnv)
			}
			if s.Remote.Auth != nil && s.Remote.Auth.BearerFromEnv != "" {
				out = append(out, s.Remote.Auth.BearerFromEnv)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// secretNamers says, for each variable, which trusted plugins name it in
// a trusted version that is not revoked, each with the signer of that
// version: the bindings of a secret stored without --plugin, and those
// the migration of an index without bindings makes. A version whose
// staged manifest cannot be read names nothing (berth verify says why).
func (a *app) secretNamers() (map[string][]secrets.Binding, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	recs, err := st.Records()
	if err != nil {
		return nil, err
	}
	out := map[string][]secrets.Binding{}
	for _, r := range recs {
		if st.CheckNotRevoked(r.Name, r.Version, r.Digest) != nil {
			continue
		}
		m, err := stagedManifest(st, &store.Enablement{Digest: r.Digest})
		if err != nil {
			continue
		}
		for _, n := range manifestSources(m) {
			b := secrets.Binding{Plugin: r.Name, Signer: r.SignerIdentity()}
			if !slices.Contains(out[n], b) {
				out[n] = append(out[n], b)
			}
		}
	}
	return out, nil
}

// pluginSigners are the signers of the trusted versions of plugin that
// are not revoked (none when it is not trusted): those a secret bound to
// it by name is bound to.
func (a *app) pluginSigners(plugin string) ([]string, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	recs, err := st.Records()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range recs {
		if r.Name != plugin || st.CheckNotRevoked(r.Name, r.Version, r.Digest) != nil {
			continue
		}
		if id := r.SignerIdentity(); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// bindingsOf binds each of plugins to the signers of its trusted versions
// (pluginSigners), or by name alone when none is trusted yet: install or
// enable then records the signer.
func (a *app) bindingsOf(plugins []string) ([]secrets.Binding, error) {
	var out []secrets.Binding
	for _, p := range plugins {
		ids, err := a.pluginSigners(p)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			out = append(out, secrets.Binding{Plugin: p})
		}
		for _, id := range ids {
			out = append(out, secrets.Binding{Plugin: p, Signer: id})
		}
	}
	return out, nil
}

// forgetSecrets drops the secrets' bindings of plugin once no version of
// it is trusted any more (berth revoke of its last versions), so that a
// plugin of that name trusted later, perhaps another publisher's, is
// bound only when the operator says so. A failure is a warning.
func (a *app) forgetSecrets(st *store.Store, plugin string) {
	if recs, err := st.Records(); err != nil || slices.ContainsFunc(recs, func(r *store.Record) bool { return r.Name == plugin }) {
		return
	}
	sec, err := a.secrets()
	if err == nil {
		var gone []string
		if gone, err = sec.Forget(context.Background(), plugin); err == nil && len(gone) > 0 {
			fmt.Fprintf(a.stderr, "No version of %s is trusted any more, so these secrets are no longer bound to it: %s. A plugin of that name trusted later receives them only when you bind it.\n", plugin, strings.Join(gone, ", "))
		}
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: the stored secrets are still bound to %s, no version of which is trusted any more (%v); `berth secret unbind NAME --plugin %s` unbinds each\n", plugin, err, plugin)
	}
}

// migrateSecrets binds, once, the secrets of an index written before
// bindings to the trusted plugins that name them, and says so on stderr.
func (a *app) migrateSecrets(s *secrets.Store) error {
	done, err := s.Migrate(context.Background(), a.secretNamers)
	if err != nil || len(done) == 0 {
		return err
	}
	fmt.Fprintln(a.stderr, "berth's secret store now binds each secret to the plugins that may use it; the stored secrets were bound, once, to the trusted plugins that name them:")
	for _, e := range done {
		fmt.Fprintf(a.stderr, "  %s: %s\n", e.Name, pluginList(e.Plugins))
	}
	fmt.Fprintln(a.stderr, "A plugin trusted later receives a secret only when you bind it: berth secret bind NAME --plugin PLUGIN.")
	return nil
}

// pluginList names plugins for a sentence.
func pluginList(ps []string) string {
	if len(ps) == 0 {
		return "no plugin"
	}
	return strings.Join(ps, ", ")
}

// offerSecrets is run when a plugin was installed or enabled: for each
// secret its manifest names that berth's store holds, but not for this
// plugin signed as rec is, it asks on a terminal whether the plugin may
// use it (saying so when the secret is bound to a plugin of that name
// signed by someone else). Off a terminal, with --yes or --json, it binds
// nothing and says how to bind it (on stderr). A secret bound to the
// plugin by name before it was trusted is bound to rec's signer now. A
// failure to read the store or the manifest is a warning: the plugin's
// servers then report the missing secret.
func (a *app) offerSecrets(st *store.Store, rec *store.Record, yes, quiet bool) {
	sec, err := a.secrets()
	if err == nil {
		var m *bundle.Manifest
		if m, err = stagedManifest(st, &store.Enablement{Digest: rec.Digest}); err == nil {
			if _, err = sec.Pin(context.Background(), rec.Name, rec.SignerIdentity()); err == nil {
				err = a.offerSecretsOf(sec, rec.Name, rec.SignerIdentity(), manifestSources(m), yes, quiet)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: cannot check which stored secrets %s may use: %v\n", rec.Name, err)
	}
}

func (a *app) offerSecretsOf(sec *secrets.Store, plugin, signer string, names []string, yes, quiet bool) error {
	for _, n := range names {
		e, ok, err := sec.Lookup(n)
		if err != nil {
			return err
		}
		if !ok || e.Binds(plugin, signer) {
			continue
		}
		// Bound to a plugin of this name signed by someone else: another
		// publisher's plugin, which is not the one the operator bound.
		var other []string
		for _, s := range e.SignersOf(plugin) {
			other = append(other, secrets.SignedBy(s))
		}
		if !yes && !quiet && a.isTerminal() {
			q := fmt.Sprintf("Plugin %s wants the secret %s, which berth's secret store holds for %s. Let %s use it?", plugin, n, pluginList(e.Plugins), plugin)
			if len(other) > 0 {
				q = fmt.Sprintf("Plugin %s (%s) wants the secret %s, which berth's secret store holds for the %s %s, another signer. Let this %s use it?", plugin, secrets.SignedBy(signer), n, plugin, strings.Join(other, " or "), plugin)
			}
			ok, err := a.ask(q)
			if err != nil {
				return err
			}
			if ok {
				if _, err := sec.Bind(context.Background(), n, false, secrets.Binding{Plugin: plugin, Signer: signer}); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Bound %s to %s: its servers receive it.\n", n, plugin)
				continue
			}
		}
		if len(other) > 0 {
			fmt.Fprintf(a.stderr, "note: plugin %s is %s, but berth's secret store holds the secret %s it names for the %s %s, so its servers do not receive it; if this %s may use it: %s\n", plugin, secrets.SignedBy(signer), n, plugin, strings.Join(other, " or "), plugin, secrets.BindCommand(n, plugin))
			continue
		}
		fmt.Fprintf(a.stderr, "note: plugin %s names the secret %s, which berth's secret store holds bound to %s, not to %s, so its servers do not receive it; to let %s use it: %s\n", plugin, n, pluginList(e.Plugins), plugin, plugin, secrets.BindCommand(n, plugin))
	}
	return nil
}

// secretBindJSON is what secret bind --json and secret unbind --json print.
type secretBindJSON struct {
	// Name is the secret's name.
	Name string `json:"name"`
	// Plugins are the plugins it is bound to now, sorted.
	Plugins []string `json:"plugins"`
}

func newSecretBindCmd(a *app, unbind bool) *cobra.Command {
	opts := &secretBindOptions{Unbind: unbind}
	use, short, long := "bind NAME --plugin PLUGIN...", "Let plugins use a stored secret",
		`Bind lets the servers of the named plugins receive the stored secret
NAME, as well as those of the plugins it is bound to already. A stored
secret reaches only the plugins it is bound to (berth secret list shows
them), whatever the variable name other plugins declare. Each plugin is
bound with the signers of its trusted versions: a plugin of the same name
signed by someone else, trusted later, is not bound. Revoking every
version of a plugin drops its bindings.

Exit codes: 0 bound, 1 not stored, 2 usage.`
	example := `  berth secret bind ACME_TOKEN --plugin acme-notes`
	if unbind {
		use, short, long = "unbind NAME --plugin PLUGIN...", "Stop plugins from using a stored secret",
			`Unbind stops the servers of the named plugins from receiving the stored
secret NAME; they then fail to start as when it is missing, until it is
bound again or set in berth's environment.

Exit codes: 0 unbound, 1 not stored, 2 usage.`
		example = `  berth secret unbind ACME_TOKEN --plugin acme-notes`
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runSecretBind(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Plugins, "plugin", nil, "the plugin `NAME` (repeatable)")
	a.jsonFlag(cmd, &opts.JSON, secretBindJSON{})
	return cmd
}

// secretBindOptions are the inputs of berth secret bind and unbind.
type secretBindOptions struct {
	// Name is the positional argument.
	Name    string
	Plugins []string
	Unbind  bool
	JSON    bool
}

func runSecretBind(ctx context.Context, a *app, opts *secretBindOptions) error {
	if err := secrets.CheckName(opts.Name); err != nil {
		return usagef("%v", err)
	}
	if len(opts.Plugins) == 0 {
		return usagef("name the plugins with --plugin PLUGIN (repeatable)")
	}
	for _, p := range opts.Plugins {
		if !bundle.IsValidName(p) {
			return usagef("--plugin %q is not a plugin name (lower-case letters, digits and '-'); `berth list` shows the trusted plugins", p)
		}
	}
	s, err := a.secrets()
	if err != nil {
		return err
	}
	// bind binds each plugin as trusted now (the signers of its trusted
	// versions); unbind unbinds it whatever the signer.
	var bs []secrets.Binding
	if opts.Unbind {
		for _, p := range opts.Plugins {
			bs = append(bs, secrets.Binding{Plugin: p})
		}
	} else if bs, err = a.bindingsOf(opts.Plugins); err != nil {
		return err
	}
	e, err := s.Bind(ctx, opts.Name, opts.Unbind, bs...)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, secretBindJSON{Name: e.Name, Plugins: e.Plugins})
	}
	fmt.Fprintf(a.stdout, "%s is bound to %s: only their servers receive it.\n", e.Name, pluginList(e.Plugins))
	return nil
}

// bindingTargets are the bindings secret set makes for name: the plugins
// of --plugin, or else the trusted plugins that name it now, each bound
// to the signers of its trusted versions. It warns about a --plugin that
// names no such plugin.
func (a *app) bindingTargets(name string, given []string) ([]secrets.Binding, error) {
	for _, p := range given {
		if !bundle.IsValidName(p) {
			return nil, usagef("--plugin %q is not a plugin name (lower-case letters, digits and '-'); `berth list` shows the trusted plugins", p)
		}
	}
	namers, err := a.secretNamers()
	if err != nil {
		return nil, err
	}
	if len(given) == 0 {
		return namers[name], nil
	}
	for _, p := range given {
		if !slices.ContainsFunc(namers[name], func(b secrets.Binding) bool { return b.Plugin == p }) {
			fmt.Fprintf(a.stderr, "note: no trusted version of %s names %s (yet); its servers receive it once one does\n", p, name)
		}
	}
	return a.bindingsOf(given)
}
