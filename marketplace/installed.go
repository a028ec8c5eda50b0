package marketplace

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/store"
)

// InstalledStatus is what a catalog says about the versions the operator
// trusted: the ones it revoked (which ApplyStatus disabled) and the ones
// it deprecated or yanked (which only warn).
type InstalledStatus struct {
	Catalog  string           `json:"catalog"`
	Revoked  []RevokedInstall `json:"revoked"`
	Warnings []StatusWarning  `json:"warnings"`
	// Notices are the catalog's revocations of trusted versions that did
	// not apply: versions it did not install, and revocations the
	// operator lifted. berth changed nothing for them.
	Notices []RevocationNotice `json:"revocationNotices,omitempty"`
	// Lifted are the catalog's revocations it lifted by listing the same
	// version and digest as active again.
	Lifted []LiftedRevocation `json:"lifted,omitempty"`
}

// Why a catalog's revocation did not apply (RevocationNotice.Why).
const (
	// NoticeByHand: the version was trusted by hand, and no catalog
	// revokes such a version.
	NoticeByHand = "trusted-by-hand"
	// NoticeUnsigned: the version was trusted unsigned (installed from an
	// unsigned source, an MCP Registry or a Claude Code marketplace.json,
	// or trusted by hand with --allow-unsigned): no catalog installed it,
	// so no catalog revokes it.
	NoticeUnsigned = "unsigned-source"
	// NoticeOtherCatalog: another catalog installed the version.
	NoticeOtherCatalog = "other-catalog"
	// NoticeRootKeysChanged: the version was installed from a catalog of
	// this name whose root keys were others.
	NoticeRootKeysChanged = "root-keys-changed"
	// NoticeLiftedByOperator: the catalog installed it, and the operator
	// lifted its revocation (berth revoke --lift).
	NoticeLiftedByOperator = "lifted-by-operator"
)

// RevocationNotice is a trusted version that the catalog lists as revoked
// while the revocation does not apply to it: a catalog's revocation
// applies only to what it installed (the trust record names it, with the
// same root keys), and one the operator lifted stays lifted. berth leaves
// the version as it is and says so, with the catalog's reason and the
// command that acts on it.
type RevocationNotice struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Catalog is the catalog that lists it as revoked, and Reason its
	// words.
	Catalog string `json:"catalog"`
	Reason  string `json:"reason"`
	// Why is "trusted-by-hand", "unsigned-source", "other-catalog",
	// "root-keys-changed" or "lifted-by-operator" (NoticeByHand,
	// NoticeUnsigned, NoticeOtherCatalog, NoticeRootKeysChanged,
	// NoticeLiftedByOperator).
	Why string `json:"why"`
	// InstalledFrom is the catalog the trust record names ("" when
	// trusted by hand).
	InstalledFrom string `json:"installedFrom,omitempty"`
	// Command is what the operator may run to act on it.
	Command string `json:"command"`
}

func (n RevocationNotice) String() string {
	head := fmt.Sprintf("catalog %s revokes %s@%s (%s): %s; ", n.Catalog, n.Name, n.Version, n.Digest, quoted(n.Reason))
	switch n.Why {
	case NoticeByHand:
		head += "you trusted it by hand, and no catalog revokes what it did not install, so berth leaves it as it is"
	case NoticeUnsigned:
		head += "you trusted it unsigned, from an unsigned source (an MCP Registry or a Claude Code marketplace.json) or by hand with --allow-unsigned: nobody signed it and no catalog installed it, so no catalog's revocation applies to it, and berth leaves it as it is"
	case NoticeOtherCatalog:
		head += fmt.Sprintf("it was installed from catalog %s, and only that catalog can revoke it, so berth leaves it as it is", n.InstalledFrom)
	case NoticeRootKeysChanged:
		head += fmt.Sprintf("it was installed from a catalog %s with other root keys than this one's, so berth leaves it as it is", n.InstalledFrom)
	case NoticeLiftedByOperator:
		return head + "you lifted that revocation (berth revoke --lift), so berth leaves it as it is; to remove your trust in it: " + n.Command
	}
	return head + "; if you agree with the revocation, remove your trust in it: " + n.Command
}

// LiftedRevocation is a revocation the catalog lifted: it lists the
// version it revoked, with the same digest, as active again. The version
// stays disabled until the operator enables it.
type LiftedRevocation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

func quoted(s string) string {
	if s == "" {
		return "no reason given"
	}
	return fmt.Sprintf("%q", s)
}

// RevokedInstall is a trusted version the catalog revoked.
type RevokedInstall struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Reason  string `json:"reason"`
	// Disabled are the workspaces it was disabled in now.
	Disabled []string `json:"disabled"`
	// New is true when this refresh found the revocation; false when it
	// was recorded before.
	New bool `json:"new"`
}

// StatusWarning is a trusted version that the catalog deprecated or
// yanked: it keeps running, and berth says so.
type StatusWarning struct {
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Status      catalog.Status `json:"status"`
	Reason      string         `json:"reason"`
	Replacement string         `json:"replacement,omitempty"`
}

func (w StatusWarning) String() string {
	s := fmt.Sprintf("%s@%s is %s by its catalog: %s", w.Name, w.Version, w.Status, w.Reason)
	if w.Replacement != "" {
		s += " (it suggests " + w.Replacement + " instead)"
	}
	return s
}

