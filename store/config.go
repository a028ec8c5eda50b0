package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/berth-mcp/berth/trust"
)

// Config is config.json: the operator's signer policy and tool policy.
// Change it with UpdateConfig, or with AddSigner, RemoveSigner, SetPolicy
// and UnsetPolicy.
type Config struct {
	Signers    []trust.Signer `json:"signers"`
	ToolPolicy []PolicyRule   `json:"toolPolicy,omitempty"`
	// MinReleaseAge is the operator's cooldown for catalog installs, a Go
	// duration ("72h0m0s"): versions released less long ago are skipped.
	// "" means none. Read it with ReleaseCooldown, set it with
	// SetMinReleaseAge.
	MinReleaseAge string `json:"minReleaseAge,omitempty"`
	// Confirmed are the values the operator confirmed for plugins' inputs
	// (confirm.go): change them with Confirm and ForgetConfirmed.
	Confirmed []ConfirmedValue `json:"confirmed,omitempty"`
	// OAuthClients are the operator's own OAuth client registrations,
	// keyed by "plugin__server" (oauthclient.go): change them with
	// SetOAuthClient and ForgetOAuthClients.
	OAuthClients map[string]OAuthClient `json:"oauthClients,omitempty"`
	// Sandbox are the operator's confinement settings (sandboxcfg.go,
	// docs/sandbox.md §Configuration): change them with SetSandbox.
	Sandbox *SandboxSettings `json:"sandbox,omitempty"`
	// FetchAllowScripts names the npm packages whose install scripts may
	// run, confined, when a fetched server is resolved at trust
	// (docs/sandbox.md); any other package with one is refused. Set it
	// with SetFetchAllowScripts.
	FetchAllowScripts []string `json:"fetchAllowScripts,omitempty"`
	// ApprovalNotify turns on the desktop notification berth serve shows
	// when a call starts waiting for approval. Set it with
	// SetApprovalNotify.
	ApprovalNotify bool `json:"approvalNotify,omitempty"`
}

// Signer returns the signer named name.
func (c *Config) Signer(name string) (trust.Signer, bool) {
	for _, s := range c.Signers {
		if s.Name == name {
			return s, true
		}
	}
	return trust.Signer{}, false
}

// Config reads config.json without the lock. A missing file is the empty
// configuration. It is decoded strictly (see FileError: an unknown field is
// refused, never dropped at the next write; duplicate or case-variant keys
// are refused, so no rule can hide behind another), and two rules for the
// same pattern are refused. Every signer is re-validated: a damaged entry
// is an error, never silently ignored.
func (s *Store) Config() (*Config, error) {
	c := &Config{}
	if _, err := readStrict(s.paths.Config(), c); err != nil {
		return nil, err
	}
	if ps := c.check(); len(ps) > 0 {
		return nil, &FileError{Path: s.paths.Config(), Problems: ps, Fix: "keep one rule per pattern and one confirmed value per plugin, signer and name: remove the others by hand (berth policy list shows the rules berth uses; berth enable PLUGIN --confirm NAME confirms a value again)"}
	}
	if ps := c.checkSandbox(); len(ps) > 0 {
		return nil, &FileError{Path: s.paths.Config(), Problems: ps, Fix: "set the value again with berth config set KEY VALUE (docs/sandbox.md §Configuration)"}
	}
	if ps := c.checkOAuthClients(); len(ps) > 0 {
		return nil, &FileError{Path: s.paths.Config(), Problems: ps, Fix: "correct or remove the entry of \"oauthClients\" by hand, then set it again with berth login PLUGIN__SERVER --client-id ID (docs/signin.md)"}
	}
	var errs []error
	for _, sg := range c.Signers {
		if err := sg.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s has an unusable signer; fix or remove it with `berth signers remove NAME`: %w", s.paths.Config(), errors.Join(errs...))
	}
	return c, nil
}

// UpdateConfig changes config.json under the lock and bumps the state
// generation, so running pools pick the change up. fn may return
// ErrNoChange.
func (s *Store) UpdateConfig(ctx context.Context, fn func(*Config) error) (*Config, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.updateConfigLocked(fn)
}

// updateConfigLocked is UpdateConfig for a caller that holds the lock.
func (s *Store) updateConfigLocked(fn func(*Config) error) (*Config, error) {
	c, err := s.Config()
	if err != nil {
		return nil, err
	}
	if err := fn(c); err != nil {
		if errors.Is(err, ErrNoChange) {
			return c, nil
		}
		return nil, err
	}
	sort.SliceStable(c.Signers, func(i, j int) bool { return c.Signers[i].Name < c.Signers[j].Name })
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := s.replaceLocked(s.paths.Config(), append(data, '\n'), "config-temp-written"); err != nil {
		return nil, err
	}
	if _, err := s.updateLocked(func(*State) error { return nil }); err != nil {
		return nil, err
	}
	return c, nil
}

// check finds what typing cannot: two rules for one pattern (which one
// applied would depend on their order).
func (c *Config) check() []string {
	var ps []string
	seen := map[string]int{}
	for i, r := range c.ToolPolicy {
		if j, dup := seen[r.Pattern]; dup {
			ps = append(ps, fmt.Sprintf("toolPolicy[%d]: a second rule for %q (the first is toolPolicy[%d])", i, r.Pattern, j))
			continue
		}
		seen[r.Pattern] = i
	}
	type key struct{ plugin, signer, source, name, offered string }
	have := map[key]int{}
	for i, v := range c.Confirmed {
		if err := v.check(); err != nil {
			ps = append(ps, fmt.Sprintf("confirmed[%d]: %v", i, err))
		}
		k := key{v.Plugin, v.Signer, v.Source, v.Name, v.Offered}
		if j, dup := have[k]; dup {
			ps = append(ps, fmt.Sprintf("confirmed[%d]: a second value of %s for %s offering %q (the first is confirmed[%d])", i, v.Name, v.Plugin, v.Offered, j))
			continue
		}
		have[k] = i
	}
	return ps
}

func sortStrings(s []string) { sort.Strings(s) }
