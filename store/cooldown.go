package store

import (
	"context"
	"fmt"
	"time"
)

// MaxMinReleaseAge bounds the release cooldown (one year).
const MaxMinReleaseAge = 366 * 24 * time.Hour

// ReleaseCooldown is the operator's min-release-age: catalog versions
// released less long ago are not installed. 0 means none.
func (c *Config) ReleaseCooldown() (time.Duration, error) {
	if c.MinReleaseAge == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.MinReleaseAge)
	if err != nil || d < 0 || d > MaxMinReleaseAge {
		return 0, fmt.Errorf("config.json: minReleaseAge %q is not a duration from 0 to %s; set it again with `berth config set min-release-age DUR`", c.MinReleaseAge, MaxMinReleaseAge)
	}
	return d, nil
}

// SetMinReleaseAge sets the operator's release cooldown in config.json
// (0 removes it) and bumps the state generation.
func (s *Store) SetMinReleaseAge(ctx context.Context, d time.Duration) error {
	if d < 0 || d > MaxMinReleaseAge {
		return fmt.Errorf("a min-release-age of %s is out of range: give a duration from 0 to %s (for example 72h or 3d)", d, MaxMinReleaseAge)
	}
	v := ""
	if d > 0 {
		v = d.String()
	}
	_, err := s.UpdateConfig(ctx, func(c *Config) error {
		if c.MinReleaseAge == v {
			return ErrNoChange
		}
		c.MinReleaseAge = v
		return nil
	})
	return err
}
