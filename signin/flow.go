package signin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// discovered is what the sign-in learnt and checked before any
// authorization request.
type discovered struct {
	prm      *oauthex.ProtectedResourceMetadata
	asm      *oauthex.AuthServerMeta
	fallback bool // the 2025-03-26 endpoints, no metadata
	scopes   []string
}

// ResourceMismatchError: the protected-resource metadata names another
// resource than the server berth reviewed (RFC 9728 section 3.3).
type ResourceMismatchError struct {
	Target      Target
	MetadataURL string
	Got         string
}

func (e *ResourceMismatchError) Error() string {
	return fmt.Sprintf("server %s: the protected-resource metadata at %s names %s, not %s, the server berth reviewed; berth refuses to sign in with it (a server's metadata must name the server itself; tell its operator)", e.Target.ID(), e.MetadataURL, named("the resource", e.Got), e.Target.Resource)
}

// IssuerMismatchError: the authorization server is not the one the
// manifest pins, its metadata names another issuer than its address, or
// the authorization response's iss (RFC 9207) is not its issuer.
type IssuerMismatchError struct {
	Target Target
	Want   string // the issuer expected (pinned, or the server's address)
	Got    string // the issuer found, "" when none was given
	Why    string // the whole finding, naming both
	Fix    string // what the human can do, "" when nothing
}

func (e *IssuerMismatchError) Error() string {
	msg := fmt.Sprintf("server %s: %s; berth refuses to sign in there", e.Target.ID(), e.Why)
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}

// fixPin is the fix of a pinned issuer that does not match.
const fixPin = "if the server really moved to another authorization server, the plugin's publisher must change auth.oauth.issuer in its manifest; otherwise tell its operator"

// named quotes an issuer the other side gave for a message, or says it
// gave none.
func named(what, issuer string) string {
	if issuer == "" {
		return "no " + strings.TrimPrefix(what, "the ")
	}
	return what + " " + strconv.Quote(clip(issuer))
}

