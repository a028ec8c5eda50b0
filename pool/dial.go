package pool

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
)

// RemoteDial is one remote server to connect to with DialRemote.
type RemoteDial struct {
	Plugin, Server string
	Remote         *bundle.Remote
	// Options: LookupEnv, SignIns, SignInClient and SignInAsk apply.
	Options Options
	// Client configures the MCP client (its handlers), nil for none.
	Client *mcp.ClientOptions
}

// DialRemote connects to one remote server as the pool does (the guard:
// the reviewed origin only, no ambient proxy, checked addresses; the
// declared headers; the sign-in of auth.oauth), without a pool, a store
// or a trusted plugin. It is for test tooling (the conformance client,
// e2e/internal/conformanceclient) and diagnostics; berth's commands use a
// Pool. The caller closes the session.
func DialRemote(ctx context.Context, d RemoteDial) (*mcp.ClientSession, error) {
	id := ServerID(d.Plugin, d.Server)
	if d.Remote == nil {
		return nil, fmt.Errorf("server %s: no remote", id)
	}
	env := d.Options.LookupEnv
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	src := &sources{ctx: ctx, plugin: d.Plugin, env: env}
	g, err := newGuard(id, d.Remote, src, d.Options.testNet)
	if err != nil {
		return nil, err
	}
	if d.Remote.Auth != nil && d.Remote.Auth.OAuth != nil {
		h, err := newSignInHandler(&d.Options, d.Plugin, d.Server, d.Remote)
		if err != nil {
			return nil, err
		}
		g.oauth = h
	}
	kind := Transport(d.Remote.Transport)
	if kind == "" {
		kind = TransportStreamableHTTP
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "berth", Version: bundle.BerthVersion}, d.Client)
	cs, err := client.Connect(ctx, g.transport(kind), nil)
	if err != nil {
		if r := g.refusal(); r != nil {
			return nil, r
		}
		return nil, err
	}
	return cs, nil
}
