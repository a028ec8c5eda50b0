package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// confirmFlagUsage is the help of --confirm on enable and install.
const confirmFlagUsage = "confirm the value `NAME` the plugin asks for (the publisher's value), or NAME=VALUE for your own (repeatable; berth confirm explains)"

// confirmJSON is what confirm --json prints.
type confirmJSON struct {
	Plugin string `json:"plugin"`
	// Confirmed are the names confirmed now.
	Confirmed []string `json:"confirmed"`
	// Pending are the names still to confirm; the plugin's servers that
	// read them do not start until they are.
	Pending []string `json:"pending"`
}

const confirmLong = `Confirm sets the values a plugin asks you to confirm: the fixed environment
values its publisher wrote into an MCP Bundle or a Claude Code plugin
(NODE_ENV=production, MCP_DXT=true) and the MCP Bundle options that are not
sensitive. berth imports each as {"fromEnv": NAME} with the publisher's
value beside it (berth review shows NAME, the value offered, the
description, the choices and an example); the value itself is never in
the bundle. What you confirm is kept in berth's config (config.json) for
this plugin and the signer of its trusted versions, and the plugin's
servers receive only that value: never one from the environment berth
runs in, a workspace or the secret store. A version whose publisher
offers another value, or that is signed by another signer, asks again.

NAME confirms the publisher's value; NAME=VALUE confirms your own (it must
be one of the choices when there are some, a number or true/false when
the input says so, and never a credential: those belong in the secret
store, berth secret set). An optional value may be confirmed empty
(NAME=): the server then starts without it. Without NAME, berth asks on a
terminal for each value not confirmed yet; off a terminal it lists them
(exit 2); with names, it confirms those and names the rest on stderr.
berth enable and berth install ask the same questions, and take
--confirm NAME[=VALUE] (repeatable) off a terminal; --yes never confirms
a value.

Exit codes: 0 confirmed, 2 usage (an unknown NAME, a refused value, or
values left to confirm off a terminal), 4 the plugin is not trusted.`

