package marketplace

import (
	"context"
	"fmt"

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
// catalog: a version the catalog lists as revoked (same name, version
// and digest) is marked revoked in st (store.Store.MarkRevoked: disabled
// in every workspace, with the generation bump running pools act on, and
// refused by verify, trust and enable from then on); a deprecated or
// yanked one is reported. It reads only the verified copy.
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
	entries, _, err := c.Plugins(catName, names)
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
		switch v.Status {
		case catalog.StatusRevoked:
			mr, err := st.MarkRevoked(ctx, store.Revocation{Name: r.Name, Version: r.Version, Digest: r.Digest, Catalog: catName, Reason: v.Reason})
			if err != nil {
				return nil, err
			}
			if !mr.Already || len(mr.Disabled) > 0 {
				out.Revoked = append(out.Revoked, RevokedInstall{Name: r.Name, Version: r.Version, Digest: r.Digest, Reason: v.Reason, Disabled: append([]string{}, mr.Disabled...), New: !mr.Already})
			}
		case catalog.StatusDeprecated, catalog.StatusYanked:
			out.Warnings = append(out.Warnings, StatusWarning{Name: r.Name, Version: r.Version, Status: v.Status, Reason: v.Reason, Replacement: v.Replacement})
		}
	}
	return out, nil
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
