package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

type listEntry struct {
	Name      string           `json:"name"`
	Version   string           `json:"version"`
	Digest    string           `json:"digest"`
	Signer    *store.SignerRef `json:"signer"`
	Unsigned  bool             `json:"unsigned"`
	Staged    string           `json:"staged"`
	Enabled   []string         `json:"enabledIn"`
	Source    string           `json:"source"`
	TrustedAt time.Time        `json:"trustedAt"`
	// Revoked is the catalog's revocation of this version, when one
	// applies (it is disabled everywhere and cannot be enabled).
	Revoked *store.Revocation `json:"revoked,omitempty"`
}

func newListCmd(a *app) *cobra.Command {
	opts := &listOptions{}
	cmd := &cobra.Command{
		Use: "list",
		Example: `  berth list
  berth list --json`,
		Short: "List trusted plugins and where they are enabled",
		Long: `List prints each trusted version of each plugin: its digest, its signer
and the workspaces it is enabled in. The table shortens digests and key
fingerprints to their first 12 hex digits, as docker and gh do; --wide (or
--json) prints them whole.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runList(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Wide, "wide", false, "print whole digests and fingerprints")
	a.jsonFlag(cmd, &opts.JSON, []listEntry{})
	return cmd
}

// listOptions are the inputs of berth list.
type listOptions struct {
	JSON, Wide bool
}

func runList(_ context.Context, a *app, opts *listOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	recs, err := st.Records()
	if err != nil {
		return err
	}
	state, err := st.State()
	if err != nil {
		return err
	}
	out := []listEntry{}
	for _, r := range recs {
		d, err := store.ParseDigest(r.Digest) // Records checked it
		if err != nil {
			return err
		}
		e := listEntry{Name: r.Name, Version: r.Version, Digest: r.Digest, Signer: r.Signer, Unsigned: r.Unsigned, Staged: st.Paths().Snapshot(d), Enabled: []string{}, Source: r.Source, TrustedAt: r.TrustedAt}
		if e.Revoked, err = st.Revoked(r.Name, r.Version, r.Digest); err != nil {
			return err
		}
		for _, ws := range state.EnabledIn(r.Name) {
			if state.Workspaces[ws].Plugins[r.Name].Version == r.Version {
				e.Enabled = append(e.Enabled, ws)
			}
		}
		out = append(out, e)
	}
	if opts.JSON {
		return writeJSON(a.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(a.stdout, "Nothing is trusted yet. Trust a bundle with: berth trust SOURCE")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tDIGEST\tSIGNER\tENABLED IN")
	for _, e := range out {
		signer, digest := "UNSIGNED", e.Digest
		if e.Signer != nil {
			signer = e.Signer.String()
		}
		if !opts.Wide {
			signer, digest = shortSigner(e.Signer), shortHash(digest)
		}
		enabled := "-"
		if len(e.Enabled) > 0 {
			enabled = strings.Join(e.Enabled, ", ")
		}
		version := e.Version
		if e.Revoked != nil {
			version += " (revoked)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, version, digest, signer, enabled)
	}
	return tw.Flush()
}

// shortLen is how many characters of a digest or fingerprint a table
// shows, as docker and gh do.
const shortLen = 12

// shortHash shortens "ALG:HEX" (a digest or a key fingerprint) to the
// first shortLen characters of HEX, for a table; --wide prints it whole.
func shortHash(h string) string {
	if _, hex, ok := strings.Cut(h, ":"); ok {
		h = hex
	}
	if len(h) > shortLen {
		return h[:shortLen]
	}
	return h
}

// shortSigner is r as a table shows it: a key's fingerprint shortened.
func shortSigner(r *store.SignerRef) string {
	if r == nil {
		return "UNSIGNED"
	}
	if r.Kind == trust.KindKey {
		return fmt.Sprintf("key %q (%s)", r.Name, shortHash(r.Fingerprint))
	}
	return r.String()
}
