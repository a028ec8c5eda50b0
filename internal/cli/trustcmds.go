package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/trust"
)

// crashEnv names the test-only variable that makes berth SIGKILL itself at
// a named step of a state change, for the crash-safety tests.
const crashEnv = "BERTH_TEST_CRASH_AT"

// store opens the state store under $BERTH_HOME.
func (a *app) store() (*trust.Store, error) {
	paths, err := trust.NewPaths(trust.DefaultRoot(a.getenv))
	if err != nil {
		return nil, err
	}
	opts := &trust.StoreOptions{}
	if step := a.getenv(crashEnv); step != "" {
		opts.CrashHookUnsafe = func(s string) {
			if s == step {
				crash()
			}
		}
	}
	return trust.OpenStore(paths, opts), nil
}

// verifier builds the signer policy of config.json.
func (a *app) verifier(s *trust.Store) (*trust.Verifier, []trust.Signer, error) {
	cfg, err := s.Config()
	if err != nil {
		return nil, nil, err
	}
	v, err := trust.NewVerifier(cfg.Signers, nil)
	return v, cfg.Signers, err
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
	if err := trust.CheckRef(name, version); err != nil {
		return "", "", usagef("%v", err)
	}
	return name, version, nil
}

// defaultSignature is <dir>.sigstore.json beside a directory and
// <archive>.sigstore.json beside an archive.
func defaultSignature(source string) string {
	return filepath.Clean(source) + ".sigstore.json"
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
			if digest != "" {
				if _, err := trust.ParseDigest(digest); err != nil {
					return usagef("--digest: %v", err)
				}
			}
			ctx := cmd.Context()
			st, err := a.store()
			if err != nil {
				return err
			}
			b, err := openBundle(ctx, source, &opts)
			if err != nil {
				return err
			}
			defer b.Close()
			if digest != "" && digest != b.Digest {
				return fmt.Errorf("%s has digest %s, but --digest pins %s: %w; make sure you have the bundle you meant to trust", source, b.Digest, digest, trust.ErrUntrusted)
			}
			req := trust.TrustRequest{Bundle: b, Source: absSource(source), AllowSignerChange: allowSignerChange}
			if allowUnsigned {
				req.UnsignedUnsafe = true
			} else {
				v, signers, err := a.verifier(st)
				if err != nil {
					return err
				}
				if len(signers) == 0 {
					return fmt.Errorf("no signer is configured, so berth cannot trust %s: %w; add the publisher's key with `berth signers add-key NAME PUBKEY.pem` (or an identity with `berth signers add-identity`), or trust it unsigned by its exact digest with --allow-unsigned --digest %s", source, trust.ErrUntrusted, b.Digest)
				}
				if sigFile == "" {
					sigFile = defaultSignature(source)
				}
				sig, err := readSignature(sigFile)
				if err != nil {
					return fmt.Errorf("no signature for %s at %s (%v): %w; get the signature from the publisher and pass it with --signature FILE", source, sigFile, errors.Unwrap(err), trust.ErrUntrusted)
				}
				res, err := v.Verify(ctx, b.Listing().Bytes(), sig)
				if err != nil {
					return fmt.Errorf("%s: %w", source, err)
				}
				req.Signature, req.Verified = sig, res
			}
			d := review.New(b)
			req.ReviewHash = d.Hash()
			if !asJSON {
				if err := d.WriteText(a.stdout); err != nil {
					return err
				}
				fmt.Fprintln(a.stdout)
				if req.Verified != nil {
					fmt.Fprintf(a.stdout, "Signed by %s, a signer in your policy.\n", trust.RefOf(req.Verified))
				} else {
					fmt.Fprintf(a.stdout, "UNSIGNED: trusted only because its digest is %s, as you pinned.\n", b.Digest)
				}
			}
			if err := a.confirm(fmt.Sprintf("Trust %s %s?", b.Manifest.Name, b.Manifest.Version), yes, "--yes"); err != nil {
				return err
			}
			res, err := st.Trust(ctx, req)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"record": res.Record, "already": res.Already, "staged": st.Paths().Snapshot(res.Record.Digest), "review": d})
			}
			if res.Already {
				fmt.Fprintf(a.stdout, "%s is already trusted with this digest; nothing changed.\n", res.Record.ID())
				return nil
			}
			fmt.Fprintf(a.stdout, "Trusted %s (%s), staged at %s.\nEnable it with: berth enable %s\n", res.Record.ID(), res.Record.Digest, st.Paths().Snapshot(res.Record.Digest), res.Record.Name)
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

