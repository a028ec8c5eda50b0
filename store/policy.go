package store

import (
	"context"
	"errors"
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

// PolicyRule is one rule of the operator's tool policy in config.json. It
// belongs to exactly one plugin and is matched only against the exported
// names of that plugin's tools and prompts ("<plugin>__<server>__<name>")
// and the names its resources are decided by ("<plugin>__<server>"): an
// exact name, or a glob ('*' any run of characters, '?' one) that starts
// with the plugin's name and "__".
type PolicyRule struct {
	// Plugin is the plugin the rule belongs to. A rule without one was
	// written by a berth whose names did not say where a plugin's name
	// ends; berth uses no tool policy that has such a rule until
	// MigratePolicy (berth policy migrate) rewrites it or it is removed.
	Plugin  string `json:"plugin,omitempty"`
	Pattern string `json:"pattern"`
	Action  Action `json:"action"`
	// Signer is set on an allow rule: the identity of the signer of the
	// plugin's latest trusted version when the rule was set
	// (Record.SignerIdentity). The rule allows only versions from that
	// signer; for a version from another signer it asks.
	Signer string `json:"signer,omitempty"`
}

var policyPatternRe = regexp.MustCompile(`^[a-zA-Z0-9_*?-]{1,128}$`)

// ErrOldPolicyRule marks a tool policy rule of the form berth wrote before
// rules belonged to one plugin (no plugin; names like
// "<plugin>-<server>__<tool>").
var ErrOldPolicyRule = errors.New("a tool policy rule of the old form")

// PatternPlugin returns the plugin a policy pattern belongs to: the name
// before its first '_', which must begin "__" and hold no wildcard. A
// pattern that could match the names of more than one plugin is a
// *PolicyScopeError (without the trusted plugins it could match;
// Store.SetPolicy fills them in).
func PatternPlugin(pattern string) (string, error) {
	i := strings.IndexByte(pattern, '_')
	if i > 0 && strings.HasPrefix(pattern[i:], "__") && bundle.IsValidName(pattern[:i]) {
		return pattern[:i], nil
	}
	return "", &PolicyScopeError{Pattern: pattern}
}

// PolicyScopeError refuses a pattern that does not name exactly one
// plugin, such as 'acme-notes-*' (which matches the tools of a later
// plugin acme-notes-x) or '*'.
type PolicyScopeError struct {
	Pattern string
	// Plugins are the trusted plugins whose names the pattern could
	// match, or that it seems meant for; Scoped are the patterns scoped
	// to each of them, in the same order.
	Plugins, Scoped []string
}

func (e *PolicyScopeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the pattern %q does not name one plugin: ", e.Pattern)
	switch len(e.Plugins) {
	case 0:
		b.WriteString("it could match the names of any plugin trusted later whose name fits it")
	case 1:
		fmt.Fprintf(&b, "it could match the names of %s and of any plugin trusted later whose name fits it", e.Plugins[0])
	default:
		fmt.Fprintf(&b, "it could match the names of %s (and of plugins trusted later)", joinAnd(e.Plugins))
	}
	b.WriteString(". A rule belongs to one plugin and matches only its names, <plugin>__<server>__<tool>: start the pattern with the plugin's name and \"__\"")
	if len(e.Scoped) == 0 {
		b.WriteString(", as in 'acme-notes__*' or 'acme-notes__notes__search_*'")
	}
	for i, s := range e.Scoped {
		if i == 0 {
			b.WriteString(", as in ")
		} else {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "'%s' (for %s)", s, e.Plugins[i])
	}
	return b.String()
}

func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// CheckPolicyRule validates a tool policy rule: the pattern is an exported
// name or a glob of one (letters, digits, '_', '-', '*' and '?', at most
// 128 characters) that belongs to the rule's plugin, the action is allow,
// ask or deny, and an allow names its signer. A rule of the old form wraps
// ErrOldPolicyRule.
func CheckPolicyRule(r PolicyRule) error {
	if err := CheckPolicySyntax(r.Pattern, r.Action); err != nil {
		return err
	}
	if r.Plugin == "" {
		return fmt.Errorf("the rule %q (%s) names no plugin: %w, when names did not say where a plugin's name ends, so it could match the tools of plugins trusted later; berth uses no tool policy with such a rule: run `berth policy migrate` to rewrite it, or remove it with `berth policy unset %s` (docs/pool.md, \"Migrating rules\")", r.Pattern, r.Action, ErrOldPolicyRule, r.Pattern)
	}
	if !bundle.IsValidName(r.Plugin) {
		return fmt.Errorf("the rule %q names %q, which is not a plugin name", r.Pattern, r.Plugin)
	}
	if p, err := PatternPlugin(r.Pattern); err == nil && p != r.Plugin {
		return fmt.Errorf("the rule %q belongs to plugin %s, but its pattern names %s", r.Pattern, r.Plugin, p)
	} else if err != nil && strings.ContainsAny(r.Pattern, "*?") {
		return err
	}
	if r.Action == ActionAllow && r.Signer == "" {
		return fmt.Errorf("the allow rule %q names no signer of %s, so berth cannot tell whose versions it lets run; set it again with `berth policy set`", r.Pattern, r.Plugin)
	}
	return nil
}

// CheckPolicySyntax checks the form of a rule's pattern (letters, digits,
// '_', '-', '*' and '?', at most 128 characters) and its action.
func CheckPolicySyntax(pattern string, action Action) error {
	if !policyPatternRe.MatchString(pattern) {
		return fmt.Errorf("%q is not a name or glob: use letters, digits, '_', '-' and the wildcards '*' and '?' (at most 128 characters), as in acme-notes__notes__search or 'acme-notes__*'", pattern)
	}
	if _, ok := actionRank[action]; !ok {
		return fmt.Errorf("%q is not a policy action; use allow, ask or deny", action)
	}
	return nil
}

// PolicySubject is what a rule is matched against: an exported name, the
// plugin it belongs to, and the signer identity of the plugin's enabled
// version (Record.SignerIdentity).
type PolicySubject struct {
	Plugin, Signer, Name string
}

// PolicyMatch is the operator's policy as it applies to one tool, prompt
// or resource.
type PolicyMatch struct {
	// Action is what happens to a call of the tool.
	Action Action `json:"action"`
	// Pattern is the rule that matched; "" means no rule did and the
	// default, ask, applies.
	Pattern string `json:"pattern"`
	// Exact is true when Pattern is the tool's exact name, not a glob.
	Exact bool `json:"exact"`
	// OtherSigner is set when the rule allows, but was set for another
	// signer than the one of the enabled version: the action is then ask.
	OtherSigner bool `json:"otherSigner,omitempty"`
}

// String says how the policy applies, for prompts, `berth tools` and the
// audit log: "ask (default)" when no rule names the tool, "allow (exact)"
// for a rule naming it exactly, "allow (demo__*)" for a glob, and "ask
// (demo__*, an allow for another signer)" for an allow set for another
// signer.
func (m PolicyMatch) String() string {
	what := m.Pattern
	switch {
	case m.Pattern == "":
		return string(m.Action) + " (default)"
	case m.Exact:
		what = "exact"
	}
	if m.OtherSigner {
		what += ", an allow for another signer"
	}
	return string(m.Action) + " (" + what + ")"
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
// to a name of a plugin. Only the plugin's own rules are considered: a
// rule of one plugin never matches another plugin's names, whatever the
// names look like. An exact rule wins over any glob; among matching globs
// the most restrictive action wins (deny, then ask, then allow), so a
// rule's place in the list never matters; among globs of the same action
// the longest (then the lexically smallest) pattern is reported. An allow
// set for another signer than the subject's counts as ask. Without a
// match the action is ask. The result's Action may be deny; such tools
// are never listed.
func MatchPolicy(rules []PolicyRule, sub PolicySubject) PolicyMatch {
	best := PolicyMatch{Action: ActionAsk}
	found := false
	for _, r := range rules {
		if _, ok := actionRank[r.Action]; !ok || r.Plugin != sub.Plugin || r.Plugin == "" {
			continue
		}
		exact := !strings.ContainsAny(r.Pattern, "*?")
		if exact && r.Pattern != sub.Name || !exact && !bundle.MatchGlob(r.Pattern, sub.Name) {
			continue
		}
		m := PolicyMatch{Action: r.Action, Pattern: r.Pattern, Exact: exact}
		if r.Action == ActionAllow && r.Signer != sub.Signer {
			m.Action, m.OtherSigner = ActionAsk, true
		}
		if exact {
			return m
		}
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

// RulesOf returns the rules that belong to plugin: every rule that can
// apply to its tools, prompts and resources.
func RulesOf(rules []PolicyRule, plugin string) []PolicyRule {
	var out []PolicyRule
	for _, r := range rules {
		if r.Plugin == plugin {
			out = append(out, r)
		}
	}
	return out
}

// SetPolicy adds or replaces the rule for r.Pattern in config.json. When
// r.Plugin is empty it is the plugin the pattern names (PatternPlugin); a
// pattern that does not name one plugin is a *PolicyScopeError naming the
// trusted plugins it could match and the scoped patterns to write instead.
// An allow is bound to the signer of the plugin's latest trusted version
// (r.Signer is set here), so it needs the plugin to be trusted. SetPolicy
// bumps the state generation, so running pools apply the rule at their
// next boundary.
func (s *Store) SetPolicy(ctx context.Context, r PolicyRule) error {
	if r.Plugin == "" {
		p, err := PatternPlugin(r.Pattern)
		if err != nil {
			var se *PolicyScopeError
			if errors.As(err, &se) && policyPatternRe.MatchString(r.Pattern) {
				if recs, rerr := s.Records(); rerr == nil {
					se.Plugins, se.Scoped = scopeCandidates(r.Pattern, recs)
				}
			}
			return err
		}
		r.Plugin = p
	}
	r.Signer = ""
	if r.Action == ActionAllow {
		recs, err := s.recordsOf(r.Plugin)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return NotTrustedf("%s is not trusted, so an allow rule for it could not say whose versions it lets run; trust it first (an allow belongs to the signer of the plugin's versions), or set ask or deny, which need no trust", r.Plugin)
		}
		r.Signer = recs[len(recs)-1].SignerIdentity()
	}
	if err := CheckPolicyRule(r); err != nil {
		return err
	}
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		i := slices.IndexFunc(c.ToolPolicy, func(x PolicyRule) bool { return x.Pattern == r.Pattern })
		switch {
		case i < 0:
			c.ToolPolicy = append(c.ToolPolicy, r)
		case c.ToolPolicy[i] == r:
			return ErrNoChange
		default:
			c.ToolPolicy[i] = r
		}
		slices.SortStableFunc(c.ToolPolicy, func(a, b PolicyRule) int { return strings.Compare(a.Pattern, b.Pattern) })
		return nil
	})
	return err
}

// scopeCandidates finds the trusted plugins a pattern that names none
// could be meant for: those whose names it could match (as
// "<plugin>__…") and those whose name and '-' begin it (a pattern of the
// old form, "<plugin>-<server>__…"); with the pattern scoped to each.
func scopeCandidates(pattern string, recs []*Record) (plugins, scoped []string) {
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		switch {
		case strings.HasPrefix(pattern, r.Name+"-") && !strings.ContainsAny(pattern[:len(r.Name)+1], "*?"):
			plugins = append(plugins, r.Name)
			scoped = append(scoped, r.Name+"__"+pattern[len(r.Name)+1:])
		case globCanMatchPrefix(pattern, r.Name+"__"):
			plugins = append(plugins, r.Name)
			scoped = append(scoped, r.Name+"__*")
		}
	}
	return plugins, scoped
}

// globCanMatchPrefix reports whether pattern matches some name that
// starts with prefix.
func globCanMatchPrefix(pattern, prefix string) bool {
	// The set of pattern positions reachable after reading the prefix;
	// any reachable position can be completed by some suffix.
	closure := func(set map[int]bool) map[int]bool {
		for i := range len(pattern) {
			if set[i] && pattern[i] == '*' {
				set[i+1] = true
			}
		}
		return set
	}
	cur := closure(map[int]bool{0: true})
	for j := 0; j < len(prefix) && len(cur) > 0; j++ {
		next := map[int]bool{}
		for i := range cur {
			if i >= len(pattern) {
				continue
			}
			switch pattern[i] {
			case '*':
				next[i] = true
			case '?', prefix[j]:
				next[i+1] = true
			}
		}
		cur = closure(next)
	}
	return len(cur) > 0
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
