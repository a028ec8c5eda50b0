package review

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/importer"
)

// TestReviewOAuth: before trust, the review of a remote that signs in
// says who is signed in to, at which authorization server, for which
// scopes, where the token is kept and the one origin it is sent to; an
// authorization server on another host is named; it no longer says the
// remote sends no credentials.
func TestReviewOAuth(t *testing.T) {
	b, err := bundle.Open(context.Background(), filepath.Join(good, "remote-oauth"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := New(b)
	out := string(text(t, d))
	for _, want := range []string{
		"signs in     to https://mcp.acme.example/v1 at https://login.acme.example as you, asking for scopes issues:read, issues:write; the token is kept in berth's secret store and sent only to https://mcp.acme.example\n",
		"auth server  login.acme.example is another host than the server's",
		"signs in     to https://docs.acme.example/sse at the authorization server the server names (discovered at sign-in) as you, asking for the scopes the server names; the token is kept in berth's secret store and sent only to https://docs.acme.example\n",
		`client       the pre-registered public client "acme-tracker-berth"`,
		"redirect     http://127.0.0.1:8976/callback",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the review does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no credentials") {
		t.Errorf("the review says a signing-in remote sends no credentials:\n%s", out)
	}
	var j struct {
		Servers []struct {
			Remote struct {
				OAuth *OAuth `json:"oauth"`
			} `json:"remote"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(d.JSON(), &j); err != nil {
		t.Fatal(err)
	}
	if o := j.Servers[1].Remote.OAuth; o == nil || o.Issuer != "https://login.acme.example" || o.IssuerOtherHost != "login.acme.example" || o.SentTo != "https://mcp.acme.example" || o.Resource != "https://mcp.acme.example/v1" || len(o.Scopes) != 2 {
		t.Errorf("JSON oauth of tracker: %+v", o)
	}
	if o := j.Servers[0].Remote.OAuth; o == nil || o.Issuer != "" || o.IssuerOtherHost != "" || o.Scopes == nil {
		t.Errorf("JSON oauth of docs: %+v", o)
	}
}

// TestReviewRegistryRemoteMayAsk: a server.json remote without a
// credential header is reviewed as one that may ask for a sign-in.
func TestReviewRegistryRemoteMayAsk(t *testing.T) {
	doc := `{"name": "io.github.acme/tracker", "description": "Tracker", "version": "1.0.0",
	  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
	  "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/mcp"}]}`
	b, err := importer.OpenServerJSON(context.Background(), "test", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := string(text(t, New(b)))
	for _, want := range []string{
		"the server may ask for a sign-in, which berth discovers when it answers 401 with its protected-resource metadata",
		"at the authorization server the server names (discovered at sign-in)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the review does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no credentials") {
		t.Errorf("the review says the remote sends no credentials:\n%s", out)
	}
}