// readSignature reads at most trust.MaxSignatureSize+1 bytes of a
// signature file, which may come with an untrusted bundle: Verify refuses
// anything larger.
func readSignature(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, trust.MaxSignatureSize+1))
}

func absSource(s string) string {
	if strings.Contains(s, "://") {
		return s
	}
	if abs, err := filepath.Abs(s); err == nil {
		return abs
	}
	return s
}

type listEntry struct {
	Name      string           `json:"name"`
	Version   string           `json:"version"`
	Digest    string           `json:"digest"`
	Signer    *trust.SignerRef `json:"signer"`
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
				e := listEntry{Name: r.Name, Version: r.Version, Digest: r.Digest, Signer: r.Signer, Unsigned: r.Unsigned, Staged: st.Paths().Snapshot(r.Digest), Enabled: []string{}, Source: r.Source, TrustedAt: r.TrustedAt}
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
	Signer   *trust.SignerRef `json:"signer,omitempty"`
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
			var recs []*trust.Record
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
			v, _, err := a.verifier(st)
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
				out = defaultSignature(args[0])
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
			return a.addSigner(cmd.Context(), s.Name, func(trust.Paths) (trust.Signer, error) { return s, nil })
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
			if rootFile == "" {
				return a.addSigner(cmd.Context(), s.Name, func(trust.Paths) (trust.Signer, error) { return s, nil })
			}
			data, err := os.ReadFile(rootFile)
			if err != nil {
				return err
			}
			return a.addSigner(cmd.Context(), s.Name, func(p trust.Paths) (trust.Signer, error) {
				kept := p.TrustedRoot(s.Name)
				if err := atomicfile.WriteFile(kept, data, 0o600); err != nil {
					return trust.Signer{}, err
				}
				withCopy, err := trust.NewIdentitySigner(s.Name, issuer, san, sanRegex, kept)
				if err != nil {
					os.Remove(kept)
				}
				return withCopy, err
			})
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
			cfg, err := st.Config()
			if err != nil {
				return err
			}
			if asJSON {
				if cfg.Signers == nil {
					cfg.Signers = []trust.Signer{}
				}
				return writeJSON(a.stdout, cfg.Signers)
			}
			if len(cfg.Signers) == 0 {
				fmt.Fprintln(a.stdout, "No signers yet: every trust is refused. Add one with: berth signers add-key NAME PUBKEY.pem")
			}
			for _, s := range cfg.Signers {
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
			_, err = st.UpdateConfig(cmd.Context(), func(c *trust.Config) error {
				for i, s := range c.Signers {
					if s.Name == args[0] {
						c.Signers = append(c.Signers[:i], c.Signers[i+1:]...)
						return nil
					}
				}
				return fmt.Errorf("there is no signer %q (`berth signers list` shows them)", args[0])
			})
			if err != nil {
				return err
			}
			os.Remove(st.Paths().TrustedRoot(args[0]))
			fmt.Fprintf(a.stdout, "Removed signer %q. Plugins it signed now fail `berth verify` until you trust their signer again.\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(addKey, addIdentity, list, remove)
	return cmd
}

// addSigner adds the signer that build makes, under the state lock and
// only when no signer is named name yet: build may write files of that
// signer (its trusted root copy) without touching an existing one's.
func (a *app) addSigner(ctx context.Context, name string, build func(trust.Paths) (trust.Signer, error)) error {
	st, err := a.store()
	if err != nil {
		return err
	}
	var s trust.Signer
	_, err = st.UpdateConfig(ctx, func(c *trust.Config) error {
		if _, ok := c.Signer(name); ok {
			return fmt.Errorf("a signer named %q exists already; remove it first with `berth signers remove %s`, or pick another name", name, name)
		}
		var err error
		if s, err = build(st.Paths()); err != nil {
			return err
		}
		c.Signers = append(c.Signers, s)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Added signer %s.\n", s)
	return nil
}
