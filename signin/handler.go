package signin

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/berth-mcp/berth/secrets"
)

// refreshEarly is how long before its expiry a token is refreshed: a
// minute, or a quarter of its lifetime when that is shorter (a token that
// lives 20 s is used for 15 s, not refreshed at every use).
const refreshEarly = time.Minute

// fresh reports whether the record's access token is usable without a
// refresh now.
func (r *record) fresh() bool {
	if r.AccessToken == "" {
		return false
	}
	if r.Expiry.IsZero() {
		return true
	}
	early := refreshEarly
	if !r.Issued.IsZero() {
		if life := r.Expiry.Sub(r.Issued); life > 0 && life/4 < early {
			early = life / 4
		}
	}
	return time.Until(r.Expiry) > early
}

var _ auth.OAuthHandler = (*Handler)(nil)

// Handler implements go-sdk's auth.OAuthHandler for one target: the stored
// token (refreshed before expiry and once on 401 invalid_token, rotated
// refresh tokens persisted under the store's lock), and otherwise the
// interactive flow through Options.Ask or the ctx's asker (WithAsk), or a
// *NeedSignInError when there is none.
type Handler struct {
	t     Target
	o     Options
	rules netRules

	mu     sync.Mutex
	rec    *record   // the last record read or written, nil for none
	stamp  time.Time // the index's Updated stamp of rec
	sum    [32]byte  // the digest of rec as stored
	readAt time.Time // when the stored value was last read (before the read)
	reason string    // why the last token could not be had
	// retry is the access token Authorize handed out after a 401, for the
	// request's one retry; a 401 to it is a second 401 in a row (Answered).
	retry string

	stepUps map[string]time.Time // step-ups a human was asked for, by scopes
}

// NewHandler returns the handler of one target.
func NewHandler(t Target, o Options) (*Handler, error) {
	if o.Secrets == nil {
		return nil, errors.New("signin: Options.Secrets is required")
	}
	if t.Plugin == "" || t.Server == "" {
		return nil, errors.New("signin: the target needs a plugin and a server")
	}
	rules, err := rulesFor(t.Resource)
	if err != nil {
		return nil, err
	}
	return &Handler{t: t, o: o, rules: rules}, nil
}

// stampSettled is how long after a record's index stamp (whole seconds)
// another write could still carry the same stamp, with a margin for the
// clocks of two processes: until the handler has read the value that
// late, an unchanged stamp proves nothing and the value is read again.
const stampSettled = 2 * time.Second

// current returns the stored record for the target, nil when there is
// none that applies. The store's index is read every time (cheap: no
// value); the value is read again when the index's stamp changed, or
// while the stamp is so recent that a later write in the same second
// (another process's, or another handler's in this one) would carry it
// too: then the value's digest says whether it changed.
func (h *Handler) current(ctx context.Context) (*record, error) {
	ts := tokenStore(h.o.Secrets)
	name := recordName(h.t.Plugin, h.t.Server)
	e, ok, err := ts.Lookup(name)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !ok {
		h.rec = nil
		h.reason = "not signed in"
		return nil, nil
	}
	if h.rec != nil && e.Updated.Equal(h.stamp) && !h.readAt.Before(h.stamp.Add(stampSettled)) {
		return h.rec, nil
	}
	readAt := time.Now()
	v, _, err := ts.Get(ctx, name)
	if errors.Is(err, secrets.ErrNotFound) {
		h.rec = nil
		h.reason = "not signed in"
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(v))
	if h.rec != nil && sum == h.sum {
		h.stamp, h.readAt = e.Updated, readAt
		return h.rec, nil
	}
	rec, err := parseRecord(v)
	if err != nil {
		return nil, fmt.Errorf("server %s: the stored sign-in cannot be read: %w; `%s` replaces it, `berth logout %s` forgets it", h.t.ID(), err, h.t.LoginCommand(), h.t.ID())
	}
	if why := rec.mismatch(h.t, h.o.Client); why != "" {
		h.rec, h.reason = nil, "the stored sign-in does not apply: "+why
		return nil, nil
	}
	h.rec, h.stamp, h.sum, h.readAt = rec, e.Updated, sum, readAt
	return rec, nil
}

