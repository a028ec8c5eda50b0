package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/berth-mcp/berth/secrets"
)

// secrets opens berth's secret store under $BERTH_HOME. The first time
// the new berth opens an index written before secrets were bound to
// plugins, it binds each one to the trusted plugins that name it, once.
func (a *app) secrets() (*secrets.Store, error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	s := secrets.Open(paths.Secrets(), nil)
	if err := a.migrateSecrets(s); err != nil {
		return nil, err
	}
	return s, nil
}

// secretLookup is the pool's hook into the secret store: a name the store
// does not hold is not set; a name it holds for other plugins only, or for
// a plugin of the same name signed by someone else, is an error that says
// how to bind it (secrets.NotBoundError, a pool.NotBound);
// a name it holds but cannot read is an error (the keychain did not
// answer, the entry was removed outside berth).
func secretLookup(s *secrets.Store) func(context.Context, string, string, string) (string, bool, error) {
	return s.For
}

func newSecretCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Keep the values of plugins' fromEnv variables in the keychain",
		Long: `A plugin's servers receive secrets from environment variables that its
manifest names (fromEnv). MCP clients start berth with almost no
environment, so berth resolves each such variable from the environment it
runs in first, then from its secret store: the OS keychain (macOS
Keychain, Windows Credential Manager, the Secret Service on Linux), or,
where no keychain answers, $BERTH_HOME/secrets/values.json, readable only
by you (mode 0600). A stored secret is bound to plugins: it reaches only
the servers that declare it of the plugins it is bound to, never another
plugin's that names the same variable. berth never prints a value, logs
it, or writes it to a client's configuration file.`,
		Example: `  berth secret set ACME_TOKEN
  berth secret set ACME_TOKEN --plugin acme-notes
  pass show acme/token | berth secret set ACME_TOKEN
  berth secret bind ACME_TOKEN --plugin acme-tasks
  berth secret list
  berth secret rm ACME_TOKEN`,
		Args: exactArgs(0, "a subcommand: set, bind, unbind, list or rm"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSecretSetCmd(a), newSecretBindCmd(a, false), newSecretBindCmd(a, true), newSecretListCmd(a), newSecretRmCmd(a))
	return cmd
}

// secretSetJSON is what secret set --json prints.
type secretSetJSON struct {
	// Name is the secret's name: the variable it stands for.
	Name string `json:"name"`
	// Store is where the value went: "keychain" or "file".
	Store secrets.Backend `json:"store"`
	// File is the file that holds it, when Store is "file".
	File string `json:"file,omitempty"`
	// Fallback says why the keychain was not used, when it was tried and
	// did not answer.
	Fallback string `json:"fallback,omitempty"`
	// Replaced reports that the name held a value before.
	Replaced bool `json:"replaced"`
	// Plugins are the plugins it is bound to, sorted: only their servers
	// receive it.
	Plugins []string `json:"plugins"`
}

func newSecretSetCmd(a *app) *cobra.Command {
	opts := &secretSetOptions{}
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Store the value of NAME, read from the terminal or stdin",
		Long: `Set stores a value under NAME, the name of the environment variable it
stands for. On a terminal berth asks for the value without echoing it;
otherwise it reads stdin to the end (one final newline is dropped). The
value is never taken from an argument: arguments are visible to every
local user and stay in your shell history.

The value goes to the OS keychain. Where no keychain answers (a headless
Linux, CI), it goes to $BERTH_HOME/secrets/values.json (mode 0600) and
berth says so. --store keychain or --store file chooses explicitly.

The secret is bound to the plugins named by --plugin (repeatable), or
without it to the trusted plugins whose servers name NAME now: only their
servers receive it. Each is bound with the signer of its trusted
versions, so a plugin of the same name signed by someone else (another
catalog's, or after --allow-signer-change) does not receive it. A plugin
trusted later is not bound: install and enable ask on a terminal, and
'berth secret bind NAME --plugin PLUGIN' binds it. Setting NAME again
replaces its bindings too.

Exit codes: 0 stored, 1 not stored, 2 usage.`,
		Example: `  berth secret set ACME_TOKEN
  berth secret set ACME_TOKEN --plugin acme-notes --plugin acme-tasks
  printf %s "$TOKEN" | berth secret set ACME_TOKEN --store file`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("berth secret set takes only NAME: the value is read from the terminal or stdin, never from an argument (arguments are visible to every local user and stay in your shell history)")
			}
			return exactArgs(1, "one NAME")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runSecretSet(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.StoreName, "store", "", "where to keep it: keychain or file (default: the keychain, else the file)")
	cmd.Flags().StringArrayVar(&opts.Plugins, "plugin", nil, "bind it to the plugin `NAME` (repeatable; default: the trusted plugins that name it)")
	a.jsonFlag(cmd, &opts.JSON, secretSetJSON{})
	return cmd
}

// secretSetOptions are the inputs of berth secret set.
type secretSetOptions struct {
	// Name is the positional argument.
	Name      string
	JSON      bool
	StoreName string
	Plugins   []string
}

