// Package signin signs berth in to OAuth-protected remote MCP servers
// (docs/signin.md): discovery, client registration, PKCE and the loopback
// redirect through go-sdk's auth package, tokens kept in berth's secret
// store keyed by plugin, server, issuer, resource and client, refreshed
// quietly, and a human asked only when the server needs one.
package signin

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/secrets"
)

// Target is one remote server of one plugin that signs in with OAuth.
type Target struct {
	Plugin   string       // berth plugin name
	Server   string       // server name in the plugin
	Resource string       // the remote's URL as reviewed (manifest url)
	OAuth    bundle.OAuth // the manifest's declaration
}

// ID names the target as berth's commands do: "plugin__server".
func (t Target) ID() string { return t.Plugin + "__" + t.Server }

// LoginCommand is the command that signs the target in.
func (t Target) LoginCommand() string { return "berth login " + t.ID() }

// Client is the operator's own registration for a target (config.json),
// optional. ClientSecret is read by the caller from the secret store.
type Client struct {
	ClientID            string
	ClientSecret        string
	MetadataDocumentURL string // a client ID metadata document (https)
}

// Options configure a Handler, Login and Logout.
type Options struct {
	Secrets *secrets.Store // where tokens live (required)
	Client  *Client        // the operator's registration, nil for none
	// Ask shows the authorization URL to a human (opens a browser, prints
	// it, or sends a URL-mode elicitation) and returns once it was shown,
	// or an error when the human declined. nil: no human can be asked
	// here; Authorize then fails with *NeedSignInError.
	Ask func(ctx context.Context, p Prompt) error
	// Wait bounds the wait for the loopback redirect (default 5 minutes).
	Wait time.Duration
}

// Prompt is what a human is shown to sign in.
type Prompt struct {
	Target Target
	Issuer string   // the authorization server that will be signed in to
	Scopes []string // what is asked for
	URL    string   // the authorization URL to open
	StepUp bool     // asks for more scopes than the current token has
}

// NeedSignInError: a request needs a sign-in no human could be asked for.
// Error() names the server, why (no token, refresh failed, more scopes
// needed: which), and the command `berth login plugin__server`.
type NeedSignInError struct {
	Target Target
	Reason string
	Scopes []string // for a step-up: the scopes the server asked for
	StepUp bool
}

func (e *NeedSignInError) Error() string {
	why := e.Reason
	if why == "" {
		why = "not signed in"
	}
	if e.StepUp && len(e.Scopes) > 0 {
		why += " (the server asks for the scopes " + strings.Join(e.Scopes, " ") + ")"
	}
	return fmt.Sprintf("server %s at %s needs a sign-in: %s; run `%s`", e.Target.ID(), e.Target.Resource, why, e.Target.LoginCommand())
}

// State is what is stored for a target, without secrets.
type State struct {
	SignedIn    bool
	Subject     string // "" unless the token says
	Issuer      string
	Resource    string
	ClientID    string
	Scopes      []string
	ExpiresAt   time.Time // zero when unknown
	Refreshable bool      // has a refresh token
}

// OtherHost returns the host of the resource when the authorization
// server (issuer) is on another host than it, "" when both are on one host
// (or either does not parse). A sign-in elsewhere is said in words, not
// left to the reader of a URL.
func OtherHost(resource, issuer string) string {
	r, err1 := url.Parse(resource)
	a, err2 := url.Parse(issuer)
	if err1 != nil || err2 != nil || r.Hostname() == "" || a.Hostname() == "" {
		return ""
	}
	host := func(u *url.URL) string { return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".") }
	if host(r) == host(a) {
		return ""
	}
	return host(r)
}

// Elsewhere is OtherHost for the prompt's target and issuer.
func (p Prompt) Elsewhere() string { return OtherHost(p.Target.Resource, p.Issuer) }

// DefaultWait is how long a sign-in waits for the loopback redirect.
const DefaultWait = 5 * time.Minute
