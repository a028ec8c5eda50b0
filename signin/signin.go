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
	"strconv"
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
	// Issuer is the authorization server the client is registered with:
	// berth uses the client only there. Required with a ClientSecret.
	Issuer string
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
	// PreviousIssuer is the authorization server berth signed in to
	// before, when the server (pinning none) names another one now; ""
	// otherwise. A human should be told the server moved.
	PreviousIssuer string
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
	cmd := e.Target.LoginCommand()
	if e.StepUp && len(e.Scopes) > 0 {
		why += " (the server asks for the scopes " + scopesText(e.Scopes) + ")"
		// A plain login asks for the manifest's scopes again: a step-up
		// names the scopes to add.
		for _, sc := range e.Scopes {
			cmd += " --scope " + sc
		}
	}
	return fmt.Sprintf("server %s at %s needs a sign-in: %s; run `%s`", e.Target.ID(), e.Target.Resource, why, cmd)
}

// ForbiddenError: the server refused a request (403) for a reason a
// sign-in does not fix: a plain 403, or insufficient_scope for scopes the
// sign-in already holds or just asked a human for. The refused request is
// not sent again.
type ForbiddenError struct {
	Target Target
	Why    string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("server %s at %s refused the request (403 Forbidden): %s", e.Target.ID(), e.Target.Resource, e.Why)
}

// MaxStepUpScopes bounds the scopes a server may ask for in one step-up:
// a human is shown every scope berth asks for, so a longer list is
// refused rather than shortened.
const MaxStepUpScopes = 20

// IsScopeToken reports whether s is an RFC 6749 scope-token (section
// 3.3): printable ASCII without space, '"' or '\', at most 256 bytes.
func IsScopeToken(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// serverScopes reads a scope list a server or authorization server sent:
// its scope-tokens, or why berth refuses the list ("" when it does not).
func serverScopes(raw string) ([]string, string) {
	f := strings.Fields(raw)
	if len(f) > MaxStepUpScopes {
		return nil, fmt.Sprintf("it names %d scopes, more than the %d berth shows a human at once", len(f), MaxStepUpScopes)
	}
	for _, s := range f {
		if !IsScopeToken(s) {
			return nil, "its list of scopes is not well-formed (RFC 6749 scope-tokens: printable ASCII, no space, '\"' or '\\', at most 256 bytes each)"
		}
	}
	return f, ""
}

// scopesText names scopes in a message: each quoted, only scope-tokens,
// at most MaxStepUpScopes (a server's list is checked before; this bounds
// any other).
func scopesText(scopes []string) string {
	var out []string
	for _, s := range scopes {
		if len(out) == MaxStepUpScopes {
			out = append(out, fmt.Sprintf("and %d more", len(scopes)-MaxStepUpScopes))
			break
		}
		if IsScopeToken(s) {
			out = append(out, strconv.Quote(s))
		} else {
			out = append(out, "(a malformed scope)")
		}
	}
	return strings.Join(out, ", ")
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
