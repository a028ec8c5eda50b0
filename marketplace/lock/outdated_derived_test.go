package lock

import (
	"testing"
	"time"

	"github.com/berth-mcp/berth/store"
)

// Outdated's current version of a plugin: among release versions the
// highest; between a release version and a derived one (the publisher
// dropped or restored plugin.json's version) the one trusted last, so an
// upgrade from 1.2.0 to a derived version is not offered again forever.
func TestLaterRecordDerivedAndRelease(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rec := func(v string, at time.Duration) *store.Record {
		return &store.Record{Name: "p", Version: v, TrustedAt: t0.Add(at)}
	}
	for _, tc := range []struct {
		l, r *store.Record
		want bool
	}{
		{rec("1.0.0", 2), rec("1.2.0", 1), true},                                       // semver
		{rec("0.0.0-berth.aaaaaaaaaaaa", 1), rec("1.2.0", 2), true},                    // release trusted last
		{rec("0.0.0-berth.aaaaaaaaaaaa", 2), rec("1.2.0", 1), false},                   // derived trusted last
		{rec("0.0.0-berth.aaaaaaaaaaaa", 1), rec("0.0.0-berth.bbbbbbbbbbbb", 2), true}, // the store orders derived ones by time
	} {
		if got := laterRecord(tc.l, tc.r); got != tc.want {
			t.Errorf("laterRecord(%s at %v, %s at %v) = %v, want %v", tc.l.Version, tc.l.TrustedAt, tc.r.Version, tc.r.TrustedAt, got, tc.want)
		}
	}
}