// discover finds and checks the protected-resource metadata and the
// authorization server's metadata, in the spec's order (as go-sdk's
// handler will, whose own fetch follows), and applies berth's rules: the
// resource must be the reviewed one, the issuer the pinned one, an
// authorization server elsewhere than the resource https.
func discover(ctx context.Context, t Target, rules netRules, hc *http.Client, resp *http.Response) (*discovered, error) {
	var challenges []oauthex.Challenge
	if resp != nil {
		cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if err != nil {
			return nil, fmt.Errorf("server %s: its WWW-Authenticate header does not parse: %v", t.ID(), err)
		}
		challenges = cs
	}
	d := &discovered{}
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			d.scopes, _ = serverScopes(c.Params["scope"]) // a malformed list is not used
			break
		}
	}
	ru, err := url.Parse(t.Resource)
	if err != nil {
		return nil, err
	}
	type cand struct{ url, resource string }
	var cands []cand
	for _, c := range challenges {
		if u := c.Params["resource_metadata"]; u != "" {
			cands = append(cands, cand{u, t.Resource})
			break
		}
	}
	mu := *ru
	mu.RawQuery = ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	cands = append(cands, cand{mu.String(), t.Resource})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery = "", ""
	cands = append(cands, cand{mu.String(), root.String()})
	for _, c := range cands {
		if _, err := rules.checkURL("the protected-resource metadata", c.url); err != nil {
			return nil, fmt.Errorf("server %s: %v", t.ID(), err)
		}
		// A document for another resource is refused here, not skipped
		// as go-sdk's handler does (it then falls back to 2025-03-26
		// discovery at the server's origin).
		prm, status, err := fetchPRM(ctx, hc, c.url)
		if err != nil || status != http.StatusOK {
			continue
		}
		if prm.Resource != c.resource {
			return nil, &ResourceMismatchError{Target: t, MetadataURL: c.url, Got: prm.Resource}
		}
		for _, as := range prm.AuthorizationServers {
			if _, err := rules.checkURL("the authorization server", as); err != nil {
				return nil, fmt.Errorf("server %s: in its protected-resource metadata, %v", t.ID(), err)
			}
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("server %s: its protected-resource metadata at %s names no authorization server, so berth does not know where to sign in (tell the server's operator)", t.ID(), c.url)
		}
		d.prm = prm
		break
	}
	if d.prm == nil {
		// 2025-03-26: the MCP server's origin is the authorization server.
		d.prm = &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: t.Resource}
	}
	if len(d.scopes) == 0 {
		d.scopes = d.prm.ScopesSupported
	}
	asURL := d.prm.AuthorizationServers[0]
	au, err := rules.checkURL("the authorization server", asURL)
	if err != nil {
		return nil, fmt.Errorf("server %s: %v", t.ID(), err)
	}
	if au.Scheme != "https" && !strings.EqualFold(au.Hostname(), ru.Hostname()) && !(rules.loopback && isLoopbackHost(au.Hostname())) {
		return nil, fmt.Errorf("server %s: its authorization server %s is on another host than the server and uses plain http; berth signs in at another host only over https (tell the server's operator)", t.ID(), redact(au))
	}
	if t.OAuth.Issuer != "" && !issuersEqual(asURL, t.OAuth.Issuer) {
		return nil, &IssuerMismatchError{Target: t, Want: t.OAuth.Issuer, Got: asURL, Fix: fixPin,
			Why: fmt.Sprintf("the server names the authorization server %s, but its manifest pins the issuer %s", asURL, t.OAuth.Issuer)}
	}
	asm, err := auth.GetAuthServerMetadata(ctx, asURL, hc)
	if err != nil {
		if m := metaIssuerRE.FindStringSubmatch(err.Error()); m != nil {
			got, _ := strconv.Unquote(m[1])
			return nil, &IssuerMismatchError{Target: t, Want: asURL, Got: got, Fix: "tell the authorization server's operator",
				Why: fmt.Sprintf("the metadata of the authorization server %s names %s, not its own address (RFC 8414 requires them to be equal, so that one server cannot speak for another)", asURL, named("the issuer", got))}
		}
		return nil, fmt.Errorf("server %s: reading the metadata of the authorization server %s: %v", t.ID(), asURL, err)
	}
	if asm == nil {
		d.fallback = true
		asm = &oauthex.AuthServerMeta{Issuer: asURL, AuthorizationEndpoint: asURL + "/authorize", TokenEndpoint: asURL + "/token", RegistrationEndpoint: asURL + "/register"}
	}
	if t.OAuth.Issuer != "" && !issuersEqual(asm.Issuer, t.OAuth.Issuer) {
		return nil, &IssuerMismatchError{Target: t, Want: t.OAuth.Issuer, Got: asm.Issuer, Fix: fixPin,
			Why: fmt.Sprintf("the metadata of the authorization server %s names %s, but the manifest pins the issuer %s", asURL, named("the issuer", asm.Issuer), t.OAuth.Issuer)}
	}
	for what, u := range map[string]string{"authorization endpoint": asm.AuthorizationEndpoint, "token endpoint": asm.TokenEndpoint} {
		if _, err := rules.checkURL("the "+what, u); err != nil {
			return nil, fmt.Errorf("server %s: %v", t.ID(), err)
		}
	}
	d.asm = asm
	return d, nil
}

// fetchPRM reads protected-resource metadata (RFC 9728) once; berth
// checks it itself (go-sdk skips a document whose resource does not match
// and falls back to the 2025-03-26 discovery, where berth refuses).
func fetchPRM(ctx context.Context, hc *http.Client, u string) (*oauthex.ProtectedResourceMetadata, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	prm, err := parsePRM(body)
	return prm, resp.StatusCode, err
}

// parsePRM reads protected-resource metadata.
func parsePRM(body []byte) (*oauthex.ProtectedResourceMetadata, error) {
	var prm oauthex.ProtectedResourceMetadata
	if err := json.Unmarshal(body, &prm); err != nil {
		return nil, fmt.Errorf("the protected-resource metadata does not parse: %v", err)
	}
	return &prm, nil
}

// flowArgs is one interactive authorization.
type flowArgs struct {
	t      Target
	o      Options
	ask    func(context.Context, Prompt) error
	req    *http.Request  // the request the resource refused (nil: Login)
	resp   *http.Response // its answer, with WWW-Authenticate
	extra  []string
	stepUp bool
	// byServer: the step-up is the server's (a 403 insufficient_scope
	// naming the scopes it needs), not berth login --scope's.
	byServer bool
	old      *record // what is stored now, if for this target
}

