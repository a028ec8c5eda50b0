package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// crashEnv names the test-only variable that makes berth SIGKILL itself at
// a named step of a state change, for the crash-safety tests.
const crashEnv = "BERTH_TEST_CRASH_AT"

// store opens the state store under $BERTH_HOME.
func (a *app) store() (*store.Store, error) {
	paths, err := store.NewPaths(store.DefaultRoot(a.getenv))
	if err != nil {
		return nil, err
	}
	opts := &store.StoreOptions{}
	if step := a.getenv(crashEnv); step != "" {
		opts.CrashHookUnsafe = func(s string) {
			if s == step {
				crash()
			}
		}
	}
	return store.Open(paths, opts), nil
}

// verifier builds the signer policy of config.json.
func (a *app) verifier(s *store.Store) (*trust.Verifier, error) {
	signers, err := s.Signers()
	if err != nil {
		return nil, err
	}
	return trust.NewVerifier(signers, nil)
}

// confirm asks a yes/no question on the terminal. Without a terminal the
// caller must have passed --yes; otherwise it is a usage error (exit 2).
func (a *app) confirm(question string, yes bool, flag string) error {
	if yes {
		return nil
	}
	if !a.isTerminal() {
		return usagef("not on a terminal, so berth cannot ask; pass %s to confirm", flag)
	}
	ok, err := a.ask(question)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not confirmed; nothing was changed")
	}
	return nil
}

// ask prints a yes/no question and reads one line of answer: true for y
// or yes, in any case.
func (a *app) ask(question string) (bool, error) {
	fmt.Fprintf(a.stdout, "%s [y/N] ", question)
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	s := strings.ToLower(strings.TrimSpace(line))
	return s == "y" || s == "yes", nil
}

// parseRef splits NAME[@VERSION].
func parseRef(ref string) (name, version string, err error) {
	name, version, _ = strings.Cut(ref, "@")
	if err := store.CheckRef(name, version); err != nil {
		return "", "", usagef("%v", err)
	}
	return name, version, nil
}

func (a *app) trustCommand() *cobra.Command {
	var (
		opts                                          bundle.Options
		sigFile, digest                               string
		yes, allowUnsigned, allowSignerChange, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "trust SOURCE",
		Short: "Verify, review and stage a bundle so it can be enabled",
		Long: `Trust makes a bundle trusted: it validates it (exit 3 on any problem),
computes its digest, verifies its Sigstore signature offline against your
signer policy (exit 4 on a missing, malformed or non-matching signature or a
signer not in the policy), prints the review with the signer named, asks
for confirmation (on a terminal; otherwise --yes is required, else exit 2),
stages an immutable copy and writes the trust record.

The signature is read from SOURCE.sigstore.json unless --signature says
otherwise. --digest pins the expected digest (a mismatch is exit 4).
--allow-unsigned trusts an unsigned bundle, only together with --digest.
Versions are immutable: the same name and version with another digest is
refused. A new version from another signer than the last one is refused
unless --allow-signer-change.`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			source := args[0]
			if asJSON && !yes {
				return usagef("--json cannot ask for confirmation; add --yes")
			}
			if allowUnsigned && digest == "" {
				return usagef("--allow-unsigned needs --digest sha256:HEX: an unsigned bundle is trusted only by its exact digest (berth digest prints it)")
			}
			topts := &store.TrustOptions{Bundle: &opts, AllowSignerChange: allowSignerChange, UnsignedUnsafe: allowUnsigned}
			if digest != "" {
				d, err := store.ParseDigest(digest)
				if err != nil {
					return usagef("--digest: %v", err)
				}
				topts.Digest = d
			}
			if !allowUnsigned {
				topts.SignatureFile = sigFile
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			if err := checkLimits(&opts); err != nil {
				return err
			}
			topts.Confirm = func(c *store.Candidate) error {
				if !asJSON {
					if err := c.Review.WriteText(a.stdout); err != nil {
						return err
					}
					fmt.Fprintln(a.stdout)
					if c.Signer != nil {
						fmt.Fprintf(a.stdout, "Signed by %s, a signer in your policy.\n", c.Signer)
					} else {
						fmt.Fprintf(a.stdout, "UNSIGNED: trusted only because its digest is %s, as you pinned.\n", c.Bundle.Digest)
					}
				}
				return a.confirm(fmt.Sprintf("Trust %s %s?", c.Bundle.Manifest.Name, c.Bundle.Manifest.Version), yes, "--yes")
			}
			res, err := st.Trust(cmd.Context(), source, topts)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, trustJSON{Already: res.Already, Record: res.Record, Review: res.Review, Staged: res.Snapshot})
			}
			if res.Already {
				fmt.Fprintf(a.stdout, "%s is already trusted with this digest; nothing changed.\n", res.Record.ID())
				return nil
			}
			fmt.Fprintf(a.stdout, "Trusted %s (%s), staged at %s.\nEnable it with: berth enable %s\n", res.Record.ID(), res.Record.Digest, res.Snapshot, res.Record.Name)
			return nil
		},
	}
	limitFlags(cmd, &opts)
	f := cmd.Flags()
	f.StringVar(&sigFile, "signature", "", "the Sigstore bundle to verify (default SOURCE.sigstore.json)")
	f.BoolVarP(&yes, "yes", "y", false, "trust without asking (required when not on a terminal)")
	f.StringVar(&digest, "digest", "", "the digest the bundle must have (sha256:HEX)")
	f.BoolVar(&allowUnsigned, "allow-unsigned", false, "trust a bundle without a signature, by --digest only; recorded as unsigned")
	f.BoolVar(&allowSignerChange, "allow-signer-change", false, "accept a signer other than the one of the plugin's latest trusted version")
	f.BoolVar(&asJSON, "json", false, "print the record and review as JSON (needs --yes)")
	return cmd
}

