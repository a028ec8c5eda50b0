package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/trust"
)

// Revocation is a catalog's revocation of one version of a plugin, as the
// store keeps it once a catalog refresh found it:
// $BERTH_HOME/revoked/<name>/<version>.json. It applies to that exact
// bundle (the digest); while it is there and not lifted, the version is
// disabled in every workspace, cannot be trusted or enabled again, and
// `berth verify` fails for it. A catalog's revocation is recorded only
// for a version installed from that catalog (marketplace.Cache.ApplyStatus
// decides); a lifted one stays on file, saying who lifted it and when.
type Revocation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Catalog is the catalog that revoked it, and Reason its words.
	Catalog   string    `json:"catalog"`
	Reason    string    `json:"reason"`
	RevokedAt time.Time `json:"revokedAt"`
	// Lifted is set once the revocation no longer applies: the operator
	// lifted it (berth revoke --lift), or the catalog that revoked it
	// listed the same version and digest as active again.
	Lifted *RevocationLift `json:"lifted,omitempty"`
	// Disabled are the workspaces (state keys) MarkRevoked disabled the
	// version in: the only ones where berth upgrade enables the version
	// that replaces it without being asked.
	Disabled []string `json:"disabled,omitempty"`
}

// RevocationLift says who lifted a revocation, and when.
type RevocationLift struct {
	At time.Time `json:"at"`
	// By is LiftedByOperator or LiftedByCatalog.
	By string `json:"by"`
}

// Who lifted a revocation (RevocationLift.By).
const (
	// LiftedByOperator: berth revoke --lift, confirmed. A catalog that
	// still lists the version as revoked does not revoke it again.
	LiftedByOperator = "operator"
	// LiftedByCatalog: the catalog that revoked the version lists the
	// same version and digest as active again. If it revokes it again,
	// the revocation applies again.
	LiftedByCatalog = "catalog"
)

// Revocations is the directory of the revocations catalogs made.
func (p Paths) Revocations() string { return filepath.Join(p.Root, "revoked") }

// Revocation is the revocation of name@version.
func (p Paths) Revocation(name, version string) string {
	return filepath.Join(p.Revocations(), name, version+".json")
}

// RevokedError refuses a version that a catalog revoked. It wraps
// trust.ErrUntrusted.
type RevokedError struct {
	Revocation *Revocation
}

func (e *RevokedError) Error() string {
	r := e.Revocation
	return fmt.Sprintf("%s@%s (%s) was revoked by catalog %s on %s: %s; berth disabled it in every workspace and does not trust or enable it again; go back to a version that is not revoked: `berth enable %s` takes the highest trusted one, `berth upgrade %s` installs the newest the constraint allows (a step down it shows and asks about); or lift the revocation if you trust it all the same (`berth revoke --lift %s@%s`)",
		r.Name, r.Version, r.Digest, r.Catalog, r.RevokedAt.Format("2006-01-02"), quoteReason(r.Reason), r.Name, r.Name, r.Name, r.Version)
}

// Unwrap returns trust.ErrUntrusted.
func (e *RevokedError) Unwrap() error { return trust.ErrUntrusted }

func quoteReason(s string) string {
	if s == "" {
		return "no reason given"
	}
	return fmt.Sprintf("%q", s)
}

// checkVersionRef checks a plugin name and a version, which is required.
func checkVersionRef(name, version string) error {
	if version == "" {
		return fmt.Errorf("a revocation of %s needs its version", name)
	}
	return CheckRef(name, version)
}

// Revoked returns the revocation of name@version with digest that
// applies (one not lifted), or nil.
func (s *Store) Revoked(name, version, digest string) (*Revocation, error) {
	r, err := s.RevocationOf(name, version, digest)
	if err != nil || r == nil || r.Lifted != nil {
		return nil, err
	}
	return r, nil
}

// RevocationOf returns the revocation on file of name@version with
// digest, lifted or not ("" digest: whatever digest it names), or nil.
func (s *Store) RevocationOf(name, version, digest string) (*Revocation, error) {
	if err := checkVersionRef(name, version); err != nil {
		return nil, err
	}
	r := &Revocation{}
	ok, err := readJSON(s.paths.Revocation(name, version), r)
	if err != nil {
		return nil, fmt.Errorf("%w (it records a catalog's revocation of %s@%s, so berth refuses that version until the file is readable)", err, name, version)
	}
	if !ok || digest != "" && r.Digest != digest {
		return nil, nil
	}
	return r, nil
}

// CheckNotRevoked returns a *RevokedError when a catalog revoked
// name@version with digest.
func (s *Store) CheckNotRevoked(name, version, digest string) error {
	r, err := s.Revoked(name, version, digest)
	if err != nil {
		return err
	}
	if r != nil {
		return &RevokedError{Revocation: r}
	}
	return nil
}

// MarkRevokedResult says what MarkRevoked did.
type MarkRevokedResult struct {
	// Disabled are the workspaces the version was enabled in, and is not
	// any more.
	Disabled []string
	// Already is true when the revocation was recorded before.
	Already bool
	// Lifted is set when the operator lifted this revocation before: it
	// stays lifted and nothing was changed.
	Lifted *RevocationLift
}

