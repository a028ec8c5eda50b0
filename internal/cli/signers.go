package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/trust"
)

func (a *app) signersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use: "signers",
		Example: `  berth signers add-key acme acme.pub
  berth signers list
  berth signers remove acme`,
		Short: "Manage the signer policy: whose signatures you trust",
		Args:  exactArgs(0, "a subcommand: add-key, add-identity, list or remove"),
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var notBefore, notAfter string
	var addJSON, removeJSON bool
	addKey := &cobra.Command{
		Use: "add-key NAME PUBKEY.pem",
		Example: `  berth signers add-key acme acme.pub
  berth signers add-key acme acme.pub --not-after 2027-01-31T00:00:00Z`,
		Short: "Trust signatures made with a public key (ECDSA P-256/P-384 or RSA)",
		Args:  exactArgs(2, "NAME and PUBKEY.pem"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pem, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			var ko trust.KeySignerOptions
			for _, t := range []struct {
				flag, val string
				dst       *time.Time
			}{{"--not-before", notBefore, &ko.NotBefore}, {"--not-after", notAfter, &ko.NotAfter}} {
				if t.val == "" {
					continue
				}
				v, err := time.Parse(time.RFC3339, t.val)
				if err != nil {
					return usagef("%s %q is not an RFC 3339 time like 2027-01-31T00:00:00Z", t.flag, t.val)
				}
				*t.dst = v
			}
			s, err := trust.NewKeySigner(args[0], pem, &ko)
			if err != nil {
				return err
			}
			return a.addSigner(cmd.Context(), s, addJSON)
		},
	}
	a.jsonFlag(addKey, &addJSON, trust.Signer{})
	addKey.Flags().StringVar(&notBefore, "not-before", "", "accept signatures only from this time on (RFC 3339)")
	addKey.Flags().StringVar(&notAfter, "not-after", "", "accept signatures only until this time (RFC 3339)")

	var issuer, san, sanRegex, rootFile string
	addIdentity := &cobra.Command{
		Use: "add-identity NAME --issuer URL (--san VALUE | --san-regex RE) [--trusted-root FILE]",
		Example: `  berth signers add-identity acme-ci --issuer https://token.actions.githubusercontent.com \
    --san https://github.com/acme/notes/.github/workflows/release.yml@refs/heads/main`,
		Short: "Trust Sigstore certificates of one OIDC identity",
		Long: `Add-identity trusts signatures whose Fulcio certificate names the OIDC issuer
--issuer and the subject --san (exact) or --san-regex (a Go regular
expression; berth always anchors it as ^(?:RE)$). The certificate must chain
to the Sigstore public-good trusted root embedded in berth, or to the
trusted_root.json given with --trusted-root (berth keeps a copy).`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if issuer == "" || (san == "") == (sanRegex == "") {
				return usagef("give --issuer and exactly one of --san and --san-regex")
			}
			// Everything, the name first, is checked before a path is
			// made from the name or a file is written.
			s, err := trust.NewIdentitySigner(args[0], issuer, san, sanRegex, rootFile)
			if err != nil {
				return err
			}
			// The store keeps a copy of the trusted root.
			return a.addSigner(cmd.Context(), s, addJSON)
		},
	}
	a.jsonFlag(addIdentity, &addJSON, trust.Signer{})
	addIdentity.Flags().StringVar(&issuer, "issuer", "", "the exact OIDC issuer URL")
	addIdentity.Flags().StringVar(&san, "san", "", "the exact subject alternative name (e-mail or URI)")
	addIdentity.Flags().StringVar(&sanRegex, "san-regex", "", "a regular expression the whole SAN must match")
	addIdentity.Flags().StringVar(&rootFile, "trusted-root", "", "a trusted_root.json (default: Sigstore public good, embedded)")

	var asJSON bool
	list := &cobra.Command{
		Use: "list",
		Example: `  berth signers list
  berth signers list --json`,
		Short: "List the signers you trust",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.store()
			if err != nil {
				return err
			}
			signers, err := st.Signers()
			if err != nil {
				return err
			}
			if asJSON {
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
		},
	}
	a.jsonFlag(list, &asJSON, []trust.Signer{})

	remove := &cobra.Command{
		Use:     "remove NAME",
		Example: `  berth signers remove acme`,
		Short:   "Stop trusting a signer",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.store()
			if err != nil {
				return err
			}
			removed, err := st.RemoveSigner(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if removeJSON {
				return writeJSON(a.stdout, removed)
			}
			fmt.Fprintf(a.stdout, "Removed signer %q. Plugins it signed now fail `berth verify` until you trust their signer again.\n", args[0])
			return nil
		},
	}
	a.jsonFlag(remove, &removeJSON, trust.Signer{})
	cmd.AddCommand(addKey, addIdentity, list, remove)
	return cmd
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
