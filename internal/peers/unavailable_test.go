package peers

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records whether it was failed or skipped.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }

// TestUnavailable: a missing real peer skips the test with the
// real-peer prefix the test summary counts, and fails it under
// BERTH_REQUIRE_PEERS=1.
func TestUnavailable(t *testing.T) {
	for _, env := range []string{"", "1"} {
		t.Setenv(requireEnv, env)
		r := &recorder{TB: t}
		Unavailable(r, "docker-registry is not installed")
		if env == "1" {
			if r.failed == "" || r.skipped != "" || !strings.Contains(r.failed, "BERTH_REQUIRE_PEERS=1") {
				t.Errorf("BERTH_REQUIRE_PEERS=1: failed %q, skipped %q; want a failure", r.failed, r.skipped)
			}
		} else if r.skipped == "" || r.failed != "" || !strings.HasPrefix(r.skipped, "real-peer: docker-registry is not installed") {
			t.Errorf("BERTH_REQUIRE_PEERS unset: failed %q, skipped %q; want a real-peer skip", r.failed, r.skipped)
		}
	}
}