func newConfirmCmd(a *app) *cobra.Command {
	opts := &confirmOptions{}
	cmd := &cobra.Command{
		Use:   "confirm PLUGIN [NAME[=VALUE]...]",
		Short: "Confirm the values a plugin asks for (its publisher's constants and options)",
		Long:  confirmLong,
		Example: `  berth confirm desktop-commander
  berth confirm desktop-commander DESKTOP_COMMANDER_NODE_ENV
  berth confirm acme-notes ACME_NOTES_REGION=eu --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s takes PLUGIN [NAME[=VALUE]...] (got no arguments)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Plugin, opts.Given = args[0], args[1:]
			return runConfirm(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, confirmJSON{})
	return cmd
}

// confirmOptions are the inputs of berth confirm.
type confirmOptions struct {
	Plugin string
	// Given are the NAME and NAME=VALUE arguments.
	Given []string
	JSON  bool
}

func runConfirm(ctx context.Context, a *app, opts *confirmOptions) error {
	if !bundle.IsValidName(opts.Plugin) {
		return usagef("%q is not a plugin name (lower-case letters, digits and '-'); `berth list` shows the trusted plugins", opts.Plugin)
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	recs, err := st.Records()
	if err != nil {
		return err
	}
	var mine []*store.Record
	for _, r := range recs {
		if r.Name == opts.Plugin && st.CheckNotRevoked(r.Name, r.Version, r.Digest) == nil {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return store.NotTrustedf("no version of %s is trusted; trust or install it first (berth list shows what is trusted)", opts.Plugin)
	}
	res, err := a.confirmValues(ctx, st, mine, opts.Given, !opts.JSON)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, confirmJSON{Plugin: opts.Plugin, Confirmed: nonNilStrings(res.confirmed), Pending: nonNilStrings(res.pendingNames())})
	}
	if len(res.pending) > 0 && len(opts.Given) > 0 {
		a.sayPending(opts.Plugin, res.pending, true)
	} else if len(res.pending) > 0 {
		a.sayPending(opts.Plugin, res.pending, false)
		return usagef("not on a terminal, so berth cannot ask; confirm each value by name: berth confirm %s NAME (the publisher's value) or NAME=VALUE", opts.Plugin)
	}
	if len(res.confirmed) == 0 && len(opts.Given) == 0 {
		fmt.Fprintf(a.stdout, "Every value %s asks for is confirmed.\n", opts.Plugin)
	}
	return nil
}

// confirmResult is what confirmValues did.
type confirmResult struct {
	confirmed []string
	pending   []bundle.ImportInput
}

func (r *confirmResult) pendingNames() []string {
	var out []string
	for _, in := range r.pending {
		out = append(out, in.FromEnv)
	}
	return out
}

// givenValue is one NAME or NAME=VALUE of --confirm.
type givenValue struct {
	value    string
	hasValue bool
	used     bool
}

// parseGiven reads NAME and NAME=VALUE arguments.
func parseGiven(given []string) (map[string]*givenValue, error) {
	out := map[string]*givenValue{}
	for _, g := range given {
		name, value, has := strings.Cut(g, "=")
		if !bundle.IsValidEnvName(name) {
			return nil, usagef("--confirm %q: NAME must be the variable the plugin's review names (such as ACME_NODE_ENV), optionally followed by =VALUE", name)
		}
		if out[name] != nil {
			return nil, usagef("--confirm %s is given twice", name)
		}
		out[name] = &givenValue{value: value, hasValue: has}
	}
	return out, nil
}

// confirmValues confirms the inputs that the staged manifests of recs (the
// versions of one plugin) ask the operator to confirm: those given by
// name, and, when ask is true and berth is on a terminal, those not
// confirmed yet, asked one by one. Nothing is confirmed unless every
// given name is one of them and every value passes its checks. It never
// prints a value.
func (a *app) confirmValues(ctx context.Context, st *store.Store, recs []*store.Record, given []string, ask bool) (*confirmResult, error) {
	byName, err := parseGiven(given)
	if err != nil {
		return nil, err
	}
	cfg, err := st.Config()
	if err != nil {
		return nil, err
	}
	type key struct{ signer, source, name, offered string }
	seen := map[key]bool{}
	var (
		res   confirmResult
		batch []store.ConfirmedValue
		names []string
		todo  []bundle.ImportInput
		todoR []*store.Record
	)
	for _, r := range recs {
		m, err := stagedManifest(st, &store.Enablement{Digest: r.Digest})
		if err != nil {
			return nil, err
		}
		for _, in := range m.ConfirmInputs() {
			names = append(names, in.FromEnv)
			k := key{r.SignerIdentity(), r.ConfirmSource(), in.FromEnv, in.Default}
			if seen[k] {
				continue
			}
			seen[k] = true
			if g := byName[in.FromEnv]; g != nil {
				g.used = true
				v, err := givenFor(r.Name, in, g)
				if err != nil {
					return nil, err
				}
				batch = append(batch, confirmedValue(r, in, v))
				continue
			}
			if _, ok := cfg.Confirmation(r.Name, r.SignerIdentity(), r.ConfirmSource(), in.FromEnv, in.Default); ok {
				continue
			}
			todo, todoR = append(todo, in), append(todoR, r)
		}
	}
	for _, n := range slices.Sorted(mapKeys(byName)) {
		if !byName[n].used {
			asks := "no value"
			if len(names) > 0 {
				asks = strings.Join(slices.Compact(slices.Sorted(slices.Values(names))), ", ")
			}
			return nil, usagef("--confirm %s: plugin %s asks for no such value; it asks for %s (berth review shows them)", n, recs[0].Name, asks)
		}
	}
	if len(todo) > 0 && ask && a.isTerminal() {
		rd := bufio.NewReader(a.stdin)
		for i, in := range todo {
			v, err := a.askValue(rd, todoR[i].Name, in)
			if err != nil {
				return nil, err
			}
			batch = append(batch, confirmedValue(todoR[i], in, v))
		}
		todo = nil
	}
	if err := a.storeConfirmed(ctx, st, batch, ask, &res); err != nil {
		return nil, err
	}
	res.pending = todo
	return &res, nil
}

// storeConfirmed records batch and, when say, tells what was confirmed
// (never a value).
func (a *app) storeConfirmed(ctx context.Context, st *store.Store, batch []store.ConfirmedValue, say bool, res *confirmResult) error {
	if len(batch) > 0 {
		if err := st.Confirm(ctx, batch...); err != nil {
			return err
		}
	}
	for _, b := range batch {
		what := "your value"
		switch {
		case b.Value == "":
			what = "left empty: the server starts without it"
		case b.Value == b.Offered:
			what = "the publisher's value"
		}
		if !slices.Contains(res.confirmed, b.Name) {
			res.confirmed = append(res.confirmed, b.Name)
			if say {
				fmt.Fprintf(a.stdout, "Confirmed %s for %s (%s).\n", b.Name, b.Plugin, what)
			}
		}
	}
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// givenFor is the value --confirm NAME[=VALUE] gives in.
func givenFor(plugin string, in bundle.ImportInput, g *givenValue) (string, error) {
	v := g.value
	if !g.hasValue {
		if in.Default == "" && in.Required {
			return "", usagef("the publisher of %s offers no value for %s; give yours: %s=VALUE", plugin, in.FromEnv, in.FromEnv)
		}
		v = in.Default
	}
	if err := bundle.CheckConfirmedValue(in, v); err != nil {
		return "", usagef("%v", err)
	}
	return v, nil
}

func confirmedValue(r *store.Record, in bundle.ImportInput, v string) store.ConfirmedValue {
	return store.ConfirmedValue{Plugin: r.Name, Signer: r.SignerIdentity(), Source: r.ConfirmSource(), Name: in.FromEnv, Offered: in.Default, Value: v, Confirmed: time.Now().UTC().Truncate(time.Second)}
}

// askValue asks for the value of in on the terminal: Enter takes the
// publisher's value. A refused value is asked again, three times at most.
func (a *app) askValue(rd *bufio.Reader, plugin string, in bundle.ImportInput) (string, error) {
	w := a.stdout
	fmt.Fprintf(w, "Plugin %s asks you to confirm %s.\n", plugin, in.FromEnv)
	a.describeInput(w, in, "  ")
	prompt := fmt.Sprintf("Value of %s", in.FromEnv)
	switch {
	case in.Default != "":
		prompt += fmt.Sprintf(" [Enter: %s]", strconv.Quote(review.Printable(in.Default)))
	case !in.Required:
		prompt += " [Enter: leave it empty]"
	}
	for try := 0; ; try++ {
		fmt.Fprintf(w, "%s: ", prompt)
		line, err := rd.ReadString('\n')
		if err != nil && err != io.EOF {
			return "", err
		}
		if err == io.EOF && line == "" {
			return "", usagef("no answer for %s; nothing was confirmed", in.FromEnv)
		}
		v := strings.TrimRight(line, "\r\n")
		if v == "" {
			v = in.Default
		}
		err = bundle.CheckConfirmedValue(in, v)
		if err == nil {
			return v, nil
		}
		if try == 2 {
			return "", usagef("%v; nothing was confirmed", err)
		}
		fmt.Fprintf(w, "  %v\n", err)
	}
}

// describeInput writes what the review says of an input the operator
// confirms: its description, the publisher's value, the choices and an
// example.
func (a *app) describeInput(w io.Writer, in bundle.ImportInput, indent string) {
	line := func(label, s string) {
		if s != "" {
			fmt.Fprintf(w, "%s%-12s %s\n", indent, label, review.Printable(s))
		}
	}
	line("title", in.Title)
	line("description", in.Description)
	line("is", in.Becomes)
	if in.Default != "" {
		line("offered", strconv.Quote(in.Default))
	}
	if len(in.Choices) > 0 {
		var q []string
		for _, c := range in.Choices {
			q = append(q, strconv.Quote(c))
		}
		line("choices", strings.Join(q, ", "))
	}
	line("example", in.Placeholder)
	if in.Type != "" && in.Type != "string" {
		line("type", in.Type)
	}
}

// sayPending tells, on stderr, which values of plugin are still to
// confirm and how.
func (a *app) sayPending(plugin string, pending []bundle.ImportInput, note bool) {
	var parts []string
	for _, in := range pending {
		p := in.FromEnv
		if in.Default != "" {
			p += fmt.Sprintf(" (the publisher offers %s)", strconv.Quote(review.Printable(in.Default)))
		}
		parts = append(parts, p)
	}
	prefix := ""
	if note {
		prefix = "note: "
	}
	fmt.Fprintf(a.stderr, "%splugin %s asks you to confirm %s; the servers that read them do not start until you do: %s NAME (the publisher's value) or NAME=VALUE\n", prefix, plugin, strings.Join(parts, ", "), strings.TrimSuffix(pool.ConfirmCommand(plugin, ""), " "))
}

// confirmAfterEnable runs the confirmations of enable and install for
// rec: the values given with --confirm, and on a terminal (unless quiet)
// the questions for those not confirmed yet; what is left is a note on
// stderr.
func (a *app) confirmAfterEnable(ctx context.Context, st *store.Store, rec *store.Record, given []string, quiet bool) error {
	res, err := a.confirmValues(ctx, st, []*store.Record{rec}, given, !quiet)
	if err != nil {
		return err
	}
	if len(res.pending) > 0 {
		a.sayPending(rec.Name, res.pending, true)
	}
	return nil
}

// checkGiven checks --confirm of enable and install before anything
// changes: each NAME is one the version of rec asks for, and each value
// passes its checks.
func checkGiven(st *store.Store, rec *store.Record, given []string) error {
	byName, err := parseGiven(given)
	if err != nil || len(byName) == 0 {
		return err
	}
	m, err := stagedManifest(st, &store.Enablement{Digest: rec.Digest})
	if err != nil {
		return err
	}
	ins := m.ConfirmInputs()
	var names []string
	for _, in := range ins {
		names = append(names, in.FromEnv)
		if g := byName[in.FromEnv]; g != nil {
			g.used = true
			if _, err := givenFor(rec.Name, in, g); err != nil {
				return err
			}
		}
	}
	for _, n := range slices.Sorted(mapKeys(byName)) {
		if !byName[n].used {
			asks := "no value"
			if len(names) > 0 {
				asks = strings.Join(names, ", ")
			}
			return usagef("--confirm %s: %s asks for no such value; it asks for %s (berth review shows them)", n, rec.ID(), asks)
		}
	}
	return nil
}

// forgetConfirmed drops the values confirmed for plugin once no version
// of it is trusted any more (berth revoke of its last versions), so that
// a plugin of that name trusted later, perhaps another publisher's, asks
// again. A failure is a warning.
func (a *app) forgetConfirmed(st *store.Store, plugin string) {
	recs, err := st.Records()
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: berth cannot read its trust records (%v), so it did not check whether a version of %s is still trusted: the values confirmed for %s stay in berth's config; once `berth list` works, remove its entries of \"confirmed\" from config.json by hand if no version of %s is trusted\n", err, plugin, plugin, plugin)
		return
	}
	if slices.ContainsFunc(recs, func(r *store.Record) bool { return r.Name == plugin }) {
		return
	}
	gone, err := st.ForgetConfirmed(context.Background(), plugin)
	switch {
	case err != nil:
		fmt.Fprintf(a.stderr, "warning: the values confirmed for %s are still in berth's config (%v); remove its entries of \"confirmed\" from config.json by hand\n", plugin, err)
	case len(gone) > 0:
		fmt.Fprintf(a.stderr, "No version of %s is trusted any more, so the values you confirmed for it are forgotten: %s.\n", plugin, strings.Join(gone, ", "))
	}
}
