package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/store"
)

// installBuiltin installs p's locked plugin of berth's built-in catalog
// from this berth's built-in catalog, pinned to the locked digest (which
// lock.Check found the built-in catalog here holds at the locked
// version); false when it failed (and was recorded).
func (s *syncRun) installBuiltin(ctx context.Context, p *syncPlan) bool {
	a, lp := s.a, p.lp
	digest, err := store.ParseDigest(lp.Digest)
	if err != nil {
		s.fail(p, "install", err)
		return false
	}
	u := unsignedInstall{catalog: builtin.Name, name: lp.Name, builtin: true, yes: s.opts.Yes, json: s.opts.JSON}
	res, err := s.c.InstallUnsigned(ctx, s.st, marketplace.UnsignedInstallRequest{
		Catalog: builtin.Name, Name: lp.Name, Constraint: "=" + lp.Version, Digest: digest, Resolve: s.ro, Confirm: a.unsignedConfirm(u),
		Fetch: a.fetchOptions(!s.opts.JSON),
	})
	if err != nil {
		s.fail(p, "install", err)
		return false
	}
	if r := res.Trust.Record; r.Version != lp.Version || r.Digest != lp.Digest {
		s.fail(p, "install", fmt.Errorf("the built-in catalog installed %s, and the lock names %s@%s with digest %s: %w", r.ID(), lp.Name, lp.Version, lp.Digest, errUntrustedLock))
		return false
	}
	s.out.Actions = append(s.out.Actions, syncAction{Name: lp.Name, Version: lp.Version, Action: "install", Detail: strings.Join(append([]string{"from the built-in catalog"}, res.Warnings...), "; ")})
	if !s.opts.JSON {
		fmt.Fprintf(a.stdout, "Installed %s from the built-in catalog pinned to %s, as berth.lock names it.\n", res.Trust.Record.ID(), lp.Digest)
		for _, w := range res.Warnings {
			fmt.Fprintf(a.stderr, "berth: warning: %s\n", w)
		}
	}
	return true
}

// recordFrom says where a trust record comes from.
func recordFrom(r *store.Record) string {
	switch {
	case r.Catalog == nil && r.Signer == nil && r.Source == "builtin:"+r.Name:
		return "berth's built-in catalog"
	case r.Signer != nil:
		return r.Signer.String()
	default:
		return "no signer (" + r.Source + ")"
	}
}