func runSecretSet(ctx context.Context, a *app, opts *secretSetOptions) error {
	name := opts.Name
	if err := secrets.CheckName(name); err != nil {
		return usagef("%v", err)
	}
	var backend secrets.Backend
	if opts.StoreName != "" {
		b, err := secrets.ParseBackend(opts.StoreName)
		if err != nil {
			return usagef("--store: %v", err)
		}
		backend = b
	}
	s, err := a.secrets()
	if err != nil {
		return err
	}
	plugins, err := a.bindingTargets(name, opts.Plugins)
	if err != nil {
		return err
	}
	value, err := a.readSecret(name)
	if err != nil {
		return err
	}
	res, err := s.Set(ctx, name, value, backend, plugins...)
	if err != nil {
		return err
	}
	e, _, err := s.Lookup(name)
	if err != nil {
		return err
	}
	out := secretSetJSON{Name: name, Store: res.Backend, Replaced: res.Replaced, Plugins: e.Plugins}
	if res.Backend == secrets.File {
		out.File = s.ValuesFile()
	}
	if res.Fallback != nil {
		out.Fallback = res.Fallback.Error()
		// As the GitHub CLI does: say that the value is in a file.
		fmt.Fprintf(a.stderr, "warning: no keychain answered (%v), so %s is stored in plain text in %s, readable only by you (mode 0600); --store keychain insists on the keychain\n", res.Fallback, name, s.ValuesFile())
	}
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	where := "the keychain"
	if res.Backend == secrets.File {
		where = s.ValuesFile()
	}
	verb := "Stored"
	if res.Replaced {
		verb = "Replaced"
	}
	if len(e.Plugins) == 0 {
		fmt.Fprintf(a.stdout, "%s %s in %s, bound to no plugin: no trusted plugin names it yet, so no server receives it; bind it to one with: %s\n", verb, name, where, secrets.BindCommand(name, "PLUGIN"))
		return nil
	}
	fmt.Fprintf(a.stdout, "%s %s in %s, bound to %s. Their servers that declare {\"fromEnv\": %q} receive it when the environment berth runs in does not set %s.\n", verb, name, where, pluginList(e.Plugins), name, name)
	return nil
}

// readSecret reads a value: from the terminal without echo, or all of a
// stdin that is not a terminal.
func (a *app) readSecret(name string) (string, error) {
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(a.stderr, "Value of %s (not shown): ", name)
		v, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return "", fmt.Errorf("reading the value of %s from the terminal: %w", name, err)
		}
		return string(v), nil
	}
	data, err := io.ReadAll(io.LimitReader(a.stdin, secrets.MaxValueSize+2))
	if err != nil {
		return "", fmt.Errorf("reading the value of %s from stdin: %w", name, err)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if v == "" {
		return "", usagef("no value on stdin for %s: pipe it in (printf %%s \"$VALUE\" | berth secret set %s), or run berth secret set on a terminal to type it", name, name)
	}
	return v, nil
}

// secretListJSON is what secret list --json prints.
type secretListJSON struct {
	// Secrets are the stored names, sorted, with where each is kept, when
	// it was last set and the plugins it is bound to; never a value.
	Secrets []secrets.Entry `json:"secrets"`
	// File is the file that holds the values kept in "file".
	File string `json:"file"`
}

func newSecretListCmd(a *app) *cobra.Command {
	opts := &secretListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the stored secrets' names, where each is kept and the plugins bound to it, never values",
		Example: `  berth secret list
  berth secret list --json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSecretList(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, secretListJSON{})
	return cmd
}

// secretListOptions are the inputs of berth secret list.
type secretListOptions struct {
	JSON bool
}

func runSecretList(_ context.Context, a *app, opts *secretListOptions) error {
	s, err := a.secrets()
	if err != nil {
		return err
	}
	list, err := s.List()
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, secretListJSON{Secrets: list, File: s.ValuesFile()})
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "No secrets are stored. Store one with: berth secret set NAME")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTORE\tSET\tPLUGINS")
	for _, e := range list {
		where := string(e.Backend)
		if e.Backend == secrets.File {
			where += " (" + s.ValuesFile() + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, where, e.Updated.Local().Format(time.DateTime), pluginList(e.Plugins))
	}
	return tw.Flush()
}

// secretRmJSON is what secret rm --json prints.
type secretRmJSON struct {
	Name string `json:"name"`
	// Store is where the value was: "keychain" or "file".
	Store secrets.Backend `json:"store"`
}

func newSecretRmCmd(a *app) *cobra.Command {
	opts := &secretRmOptions{}
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a stored secret",
		Long: `Rm removes NAME from berth's secret store (the keychain entry, or its line
of the file). Servers that need it then fail to start until it is set
again, in the store or in berth's environment.

Exit codes: 0 removed, 1 not stored or not removed, 2 usage.`,
		Example: `  berth secret rm ACME_TOKEN`,
		Args:    exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runSecretRm(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, secretRmJSON{})
	return cmd
}

// secretRmOptions are the inputs of berth secret rm.
type secretRmOptions struct {
	// Name is the positional argument.
	Name string
	JSON bool
}

func runSecretRm(ctx context.Context, a *app, opts *secretRmOptions) error {
	name := opts.Name
	if err := secrets.CheckName(name); err != nil {
		return usagef("%v", err)
	}
	s, err := a.secrets()
	if err != nil {
		return err
	}
	b, err := s.Remove(ctx, name)
	if errors.Is(err, secrets.ErrNotFound) {
		return fmt.Errorf("%s is not in berth's secret store, so nothing was removed (berth secret list shows what is)", name)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, secretRmJSON{Name: name, Store: b})
	}
	fmt.Fprintf(a.stdout, "Removed %s from the %s.\n", name, b)
	return nil
}
