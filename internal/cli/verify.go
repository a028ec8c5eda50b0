package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/store"
)

type verifyEntry struct {
	Name     string           `json:"name"`
	Version  string           `json:"version"`
	Digest   string           `json:"digest"`
	OK       bool             `json:"ok"`
	Unsigned bool             `json:"unsigned"`
	Signer   *store.SignerRef `json:"signer,omitempty"`
	Drift    *bundle.Diff     `json:"drift,omitempty"`
	Error    string           `json:"error,omitempty"`
}

func newVerifyCmd(a *app) *cobra.Command {
	opts := &verifyOptions{}
	cmd := &cobra.Command{
		Use: "verify [NAME[@VERSION]]",
		Example: `  berth verify
  berth verify acme-notes@1.4.2 --json`,
		Short: "Re-verify trusted plugins offline: staged files and signatures",
		Long: `Verify re-checks every trusted plugin (or one) offline: it re-hashes the
staged snapshot against the recorded digest (exit 5 on any difference, naming
the files added, removed or changed, modes included) and re-verifies the
stored signature against the current signer policy (exit 4). A version that
a catalog revoked fails (exit 4), naming the catalog and its reason.`,
		Args: rangeArgs(0, 1, "at most one NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			return runVerify(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, []verifyEntry{})
	return cmd
}

// verifyOptions are the inputs of berth verify.
type verifyOptions struct {
	// Args are the positional arguments: none, or one NAME[@VERSION].
	Args []string
	JSON bool
}

func runVerify(ctx context.Context, a *app, opts *verifyOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	var recs []*store.Record
	if len(opts.Args) == 1 {
		name, version, err := parseRef(opts.Args[0])
		if err != nil {
			return err
		}
		if recs, err = st.Find(name, version); err != nil {
			return err
		}
	} else if recs, err = st.Records(); err != nil {
		return err
	}
	v, err := a.verifier(st)
	if err != nil {
		return err
	}
	var out []verifyEntry
	var worst error
	for _, r := range recs {
		hctx, stopProgress := a.hashing(ctx, !opts.JSON, "re-hashing "+r.Name)
		rep := st.Verify(hctx, r, v)
		stopProgress()
		e := verifyEntry{Name: r.Name, Version: r.Version, Digest: r.Digest, OK: rep.Err == nil, Unsigned: r.Unsigned, Signer: r.Signer}
		if rep.Drift != nil {
			e.Drift = rep.Drift.Diff
		}
		if rep.Err != nil {
			e.Error = rep.Err.Error()
			worst = worse(worst, rep.Err)
		}
		out = append(out, e)
	}
	if opts.JSON {
		if out == nil {
			out = []verifyEntry{}
		}
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else {
		if len(out) == 0 {
			fmt.Fprintln(a.stdout, "Nothing is trusted yet; nothing to verify.")
		}
		for _, e := range out {
			switch {
			case e.OK && e.Unsigned:
				fmt.Fprintf(a.stdout, "ok      %s@%s  files match %s (UNSIGNED: trusted by digest only)\n", e.Name, e.Version, e.Digest)
			case e.OK:
				fmt.Fprintf(a.stdout, "ok      %s@%s  files match %s; signature by %s verifies\n", e.Name, e.Version, e.Digest, e.Signer)
			default:
				fmt.Fprintf(a.stdout, "FAILED  %s@%s  %s\n", e.Name, e.Version, e.Error)
			}
		}
	}
	if worst != nil {
		return &reported{worst}
	}
	return nil
}

// worse keeps the error with the higher exit code: drift over untrusted
// over anything else.
func worse(a, b error) error {
	if a == nil {
		return b
	}
	if exitCode(b) == ExitDrift || (exitCode(b) == ExitUntrusted && exitCode(a) != ExitDrift) {
		return b
	}
	return a
}