// authorize runs the authorization-code flow through go-sdk's handler
// with berth's registration choice, redirect listener and checks, and
// stores the token.
func authorize(ctx context.Context, a flowArgs) (*record, error) {
	t, o := a.t, a.o
	rules, err := rulesFor(t.Resource)
	if err != nil {
		return nil, err
	}
	hc := rules.httpClient()
	d, err := discover(ctx, t, rules, hc, a.resp)
	if err != nil {
		return nil, err
	}
	asm := d.asm
	if err := checkClientIssuer(t, o.Client, asm); err != nil {
		return nil, err
	}

	ln, err := listenRedirect(t.OAuth.RedirectPort)
	if err != nil {
		return nil, err
	}
	defer ln.close()
	redirect := ln.URL()

	posts := map[string]bool{asm.TokenEndpoint: true}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		Client:              rules.httpClientPosting(posts),
	}
	// Registration in the spec's order; go-sdk gets only the method that
	// applies (its own order puts a metadata document first).
	reg := ""
	switch {
	case preregisteredID(t, o.Client) != "":
		reg = regPreregistered
		cc := &oauthex.ClientCredentials{ClientID: preregisteredID(t, o.Client)}
		if t.OAuth.ClientID == "" && o.Client != nil && o.Client.ClientSecret != "" {
			cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.Client.ClientSecret}
		}
		cfg.PreregisteredClient = cc
	case o.Client != nil && o.Client.MetadataDocumentURL != "" && asm.ClientIDMetadataDocumentSupported:
		reg = regMetadataDoc
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.Client.MetadataDocumentURL}
	case a.old != nil && a.old.Registration == regDynamic && issuersEqual(a.old.Issuer, asm.Issuer) && a.old.ClientID != "":
		// The client this berth registered at that server before.
		reg = regDynamic
		cc := &oauthex.ClientCredentials{ClientID: a.old.ClientID, Issuer: asm.Issuer}
		if a.old.ClientSecret != "" {
			cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: a.old.ClientSecret}
		}
		cfg.PreregisteredClient = cc
	case asm.RegistrationEndpoint != "":
		reg = regDynamic
		if _, err := rules.checkURL("the registration endpoint", asm.RegistrationEndpoint); err != nil {
			return nil, fmt.Errorf("server %s: %v", t.ID(), err)
		}
		posts[asm.RegistrationEndpoint] = true
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			ClientName:              "berth",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}}
	default:
		return nil, fmt.Errorf("server %s: its authorization server %s offers no way for berth to register (no registration endpoint%s), and no client ID is configured; set one for it (docs/signin.md)", t.ID(), asm.Issuer, map[bool]string{true: "", false: ", no client ID metadata documents"}[asm.ClientIDMetadataDocumentSupported])
	}

	var scopes []string
	cfg.ScopeFilter = func(discovered []string) []string {
		// The server's list (its header or metadata) is used only when
		// well-formed and short enough to show a human.
		if _, bad := serverScopes(strings.Join(discovered, " ")); bad != "" {
			discovered = nil
		}
		s := discovered
		// The manifest's scopes bound what is asked for, except the scopes
		// a server's own step-up names; berth login --scope adds its
		// scopes to the manifest's, not to all the server advertises.
		if len(t.OAuth.Scopes) > 0 && !(a.stepUp && a.byServer) {
			s = t.OAuth.Scopes
		}
		if a.old != nil && a.stepUp {
			s = union(a.old.Scopes, s)
		}
		s = union(s, a.extra)
		return s
	}
	authURL, err := url.Parse(asm.AuthorizationEndpoint)
	if err != nil {
		return nil, err
	}
	var got struct {
		cfg   *oauth2.Config
		token *oauth2.Token
	}
	cfg.AuthorizationCodeFetcher = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, err
		}
		// go-sdk fetched the metadata again: the browser goes only to the
		// endpoint berth checked.
		if !sameOrigin(u, authURL) || u.Path != authURL.Path {
			return nil, fmt.Errorf("server %s: the authorization URL %s is not at the authorization endpoint %s berth checked", t.ID(), redact(u), redact(authURL))
		}
		q := u.Query()
		ln.expect(q.Get("state"))
		scopes = strings.Fields(q.Get("scope"))
		p := Prompt{Target: t, Issuer: asm.Issuer, Scopes: scopes, URL: args.URL, StepUp: a.stepUp}
		if a.old != nil && a.old.Issuer != "" && !issuersEqual(a.old.Issuer, asm.Issuer) {
			p.PreviousIssuer = a.old.Issuer
		}
		if err := a.ask(ctx, p); err != nil {
			return nil, fmt.Errorf("server %s: the sign-in was not shown or was declined: %w", t.ID(), err)
		}
		wait := o.Wait
		if wait <= 0 {
			wait = DefaultWait
		}
		cb, err := ln.wait(ctx, wait)
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", t.ID(), err)
		}
		return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
	}
	cfg.NewTokenSource = func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
		if c.Endpoint.TokenURL != asm.TokenEndpoint {
			return nil, fmt.Errorf("server %s: the token came from %s, not the token endpoint %s berth checked", t.ID(), c.Endpoint.TokenURL, asm.TokenEndpoint)
		}
		got.cfg, got.token = c, tok
		return oauth2.StaticTokenSource(tok), nil
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("server %s: %v", t.ID(), err)
	}
	req, resp := a.req, a.resp
	if req == nil {
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, t.Resource, nil)
	}
	// go-sdk reads only the answer's headers; berth has read its body.
	r2 := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(nil))}
	if resp != nil {
		r2.StatusCode, r2.Header = resp.StatusCode, resp.Header
		if r2.StatusCode != http.StatusForbidden {
			r2.StatusCode = http.StatusUnauthorized
		}
	}
	if err := h.Authorize(ctx, req, r2); err != nil {
		return nil, explain(t, asm, err)
	}
	if got.token == nil {
		return nil, fmt.Errorf("server %s: the sign-in ended without a token", t.ID())
	}
	rec := &record{
		Plugin: t.Plugin, Server: t.Server, Resource: t.Resource,
		Issuer: asm.Issuer, ClientID: got.cfg.ClientID, ClientSecret: got.cfg.ClientSecret,
		Registration: reg, AuthStyle: int(got.cfg.Endpoint.AuthStyle),
		TokenURL: asm.TokenEndpoint, RevokeURL: asm.RevocationEndpoint,
	}
	if rec.RevokeURL != "" {
		if checkRevokeURL(rules, rec) != nil {
			rec.RevokeURL = "" // not revoked there, rather than tokens sent elsewhere
		}
	}
	rec.setToken(got.token, got.cfg.Scopes)
	if err := updateRecord(ctx, o.Secrets, t.Plugin, t.Server, func(*record) (*record, error) { return rec, nil }); err != nil {
		return nil, fmt.Errorf("server %s: signed in, but the token could not be stored: %w", t.ID(), err)
	}
	return rec, nil
}

