package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/store"
)

// Library errors name the option of the call that would change the
// outcome (a field of bundle.Limits, say), never one of berth's flags; the
// CLI renders them here in its own terms, as flags.

// limitFlag maps each cap of bundle.Limits to the flag that raises it.
var limitFlag = map[bundle.Limit]string{
	bundle.LimitMaxTotalSize: "--max-size",
	bundle.LimitMaxEntries:   "--max-entries",
	bundle.LimitMaxPathLen:   "--max-path",
}

// cliProblems returns the problems with every cap named by its flag.
func cliProblems(ps []*bundle.Problem) []*bundle.Problem {
	out := make([]*bundle.Problem, len(ps))
	for i, p := range ps {
		if f, ok := limitFlag[p.Limit]; ok {
			q := *p
			q.Message += " with " + f
			p = &q
		}
		out[i] = p
	}
	return out
}

// rendered is an error as the CLI words it; it unwraps to the library's
// error, so its category (and exit code) stays.
type rendered struct {
	msg string
	err error
}

func (e *rendered) Error() string { return e.msg }
func (e *rendered) Unwrap() error { return e.err }

// forCLI returns err as the CLI shows it: an error a library returned
// with a hint for its caller is worded with the flag that the hint names.
// Only an error of such a type itself is rewritten, not one wrapped in
// another (the wrapper's words stay the wrapper's); the result unwraps to
// err, so exit codes do not change.
func forCLI(err error) error {
	switch e := err.(type) {
	case *bundle.InvalidError:
		return &rendered{(&bundle.InvalidError{Source: e.Source, Problems: cliProblems(e.Problems), OnlyServer: e.OnlyServer}).Error(), err}
	case *store.DigestMismatchError:
		return &rendered{fmt.Sprintf("%s has digest %s, but --digest pins %s; make sure you have the bundle you meant to trust", e.Source, e.Got, e.Want), err}
	case *store.NoSignerError:
		return &rendered{fmt.Sprintf("no signer is configured, so berth cannot trust %s; add the publisher's key with `berth signers add-key NAME PUBKEY.pem` (or an identity with `berth signers add-identity`), or trust it unsigned by its exact digest with --allow-unsigned --digest %s", e.Source, e.Digest), err}
	case *store.SignatureMissingError:
		return &rendered{fmt.Sprintf("no signature for %s at %s (%v); get the signature from the publisher and pass it with --signature FILE", e.Source, e.Path, errors.Unwrap(e.Err)), err}
	case *marketplace.StaleError:
		return &rendered{fmt.Sprintf("the verified copy of catalog %s expired at %s, so it may hide a revocation; the curator must renew it (berth catalog refresh), then run berth marketplace update %s; or accept the stale copy with --allow-stale, which the trust record then says", e.Catalog, e.Since.UTC().Format(time.RFC3339), e.Catalog), err}
	case *repo.NotCatalogError:
		return &rendered{fmt.Sprintf("%s is not a berth catalog (it has no %s); make one with berth catalog init %s --keys KEYDIR", e.Dir, e.File, e.Dir), err}
	case *marketplace.VerifyError:
		if e.Kind == marketplace.KindRootPin && e.Fix == "" {
			f := *e
			f.Fix = "Nothing was added. Get the root's sha256 (berth catalog init prints it) or the root.json file from the curator over a channel you trust, and add the catalog with it: berth marketplace add NAME SOURCE --root-sha256 HEX (or --root FILE)."
			return &rendered{f.Error(), err}
		}
	case *marketplace.NoCatalogError:
		return &rendered{fmt.Sprintf("%v: there is no catalog %s; add it with berth marketplace add %s SOURCE --root-sha256 HEX (berth marketplace list shows the ones you have)", marketplace.ErrNoCatalog, e.Name, e.Name), err}
	case *repo.ReadmeError:
		if e.NotUTF8 {
			return &rendered{fmt.Sprintf("%s: README.md is not UTF-8 text; convert it, or leave it out (berth catalog add --no-readme)", e.Source), err}
		}
		return &rendered{fmt.Sprintf("%s: README.md is %d bytes, over the %d a catalog carries; shorten it, or leave it out (berth catalog add --no-readme)", e.Source, e.Size, catalog.MaxReadme), err}
	case *secrets.KeychainError:
		if e.TooBig {
			return &rendered{fmt.Sprintf("the keychain refuses a value of %d bytes for %s; keep it in the file with --store file: %v", e.Size, e.Name, e.Err), err}
		}
		return &rendered{fmt.Sprintf("storing %s in the keychain: %v; nothing was stored (--store file keeps it in a file only you can read)", e.Name, e.Err), err}
	case *store.SignerChangeError:
		return &rendered{fmt.Sprintf("%s %s was trusted from %s, but this bundle comes from %s; if the publisher really changed signers, run again with --allow-signer-change", e.Name, e.Version, e.Trusted, e.Offered), err}
	}
	return err
}