// ApplyStatus compares every trusted version with the verified copy of
// catalog: a version the catalog installed (its trust record names the
// catalog, with the same root keys) that it now lists as revoked (same
// name, version and digest) is marked revoked in st
// (store.Store.MarkRevoked: disabled in every workspace, with the
// generation bump running pools act on, and refused by verify, trust and
// enable from then on); a revoked version it did not install (another
// catalog did, or the operator trusted it by hand or unsigned) is only a notice, as is
// a revocation the operator lifted; a deprecated or yanked one is
// reported. A revocation of its own that the catalog lists as active
// again (same version and digest) is lifted; a version it stops listing
// stays revoked. The signers a catalog allows play no part: a catalog
// chooses them itself. It reads only the verified copy.
func (c *Cache) ApplyStatus(ctx context.Context, st *store.Store, catName string) (*InstalledStatus, error) {
	out := &InstalledStatus{Catalog: catName, Revoked: []RevokedInstall{}, Warnings: []StatusWarning{}}
	recs, err := st.Records()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
	}
	entries, ci, err := c.Plugins(catName, names)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		p := entries[r.Name]
		if p == nil {
			continue
		}
		v := p.Version(r.Version)
		if v == nil || v.Digest != r.Digest {
			continue
		}
		why := revocationScope(r, catName, ci)
		switch v.Status {
		case catalog.StatusRevoked:
			notice := RevocationNotice{Name: r.Name, Version: r.Version, Digest: r.Digest, Catalog: catName, Reason: v.Reason, Why: why, Command: "berth revoke " + r.ID()}
			if r.Catalog != nil {
				notice.InstalledFrom = r.Catalog.Name
			}
			if why != "" {
				out.Notices = append(out.Notices, notice)
				continue
			}
			mr, err := st.MarkRevoked(ctx, store.Revocation{Name: r.Name, Version: r.Version, Digest: r.Digest, Catalog: catName, Reason: v.Reason})
			if err != nil {
				return nil, err
			}
			if mr.Lifted != nil {
				notice.Why = NoticeLiftedByOperator
				out.Notices = append(out.Notices, notice)
				continue
			}
			if !mr.Already || len(mr.Disabled) > 0 {
				out.Revoked = append(out.Revoked, RevokedInstall{Name: r.Name, Version: r.Version, Digest: r.Digest, Reason: v.Reason, Disabled: append([]string{}, mr.Disabled...), New: !mr.Already})
			}
		case catalog.StatusDeprecated, catalog.StatusYanked:
			out.Warnings = append(out.Warnings, StatusWarning{Name: r.Name, Version: r.Version, Status: v.Status, Reason: v.Reason, Replacement: v.Replacement})
		case catalog.StatusActive:
			if why != "" {
				continue
			}
			// Most active versions were never revoked: a read, not the lock.
			if rv, err := st.Revoked(r.Name, r.Version, r.Digest); err != nil {
				return nil, err
			} else if rv == nil || rv.Catalog != catName {
				continue
			}
			lifted, err := st.LiftRevocation(ctx, store.Lift{Name: r.Name, Version: r.Version, Digest: r.Digest, Catalog: catName, By: store.LiftedByCatalog})
			switch {
			case errors.Is(err, store.ErrNotRevoked):
			case err != nil:
				return nil, err
			default:
				out.Lifted = append(out.Lifted, LiftedRevocation{Name: lifted.Name, Version: lifted.Version, Digest: lifted.Digest})
			}
		}
	}
	return out, nil
}

// revocationScope says whether catName's revocation applies to the
// trusted version r: "" when the catalog installed it (r names the
// catalog, with the root keys ci has now), else why not (NoticeUnsigned,
// NoticeByHand, NoticeOtherCatalog, NoticeRootKeysChanged).
func revocationScope(r *store.Record, catName string, ci *CatalogInfo) string {
	switch {
	case r.Catalog == nil && r.Unsigned:
		return NoticeUnsigned
	case r.Catalog == nil:
		return NoticeByHand
	case r.Catalog.Name != catName:
		return NoticeOtherCatalog
	case ci == nil || len(r.Catalog.RootKeyIDs) == 0 || !sameKeySet(r.Catalog.RootKeyIDs, ci.RootKeyIDs):
		return NoticeRootKeysChanged
	}
	return ""
}

// sameKeySet reports whether two lists of key IDs hold the same keys.
func sameKeySet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// UpdateResult is what Update did: the refresh, and what it meant for
// the versions the operator trusted.
type UpdateResult struct {
	*RefreshResult
	Installed *InstalledStatus `json:"installed"`
}

// Update refreshes catalog (a full TUF update, as Refresh) and then
// applies its statuses to the trusted versions (ApplyStatus), so that a
// revocation reaches what runs. A refused or failed refresh changes
// nothing and applies nothing.
func (c *Cache) Update(ctx context.Context, st *store.Store, catName string) (*UpdateResult, error) {
	r, err := c.Refresh(ctx, catName)
	if err != nil {
		return nil, err
	}
	is, err := c.ApplyStatus(ctx, st, catName)
	if err != nil {
		return nil, err
	}
	return &UpdateResult{RefreshResult: r, Installed: is}, nil
}
