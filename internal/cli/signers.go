package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/trust"
)

func newSignersCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "signers",
		Example: `  berth signers add-key acme acme.pub
  berth signers list
  berth signers remove acme`,
		Short: "Manage the signer policy: whose signatures you trust",
		Args:  exactArgs(0, "a subcommand: add-key, add-identity, list or remove"),
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSignersAddKeyCmd(a), newSignersAddIdentityCmd(a), newSignersListCmd(a), newSignersRemoveCmd(a))
	return cmd
}

// signersAddKeyOptions are the inputs of berth signers add-key.
type signersAddKeyOptions struct {
	Name, KeyFile       string
	NotBefore, NotAfter string
	JSON                bool
}

func newSignersAddKeyCmd(a *app) *cobra.Command {
	opts := &signersAddKeyOptions{}
	cmd := &cobra.Command{
		Use: "add-key NAME PUBKEY.pem",
		Example: `  berth signers add-key acme acme.pub
  berth signers add-key acme acme.pub --not-after 2027-01-31T00:00:00Z`,
		Short: "Trust signatures made with a public key (ECDSA P-256/P-384 or RSA)",
		Args:  exactArgs(2, "NAME and PUBKEY.pem"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.KeyFile = args[0], args[1]
			return runSignersAddKey(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, trust.Signer{})
	cmd.Flags().StringVar(&opts.NotBefore, "not-before", "", "accept signatures only from this time on (RFC 3339)")
	cmd.Flags().StringVar(&opts.NotAfter, "not-after", "", "accept signatures only until this time (RFC 3339)")
	return cmd
}

func runSignersAddKey(ctx context.Context, a *app, opts *signersAddKeyOptions) error {
	pem, err := os.ReadFile(opts.KeyFile)
	if err != nil {
		return err
	}
	var ko trust.KeySignerOptions
	for _, t := range []struct {
		flag, val string
		dst       *time.Time
	}{{"--not-before", opts.NotBefore, &ko.NotBefore}, {"--not-after", opts.NotAfter, &ko.NotAfter}} {
		if t.val == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339, t.val)
		if err != nil {
			return usagef("%s %q is not an RFC 3339 time like 2027-01-31T00:00:00Z", t.flag, t.val)
		}
		*t.dst = v
	}
	s, err := trust.NewKeySigner(opts.Name, pem, &ko)
	if err != nil {
		return err
	}
	return a.addSigner(ctx, s, opts.JSON)
}

// signersAddIdentityOptions are the inputs of berth signers add-identity.
type signersAddIdentityOptions struct {
	Name                            string
	Issuer, SAN, SANRegex, RootFile string
	JSON                            bool
}

const signersAddIdentityLong = `Add-identity trusts signatures whose Fulcio certificate names the OIDC issuer
--issuer and the subject --san (exact) or --san-regex (a Go regular
expression; berth always anchors it as ^(?:RE)$). The certificate must chain
to the Sigstore public-good trusted root embedded in berth, or to the
trusted_root.json given with --trusted-root (berth keeps a copy).`

func newSignersAddIdentityCmd(a *app) *cobra.Command {
	opts := &signersAddIdentityOptions{}
	cmd := &cobra.Command{
		Use: "add-identity NAME --issuer URL (--san VALUE | --san-regex RE) [--trusted-root FILE]",
		Example: `  berth signers add-identity acme-ci --issuer https://token.actions.githubusercontent.com \
    --san https://github.com/acme/notes/.github/workflows/release.yml@refs/heads/main`,
		Short: "Trust Sigstore certificates of one OIDC identity",
		Long:  signersAddIdentityLong,
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runSignersAddIdentity(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, trust.Signer{})
	cmd.Flags().StringVar(&opts.Issuer, "issuer", "", "the exact OIDC issuer URL")
	cmd.Flags().StringVar(&opts.SAN, "san", "", "the exact subject alternative name (e-mail or URI)")
	cmd.Flags().StringVar(&opts.SANRegex, "san-regex", "", "a regular expression the whole SAN must match")
	cmd.Flags().StringVar(&opts.RootFile, "trusted-root", "", "a trusted_root.json (default: Sigstore public good, embedded)")
	return cmd
}

func runSignersAddIdentity(ctx context.Context, a *app, opts *signersAddIdentityOptions) error {
	if opts.Issuer == "" || (opts.SAN == "") == (opts.SANRegex == "") {
		return usagef("give --issuer and exactly one of --san and --san-regex")
	}
	// Everything, the name first, is checked before a path is
	// made from the name or a file is written.
	s, err := trust.NewIdentitySigner(opts.Name, opts.Issuer, opts.SAN, opts.SANRegex, opts.RootFile)
	if err != nil {
		return err
	}
	// The store keeps a copy of the trusted root.
	return a.addSigner(ctx, s, opts.JSON)
}

// signersListOptions are the inputs of berth signers list.
type signersListOptions struct {
	JSON bool
}

func newSignersListCmd(a *app) *cobra.Command {
	opts := &signersListOptions{}
	cmd := &cobra.Command{
		Use: "list",
		Example: `  berth signers list
  berth signers list --json`,
		Short: "List the signers you trust",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSignersList(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, []trust.Signer{})
	return cmd
}

func runSignersList(_ context.Context, a *app, opts *signersListOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	signers, err := st.Signers()
	if err != nil {
		return err
	}
	if opts.JSON {
		if signers == nil {
			signers = []trust.Signer{}
		}
		return writeJSON(a.stdout, signers)
	}
	if len(signers) == 0 {
		fmt.Fprintln(a.stdout, "No signers yet: every trust is refused. Add one with: berth signers add-key NAME PUBKEY.pem")
	}
	for _, s := range signers {
		fmt.Fprintln(a.stdout, s.String())
	}
	return nil
}

// signersRemoveOptions are the inputs of berth signers remove.
type signersRemoveOptions struct {
	Name string
	JSON bool
}

func newSignersRemoveCmd(a *app) *cobra.Command {
	opts := &signersRemoveOptions{}
	cmd := &cobra.Command{
		Use:     "remove NAME",
		Example: `  berth signers remove acme`,
		Short:   "Stop trusting a signer",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return runSignersRemove(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, trust.Signer{})
	return cmd
}

func runSignersRemove(ctx context.Context, a *app, opts *signersRemoveOptions) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	removed, err := st.RemoveSigner(ctx, opts.Name)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, removed)
	}
	fmt.Fprintf(a.stdout, "Removed signer %q. Plugins it signed now fail `berth verify` until you trust their signer again.\n", opts.Name)
	return nil
}

// addSigner adds a signer to the policy and says so (as JSON: the signer
// as recorded).
func (a *app) addSigner(ctx context.Context, s trust.Signer, asJSON bool) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	added, err := st.AddSigner(ctx, s)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, added)
	}
	fmt.Fprintf(a.stdout, "Added signer %s.\n", added)
	return nil
}
