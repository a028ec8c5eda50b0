package store

import "context"

// SetApprovalNotify turns the desktop notification of calls waiting for
// approval on or off.
func (s *Store) SetApprovalNotify(ctx context.Context, on bool) (*Config, error) {
	return s.UpdateConfig(ctx, func(c *Config) error {
		if c.ApprovalNotify == on {
			return ErrNoChange
		}
		c.ApprovalNotify = on
		return nil
	})
}
