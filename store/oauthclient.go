package store

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/secrets"
)

// OAuthClient is the operator's own OAuth client registration for one
// remote server that signs in (berth login --client-id, --client-secret-from,
// --client-metadata-url): used instead of the manifest's clientId and of
// dynamic registration. It is kept in config.json under
// "oauthClients", keyed by "plugin__server". It never holds a secret:
// ClientSecretName names a secret in berth's secret store, which must be
// bound to the plugin (berth secret bind NAME --plugin PLUGIN).
type OAuthClient struct {
	// ClientID is a client registered with the authorization server.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecretName names the client's secret in berth's secret store
	// (a confidential client); "" for a public client.
	ClientSecretName string `json:"clientSecretName,omitempty"`
	// ClientMetadataURL is a client ID metadata document (https) the
	// operator publishes; used where the authorization server advertises
	// client_id_metadata_document_supported and no ClientID is set.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// Issuer is the authorization server the client is registered with
	// (its issuer, https): berth uses the client, and sends its secret,
	// only there. Required with ClientSecretName.
	Issuer string `json:"issuer,omitempty"`
}

// IsZero reports whether c sets nothing.
func (c OAuthClient) IsZero() bool { return c == OAuthClient{} }

// Check refuses a registration berth would not use, naming the field and
// the fix.
func (c OAuthClient) Check() error {
	switch {
	case c.IsZero():
		return fmt.Errorf("an OAuth client sets nothing: give --client-id, or --client-metadata-url")
	case c.ClientSecretName != "" && c.ClientID == "":
		return fmt.Errorf("clientSecretName %s without clientId: a client secret belongs to a registered client; add --client-id", c.ClientSecretName)
	case c.ClientSecretName != "" && c.Issuer == "":
		return fmt.Errorf("clientSecretName %s without issuer: berth sends a client secret only to the authorization server that issued it; name that server's issuer (berth login PLUGIN__SERVER --client-issuer URL)", c.ClientSecretName)
	case strings.TrimSpace(c.ClientID) != c.ClientID || strings.ContainsFunc(c.ClientID, func(r rune) bool { return r < 0x20 || r == 0x7f }) || len(c.ClientID) > 512:
		return fmt.Errorf("clientId %q has spaces around it, control characters, or more than 512 bytes", c.ClientID)
	}
	if c.ClientSecretName != "" {
		if err := secrets.CheckName(c.ClientSecretName); err != nil {
			return fmt.Errorf("clientSecretName: %w", err)
		}
	}
	if c.Issuer != "" {
		if _, err := bundle.ParseIssuer(c.Issuer); err != nil {
			return fmt.Errorf("issuer: %v", err)
		}
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || u.Path == "" || u.Path == "/" {
			return fmt.Errorf("clientMetadataUrl %q is not an https URL with a path (a client ID metadata document is an https URL with a path, no user info and no fragment)", c.ClientMetadataURL)
		}
	}
	return nil
}

// checkOAuthClientKey checks a key of oauthClients: "plugin__server".
func checkOAuthClientKey(k string) error {
	p, s, ok := strings.Cut(k, "__")
	if !ok || !bundle.IsValidName(p) || !bundle.IsValidServerName(s) {
		return fmt.Errorf("%q is not PLUGIN__SERVER (a plugin name, two underscores, a server name of that plugin)", k)
	}
	return nil
}

// OAuthClientFor returns the operator's registration for the server id
// ("plugin__server").
func (c *Config) OAuthClientFor(id string) (OAuthClient, bool) {
	oc, ok := c.OAuthClients[id]
	return oc, ok
}

// SetOAuthClient records the operator's registration for the server id
// ("plugin__server"), replacing the one before; a zero oc removes it.
func (s *Store) SetOAuthClient(ctx context.Context, id string, oc OAuthClient) error {
	if err := checkOAuthClientKey(id); err != nil {
		return err
	}
	if !oc.IsZero() {
		if err := oc.Check(); err != nil {
			return err
		}
	}
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		old, had := c.OAuthClients[id]
		switch {
		case oc.IsZero() && !had, had && old == oc:
			return ErrNoChange
		case oc.IsZero():
			delete(c.OAuthClients, id)
		default:
			if c.OAuthClients == nil {
				c.OAuthClients = map[string]OAuthClient{}
			}
			c.OAuthClients[id] = oc
		}
		return nil
	})
	return err
}

// ForgetOAuthClients drops the operator's registrations for the servers
// of plugin (berth revoke of its last trusted version), returning the
// server ids it dropped.
func (s *Store) ForgetOAuthClients(ctx context.Context, plugin string) ([]string, error) {
	var gone []string
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		for _, k := range slices.Sorted(maps.Keys(c.OAuthClients)) {
			if p, _, _ := strings.Cut(k, "__"); p == plugin {
				gone = append(gone, k)
				delete(c.OAuthClients, k)
			}
		}
		if len(gone) == 0 {
			return ErrNoChange
		}
		return nil
	})
	return gone, err
}

// checkOAuthClients finds the registrations berth would not use.
func (c *Config) checkOAuthClients() []string {
	var ps []string
	for _, k := range slices.Sorted(maps.Keys(c.OAuthClients)) {
		if err := checkOAuthClientKey(k); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", jsonPath("oauthClients", k), err))
			continue
		}
		if err := c.OAuthClients[k].Check(); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", jsonPath("oauthClients", k), err))
		}
	}
	return ps
}
