package mcpexport

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// The operator's policy denies every tool of demo__up. Its server never
// signed in, so its tools are not in the catalog; a client (a model
// following a tool description or a web page) calls demo__up__whoami
// anyway. berth asks the human to sign in to the server first (URL-mode
// elicitation from boundaryMiddleware's signInToStart), before the policy
// is looked at: a sign-in page for a server whose every call will be
// refused, and a token handed to it. A name the policy denies should be
// refused before anything is asked.
func TestAttackSignInAskedForDeniedServer(t *testing.T) {
	o := newOAuthEnv(t, false)
	if err := o.store.SetPolicy(context.Background(), store.PolicyRule{Pattern: "demo__*", Action: "deny"}); err != nil {
		t.Fatal(err)
	}
	bc := o.browserClient("accept")
	res, err := bc.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: whoamiTool, Arguments: map[string]any{"name": "x"}})
	if asked := bc.elicitations(); len(asked) > 0 {
		t.Errorf("the human was asked to sign in (%d elicitation(s)) for %s, which the operator's policy denies; the call then answered %+v (error %v)", len(asked), whoamiTool, res, err)
	}
	if len(o.f.tokens()) > 0 {
		t.Errorf("the authorization server issued %d token(s) for a server whose tools the policy denies", len(o.f.tokens()))
	}
}
