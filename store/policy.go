package store

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

// Action is what the operator's tool policy does with a call.
type Action string

// Policy actions.
const (
	// ActionAllow runs the call without asking (a destructive tool still
	// asks unless the rule names it exactly).
	ActionAllow Action = "allow"
	// ActionAsk asks a human each time; it is the default.
	ActionAsk Action = "ask"
	// ActionDeny refuses the call; the tool is not even listed.
	ActionDeny Action = "deny"
)

// actionRank orders the actions from the least to the most restrictive.
var actionRank = map[Action]int{ActionAllow: 0, ActionAsk: 1, ActionDeny: 2}

// PolicyRule is one rule of the operator's tool policy in config.json: an
// exported tool name, or a glob of names ('*' any run of characters, '?'
// one), and what happens when a matching tool is called.
type PolicyRule struct {
	Pattern string `json:"pattern"`
	Action  Action `json:"action"`
}

var policyPatternRe = regexp.MustCompile(`^[a-zA-Z0-9_*?-]{1,128}$`)

// CheckPolicyRule validates a tool policy rule: the pattern is an exported
// tool name or a glob of one (letters, digits, '_', '-', '*' and '?', at
// most 128 characters) and the action is allow, ask or deny.
func CheckPolicyRule(r PolicyRule) error {
	if !policyPatternRe.MatchString(r.Pattern) {
		return fmt.Errorf("%q is not a tool name or glob: use letters, digits, '_', '-' and the wildcards '*' and '?' (at most 128 characters), as in acme-notes-notes__search or 'acme-notes-*'", r.Pattern)
	}
	if _, ok := actionRank[r.Action]; !ok {
		return fmt.Errorf("%q is not a policy action; use allow, ask or deny", r.Action)
	}
	return nil
}

// PolicyMatch is the operator's tool policy as it applies to one tool.
type PolicyMatch struct {
	// Action is what happens to a call of the tool.
	Action Action `json:"action"`
	// Pattern is the rule that matched; "" means no rule did and the
	// default, ask, applies.
	Pattern string `json:"pattern"`
	// Exact is true when Pattern is the tool's exact name, not a glob.
	Exact bool `json:"exact"`
}

// String says how the policy applies, for prompts, `berth tools` and the
// audit log: "ask (default)" when no rule names the tool, "allow (exact)"
// for a rule naming it exactly, "allow (demo-*)" for a glob.
func (m PolicyMatch) String() string {
	switch {
	case m.Pattern == "":
		return string(m.Action) + " (default)"
	case m.Exact:
		return string(m.Action) + " (exact)"
	}
	return string(m.Action) + " (" + m.Pattern + ")"
}

// Allows reports whether the policy alone allows a call, so that no human
// needs to be asked: the action is allow, and either the rule names the
// tool exactly or the tool is not destructive. destructive is true only
// when the tool explicitly says destructiveHint: true. MCP's default for a
// missing destructiveHint is true, but nearly every server leaves it out,
// so treating a missing hint as destructive would make glob allows
// useless; the explicit hint is what a server uses to ask for care, and
// only an exact-name allow overrides it. Annotations can only tighten a
// policy, never loosen it: readOnlyHint and idempotentHint allow nothing
// by themselves.
func (m PolicyMatch) Allows(destructive bool) bool {
	if m.Action != ActionAllow {
		return false
	}
	return m.Exact || !destructive
}

// MatchPolicy returns the rule of the operator's tool policy that applies
// to the exported tool name: an exact rule wins over any glob; among
// matching globs the most restrictive action wins (deny, then ask, then
// allow), so a rule's place in the list never matters; among globs of the
// same action the longest (then the lexically smallest) pattern is
// reported. Without a match the action is ask. The result's Action may be
// deny; such tools are never listed.
func MatchPolicy(rules []PolicyRule, tool string) PolicyMatch {
	best := PolicyMatch{Action: ActionAsk}
	found := false
	for _, r := range rules {
		if _, ok := actionRank[r.Action]; !ok {
			continue
		}
		if !strings.ContainsAny(r.Pattern, "*?") {
			if r.Pattern == tool {
				return PolicyMatch{Action: r.Action, Pattern: r.Pattern, Exact: true}
			}
			continue
		}
		if !bundle.MatchGlob(r.Pattern, tool) {
			continue
		}
		m := PolicyMatch{Action: r.Action, Pattern: r.Pattern}
		if !found || better(m, best) {
			best, found = m, true
		}
	}
	return best
}

func better(a, b PolicyMatch) bool {
	if actionRank[a.Action] != actionRank[b.Action] {
		return actionRank[a.Action] > actionRank[b.Action]
	}
	if len(a.Pattern) != len(b.Pattern) {
		return len(a.Pattern) > len(b.Pattern)
	}
	return a.Pattern < b.Pattern
}

// SetPolicy adds or replaces the rule for r.Pattern in config.json. It
// bumps the state generation, so running pools apply it at their next
// boundary.
func (s *Store) SetPolicy(ctx context.Context, r PolicyRule) error {
	if err := CheckPolicyRule(r); err != nil {
		return err
	}
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		i := slices.IndexFunc(c.ToolPolicy, func(x PolicyRule) bool { return x.Pattern == r.Pattern })
		switch {
		case i < 0:
			c.ToolPolicy = append(c.ToolPolicy, r)
		case c.ToolPolicy[i].Action == r.Action:
			return ErrNoChange
		default:
			c.ToolPolicy[i] = r
		}
		slices.SortStableFunc(c.ToolPolicy, func(a, b PolicyRule) int { return strings.Compare(a.Pattern, b.Pattern) })
		return nil
	})
	return err
}

// UnsetPolicy removes the rule for pattern from config.json; it reports
// whether there was one.
func (s *Store) UnsetPolicy(ctx context.Context, pattern string) (bool, error) {
	found := false
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		n := len(c.ToolPolicy)
		c.ToolPolicy = slices.DeleteFunc(c.ToolPolicy, func(x PolicyRule) bool { return x.Pattern == pattern })
		if len(c.ToolPolicy) == n {
			return ErrNoChange
		}
		found = true
		return nil
	})
	return found, err
}