// MarkRevoked records a catalog's revocation of r.Name@r.Version (the
// bundle of r.Digest) and disables that version in every workspace, under
// the lock, with the generation bump that disable makes, so running pools
// stop it at their next boundary. The enablements go first: a crash
// between the two leaves the plugin stopped, and the next refresh records
// the revocation again. Running it again changes nothing more. A
// revocation the operator lifted stays lifted (the result's Lifted says
// so, and nothing changes); one the catalog lifted applies again.
func (s *Store) MarkRevoked(ctx context.Context, r Revocation) (*MarkRevokedResult, error) {
	if err := checkVersionRef(r.Name, r.Version); err != nil {
		return nil, err
	}
	if _, err := ParseDigest(r.Digest); err != nil {
		return nil, fmt.Errorf("revocation of %s@%s: %w", r.Name, r.Version, err)
	}
	if r.RevokedAt.IsZero() {
		r.RevokedAt = s.now().UTC().Truncate(time.Second)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &MarkRevokedResult{}
	r.Lifted = nil
	if have, err := s.RevocationOf(r.Name, r.Version, r.Digest); err != nil {
		return nil, err
	} else if have != nil && have.Lifted != nil && have.Lifted.By == LiftedByOperator {
		res.Lifted = have.Lifted
		return res, nil
	} else if have != nil && have.Lifted == nil {
		res.Already = true
	}
	_, err = s.updateLocked(func(st *State) error {
		for path, w := range st.Workspaces {
			if w == nil {
				continue
			}
			if e := w.Plugins[r.Name]; e != nil && e.Version == r.Version && e.Digest == r.Digest {
				delete(w.Plugins, r.Name)
				res.Disabled = append(res.Disabled, path)
				if w.Empty() {
					delete(st.Workspaces, path)
				}
			}
		}
		if len(res.Disabled) == 0 {
			return ErrNoChange
		}
		sortStrings(res.Disabled)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.hook("revoked-disabled")
	if res.Already {
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(s.paths.Revocation(r.Name, r.Version)), 0o700); err != nil {
		return nil, err
	}
	r.Disabled = res.Disabled
	if err := atomicfile.WriteJSON(s.paths.Revocation(r.Name, r.Version), &r, 0o600); err != nil {
		return nil, err
	}
	s.hook("revocation-written")
	return res, nil
}

// Revocations lists the revocations recorded, sorted by name and version.
func (s *Store) Revocations() ([]*Revocation, error) {
	matches, err := filepath.Glob(filepath.Join(s.paths.Revocations(), "*", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Revocation
	for _, m := range matches {
		r := &Revocation{}
		found, err := readJSON(m, r)
		if err != nil {
			return nil, err
		}
		if !found {
			continue // removed by another berth since the Glob
		}
		if CheckRef(r.Name, r.Version) != nil || s.paths.Revocation(r.Name, r.Version) != m {
			return nil, fmt.Errorf("the revocation %s does not match its path; berth wrote it otherwise: restore it, or remove it if you are sure", m)
		}
		out = append(out, r)
	}
	return out, nil
}

// Lift is what LiftRevocation lifts: the revocation of Name@Version, when
// it names Digest and Catalog (each "" for any), lifted By the operator
// or the catalog (LiftedByOperator, LiftedByCatalog).
type Lift struct {
	Name, Version, Digest, Catalog, By string
}

// ErrNotRevoked is LiftRevocation's error when no revocation of the
// version applies.
var ErrNotRevoked = errors.New("no catalog's revocation of it applies")

// LiftRevocation lifts the revocation of l.Name@l.Version: the file
// stays, saying who lifted it and when, and the version may be trusted
// and enabled again (nothing is enabled). It returns the revocation as
// lifted; an error wrapping ErrNotRevoked when none applies (or it names
// another digest or catalog than l asks for).
func (s *Store) LiftRevocation(ctx context.Context, l Lift) (*Revocation, error) {
	if err := checkVersionRef(l.Name, l.Version); err != nil {
		return nil, err
	}
	if l.By != LiftedByOperator && l.By != LiftedByCatalog {
		return nil, fmt.Errorf("internal error: a revocation is lifted by %q or %q, not %q", LiftedByOperator, LiftedByCatalog, l.By)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := s.RevocationOf(l.Name, l.Version, l.Digest)
	if err != nil {
		return nil, err
	}
	if r == nil || r.Lifted != nil || l.Catalog != "" && r.Catalog != l.Catalog {
		return nil, fmt.Errorf("%s@%s: %w (berth verify %s@%s says whether it is revoked)", l.Name, l.Version, ErrNotRevoked, l.Name, l.Version)
	}
	r.Lifted = &RevocationLift{At: s.now().UTC().Truncate(time.Second), By: l.By}
	if err := atomicfile.WriteJSON(s.paths.Revocation(r.Name, r.Version), r, 0o600); err != nil {
		return nil, err
	}
	return r, nil
}
