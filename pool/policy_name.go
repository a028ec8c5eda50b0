package pool

import "github.com/berth-mcp/berth/store"

// NamePolicy is the operator's policy for name, an exported name of
// plugin, decided by the name alone: for a call whose tool is not listed
// (its server never started, waiting for a sign-in), before berth asks a
// human to sign in. The tool's annotations are unknown then, so only an
// action that does not depend on them (deny) is final. A plugin with no
// enabled server gets deny.
func (p *Pool) NamePolicy(plugin, name string) store.PolicyMatch {
	for _, s := range p.servers() {
		if s.pl.name == plugin {
			return p.policyFor(s, name)
		}
	}
	return store.PolicyMatch{Action: store.ActionDeny, Pattern: "(no such plugin enabled)"}
}
