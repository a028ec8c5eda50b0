package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

func newKeygenCmd(a *app) *cobra.Command {
	opts := &keygenOptions{}
	cmd := &cobra.Command{
		Use:     "keygen --out PREFIX",
		Example: `  berth keygen --out ~/keys/acme`,
		Short:   "Make an ECDSA P-256 key pair for signing bundles",
		Long: `Keygen writes PREFIX.key (the private key, PKCS#8 PEM, mode 0600) and
PREFIX.pub (the public key, PEM). It never overwrites a file. Keep the
private key secret; give PREFIX.pub to the people who trust your bundles
(berth signers add-key NAME PREFIX.pub).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeygen(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Prefix, "out", "", "write PREFIX.key and PREFIX.pub")
	a.jsonFlag(cmd, &opts.JSON, keygenJSON{})
	return cmd
}

// keygenOptions are the inputs of berth keygen.
type keygenOptions struct {
	JSON   bool
	Prefix string
}

func runKeygen(_ context.Context, a *app, opts *keygenOptions) error {
	if opts.Prefix == "" {
		return usagef("--out PREFIX is required")
	}
	key, pub, err := trust.WriteKeyPair(opts.Prefix)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, keygenJSON{PrivateKey: key, PublicKey: pub})
	}
	fmt.Fprintf(a.stdout, "Wrote %s (private, keep it secret) and %s (public).\n", key, pub)
	return nil
}

func newSignCmd(a *app) *cobra.Command {
	opts := &signOptions{}
	cmd := &cobra.Command{
		Use: "sign SOURCE --key PREFIX.key",
		Example: `  berth sign ./acme-notes --key ~/keys/acme.key
  berth sign acme-notes-1.4.2.tar.gz --key ~/keys/acme.key --out acme-notes.sigstore.json`,
		Short: "Sign a bundle's canonical listing with a key",
		Long: `Sign validates the bundle and writes a Sigstore bundle (v0.3 JSON) over its
canonical listing, key-based with no transparency log, to
SOURCE.sigstore.json or --out FILE. cosign sign-blob --bundle FILE
--new-bundle-format over 'berth digest --listing' output works too.`,
		Args: exactArgs(1, "one SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Source = args[0]
			return runSign(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, signJSON{})
	limitFlags(cmd, &opts.Bundle)
	cmd.Flags().StringVar(&opts.KeyFile, "key", "", "the private key (PKCS#8 PEM, from berth keygen)")
	cmd.Flags().StringVar(&opts.Out, "out", "", "where to write the signature (default SOURCE.sigstore.json)")
	return cmd
}

// signOptions are the inputs of berth sign.
type signOptions struct {
	// Source is the positional argument.
	Source       string
	JSON         bool
	KeyFile, Out string
	Bundle       bundle.Options
}

func runSign(ctx context.Context, a *app, opts *signOptions) error {
	if opts.KeyFile == "" {
		return usagef("--key FILE is required (make one with berth keygen --out PREFIX)")
	}
	priv, err := os.ReadFile(opts.KeyFile)
	if err != nil {
		return err
	}
	hctx, stopProgress := a.hashing(ctx, !opts.JSON, "hashing")
	b, err := openBundle(hctx, opts.Source, &opts.Bundle)
	stopProgress()
	if err != nil {
		return err
	}
	defer b.Close()
	sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
	if err != nil {
		return err
	}
	if opts.Out == "" {
		opts.Out = store.DefaultSignatureFile(opts.Source)
	}
	if err := atomicfile.WriteFile(opts.Out, sig, 0o644); err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, signJSON{Name: b.Manifest.Name, Version: b.Manifest.Version, Digest: b.Digest, Signature: opts.Out})
	}
	fmt.Fprintf(a.stdout, "Signed %s %s (%s); signature written to %s.\n", b.Manifest.Name, b.Manifest.Version, b.Digest, opts.Out)
	return nil
}

// keygenJSON is what keygen --json prints.
type keygenJSON struct {
	// PrivateKey is the private key's file (mode 0600).
	PrivateKey string `json:"privateKey"`
	// PublicKey is the public key's file, for berth signers add-key.
	PublicKey string `json:"publicKey"`
}

// signJSON is what sign --json prints.
type signJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Signature is the Sigstore bundle file written.
	Signature string `json:"signature"`
}
