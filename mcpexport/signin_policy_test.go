package mcpexport

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// A denied name is refused before any sign-in on both protocols (the
// 2025-11-25 URL elicitation and the 2026-07-28 input request) and for a
// client that cannot be asked: the refusal names the policy, never `berth
// login`, and the audit records the policy's refusal.
func TestSignInPolicyFirst(t *testing.T) {
	for _, proto := range []string{"2025-11-25", ""} {
		t.Run("proto="+proto, func(t *testing.T) {
			o := newOAuthEnv(t, false)
			if err := o.store.SetPolicy(context.Background(), store.PolicyRule{Pattern: "demo__up__who*", Action: "deny"}); err != nil {
				t.Fatal(err)
			}
			bc := o.browserClientOn(proto, "accept")
			res, err := bc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: whoamiTool, Arguments: map[string]any{"name": "x"}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !res.IsError || !strings.Contains(text, "policy denies "+whoamiTool) || !strings.Contains(text, "did not ask for a sign-in") || strings.Contains(text, "berth login") {
				t.Errorf("the call answered %q", text)
			}
			if n := len(bc.elicitations()); n > 0 || len(res.InputRequests) > 0 || len(o.f.tokens()) > 0 {
				t.Errorf("asked %d elicitation(s), %d input request(s), %d token(s) issued for a denied name", n, len(res.InputRequests), len(o.f.tokens()))
			}
			var found bool
			for _, e := range readAudit(t, o.paths) {
				if e.Tool == whoamiTool && e.Decision == VerdictDeny && e.DecidedBy == ByPolicy && e.Outcome == OutcomeRefused && strings.Contains(e.Policy, "demo__up__who*") {
					found = true
				}
			}
			if !found {
				t.Errorf("no audit entry of the policy's refusal: %+v", readAudit(t, o.paths))
			}
		})
	}
	// A name the policy does not deny still signs in (the approval comes
	// after, once: TestSignIn* in signin_e2e_test.go).
}
