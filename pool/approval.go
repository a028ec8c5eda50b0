package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/trust"
)

// ErrDenied means a call was refused: the operator's policy denies the
// tool, or the approver did not allow the call. The CLI maps it to exit
// code 6. A refused call's error wraps it.
var ErrDenied = errors.New("denied")

// Policy actions.
const (
	ActionAllow = "allow"
	ActionAsk   = "ask"
	ActionDeny  = "deny"
)

// PolicyMatch is the operator's tool policy as it applies to one tool.
type PolicyMatch struct {
	// Action is "allow" or "ask" ("deny" tools are never listed or called).
	Action string `json:"action"`
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
		return m.Action + " (default)"
	case m.Exact:
		return m.Action + " (exact)"
	}
	return m.Action + " (" + m.Pattern + ")"
}

// ApprovalRequest describes a call waiting for a decision.
type ApprovalRequest struct {
	// Tool is the exported name, "<plugin>-<server>__<tool>" (or
	// "<plugin>__<tool>" for a native tool).
	Tool string
	// Plugin and Server name the plugin and its server (the manifest's
	// key; for a native tool, the nativeTools key of its provider);
	// UpstreamTool is the tool's name on that server.
	Plugin, Server, UpstreamTool string
	// Native is set for a tool of a native tool provider.
	Native bool
	// Arguments are the call's arguments, a JSON object.
	Arguments json.RawMessage
	// Annotations are the tool's annotations as listed (and pinned); nil
	// when it has none.
	Annotations *mcp.ToolAnnotations
	// Policy is the operator's policy for the tool.
	Policy PolicyMatch
}

// Approver decides whether a call runs. Call consults it for every call
// that the policy does not deny; the CLI and the MCP exporter supply their
// own. Approve may block (waiting for a human) until ctx is done.
type Approver interface {
	Approve(ctx context.Context, req *ApprovalRequest) (Decision, error)
}

// Decision is an approver's answer.
type Decision struct {
	Allow bool
	// By says who or what decided ("policy", "terminal", "--yes",
	// "elicitation", ...), for the audit log.
	By string
	// Reason explains a refusal, and is part of the error Call returns.
	Reason string
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req *ApprovalRequest) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req *ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}

// AllowedByPolicy reports whether the operator's policy alone allows the
// call, so that no human needs to be asked: the action is allow, and
// either the rule names the tool exactly or the tool is not destructive.
// A tool is destructive here only when it explicitly says
// destructiveHint: true. MCP's default for a missing destructiveHint is
// true, but nearly every server leaves it out, so treating a missing hint
// as destructive would make glob allows useless; the explicit hint is what
// a server uses to ask for care, and only an exact-name allow overrides
// it. Annotations can only tighten a policy, never loosen it: readOnlyHint
// and idempotentHint allow nothing by themselves.
func AllowedByPolicy(req *ApprovalRequest) bool {
	if req == nil || req.Policy.Action != ActionAllow {
		return false
	}
	if req.Policy.Exact {
		return true
	}
	return !destructive(req.Annotations)
}

func destructive(a *mcp.ToolAnnotations) bool {
	return a != nil && a.DestructiveHint != nil && *a.DestructiveHint
}

// policyOnly is the approver used when Call is given none: it allows what
// AllowedByPolicy allows and refuses the rest.
var policyOnly = ApproverFunc(func(ctx context.Context, req *ApprovalRequest) (Decision, error) {
	if AllowedByPolicy(req) {
		return Decision{Allow: true, By: "policy"}, nil
	}
	return Decision{By: "policy", Reason: "no approver was given and the policy does not allow the call by itself"}, nil
})

var actionRank = map[string]int{ActionAllow: 0, ActionAsk: 1, ActionDeny: 2}

// MatchPolicy returns the rule of the operator's tool policy that applies
// to the exported tool name: an exact rule wins over any glob; among
// matching globs the most restrictive action wins (deny, then ask, then
// allow), so a rule's place in the list never matters; among globs of the
// same action the longest (then the lexically smallest) pattern is
// reported. Without a match the action is ask. The result's Action may be
// "deny"; such tools are never listed.
func MatchPolicy(rules []trust.PolicyRule, tool string) PolicyMatch {
	best := PolicyMatch{Action: ActionAsk}
	found := false
	for _, r := range rules {
		if _, ok := actionRank[r.Action]; !ok {
			continue
		}
		if !isGlob(r.Pattern) {
			if r.Pattern == tool {
				return PolicyMatch{Action: r.Action, Pattern: r.Pattern, Exact: true}
			}
			continue
		}
		if !globMatch(r.Pattern, tool) {
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

var policyPatternRe = regexp.MustCompile(`^[a-zA-Z0-9_*?-]{1,128}$`)

// CheckPolicyRule validates a tool policy rule: the pattern is an exported
// tool name or a glob of one (letters, digits, '_', '-', '*' and '?', at
// most 128 characters) and the action is allow, ask or deny.
func CheckPolicyRule(r trust.PolicyRule) error {
	if !policyPatternRe.MatchString(r.Pattern) {
		return fmt.Errorf("%q is not a tool name or glob: use letters, digits, '_', '-' and the wildcards '*' and '?' (at most 128 characters), as in acme-notes-notes__search or 'acme-notes-*'", r.Pattern)
	}
	if _, ok := actionRank[r.Action]; !ok {
		return fmt.Errorf("%q is not a policy action; use allow, ask or deny", r.Action)
	}
	return nil
}

// SetPolicy adds or replaces the rule for r.Pattern in config.json. It
// bumps the state generation, so running pools apply it at their next
// boundary.
func SetPolicy(ctx context.Context, store *trust.Store, r trust.PolicyRule) error {
	if err := CheckPolicyRule(r); err != nil {
		return err
	}
	_, err := store.UpdateConfig(ctx, func(c *trust.Config) error {
		i := slices.IndexFunc(c.ToolPolicy, func(x trust.PolicyRule) bool { return x.Pattern == r.Pattern })
		switch {
		case i < 0:
			c.ToolPolicy = append(c.ToolPolicy, r)
		case c.ToolPolicy[i].Action == r.Action:
			return trust.ErrNoChange
		default:
			c.ToolPolicy[i] = r
		}
		slices.SortStableFunc(c.ToolPolicy, func(a, b trust.PolicyRule) int {
			switch {
			case a.Pattern < b.Pattern:
				return -1
			case a.Pattern > b.Pattern:
				return 1
			}
			return 0
		})
		return nil
	})
	return err
}

// UnsetPolicy removes the rule for pattern from config.json; it reports
// whether there was one.
func UnsetPolicy(ctx context.Context, store *trust.Store, pattern string) (bool, error) {
	found := false
	_, err := store.UpdateConfig(ctx, func(c *trust.Config) error {
		n := len(c.ToolPolicy)
		c.ToolPolicy = slices.DeleteFunc(c.ToolPolicy, func(x trust.PolicyRule) bool { return x.Pattern == pattern })
		if len(c.ToolPolicy) == n {
			return trust.ErrNoChange
		}
		found = true
		return nil
	})
	return found, err
}
