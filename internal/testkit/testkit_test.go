package testkit

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

// TestUnavailableFailsUnderRequireRoot: a test that cannot get root or
// setpriv skips, and fails instead when BERTH_REQUIRE_ROOT is set.
func TestUnavailableFailsUnderRequireRoot(t *testing.T) {
	t.Setenv(RequireRootEnv, "")
	r := &recorder{TB: t}
	unavailable(r, "needs root, to act as a second user")
	if r.failed != "" || !strings.Contains(r.skipped, "needs root") || !strings.Contains(r.skipped, RequireRootEnv+"=1") {
		t.Fatalf("without %s: failed %q, skipped %q", RequireRootEnv, r.failed, r.skipped)
	}
	t.Setenv(RequireRootEnv, "1")
	r = &recorder{TB: t}
	unavailable(r, "needs root, to act as a second user")
	if r.skipped != "" || !strings.Contains(r.failed, "needs root") || !strings.Contains(r.failed, RequireRootEnv) {
		t.Fatalf("with %s=1: failed %q, skipped %q", RequireRootEnv, r.failed, r.skipped)
	}
}