// trustJSON is what trust --json prints.
type trustJSON struct {
	Already bool               `json:"already"`
	Record  *store.Record      `json:"record"`
	Review  *review.Disclosure `json:"review"`
	Staged  string             `json:"staged"`
}

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
}

func (a *app) listCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List trusted plugins and where they are enabled",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
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
				for _, ws := range state.EnabledIn(r.Name) {
					if state.Workspaces[ws].Plugins[r.Name].Version == r.Version {
						e.Enabled = append(e.Enabled, ws)
					}
				}
				out = append(out, e)
			}
			if asJSON {
				return writeJSON(a.stdout, out)
			}
			if len(out) == 0 {
				fmt.Fprintln(a.stdout, "Nothing is trusted yet. Trust a bundle with: berth trust SOURCE")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tDIGEST\tSIGNER\tENABLED IN")
			for _, e := range out {
				signer := "UNSIGNED"
				if e.Signer != nil {
					signer = e.Signer.String()
				}
				enabled := "-"
				if len(e.Enabled) > 0 {
					enabled = strings.Join(e.Enabled, ", ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, e.Version, e.Digest[:19]+"…", signer, enabled)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON, with full digests and staged paths")
	return cmd
}

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

func (a *app) verifyCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [NAME[@VERSION]]",
		Short: "Re-verify trusted plugins offline: staged files and signatures",
		Long: `Verify re-checks every trusted plugin (or one) offline: it re-hashes the
staged snapshot against the recorded digest (exit 5 on any difference, naming
the files added, removed or changed, modes included) and re-verifies the
stored signature against the current signer policy (exit 4).`,
		Args: rangeArgs(0, 1, "at most one NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.store()
			if err != nil {
				return err
			}
			var recs []*store.Record
			if len(args) == 1 {
				name, version, err := parseRef(args[0])
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
				rep := st.Verify(cmd.Context(), r, v)
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
			if asJSON {
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
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one result per record as JSON")
	return cmd
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

func (a *app) revokeCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "revoke NAME[@VERSION]",
		Short: "Remove trust in a plugin (every version, or one)",
		Long: `Revoke removes the trust records of a plugin, or of one version, and
disables it everywhere it was enabled with that version. Running berth
processes notice at their next boundary, remove its tools and stop its
servers. The staged snapshot stays until 'berth gc'.`,
		Args: exactArgs(1, "one NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, version, err := parseRef(args[0])
			if err != nil {
				return err
			}
			st, err := a.store()
			if err != nil {
				return err
			}
			gone, err := st.Revoke(cmd.Context(), name, version)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"revoked": gone})
			}
			for _, r := range gone {
				fmt.Fprintf(a.stdout, "Revoked %s (%s).\n", r.ID(), r.Digest)
			}
			fmt.Fprintln(a.stdout, "Its snapshot stays until `berth gc`.")
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the revoked records as JSON")
	return cmd
}

func (a *app) gcCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove snapshots no trust record points to, and leftovers",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.store()
			if err != nil {
				return err
			}
			res, err := st.GC(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			fmt.Fprintf(a.stdout, "Removed %d snapshot(s) and %d leftover(s).\n", len(res.Snapshots), len(res.Leftovers))
			for _, s := range res.Snapshots {
				fmt.Fprintf(a.stdout, "  snapshot %s\n", s)
			}
			for _, l := range res.Leftovers {
				fmt.Fprintf(a.stdout, "  leftover %s\n", l)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was removed as JSON")
	return cmd
}

func (a *app) keygenCommand() *cobra.Command {
	var prefix string
	cmd := &cobra.Command{
		Use:   "keygen --out PREFIX",
		Short: "Make an ECDSA P-256 key pair for signing bundles",
		Long: `Keygen writes PREFIX.key (the private key, PKCS#8 PEM, mode 0600) and
PREFIX.pub (the public key, PEM). It never overwrites a file. Keep the
private key secret; give PREFIX.pub to the people who trust your bundles
(berth signers add-key NAME PREFIX.pub).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if prefix == "" {
				return usagef("--out PREFIX is required")
			}
			key, pub, err := trust.WriteKeyPair(prefix)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Wrote %s (private, keep it secret) and %s (public).\n", key, pub)
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "out", "", "write PREFIX.key and PREFIX.pub")
	return cmd
}

func (a *app) signCommand() *cobra.Command {
	var opts bundle.Options
	var keyFile, out string
	cmd := &cobra.Command{
		Use:   "sign SOURCE --key PREFIX.key",
		Short: "Sign a bundle's canonical listing with a key",
		Long: `Sign validates the bundle and writes a Sigstore bundle (v0.3 JSON) over its
canonical listing, key-based with no transparency log, to
SOURCE.sigstore.json or --out FILE. cosign sign-blob --bundle FILE
--new-bundle-format over 'berth digest --listing' output works too.`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyFile == "" {
				return usagef("--key FILE is required (make one with berth keygen --out PREFIX)")
			}
			priv, err := os.ReadFile(keyFile)
			if err != nil {
				return err
			}
			b, err := openBundle(cmd.Context(), args[0], &opts)
			if err != nil {
				return err
			}
			defer b.Close()
			sig, err := trust.Sign(cmd.Context(), b.Listing().Bytes(), priv)
			if err != nil {
				return err
			}
			if out == "" {
				out = store.DefaultSignatureFile(args[0])
			}
			if err := atomicfile.WriteFile(out, sig, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Signed %s %s (%s); signature written to %s.\n", b.Manifest.Name, b.Manifest.Version, b.Digest, out)
			return nil
		},
	}
	limitFlags(cmd, &opts)
	cmd.Flags().StringVar(&keyFile, "key", "", "the private key (PKCS#8 PEM, from berth keygen)")
	cmd.Flags().StringVar(&out, "out", "", "where to write the signature (default SOURCE.sigstore.json)")
	return cmd
}

func (a *app) signersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "signers",
		Short: "Manage the signer policy: whose signatures you trust",
		Args:  exactArgs(0, "a subcommand: add-key, add-identity, list or remove"),
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var notBefore, notAfter string
	addKey := &cobra.Command{
		Use:   "add-key NAME PUBKEY.pem",
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
			return a.addSigner(cmd.Context(), s)
		},
	}
	addKey.Flags().StringVar(&notBefore, "not-before", "", "accept signatures only from this time on (RFC 3339)")
	addKey.Flags().StringVar(&notAfter, "not-after", "", "accept signatures only until this time (RFC 3339)")

	var issuer, san, sanRegex, rootFile string
	addIdentity := &cobra.Command{
		Use:   "add-identity NAME --issuer URL (--san VALUE | --san-regex RE) [--trusted-root FILE]",
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
			return a.addSigner(cmd.Context(), s)
		},
	}
	addIdentity.Flags().StringVar(&issuer, "issuer", "", "the exact OIDC issuer URL")
	addIdentity.Flags().StringVar(&san, "san", "", "the exact subject alternative name (e-mail or URI)")
	addIdentity.Flags().StringVar(&sanRegex, "san-regex", "", "a regular expression the whole SAN must match")
	addIdentity.Flags().StringVar(&rootFile, "trusted-root", "", "a trusted_root.json (default: Sigstore public good, embedded)")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
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
	list.Flags().BoolVar(&asJSON, "json", false, "print the signers as JSON")

	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Stop trusting a signer",
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.store()
			if err != nil {
				return err
			}
			if _, err := st.RemoveSigner(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Removed signer %q. Plugins it signed now fail `berth verify` until you trust their signer again.\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(addKey, addIdentity, list, remove)
	return cmd
}

// addSigner adds a signer to the policy and says so.
func (a *app) addSigner(ctx context.Context, s trust.Signer) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	added, err := st.AddSigner(ctx, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Added signer %s.\n", added)
	return nil
}
