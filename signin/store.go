package signin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/berth-mcp/berth/secrets"
)

// Sign-ins live in a store of their own inside berth's secret store
// directory (the subdirectory signin/, its own index, values file and
// keychain service), so no name a manifest can give as a fromEnv source,
// and no `berth secret` command, reaches a token: the pool resolves
// sources in the main store only. `berth secret list` does not show them;
// `berth status` does, without values (Lookup).
const storeSubdir = "signin"

// tokenStore returns the sign-in store beside s.
func tokenStore(s *secrets.Store) *secrets.Store {
	return secrets.Open(filepath.Join(s.Dir(), storeSubdir), nil)
}

// recordName is the name of a target's record: one per plugin and
// server; the record says which issuer, resource and client it is for.
func recordName(plugin, server string) string {
	sum := sha256.Sum256([]byte(plugin + "\x00" + server))
	return "SIGNIN_" + hex.EncodeToString(sum[:16])
}

// Registration methods, in the spec's order.
const (
	regPreregistered = "preregistered"
	regMetadataDoc   = "metadata-document"
	regDynamic       = "dynamic"
)

// record is what is stored for one target: the token and everything it is
// valid for. It is JSON in the store; version 1.
type record struct {
	V            int       `json:"v"`
	Plugin       string    `json:"plugin"`
	Server       string    `json:"server"`
	Resource     string    `json:"resource"`
	Issuer       string    `json:"issuer"`
	ClientID     string    `json:"clientId"`
	ClientSecret string    `json:"clientSecret,omitempty"`
	Registration string    `json:"registration"`
	AuthStyle    int       `json:"authStyle"`
	TokenURL     string    `json:"tokenUrl"`
	RevokeURL    string    `json:"revocationUrl,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Issued       time.Time `json:"issued,omitzero"`
	Subject      string    `json:"subject,omitempty"`
}

func parseRecord(s string) (*record, error) {
	var r record
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("the stored sign-in does not parse: %v", err)
	}
	if r.V != 1 {
		return nil, fmt.Errorf("the stored sign-in has the format version %d; this berth reads version 1", r.V)
	}
	return &r, nil
}

func (r *record) encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// mismatch says why a stored record is not for target t with client c,
// or "" when it is.
func (r *record) mismatch(t Target, c *Client) string {
	switch {
	case r.Plugin != t.Plugin || r.Server != t.Server:
		return "it was made for another server"
	case r.Resource != t.Resource:
		return fmt.Sprintf("it was issued for %s, not %s", r.Resource, t.Resource)
	case t.OAuth.Issuer != "" && !issuersEqual(r.Issuer, t.OAuth.Issuer):
		return fmt.Sprintf("it was issued by %s, but the manifest pins %s", r.Issuer, t.OAuth.Issuer)
	}
	if id := preregisteredID(t, c); id != "" && r.ClientID != id {
		return fmt.Sprintf("it was issued to the client %s, not the configured %s", r.ClientID, id)
	}
	if t.OAuth.ClientID == "" && c != nil && c.Issuer != "" && !issuersEqual(r.Issuer, c.Issuer) {
		return fmt.Sprintf("it was issued by %s, but your client registration is for %s", r.Issuer, c.Issuer)
	}
	if id := preregisteredID(t, c); id == "" && c != nil && c.MetadataDocumentURL != "" && r.Registration == regMetadataDoc && r.ClientID != c.MetadataDocumentURL {
		return "it was issued to another client metadata document"
	}
	return ""
}

func issuersEqual(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// preregisteredID is the pre-registered client ID that applies: the
// manifest's, else the operator's.
func preregisteredID(t Target, c *Client) string {
	if t.OAuth.ClientID != "" {
		return t.OAuth.ClientID
	}
	if c != nil {
		return c.ClientID
	}
	return ""
}

func (r *record) state() *State {
	return &State{
		SignedIn:    r.AccessToken != "" || r.RefreshToken != "",
		Subject:     r.Subject,
		Issuer:      r.Issuer,
		Resource:    r.Resource,
		ClientID:    r.ClientID,
		Scopes:      slices.Clone(r.Scopes),
		ExpiresAt:   r.Expiry,
		Refreshable: r.RefreshToken != "",
	}
}

// readRecord reads a target's record; nil when there is none.
func readRecord(ctx context.Context, s *secrets.Store, t Target) (*record, error) {
	ts := tokenStore(s)
	name := recordName(t.Plugin, t.Server)
	if _, ok, err := ts.Lookup(name); err != nil || !ok {
		return nil, err
	}
	v, _, err := ts.Get(ctx, name)
	if errors.Is(err, secrets.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := parseRecord(v)
	if err != nil {
		return nil, fmt.Errorf("server %s: %v; sign in again to replace it (%s), or forget it (berth logout %s)", t.ID(), err, t.LoginCommand(), t.ID())
	}
	return r, nil
}

// updateRecord is a locked read-modify-write of a target's record: f gets
// the stored record (nil for none) and returns the one to store, nil to
// forget it, or the same pointer to keep it.
func updateRecord(ctx context.Context, s *secrets.Store, plugin, server string, f func(old *record) (*record, error)) error {
	ts := tokenStore(s)
	name := recordName(plugin, server)
	b, _, err := ts.Where(name)
	if err != nil {
		return err
	}
	return ts.Update(ctx, name, b, []secrets.Binding{{Plugin: plugin}}, func(old string, had bool) (string, bool, error) {
		var cur *record
		if had {
			var err error
			if cur, err = parseRecord(old); err != nil {
				cur = nil // an unreadable record is replaced
			}
		}
		next, err := f(cur)
		if err != nil {
			return "", false, err
		}
		switch {
		case next == nil:
			return "", true, nil
		case next == cur:
			return "", false, nil
		}
		next.V = 1
		return next.encode(), false, nil
	})
}

// subjectOf reads the "sub" claim of a JWT access token, for display only
// (nothing is decided on it, so it is not verified).
func subjectOf(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(b, &c) != nil || len(c.Sub) > 256 || strings.ContainsFunc(c.Sub, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return ""
	}
	return c.Sub
}