// TokenSource returns the stored token's source; nil when there is no
// sign-in, so that the request goes without a token, the server answers
// 401 and Authorize runs.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	rec, err := h.current(ctx)
	if err != nil || rec == nil {
		return nil, err
	}
	return tokenSource{h}, nil
}

type tokenSource struct{ h *Handler }

// Token returns the access token, refreshed first when it expires within
// a minute. A refresh that fails sends no token (the server's 401 then
// leads to Authorize), rather than failing the request here.
func (s tokenSource) Token() (*oauth2.Token, error) {
	h := s.h
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rec, err := h.current(ctx)
	if err != nil {
		return nil, err
	}
	if rec == nil || (rec.AccessToken == "" && rec.RefreshToken == "") {
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: h.why()}
	}
	if rec.fresh() {
		return rec.token(), nil
	}
	rec, err = h.refresh(ctx, rec.AccessToken)
	if err != nil || rec == nil {
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: h.why()}
	}
	return rec.token(), nil
}

func (r *record) token() *oauth2.Token {
	typ := r.TokenType
	if typ == "" || strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	return &oauth2.Token{AccessToken: r.AccessToken, TokenType: typ, Expiry: r.Expiry}
}

func (h *Handler) why() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reason == "" {
		return "not signed in"
	}
	return h.reason
}

func (h *Handler) setReason(format string, args ...any) {
	h.mu.Lock()
	h.reason = fmt.Sprintf(format, args...)
	h.mu.Unlock()
}

// refresh renews the token of failed (the access token that expired or
// was refused) under the store's lock: the stored record is read again
// first, and when another process already replaced that token, its token
// is used as it is. A rotated refresh token is stored in the same locked
// step, so two processes never both spend one refresh token.
func (h *Handler) refresh(ctx context.Context, failed string) (*record, error) {
	var out *record
	err := updateRecord(ctx, h.o.Secrets, h.t.Plugin, h.t.Server, func(old *record) (*record, error) {
		if old == nil {
			h.setReason("not signed in")
			return nil, nil
		}
		if why := old.mismatch(h.t, h.o.Client); why != "" {
			h.setReason("the stored sign-in does not apply: %s", why)
			return old, nil
		}
		if old.AccessToken != failed && old.fresh() {
			out = old // refreshed elsewhere meanwhile
			return old, nil
		}
		if old.RefreshToken == "" {
			h.setReason("the token expired and the server gave no refresh token")
			return old, nil
		}
		tok, err := refreshToken(ctx, h.rules.httpClient(), old)
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
				// The refresh token is spent or revoked: keep the client,
				// forget the tokens.
				h.setReason("the sign-in expired (the authorization server refused its refresh token)")
				n := *old
				n.AccessToken, n.RefreshToken, n.Expiry = "", "", time.Time{}
				return &n, nil
			}
			h.setReason("refreshing the token at %s failed: %s", old.Issuer, tokenErrorText(err))
			return old, nil
		}
		n := *old
		n.setToken(tok, nil)
		out = &n
		return &n, nil
	})
	if err != nil {
		h.setReason("berth's secret store could not be read or written: %v", err)
		return nil, err
	}
	h.mu.Lock()
	h.rec, h.stamp = nil, time.Time{} // read again next time
	h.mu.Unlock()
	if out != nil && out.AccessToken == "" {
		out = nil
	}
	return out, nil
}

// refreshToken is the refresh grant (RFC 6749 section 6) with the resource
// indicator (RFC 8707) naming the server.
func refreshToken(ctx context.Context, hc *http.Client, r *record) (*oauth2.Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}, "resource": {r.Resource}}
	return tokenRequest(ctx, hc, r, r.TokenURL, form)
}

// tokenRequest posts form to an endpoint of the authorization server with
// the client's authentication, and reads a token answer.
func tokenRequest(ctx context.Context, hc *http.Client, r *record, endpoint string, form url.Values) (*oauth2.Token, error) {
	req, err := clientRequest(ctx, r, endpoint, form)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseTokenResponse(resp.StatusCode, body)
}

