package store

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// SandboxSettings are the operator's confinement settings in config.json
// (docs/sandbox.md §Configuration). The zero value is berth's default:
// undeclared network open, confinement not required, no server run
// unconfined, no upstream proxy.
type SandboxSettings struct {
	// UndeclaredNetwork is "none" when a server that declares no network
	// gets none; "" (or "open") leaves it open.
	UndeclaredNetwork string `json:"undeclaredNetwork,omitempty"`
	// Require refuses to start a local server that declares no sandbox or
	// that this host cannot confine in full.
	Require bool `json:"require,omitempty"`
	// Unconfined are the servers ("<plugin>__<server>", as berth status
	// names them) that the operator runs unconfined, sorted.
	Unconfined []string `json:"unconfined,omitempty"`
	// UpstreamProxy is the http://HOST:PORT proxy berth's egress proxy
	// connects through; "" for none.
	UpstreamProxy string `json:"upstreamProxy,omitempty"`
}

// The keys of berth config that set SandboxSettings.
const (
	SandboxKeyUndeclaredNetwork = "sandbox-undeclared-network"
	SandboxKeyRequire           = "sandbox-require"
	SandboxKeyUnconfined        = "sandbox-unconfined"
	SandboxKeyUpstreamProxy     = "sandbox-upstream-proxy"
)

// SandboxKeys are the sandbox keys of berth config, in the order shown.
var SandboxKeys = []string{SandboxKeyUndeclaredNetwork, SandboxKeyRequire, SandboxKeyUnconfined, SandboxKeyUpstreamProxy}

// SandboxOf returns c's settings; never nil.
func (c *Config) SandboxOf() SandboxSettings {
	if c == nil || c.Sandbox == nil {
		return SandboxSettings{}
	}
	return *c.Sandbox
}

// Value returns the setting of key as berth config prints it.
func (s SandboxSettings) Value(key string) string {
	switch key {
	case SandboxKeyUndeclaredNetwork:
		if s.UndeclaredNetwork == "" {
			return "open"
		}
		return s.UndeclaredNetwork
	case SandboxKeyRequire:
		if s.Require {
			return "on"
		}
		return "off"
	case SandboxKeyUnconfined:
		return strings.Join(s.Unconfined, ",")
	case SandboxKeyUpstreamProxy:
		return s.UpstreamProxy
	}
	return ""
}

// UnconfinedServer reports whether the operator runs server unconfined.
func (s SandboxSettings) UnconfinedServer(id string) bool {
	return slices.Contains(s.Unconfined, id)
}

var serverIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*__[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseSandboxSetting checks value for key and applies it to s. The error
// names the key, the accepted values and the fix.
func ParseSandboxSetting(s *SandboxSettings, key, value string) error {
	switch key {
	case SandboxKeyUndeclaredNetwork:
		switch value {
		case "open":
			s.UndeclaredNetwork = ""
		case "none":
			s.UndeclaredNetwork = "none"
		default:
			return fmt.Errorf("%s is open or none, not %q", key, value)
		}
	case SandboxKeyRequire:
		switch value {
		case "on":
			s.Require = true
		case "off":
			s.Require = false
		default:
			return fmt.Errorf("%s is on or off, not %q", key, value)
		}
	case SandboxKeyUnconfined:
		var ids []string
		for _, id := range strings.Split(value, ",") {
			id = strings.TrimSpace(id)
			if id == "" {
				continue
			}
			if !serverIDPattern.MatchString(id) {
				return fmt.Errorf("%s: %q is not a server as berth status names it (PLUGIN__SERVER); give a comma-separated list of those, or \"\" to clear it", key, id)
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		s.Unconfined = slices.Compact(ids)
	case SandboxKeyUpstreamProxy:
		if value != "" {
			u, err := url.Parse(value)
			if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
				return fmt.Errorf("%s is http://HOST:PORT (no user, path or query), or \"\" for none; not %q", key, value)
			}
			value = "http://" + u.Host
		}
		s.UpstreamProxy = value
	default:
		return fmt.Errorf("%q is not a sandbox setting; the keys are %s", key, strings.Join(SandboxKeys, ", "))
	}
	return nil
}

// SetSandbox sets one sandbox setting in config.json (ParseSandboxSetting)
// and bumps the state generation, so running pools apply it at their
// servers' next start.
func (s *Store) SetSandbox(ctx context.Context, key, value string) (SandboxSettings, error) {
	var out SandboxSettings
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		cur := c.SandboxOf()
		next := cur
		next.Unconfined = slices.Clone(cur.Unconfined)
		if err := ParseSandboxSetting(&next, key, value); err != nil {
			return err
		}
		out = next
		if cur.Value(key) == next.Value(key) {
			return ErrNoChange
		}
		if next.UndeclaredNetwork == "" && !next.Require && len(next.Unconfined) == 0 && next.UpstreamProxy == "" {
			c.Sandbox = nil
		} else {
			c.Sandbox = &next
		}
		return nil
	})
	return out, err
}

// checkSandbox finds what typing cannot in a hand-edited sandbox object.
func (c *Config) checkSandbox() []string {
	if c.Sandbox == nil {
		return nil
	}
	var ps []string
	s := *c.Sandbox
	for _, k := range SandboxKeys {
		probe := SandboxSettings{}
		if err := ParseSandboxSetting(&probe, k, s.Value(k)); err != nil {
			ps = append(ps, "sandbox: "+err.Error())
		}
	}
	return ps
}
