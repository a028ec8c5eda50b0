package store

import (
	"context"
	"fmt"
	"os"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/trust"
)

// Signers returns the signer policy of config.json, every signer
// re-validated.
func (s *Store) Signers() ([]trust.Signer, error) {
	c, err := s.Config()
	if err != nil {
		return nil, err
	}
	return c.Signers, nil
}

// AddSigner adds a signer to the policy, under the lock and only when no
// signer has its name yet. Build it with trust.NewKeySigner or
// trust.NewIdentitySigner. An identity signer's trusted root, when it
// names one, is copied to Paths.TrustedRoot first, so the policy never
// depends on a file elsewhere; the signer stored (and returned) names the
// copy. AddSigner bumps the state generation.
func (s *Store) AddSigner(ctx context.Context, sg trust.Signer) (trust.Signer, error) {
	if err := sg.Validate(); err != nil {
		return trust.Signer{}, err
	}
	var root []byte
	if sg.Kind == trust.KindIdentity && sg.TrustedRoot != "" {
		data, err := os.ReadFile(sg.TrustedRoot)
		if err != nil {
			return trust.Signer{}, err
		}
		root = data
	}
	var added trust.Signer
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		if _, ok := c.Signer(sg.Name); ok {
			return fmt.Errorf("a signer named %q exists already; remove it first with `berth signers remove %s`, or pick another name", sg.Name, sg.Name)
		}
		added = sg
		if root != nil {
			// Only now, under the lock and with the name free, may a file
			// of this signer be written.
			kept := s.paths.TrustedRoot(sg.Name)
			if err := atomicfile.WriteFile(kept, root, 0o600); err != nil {
				return err
			}
			withCopy, err := trust.NewIdentitySigner(sg.Name, sg.Issuer, sg.SAN, sg.SANRegex, kept)
			if err != nil {
				os.Remove(kept)
				return err
			}
			added = withCopy
		}
		c.Signers = append(c.Signers, added)
		return nil
	})
	if err != nil {
		return trust.Signer{}, err
	}
	return added, nil
}

// RemoveSigner removes the signer named name from the policy, and its
// copy of a trusted root. Plugins it signed then fail Verify until their
// signer is trusted again. RemoveSigner bumps the state generation.
func (s *Store) RemoveSigner(ctx context.Context, name string) (trust.Signer, error) {
	var removed trust.Signer
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		for i, sg := range c.Signers {
			if sg.Name == name {
				removed = sg
				c.Signers = append(c.Signers[:i], c.Signers[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("there is no signer %q (`berth signers list` shows them)", name)
	})
	if err != nil {
		return trust.Signer{}, err
	}
	os.Remove(s.paths.TrustedRoot(name))
	return removed, nil
}