func clientRequest(ctx context.Context, r *record, endpoint string, form url.Values) (*http.Request, error) {
	basic := oauth2.AuthStyle(r.AuthStyle) == oauth2.AuthStyleInHeader && r.ClientSecret != ""
	if !basic {
		form.Set("client_id", r.ClientID)
		if r.ClientSecret != "" {
			form.Set("client_secret", r.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(r.ClientID), url.QueryEscape(r.ClientSecret))
	}
	return req, nil
}

// parseTokenResponse reads the token endpoint's answer (RFC 6749 sections
// 5.1 and 5.2).
func parseTokenResponse(status int, body []byte) (*oauth2.Token, error) {
	var v struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		RefreshToken string          `json:"refresh_token"`
		ExpiresIn    json.Number     `json:"expires_in"`
		Scope        string          `json:"scope"`
		Error        string          `json:"error"`
		ErrorDesc    string          `json:"error_description"`
		Raw          json.RawMessage `json:"-"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("the token endpoint answered %d with no JSON token", status)
	}
	if status != http.StatusOK || v.Error != "" {
		code := v.Error
		if code == "" {
			code = fmt.Sprintf("http_%d", status)
		}
		return nil, &oauth2.RetrieveError{ErrorCode: clip(code), ErrorDescription: clip(v.ErrorDesc)}
	}
	if v.AccessToken == "" {
		return nil, errors.New("the token endpoint's answer has no access_token")
	}
	if v.TokenType != "" && !strings.EqualFold(v.TokenType, "bearer") {
		return nil, fmt.Errorf("the token endpoint issued a token of type %q; berth sends bearer tokens only", clip(v.TokenType))
	}
	tok := &oauth2.Token{AccessToken: v.AccessToken, TokenType: "Bearer", RefreshToken: v.RefreshToken}
	if v.ExpiresIn != "" {
		n, err := v.ExpiresIn.Int64()
		if err != nil || n < 0 || n > 10*365*24*3600 {
			return nil, fmt.Errorf("the token endpoint's expires_in %q is not a number of seconds", clip(string(v.ExpiresIn)))
		}
		if n > 0 {
			tok.Expiry = time.Now().Add(time.Duration(n) * time.Second)
		}
	}
	if v.Scope != "" {
		tok = tok.WithExtra(map[string]any{"scope": v.Scope})
	}
	return tok, nil
}

// Authorize is called on a 401 or 403 from the resource: a refused token
// is refreshed once (or replaced by one another process stored); any other
// need asks a human through the ctx's asker or Options.Ask, or fails with
// *NeedSignInError when there is none.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	code, rawScope := "", ""
	for _, c := range cs {
		if c.Scheme == "bearer" {
			code = c.Params["error"]
			rawScope = c.Params["scope"]
			break
		}
	}
	if resp.StatusCode == http.StatusForbidden && code != "insufficient_scope" {
		// Not a matter of signing in: an error, so that the transport
		// does not send the refused request again.
		return &ForbiddenError{Target: h.t, Why: "not for want of scopes (no insufficient_scope), so a sign-in cannot help; berth does not send it again"}
	}
	stepUp := resp.StatusCode == http.StatusForbidden
	// The server's scope list reaches messages, the prompt and the
	// authorization request: scope-tokens only, a bounded number.
	scopes, bad := serverScopes(rawScope)
	if stepUp && bad != "" {
		return &NeedSignInError{Target: h.t, StepUp: true, Reason: "it answered insufficient_scope, but " + bad + "; berth asks for none of them (ask the server's operator)"}
	}
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	rec, err := h.current(ctx)
	if err != nil {
		return err
	}
	if stepUp && rec != nil && len(scopes) > 0 && holdsAll(rec.Scopes, scopes) {
		if rec.AccessToken != "" && rec.AccessToken != sent {
			return nil // another token is stored now: retry with it
		}
		// Asking a human again cannot help, and would ask at every call.
		return &ForbiddenError{Target: h.t, Why: fmt.Sprintf("it says insufficient_scope for %s, which the sign-in already holds; a new sign-in cannot help, so berth does not ask for one (the server's operator can say why)", scopesText(scopes))}
	}
	if !stepUp && rec != nil {
		if sent == "" || rec.AccessToken != sent {
			if rec.AccessToken != "" {
				h.retryWith(rec.AccessToken)
				return nil // another token is stored now: retry with it
			}
		}
		if iss := h.issuerMoved(ctx, rec, resp); iss != "" {
			// Not refreshed at the old one: the human signs in at the
			// new one knowingly (Prompt.PreviousIssuer).
			h.setReason("the server now names the authorization server %s, not %s where berth signed in before; sign in there", clip(iss), clip(rec.Issuer))
		} else if rec.RefreshToken != "" {
			if n, _ := h.refresh(ctx, sent); n != nil {
				h.retryWith(n.AccessToken)
				return nil
			}
		} else if sent != "" {
			h.setReason("the server refused the token (%s) and the sign-in has no refresh token to renew it", orText(clip(code), "401"))
		}
	}
	ask := askerOf(ctx, h.o.Ask)
	if ask == nil {
		e := &NeedSignInError{Target: h.t, Reason: h.why(), StepUp: stepUp}
		if stepUp {
			e.Reason, e.Scopes = "it needs more scopes than the sign-in has", scopes
		}
		return e
	}
	if stepUp {
		if when, ok := h.askedStepUp(scopes); ok {
			return &ForbiddenError{Target: h.t, Why: fmt.Sprintf("it says insufficient_scope for %s, which a human was asked for %s ago; berth does not ask again within %s", scopesText(scopes), time.Since(when).Round(time.Second), stepUpQuiet)}
		}
	}
	var old *record
	if r, _ := readRecord(ctx, h.o.Secrets, h.t); r != nil && r.mismatch(h.t, h.o.Client) == "" {
		old = r
	}
	n, err := authorize(ctx, flowArgs{t: h.t, o: h.o, ask: ask, req: req, resp: resp, stepUp: stepUp, byServer: stepUp, old: old})
	if stepUp {
		h.noteStepUp(scopes) // asked, whether done or declined
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.rec, h.stamp = nil, time.Time{}
	h.mu.Unlock()
	h.retryWith(n.AccessToken)
	return nil
}

func (h *Handler) retryWith(token string) {
	h.mu.Lock()
	h.retry = token
	h.mu.Unlock()
}

// Answered is told the resource's answer to every request sent with the
// handler's tokens (berth's remote client calls it for each response).
// A 401 to the token Authorize has just handed out for the retry of a
// refused request (a second 401 in a row) is a *NeedSignInError: the
// request did not run, and another refresh would not help. The caller
// returns that error instead of the response, so the connection is not
// taken for broken and nothing suggests the call may have run. Any other
// answer to that token ends the watch on it.
func (h *Handler) Answered(req *http.Request, status int) error {
	sent, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || sent == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.retry == "" || sent != h.retry {
		return nil
	}
	h.retry = ""
	if status != http.StatusUnauthorized {
		return nil
	}
	h.reason = "the server refused its token twice in a row (401), the second time right after berth renewed it"
	return &NeedSignInError{Target: h.t, Reason: h.reason}
}

// issuerMoved reports the authorization server a server that pins none
// names now, when its stored token was refused and that is not the one
// the sign-in was made at; "" otherwise (or when discovery fails: the
// refresh then goes on as before).
func (h *Handler) issuerMoved(ctx context.Context, rec *record, resp *http.Response) string {
	if h.t.OAuth.Issuer != "" || rec.Issuer == "" {
		return "" // a pinned issuer: a record for another is not used at all
	}
	d, err := discover(ctx, h.t, h.rules, h.rules.httpClient(), resp)
	if err != nil || issuersEqual(d.asm.Issuer, rec.Issuer) {
		return ""
	}
	return d.asm.Issuer
}

// stepUpQuiet is how long a step-up a human was asked for (done or
// declined) is not asked for again.
const stepUpQuiet = time.Minute

func stepUpKey(scopes []string) string {
	s := slices.Clone(scopes)
	slices.Sort(s)
	return strings.Join(s, " ")
}

// askedStepUp reports whether a human was asked for these scopes within
// stepUpQuiet, and when.
func (h *Handler) askedStepUp(scopes []string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	when, ok := h.stepUps[stepUpKey(scopes)]
	return when, ok && time.Since(when) < stepUpQuiet
}

func (h *Handler) noteStepUp(scopes []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stepUps == nil {
		h.stepUps = map[string]time.Time{}
	}
	for k, when := range h.stepUps {
		if time.Since(when) >= stepUpQuiet {
			delete(h.stepUps, k)
		}
	}
	h.stepUps[stepUpKey(scopes)] = time.Now()
}

// holdsAll reports whether have has every scope of want.
func holdsAll(have, want []string) bool {
	for _, s := range want {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type askKey struct{}

// WithAsk returns ctx carrying an asker for this request only (berth serve
// puts one on a call whose client supports URL-mode elicitation); it
// overrides Options.Ask.
func WithAsk(ctx context.Context, ask func(context.Context, Prompt) error) context.Context {
	return context.WithValue(ctx, askKey{}, ask)
}

func askerOf(ctx context.Context, def func(context.Context, Prompt) error) func(context.Context, Prompt) error {
	if a, ok := ctx.Value(askKey{}).(func(context.Context, Prompt) error); ok && a != nil {
		return a
	}
	return def
}

// Login signs in now (berth login): discovery from the resource's 401,
// registration in the spec's order, PKCE, loopback redirect, token stored.
// extraScopes are added (step-up). It needs o.Ask.
func Login(ctx context.Context, t Target, o Options, extraScopes ...string) (*State, error) {
	if o.Secrets == nil {
		return nil, errors.New("signin: Options.Secrets is required")
	}
	ask := askerOf(ctx, o.Ask)
	if ask == nil {
		return nil, &NeedSignInError{Target: t, Reason: "no way to show the sign-in page here"}
	}
	rules, err := rulesFor(t.Resource)
	if err != nil {
		return nil, err
	}
	req, resp, err := probe(ctx, t, rules)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden && len(resp.Header.Values("WWW-Authenticate")) == 0 {
		// A server that does not ask yet: discover anyway (2025-03-26
		// servers and those that answer 401 only to some requests).
		resp.Header = http.Header{}
	}
	var old *record
	if r, _ := readRecord(ctx, o.Secrets, t); r != nil && r.mismatch(t, o.Client) == "" {
		old = r
	}
	stepUp := len(extraScopes) > 0 && old != nil
	rec, err := authorize(ctx, flowArgs{t: t, o: o, ask: ask, req: req, resp: resp, extra: extraScopes, stepUp: stepUp, old: old})
	if err != nil {
		return nil, err
	}
	return rec.state(), nil
}

// probe sends the resource an unauthenticated initialize request, to read
// its 401 and WWW-Authenticate (only to the resource's origin).
func probe(ctx context.Context, t Target, rules netRules) (*http.Request, *http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"berth","version":"login"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Resource, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	hc := rules.httpClient()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("server %s: reaching %s to sign in: %w", t.ID(), t.Resource, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	return req, resp, nil
}

// Logout forgets the target's tokens and revokes them where the server
// supports RFC 7009; revoked reports whether the server confirmed the
// revocation of every token berth held (SignOut says which it did).
func Logout(ctx context.Context, t Target, o Options) (revoked bool, err error) {
	res, err := SignOut(ctx, t, o)
	if err != nil || res == nil {
		return false, err
	}
	return res.Revoked(), res.Err()
}

// LogoutResult is what SignOut did, token by token.
type LogoutResult struct {
	// SignedIn: there was a sign-in to forget (it is forgotten now).
	SignedIn bool
	// Issuer is the authorization server the tokens were issued by.
	Issuer string
	// RevocationEndpoint is false when the authorization server's
	// metadata names none: nothing was revoked.
	RevocationEndpoint bool
	// Tokens are the tokens berth held: the refresh token first (revoking
	// it ends the grant), then the access token.
	Tokens []TokenRevocation
	// Problem is why nothing could be sent to the revocation endpoint (it
	// is no longer an address berth may reach), "" otherwise.
	Problem string
}

// TokenRevocation is the outcome for one token; never the token itself.
type TokenRevocation struct {
	Kind      string    // "refresh token" or "access token"
	Revoked   bool      // the server answered 200: RFC 7009's confirmation
	Why       string    // why not, when not: the server's answer or the error
	ExpiresAt time.Time // for the access token: when it expires (zero: unknown)
}

// Revoked reports whether the server confirmed the revocation of every
// token berth held (false when there was none).
func (r *LogoutResult) Revoked() bool {
	if r == nil || len(r.Tokens) == 0 {
		return false
	}
	for _, tk := range r.Tokens {
		if !tk.Revoked {
			return false
		}
	}
	return true
}

// Err is the revocation's failure as an error, nil when every token was
// revoked, there was none, or the server names no revocation endpoint.
func (r *LogoutResult) Err() error {
	if r == nil || !r.RevocationEndpoint && r.Problem == "" {
		return nil
	}
	var errs []string
	if r.Problem != "" {
		errs = append(errs, r.Problem)
	}
	for _, tk := range r.Tokens {
		if !tk.Revoked && tk.Why != "" {
			errs = append(errs, "the "+tk.Kind+": "+tk.Why)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("the sign-in is forgotten, but %s did not revoke every token (%s)", r.Issuer, strings.Join(errs, "; "))
}

// SignOut forgets the target's tokens and revokes them where the server
// supports RFC 7009, and says which tokens the server confirmed revoked.
// The error is only a failure to forget; revocation outcomes are in the
// result.
func SignOut(ctx context.Context, t Target, o Options) (*LogoutResult, error) {
	if o.Secrets == nil {
		return nil, errors.New("signin: Options.Secrets is required")
	}
	var gone *record
	err := updateRecord(ctx, o.Secrets, t.Plugin, t.Server, func(old *record) (*record, error) {
		gone = old
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	if gone == nil || (gone.AccessToken == "" && gone.RefreshToken == "") {
		return &LogoutResult{}, nil
	}
	return revoke(ctx, gone), nil
}

// revoke asks the authorization server to revoke the record's tokens
// (RFC 7009): the refresh token (which ends the grant), then the access
// token.
func revoke(ctx context.Context, r *record) *LogoutResult {
	res := &LogoutResult{SignedIn: true, Issuer: r.Issuer, RevocationEndpoint: r.RevokeURL != ""}
	for _, tk := range []struct{ v, kind string }{{r.RefreshToken, "refresh token"}, {r.AccessToken, "access token"}} {
		if tk.v == "" {
			continue
		}
		tr := TokenRevocation{Kind: tk.kind}
		if tk.kind == "access token" {
			tr.ExpiresAt = r.Expiry
		}
		res.Tokens = append(res.Tokens, tr)
	}
	if r.RevokeURL == "" {
		return res
	}
	rules, err := rulesFor(r.Resource)
	if err == nil {
		err = checkRevokeURL(rules, r)
	}
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	hc := rules.httpClient()
	i := 0
	for _, tk := range []struct{ v, hint string }{{r.RefreshToken, "refresh_token"}, {r.AccessToken, "access_token"}} {
		if tk.v == "" {
			continue
		}
		tr := &res.Tokens[i]
		i++
		req, err := clientRequest(ctx, r, r.RevokeURL, url.Values{"token": {tk.v}, "token_type_hint": {tk.hint}})
		if err != nil {
			tr.Why = err.Error()
			continue
		}
		resp, err := hc.Do(req)
		if err != nil {
			tr.Why = "the revocation endpoint could not be reached: " + err.Error()
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			tr.Revoked = true
			continue
		}
		tr.Why = fmt.Sprintf("the revocation endpoint answered %d", resp.StatusCode)
		var v struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &v) == nil && errorCode(v.Error) {
			tr.Why += " " + v.Error
			if v.Error == "unsupported_token_type" {
				tr.Why += ": it cannot revoke this kind of token"
			}
		}
	}
	return res
}

// errorCode reports whether s is an OAuth error code as RFC 6749 allows
// (printable ASCII without quote or backslash), short enough to show.
func errorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == ' ' {
			return false
		}
	}
	return true
}

// checkRevokeURL holds the revocation endpoint, which gets both tokens
// and the client's secret, to the authorization server signed in to: the
// origin of its issuer or of its token endpoint (the secret goes there
// already), https (plain http only on loopback in tests).
func checkRevokeURL(rules netRules, r *record) error {
	u, err := rules.checkURL("the revocation endpoint", r.RevokeURL)
	if err != nil {
		return err
	}
	for _, v := range []string{r.Issuer, r.TokenURL} {
		if o, err := url.Parse(v); err == nil && o.Host != "" && sameOrigin(u, o) {
			return nil
		}
	}
	return fmt.Errorf("the revocation endpoint %s is not at the authorization server %s (neither its issuer's nor its token endpoint's origin); berth sends no token or client secret there", redact(u), r.Issuer)
}

// ForgetPlugin forgets (and best-effort revokes) every sign-in of a plugin.
func ForgetPlugin(ctx context.Context, s *secrets.Store, plugin string) error {
	ts := tokenStore(s)
	entries, err := ts.List()
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !slices.Contains(e.Plugins, plugin) {
			continue
		}
		v, _, err := ts.Get(ctx, e.Name)
		var rec *record
		if err == nil {
			rec, _ = parseRecord(v)
		}
		if rec != nil && rec.Plugin != plugin {
			continue
		}
		if rec == nil || recordName(plugin, rec.Server) != e.Name {
			// Unreadable: nothing to revoke, nothing another process
			// could refresh.
			if _, err := ts.Remove(ctx, e.Name); err != nil && !errors.Is(err, secrets.ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		// Read again and removed under the store's lock (as Logout), so
		// that what is revoked is what was stored last, not a token a
		// refresh in another process replaced meanwhile.
		var gone *record
		err = updateRecord(ctx, s, plugin, rec.Server, func(old *record) (*record, error) {
			if old != nil && old.Plugin != plugin {
				return old, nil
			}
			gone = old
			return nil, nil
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rec = gone
		if rec != nil {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			revoke(rctx, rec) // best effort: the sign-in is forgotten either way
			cancel()
		}
	}
	return errors.Join(errs...)
}

// Lookup reads what is stored, without network: for status. A sign-in
// stored for another issuer, resource or client than the target's now is
// reported as not signed in.
func Lookup(s *secrets.Store, t Target) (*State, error) {
	rec, err := readRecord(context.Background(), s, t)
	if err != nil {
		return nil, err
	}
	return lookupState(rec, t, nil), nil
}

// LookupWith is Lookup with the operator's client, which a stored sign-in
// must also match.
func LookupWith(s *secrets.Store, t Target, c *Client) (*State, error) {
	rec, err := readRecord(context.Background(), s, t)
	if err != nil {
		return nil, err
	}
	return lookupState(rec, t, c), nil
}

func lookupState(rec *record, t Target, c *Client) *State {
	if rec == nil || rec.mismatch(t, c) != "" {
		return &State{Resource: t.Resource}
	}
	st := rec.state()
	if rec.AccessToken == "" && rec.RefreshToken == "" {
		st.SignedIn = false
	}
	return st
}

// tokenErrorText says why a token request failed in berth's words: the
// OAuth error code and its description, or the HTTP status; never the
// answer's body, which may echo the code or a token.
func tokenErrorText(err error) string {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err.Error()
	}
	if re.ErrorCode == "" {
		if re.Response != nil {
			return fmt.Sprintf("the token endpoint answered %s", re.Response.Status)
		}
		return "the token endpoint refused it"
	}
	msg := "the token endpoint answered " + clip(re.ErrorCode)
	if d := clip(re.ErrorDescription); d != "" && !tokenLike.MatchString(d) {
		msg += " (" + d + ")"
	}
	return msg
}

// tokenLike finds a run of characters long enough to be a token or a code
// in a server's description, which is then not shown.
var tokenLike = regexp.MustCompile(`[A-Za-z0-9._~+/=-]{24,}`)
