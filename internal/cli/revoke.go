package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

func newRevokeCmd(a *app) *cobra.Command {
	opts := &revokeOptions{}
	cmd := &cobra.Command{
		Use: "revoke NAME[@VERSION]",
		Example: `  berth revoke acme-notes@1.4.2
  berth revoke acme-notes --yes --json
  berth revoke --lift acme-notes@1.4.2`,
		Short: "Remove trust in a plugin (every version, or one)",
		Long: `Revoke removes the trust records of a plugin, or of one version, and
disables it everywhere it was enabled with that version. It first shows
what it removes and the workspaces it disables it in, and asks for
confirmation (on a terminal; otherwise --yes is required, else exit 2), as
berth trust does; then it says what it disabled. Running berth processes
notice at their next boundary, remove its tools and stop its servers. The
staged snapshot stays until 'berth gc'.

--lift NAME@VERSION lifts a catalog's revocation of that version instead:
it shows the revocation, asks (--yes confirms; off a terminal --yes is
required), and records in $BERTH_HOME/revoked/NAME/VERSION.json that you
lifted it and when. The version may then be trusted and enabled again;
nothing is enabled, and a refresh of the catalog that still lists it as
revoked does not revoke it again (it warns). Only you lift a revocation,
or the catalog that made it, by listing the same version and digest as
active again; a catalog that stops listing the version lifts nothing.`,
		Args: exactArgs(1, "one NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return runRevoke(cmd.Context(), a, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Lift, "lift", false, "lift a catalog's revocation of NAME@VERSION instead (asks; recorded with its time)")
	f.BoolVarP(&opts.Yes, "yes", "y", false, "revoke (or lift) without asking (required when not on a terminal)")
	a.jsonFlag(cmd, &opts.JSON, revokeJSON{})
	return cmd
}

// revokeOptions are the inputs of berth revoke.
type revokeOptions struct {
	// Ref is the positional argument.
	Ref             string
	JSON, Lift, Yes bool
}

func runRevoke(ctx context.Context, a *app, opts *revokeOptions) error {
	name, version, err := parseRef(opts.Ref)
	if err != nil {
		return err
	}
	if opts.Lift {
		return runLiftRevocation(ctx, a, opts, name, version)
	}
	if opts.JSON && !opts.Yes {
		return usagef("--json cannot ask for confirmation; add --yes")
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	if err := a.confirmRevoke(st, name, version, opts); err != nil {
		return err
	}
	res, err := st.RevokeWithReport(ctx, name, version)
	if err != nil {
		return err
	}
	a.forgetSecrets(st, name)
	a.forgetConfirmed(st, name)
	a.forgetUnusedSignins(ctx, st, name)
	if opts.JSON {
		return writeJSON(a.stdout, revokeJSON{Revoked: res.Records, Disabled: nonNilDisabled(res.Disabled)})
	}
	for _, r := range res.Records {
		fmt.Fprintf(a.stdout, "Revoked %s (%s).\n", r.ID(), r.Digest)
	}
	for _, d := range res.Disabled {
		fmt.Fprintf(a.stdout, "Disabled %s@%s in %s.\n", d.Name, d.Version, d.Workspace)
	}
	if len(res.Disabled) == 0 {
		fmt.Fprintln(a.stdout, "It was not enabled in any workspace.")
	}
	fmt.Fprintln(a.stdout, "Its snapshot stays until `berth gc`.")
	return nil
}

// confirmRevoke shows what revoking name (or name@version) removes and
// disables, and asks, as berth trust does: on a terminal, or --yes.
func (a *app) confirmRevoke(st *store.Store, name, version string, opts *revokeOptions) error {
	recs, err := st.Find(name, version)
	if err != nil {
		return err
	}
	state, err := st.State()
	if err != nil {
		return err
	}
	if !opts.JSON {
		fmt.Fprintf(a.stdout, "Revoking removes your trust in:\n")
		for _, r := range recs {
			fmt.Fprintf(a.stdout, "  %s (%s, %s)\n", r.ID(), r.Digest, shortSigner(r.Signer))
		}
		n := 0
		for _, ws := range state.EnabledIn(name) {
			v := state.Workspaces[ws].Plugins[name].Version
			if slices.ContainsFunc(recs, func(r *store.Record) bool { return r.Version == v }) {
				if n == 0 {
					fmt.Fprintln(a.stdout, "and disables it in:")
				}
				fmt.Fprintf(a.stdout, "  %s (%s@%s)\n", ws, name, v)
				n++
			}
		}
		if n == 0 {
			fmt.Fprintln(a.stdout, "It is not enabled in any workspace.")
		}
	}
	what := name
	if version != "" {
		what += "@" + version
	}
	return a.confirm(fmt.Sprintf("Revoke %s?", what), opts.Yes, "--yes")
}

func nonNilDisabled(d []store.Disabled) []store.Disabled {
	if d == nil {
		return []store.Disabled{}
	}
	return d
}

// runLiftRevocation is berth revoke --lift: the operator lifts a
// catalog's revocation, confirmed, and the revocation's file records it.
func runLiftRevocation(ctx context.Context, a *app, opts *revokeOptions, name, version string) error {
	if version == "" {
		return usagef("--lift lifts the revocation of one version: name it (berth revoke --lift %s@VERSION)", name)
	}
	if opts.JSON && !opts.Yes {
		return usagef("--json cannot ask for confirmation; add --yes")
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	r, err := st.RevocationOf(name, version, "")
	if err != nil {
		return err
	}
	if r == nil || r.Lifted != nil {
		return fmt.Errorf("%s@%s: %w, so there is nothing to lift (berth verify %s@%s says why it is refused, if it is)", name, version, store.ErrNotRevoked, name, version)
	}
	if !opts.JSON {
		fmt.Fprintf(a.stdout, "Catalog %s revoked %s@%s (%s) on %s: %s.\n", r.Catalog, r.Name, r.Version, r.Digest, r.RevokedAt.Format("2006-01-02"), review.Printable(fmt.Sprintf("%q", r.Reason)))
	}
	if err := a.confirm(fmt.Sprintf("Lift this revocation, so that %s@%s may be trusted and enabled again?", name, version), opts.Yes, "--yes"); err != nil {
		return err
	}
	lifted, err := st.LiftRevocation(ctx, store.Lift{Name: name, Version: version, Digest: r.Digest, Catalog: r.Catalog, By: store.LiftedByOperator})
	if err != nil {
		return err
	}
	if err := auditLift(st, lifted); err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, revokeJSON{Revoked: []*store.Record{}, Disabled: []store.Disabled{}, Lifted: lifted})
	}
	fmt.Fprintf(a.stdout, "Lifted catalog %s's revocation of %s@%s; %s records that you lifted it on %s.\n", lifted.Catalog, name, version, st.Paths().Revocation(name, version), lifted.Lifted.At.Format("2006-01-02"))
	fmt.Fprintf(a.stdout, "It is not enabled anywhere: berth enable %s@%s enables it.\n", name, version)
	return nil
}

// auditLift writes the operator's lift of a revocation to audit.log, beside
// the tool-call decisions, so that whoever reads the log sees it.
func auditLift(st *store.Store, r *store.Revocation) error {
	log := mcpexport.NewAudit(st.Paths().Audit())
	defer log.Close()
	err := log.Append(mcpexport.AuditEntry{
		Time:      r.Lifted.At,
		Kind:      mcpexport.KindRevocationLift,
		Tool:      r.Name + "@" + r.Version,
		Plugin:    r.Name,
		Policy:    "revoked by catalog " + r.Catalog,
		DecidedBy: mcpexport.ByOperator,
		Decision:  mcpexport.VerdictAllow,
		Outcome:   mcpexport.OutcomeLifted,
		Reason:    fmt.Sprintf("lifted catalog %s's revocation of %s (%s): %s", r.Catalog, r.Version, r.Digest, r.Reason),
	})
	if err != nil {
		return fmt.Errorf("the revocation of %s@%s is lifted, but writing that to %s failed: %w", r.Name, r.Version, st.Paths().Audit(), err)
	}
	return nil
}

// revokeJSON is what revoke --json prints.
type revokeJSON struct {
	Revoked []*store.Record `json:"revoked"`
	// Disabled are the workspaces where a revoked version was enabled,
	// which it no longer is.
	Disabled []store.Disabled `json:"disabled"`
	// Lifted is the revocation berth revoke --lift lifted, as its file
	// now records it.
	Lifted *store.Revocation `json:"lifted,omitempty"`
}
