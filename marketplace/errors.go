package marketplace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/marketplace/oci"
	"github.com/berth-mcp/berth/trust"
)

// VerifyKind names why a catalog's metadata was refused.
type VerifyKind string

// The refusals of a catalog update. Each is a VerifyError, exit 4.
const (
	// KindRollback: a version went down (a replayed, older catalog).
	KindRollback VerifyKind = "rollback"
	// KindExpired: metadata past its expiry (a frozen catalog).
	KindExpired VerifyKind = "expired"
	// KindMixAndMatch: pieces of different versions served together (a
	// snapshot that disagrees with the timestamp or with the targets).
	KindMixAndMatch VerifyKind = "mix-and-match"
	// KindBadSignature: metadata not signed by the keys the root names.
	KindBadSignature VerifyKind = "bad-signature"
	// KindTargetMismatch: the catalog document's length or hash differs
	// from what the signed targets metadata says.
	KindTargetMismatch VerifyKind = "target-mismatch"
	// KindMalformed: a file that is not valid TUF metadata, or a catalog
	// document berth cannot read.
	KindMalformed VerifyKind = "malformed"
	// KindVersionChanged: a published plugin version changed its digest.
	KindVersionChanged VerifyKind = "version-changed"
	// KindRootPin: the root does not match what the operator pinned.
	KindRootPin VerifyKind = "root-pin"
	// KindDownloadMismatch: a downloaded archive differs from the catalog.
	KindDownloadMismatch VerifyKind = "download-mismatch"
)

// VerifyError is a catalog that failed verification: berth refuses it and
// keeps the last verified copy. It wraps trust.ErrUntrusted (exit 4) and
// the go-tuf error, if any.
type VerifyError struct {
	Catalog string
	Kind    VerifyKind
	// File is the metadata or target file concerned, like
	// "timestamp.json" or "7.snapshot.json".
	File string
	// Detail says what exactly was wrong.
	Detail string
	Err    error
	// Mirror is the catalog's mirror when it served what was refused;
	// "" for the catalog's own source.
	Mirror string
	// First is true when the catalog was being added (nothing was kept).
	First bool
	// Fix, when set, replaces the advice that ends the message: a program
	// that wraps the library words it in its own terms (berth's CLI, with
	// its flags).
	Fix string
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: catalog %s refused (%s)", trust.ErrUntrusted, e.Catalog, e.Kind)
	if e.File != "" {
		fmt.Fprintf(&b, " at %s", e.File)
	}
	if e.Mirror != "" {
		fmt.Fprintf(&b, " served by its mirror %s", e.Mirror)
	}
	fmt.Fprintf(&b, ": %s", e.Detail)
	if e.Fix != "" {
		b.WriteString("\n" + e.Fix)
	} else {
		b.WriteString("\n" + e.advice())
	}
	if e.Mirror != "" {
		b.WriteString("\nA mirror can stop serving a catalog, never change what it says: berth does not read the canonical source instead of a mirror that serves what fails verification. Bring the mirror up to date (berth mirror), or drop it and read the catalog's source alone (berth marketplace set-mirror " + e.Catalog + " --none).")
	}
	return b.String()
}

func (e *VerifyError) advice() string {
	kept := "berth kept its last verified copy of the catalog and changed nothing."
	if e.First {
		kept = "Nothing was added."
	}
	switch e.Kind {
	case KindRollback:
		return kept + " The source serves metadata older than what berth verified before: a mirror or an attacker may be replaying an old catalog to hide updates or revocations. Check the source with the catalog's curator; if the curator rebuilt the catalog on purpose, remove it (berth marketplace remove " + e.Catalog + ") and add it again with its new root."
	case KindExpired:
		if e.First {
			return kept + " The curator has stopped refreshing the catalog, or someone is serving a frozen copy to hide updates. Ask the curator to run berth catalog refresh, then add the catalog again."
		}
		return kept + " The curator has stopped refreshing the catalog, or someone is serving a frozen copy to hide updates. Search and show still answer from the cache, marked stale. Ask the curator to run berth catalog refresh, then run berth marketplace update " + e.Catalog + "."
	case KindMixAndMatch:
		return kept + " Files of different catalog versions are being served together, by a mirror caught mid-update or by an attacker. Try again later; if it persists, tell the curator that the catalog must be republished whole."
	case KindBadSignature:
		return kept + " The file is not signed by the keys the catalog's root names: it was altered, or does not come from this catalog's curator. Tell the curator; do not trust this source until it verifies."
	case KindTargetMismatch:
		return kept + " The catalog document was altered after it was signed. Tell the curator; do not trust this source until it verifies."
	case KindMalformed:
		return kept + " The source does not serve valid berth catalog metadata. Check that SOURCE is the directory or URL that holds root.json and timestamp.json."
	case KindVersionChanged:
		return kept + " Published versions are immutable: a catalog that changes what a version is may be serving a different, unreviewed bundle under a known name. Tell the curator; they must publish changes as new versions."
	case KindRootPin:
		return "Nothing was added. Get the root's sha256 (InitRepository reports it) or the root.json file from the curator over a channel you trust, and add the catalog with it pinned."
	case KindDownloadMismatch:
		return "The file was not used. The server, a mirror or the network altered it; try another URL of the version, or tell the curator."
	}
	return kept
}

// Rule is the refusal's ID (docs/marketplace.md): the Kind, like expired
// or bad-signature.
func (e *VerifyError) Rule() string { return string(e.Kind) }

func (e *VerifyError) Unwrap() []error {
	if e.Err == nil {
		return []error{trust.ErrUntrusted}
	}
	return []error{trust.ErrUntrusted, e.Err}
}

