package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

func newTrustCmd(a *app) *cobra.Command {
	opts := &trustOptions{}
	cmd := &cobra.Command{
		Use: "trust SOURCE",
		Example: `  berth trust ./acme-notes
  berth trust acme-notes-1.4.2.tar.gz --yes --json
  berth trust ./local-tool --allow-unsigned --digest sha256:<hex>
  berth trust oci://ghcr.io/acme/acme-notes@sha256:<digest>`,
		Short: "Verify, review and stage a bundle so it can be enabled",
		Long: `Trust makes a bundle trusted: it validates it (exit 3 on any problem),
computes its digest, verifies its Sigstore signature offline against your
signer policy (exit 4 on a missing, malformed or non-matching signature or a
signer not in the policy), prints the review with the signer named, asks
for confirmation (on a terminal; otherwise --yes is required, else exit 2),
stages an immutable copy and writes the trust record.

The signature is read from SOURCE.sigstore.json unless --signature says
otherwise. SOURCE may be a bundle in an OCI registry by digest,
oci://REGISTRY/REPOSITORY@sha256:<digest> (berth push prints it; a tag is
refused, since it can be moved): the archive is pulled and checked
against its digest, and the signature is its referrer. --digest pins the expected digest (a mismatch is exit 4).
--allow-unsigned trusts an unsigned bundle, only together with --digest.
Versions are immutable: the same name and version with another digest is
refused. A new version from another signer than the last one is refused
unless --allow-signer-change.

On a terminal, a bundle of 16 MiB or more draws progress while it is
verified (hashed) and while it is staged (copied into the store).`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Source = args[0]
			return runTrust(cmd.Context(), a, opts)
		},
	}
	limitFlags(cmd, &opts.Bundle)
	f := cmd.Flags()
	f.StringVar(&opts.SigFile, "signature", "", "the Sigstore bundle to verify (default SOURCE.sigstore.json)")
	f.BoolVarP(&opts.Yes, "yes", "y", false, "trust without asking (required when not on a terminal)")
	f.StringVar(&opts.Digest, "digest", "", "the digest the bundle must have (sha256:HEX)")
	f.BoolVar(&opts.AllowUnsigned, "allow-unsigned", false, "trust a bundle without a signature, by --digest only; recorded as unsigned")
	f.BoolVar(&opts.AllowSignerChange, "allow-signer-change", false, "accept a signer other than the one of the plugin's latest trusted version")
	a.jsonFlag(cmd, &opts.JSON, trustJSON{})
	return cmd
}

// trustOptions are the inputs of berth trust.
type trustOptions struct {
	// Source is the positional argument.
	Source                                      string
	Bundle                                      bundle.Options
	SigFile, Digest                             string
	Yes, AllowUnsigned, AllowSignerChange, JSON bool
}

func runTrust(ctx context.Context, a *app, opts *trustOptions) error {
	source := opts.Source
	if opts.JSON && !opts.Yes {
		return usagef("--json cannot ask for confirmation; add --yes")
	}
	if opts.AllowUnsigned && opts.Digest == "" {
		return usagef("--allow-unsigned needs --digest sha256:HEX: an unsigned bundle is trusted only by its exact digest (berth digest prints it)")
	}
	topts := &store.TrustOptions{Bundle: &opts.Bundle, AllowSignerChange: opts.AllowSignerChange, UnsignedUnsafe: opts.AllowUnsigned}
	if opts.Digest != "" {
		d, err := store.ParseDigest(opts.Digest)
		if err != nil {
			return usagef("--digest: %v", err)
		}
		topts.Digest = d
	}
	if !opts.AllowUnsigned {
		topts.SignatureFile = opts.SigFile
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	if err := checkLimits(&opts.Bundle); err != nil {
		return err
	}
	topts.Confirm = func(c *store.Candidate) error {
		if !opts.JSON {
			c.Review.LocateRuntimes()
			if err := c.Review.WriteText(a.stdout); err != nil {
				return err
			}
			if err := review.WriteFetched(a.stdout, c.Fetched); err != nil {
				return err
			}
			a.writeFetchSettings(a.stdout, c.Fetched)
			fmt.Fprintln(a.stdout)
			if c.Signer != nil {
				fmt.Fprintf(a.stdout, "Signed by %s, a signer in your policy.\n", c.Signer)
			} else {
				fmt.Fprintf(a.stdout, "UNSIGNED: trusted only because its digest is %s, as you pinned.\n", c.Bundle.Digest)
			}
		}
		return a.confirm(fmt.Sprintf("Trust %s %s?", c.Bundle.Manifest.Name, c.Bundle.Manifest.Version), opts.Yes, "--yes")
	}
	hctx, stopProgress := a.hashing(ctx, !opts.JSON, "verifying")
	staging, stopStaging := a.largeWork(!opts.JSON, "staging")
	topts.StageProgress = staging
	topts.Fetch = a.fetchOptions(!opts.JSON)
	ociLoc := ""
	if isOCI(source) {
		archive, cleanup, err := pullForTrust(hctx, source, opts, topts)
		if err != nil {
			stopStaging()
			stopProgress()
			return err
		}
		defer cleanup()
		ociLoc, source = source, archive
	}
	res, err := st.Trust(hctx, source, topts)
	if err != nil && ociLoc != "" {
		// Name what the operator gave, not the private temporary copy.
		err = &locatedError{err: err, from: source, to: ociLoc}
	}
	stopStaging()
	stopProgress()
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, trustJSON{Already: res.Already, Record: res.Record, Review: res.Review, Fetched: review.Fetched(res.Record.Fetched), Staged: res.Snapshot})
	}
	if res.Already {
		fmt.Fprintf(a.stdout, "%s is already trusted with this digest; nothing changed.\n", res.Record.ID())
		return nil
	}
	fmt.Fprintf(a.stdout, "Trusted %s (%s), staged at %s.\nEnable it with: berth enable %s\n", res.Record.ID(), res.Record.Digest, res.Snapshot, res.Record.Name)
	return nil
}

// trustJSON is what trust --json prints.
type trustJSON struct {
	Already bool               `json:"already"`
	Record  *store.Record      `json:"record"`
	Review  *review.Disclosure `json:"review"`
	// Fetched are the runtime-fetched servers' trees resolved and staged
	// at trust.
	Fetched []review.FetchedTree `json:"fetched"`
	Staged  string               `json:"staged"`
}
