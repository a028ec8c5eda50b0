package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
)

// ConfirmedValue is a value the operator confirmed for one input of a
// plugin (bundle.ImportInput.Confirm): a constant its publisher fixes
// (NODE_ENV=production) or a non-sensitive option. It is kept in
// config.json, never in the bundle, and it reaches only the servers of
// Plugin whose enabled version is signed by Signer (for an unsigned
// version: came from Source) and still offers the value Offered: a version
// from another signer or another source, or one whose publisher changed
// the value offered, asks again.
type ConfirmedValue struct {
	Plugin string `json:"plugin"`
	// Signer is the SignerIdentity of the trust record it was confirmed
	// for ("unsigned" for a bundle trusted by its digest).
	Signer string `json:"signer"`
	// Source is the Record.ConfirmSource it was confirmed for: "" for a
	// signed version, the origin of an unsigned version's source (every
	// unsigned version has the signer identity "unsigned", so the signer
	// alone cannot tell two sources apart).
	Source string `json:"source,omitempty"`
	// Name is the input's fromEnv: the name the manifest reads it by.
	Name string `json:"name"`
	// Offered is the publisher's value (the input's default) when it was
	// confirmed; "" when the source offered none.
	Offered string `json:"offered"`
	// Value is the confirmed value; "" for an optional input left unset.
	Value     string    `json:"value"`
	Confirmed time.Time `json:"confirmed"`
}

// Confirmation returns the value confirmed for the input name of plugin,
// signed by signer, from source (Record.ConfirmSource), that offered
// offered.
func (c *Config) Confirmation(plugin, signer, source, name, offered string) (ConfirmedValue, bool) {
	for _, v := range c.Confirmed {
		if v.Plugin == plugin && v.Signer == signer && v.Source == source && v.Name == name && v.Offered == offered {
			return v, true
		}
	}
	return ConfirmedValue{}, false
}

// ConfirmationsOf returns the values confirmed for the input name of
// plugin, for any signer or offer: what an earlier version was given.
func (c *Config) ConfirmationsOf(plugin, name string) []ConfirmedValue {
	var out []ConfirmedValue
	for _, v := range c.Confirmed {
		if v.Plugin == plugin && v.Name == name {
			out = append(out, v)
		}
	}
	return out
}

// Confirm records vals in config.json, each replacing what was confirmed
// for its plugin, signer, source, name and offered value before: values
// confirmed for other offers (another installed version's) stay. Running pools pick the change
// up (the generation is bumped).
func (s *Store) Confirm(ctx context.Context, vals ...ConfirmedValue) error {
	for _, v := range vals {
		if err := v.check(); err != nil {
			return err
		}
	}
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		for _, v := range vals {
			c.Confirmed = slices.DeleteFunc(c.Confirmed, func(o ConfirmedValue) bool {
				return o.Plugin == v.Plugin && o.Signer == v.Signer && o.Source == v.Source && o.Name == v.Name && o.Offered == v.Offered
			})
			c.Confirmed = append(c.Confirmed, v)
		}
		sortConfirmed(c.Confirmed)
		return nil
	})
	return err
}

// ForgetConfirmed drops every value confirmed for plugin (berth revoke of
// its last trusted version), returning the names it dropped.
func (s *Store) ForgetConfirmed(ctx context.Context, plugin string) ([]string, error) {
	var gone []string
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		for _, v := range c.Confirmed {
			if v.Plugin == plugin && !slices.Contains(gone, v.Name) {
				gone = append(gone, v.Name)
			}
		}
		if len(gone) == 0 {
			return ErrNoChange
		}
		c.Confirmed = slices.DeleteFunc(c.Confirmed, func(v ConfirmedValue) bool { return v.Plugin == plugin })
		return nil
	})
	return gone, err
}

func sortConfirmed(vs []ConfirmedValue) {
	slices.SortFunc(vs, func(a, b ConfirmedValue) int {
		if c := strings.Compare(a.Plugin, b.Plugin); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := strings.Compare(a.Signer, b.Signer); c != 0 {
			return c
		}
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Offered, b.Offered)
	})
}

// check refuses an entry berth would not write.
func (v ConfirmedValue) check() error {
	switch {
	case !bundle.IsValidName(v.Plugin):
		return fmt.Errorf("confirmed value: %q is not a plugin name", v.Plugin)
	case v.Signer == "":
		return fmt.Errorf("confirmed value %s of %s: no signer", v.Name, v.Plugin)
	case len(v.Value) > bundle.MaxConfirmedValue || len(v.Offered) > bundle.MaxConfirmedValue:
		return fmt.Errorf("confirmed value %s of %s: longer than %d bytes", v.Name, v.Plugin, bundle.MaxConfirmedValue)
	}
	if err := bundle.CheckConfirmedValue(bundle.ImportInput{FromEnv: v.Name}, v.Value); err != nil {
		return fmt.Errorf("confirmed value of plugin %s: %w", v.Plugin, err)
	}
	if !bundle.IsValidEnvName(v.Name) {
		return fmt.Errorf("confirmed value of plugin %s: %q is not a variable name", v.Plugin, v.Name)
	}
	return nil
}