// classify turns an error of a TUF update into a VerifyError or a network
// error. last is the file the update was fetching or checking when it
// failed.
func classify(catName, last string, err error) error {
	var given *VerifyError
	if errors.As(err, &given) {
		if given.Catalog == "" {
			given.Catalog = catName
		}
		return given
	}
	var oe *oci.Error
	if errors.As(err, &oe) {
		err = ociError(last, err)
		if errors.As(err, &given) {
			given.Catalog = catName
			return given
		}
	}
	var ne *NetworkError
	if errors.As(err, &ne) {
		return fmt.Errorf("catalog %s: %w; nothing changed, the cached copy (if any) stays: check your network connection or the source, and try again", catName, err)
	}
	var sf *SpecialFileError
	if errors.As(err, &sf) {
		return fmt.Errorf("%w: catalog %s refused at %s: %w; nothing changed, the cached copy (if any) stays", trust.ErrUntrusted, catName, sf.Location, sf.Err)
	}
	var nf *errNotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("catalog %s: the source has no %s, which the catalog's metadata needs (%w); check that the source is the directory or URL that holds root.json and timestamp.json, and that the curator's copy is complete", catName, nf.loc, ErrNetwork)
	}
	var httpErr *metadata.ErrDownloadHTTP
	if errors.As(err, &httpErr) && httpErr.StatusCode == 404 {
		return fmt.Errorf("catalog %s: the source has no %s, which the catalog's metadata needs (%w); check that the source is the directory or URL that holds root.json and timestamp.json, and that the curator's copy is complete", catName, httpErr.URL, ErrNetwork)
	}
	if errors.As(err, &httpErr) {
		return fmt.Errorf("catalog %s: the source answered HTTP %d for %s (%w); try again later, or check the source", catName, httpErr.StatusCode, last, ErrNetwork)
	}
	ve := &VerifyError{Catalog: catName, File: last, Err: err, Detail: strings.TrimSpace(stripTUFPrefix(err.Error()))}
	msg := err.Error()
	switch {
	case errors.Is(err, &metadata.ErrEqualVersionNumber{}):
		ve.Kind = KindRollback
	case errors.Is(err, &metadata.ErrBadVersionNumber{}):
		switch {
		case strings.Contains(msg, "new timestamp version"):
			ve.Kind, ve.File = KindRollback, "timestamp.json"
			ve.Detail = "the timestamp's version went down (" + ve.Detail + ")"
		case strings.Contains(msg, "new snapshot version"):
			ve.Kind = KindRollback
			ve.Detail = "the timestamp names an older snapshot than the one berth has (" + ve.Detail + ")"
		case strings.Contains(msg, "expected targets.json version") && strings.HasSuffix(last, ".snapshot.json"):
			ve.Kind = KindRollback
			ve.Detail = "the snapshot lists an older targets version than the one berth has (" + ve.Detail + ")"
		case strings.Contains(msg, ".json version") && strings.HasSuffix(last, ".snapshot.json"):
			ve.Kind = KindRollback
			ve.Detail = "the snapshot lists an older version of a role than the one berth has (" + ve.Detail + ")"
		case strings.HasSuffix(last, ".root.json"):
			ve.Kind = KindRollback
			ve.Detail = "the root chain is out of order (" + ve.Detail + ")"
		case strings.HasSuffix(last, ".targets.json"):
			ve.Kind = KindMixAndMatch
			ve.Detail = "the targets file is not the version the snapshot names (" + ve.Detail + ")"
		default:
			ve.Kind = KindMixAndMatch
			ve.Detail = "the snapshot is not the version the timestamp names (" + ve.Detail + ")"
		}
	case errors.Is(err, &metadata.ErrExpiredMetadata{}):
		ve.Kind = KindExpired
		ve.Detail = "metadata past its expiry (" + ve.Detail + ")"
		for _, role := range []string{"root", "timestamp", "snapshot", "targets"} {
			if strings.Contains(msg, " "+role+".json is expired") || strings.Contains(msg, " "+role+" is expired") || strings.HasPrefix(stripTUFPrefix(msg), role+".json is expired") {
				ve.File = role + ".json"
			}
		}
	case errors.Is(err, &metadata.ErrUnsignedMetadata{}):
		ve.Kind = KindBadSignature
	case errors.Is(err, &metadata.ErrLengthOrHashMismatch{}), errors.Is(err, &metadata.ErrDownloadLengthMismatch{}):
		switch {
		case strings.HasPrefix(last, "targets/"):
			ve.Kind = KindTargetMismatch
			ve.Detail = "catalog.json's length or hash differs from the signed targets metadata (" + ve.Detail + ")"
		case strings.HasSuffix(last, ".targets.json"):
			ve.Kind = KindMixAndMatch
			ve.Detail = "the targets file does not match the length and hash the snapshot gives (" + ve.Detail + ")"
		case strings.HasSuffix(last, ".snapshot.json"):
			ve.Kind = KindMixAndMatch
			ve.Detail = "the snapshot does not match the length and hash the timestamp gives (" + ve.Detail + ")"
		default:
			ve.Kind = KindMalformed
		}
	case strings.Contains(msg, "missing info for"):
		ve.Kind = KindMixAndMatch
	default:
		ve.Kind = KindMalformed
	}
	return ve
}

// stripTUFPrefix drops go-tuf's error type prefixes for a message.
func stripTUFPrefix(s string) string {
	for _, p := range []string{"bad version number error: ", "equal version number error: ", "expired metadata error: ", "unsigned metadata error: ", "length/hash verification error: ", "repository error: ", "download length mismatch error: ", "value error: ", "type error: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}