// ClientIssuerError: the operator's client registration is for another
// authorization server than the one the server names now (or names none
// while it holds a client secret); berth does not use it there.
type ClientIssuerError struct {
	Target Target
	Want   string // the registration's issuer, "" when it names none
	Got    string // the authorization server discovery found
}

func (e *ClientIssuerError) Error() string {
	if e.Want == "" {
		return fmt.Sprintf("server %s: your client registration (config.json oauthClients) has a client secret but names no authorization server, and berth sends a client secret only to the one that issued it; the server names %s now: if that is where you registered the client, record it (berth login %s --client-issuer %s, with --client-id and --client-secret-from again), else remove the registration (berth login %s --forget-client)", e.Target.ID(), clip(e.Got), e.Target.ID(), clip(e.Got), e.Target.ID())
	}
	return fmt.Sprintf("server %s: your client registration (config.json oauthClients) is for the authorization server %s, but the server names %s now; berth does not use the client, or send its secret, there: if the server moved, register a client at %s and record it (berth login %s --client-id ID --client-secret-from NAME --client-issuer %s), or remove yours to sign in without it (berth login %s --forget-client)", e.Target.ID(), clip(e.Want), clip(e.Got), clip(e.Got), e.Target.ID(), clip(e.Got), e.Target.ID())
}

// checkClientIssuer refuses to use the operator's client at another
// authorization server than the one it is registered with.
func checkClientIssuer(t Target, c *Client, asm *oauthex.AuthServerMeta) error {
	if c == nil || t.OAuth.ClientID != "" {
		return nil // no operator's client, or the manifest's own is used
	}
	switch {
	case c.Issuer != "" && !issuersEqual(c.Issuer, asm.Issuer):
		return &ClientIssuerError{Target: t, Want: c.Issuer, Got: asm.Issuer}
	case c.Issuer == "" && c.ClientSecret != "":
		return &ClientIssuerError{Target: t, Got: asm.Issuer}
	}
	return nil
}

