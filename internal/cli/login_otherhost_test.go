package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/signin"
)

// berth login says in words when the authorization server is on another
// host than the resource: in its description (a pinned issuer) and when
// it names the server it signs in at (unpinned: the one the server
// names); not when both are on one host.
func TestLoginNamesOtherHost(t *testing.T) {
	tg := signin.Target{Plugin: "acme", Server: "api", Resource: "https://mcp.example/mcp", OAuth: bundle.OAuth{Issuer: "https://auth.example"}}
	var b bytes.Buffer
	describeLogin(&b, tg, nil, nil)
	if !strings.Contains(b.String(), "authorization server: https://auth.example (pinned by the manifest, another host than mcp.example)") {
		t.Errorf("description:\n%s", b.String())
	}
	a := &app{stderr: io.Discard}
	for _, c := range []struct {
		issuer, want string
		other        bool
	}{
		{"https://auth.example", "Signing in at https://auth.example (another host than mcp.example); scopes: read.", true},
		{"https://MCP.example:8443/oauth", "Signing in at https://MCP.example:8443/oauth; scopes: read.", false},
	} {
		var out bytes.Buffer
		p := signin.Prompt{Target: tg, Issuer: c.issuer, Scopes: []string{"read"}, URL: c.issuer + "/authorize?x=1"}
		ask, _ := a.loginAsk(&out, true, t.TempDir())
		if err := ask(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), c.want) || strings.Contains(out.String(), "another host") != c.other {
			t.Errorf("loginAsk printed %q, want %q", out.String(), c.want)
		}
	}
	tg.OAuth.Issuer = "https://mcp.example/"
	b.Reset()
	describeLogin(&b, tg, nil, nil)
	if strings.Contains(b.String(), "another host") {
		t.Errorf("description of a same-host issuer:\n%s", b.String())
	}
}