// setToken records a token the server issued; a refresh answer without a
// refresh token keeps the old one (RFC 6749 section 6).
func (r *record) setToken(tok *oauth2.Token, asked []string) {
	r.AccessToken, r.TokenType, r.Expiry, r.Issued = tok.AccessToken, tok.TokenType, tok.Expiry, time.Now()
	if tok.RefreshToken != "" {
		r.RefreshToken = tok.RefreshToken
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		r.Scopes = strings.Fields(s)
	} else if asked != nil {
		r.Scopes = slices.Clone(asked)
	}
	if sub := subjectOf(tok.AccessToken); sub != "" {
		r.Subject = sub
	}
}

// explain turns go-sdk's errors into berth's: the rule and the fix.
func explain(t Target, asm *oauthex.AuthServerMeta, err error) error {
	var ae *AuthorizationError
	if errors.As(err, &ae) {
		return fmt.Errorf("server %s: %w", t.ID(), err)
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "authorization response issuer"), strings.Contains(msg, "iss parameter"):
		e := &IssuerMismatchError{Target: t, Want: asm.Issuer, Fix: "sign in again; if this repeats, the authorization server is misconfigured or someone interferes with the sign-in"}
		switch m := issRE.FindStringSubmatch(msg); {
		case m != nil:
			e.Got, _ = strconv.Unquote(m[1])
			e.Why = fmt.Sprintf("the answer to the sign-in names %s (iss, RFC 9207), not the authorization server %s it was sent to: it may come from another server (a mix-up attack)", named("the issuer", e.Got), asm.Issuer)
		case strings.Contains(msg, "none was received"):
			e.Why = fmt.Sprintf("the authorization server %s says it names itself in its answers (iss, RFC 9207), but the answer to the sign-in names no issuer: it may come from another server (a mix-up attack)", asm.Issuer)
		default:
			e.Why = fmt.Sprintf("the answer to the sign-in names an issuer (iss, RFC 9207), but the authorization server %s does not say it sends one: it may come from another server (a mix-up attack)", asm.Issuer)
		}
		return e
	case strings.Contains(msg, "state mismatch"):
		return fmt.Errorf("server %s: the authorization response's state does not match the request; berth refuses it", t.ID())
	}
	// go-sdk's and x/oauth2's errors carry the server's whole answer
	// (RetrieveError's body, the registration response): berth reports
	// the OAuth error code and description only, clipped and escaped, and
	// of any other error its text without what may be a quoted answer.
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return &boundedError{msg: fmt.Sprintf("server %s: signing in at %s: exchanging the authorization code for a token failed: %s; try berth login again", t.ID(), asm.Issuer, tokenErrorText(err)), err: err}
	}
	return &boundedError{msg: fmt.Sprintf("server %s: signing in at %s: %s", t.ID(), asm.Issuer, clipN(withoutSecrets(msg), 600)), err: err}
}

// withoutSecrets drops from go-sdk's error text what may be a server's
// answer quoted whole (a registration response holds the client's
// secret): everything from the first '{', and every token-like run of a
// word that is not a URL.
func withoutSecrets(msg string) string {
	if i := strings.IndexByte(msg, '{'); i >= 0 {
		msg = strings.TrimSpace(msg[:i]) + " …"
	}
	words := strings.Fields(msg)
	for i, w := range words {
		if !strings.Contains(w, "://") {
			words[i] = tokenLike.ReplaceAllString(w, "…")
		}
	}
	return strings.Join(words, " ")
}

// boundedError is an error whose text berth bounded and escaped; it
// unwraps to the original.
type boundedError struct {
	msg string
	err error
}

func (e *boundedError) Error() string { return e.msg }
func (e *boundedError) Unwrap() error { return e.err }

// go-sdk's messages of an issuer mismatch, whose values berth quotes in
// its own words.
var (
	metaIssuerRE = regexp.MustCompile(`metadata issuer ("(?:[^"\\]|\\.)*") does not match`)
	issRE        = regexp.MustCompile(`authorization response issuer ("(?:[^"\\]|\\.)*") does not match`)
)

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
