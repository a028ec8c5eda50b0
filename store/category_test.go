package store

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/trust"
)

// TestCategoryErrors: Untrustedf and Driftf read as the sentence given,
// are their category for errors.Is (the exit code), and keep a %w cause.
func TestCategoryErrors(t *testing.T) {
	err := Untrustedf("the signature of %s is missing (%w); re-trust it", "acme", fs.ErrNotExist)
	if got := err.Error(); got != "the signature of acme is missing (file does not exist); re-trust it" {
		t.Errorf("message %q", got)
	}
	if !errors.Is(err, trust.ErrUntrusted) || !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrDrift) {
		t.Errorf("categories of %v", err)
	}
	d := Driftf("%s drifted; re-trust it", "acme")
	if !errors.Is(d, ErrDrift) || errors.Is(d, trust.ErrUntrusted) || strings.Contains(d.Error(), ": drift") {
		t.Errorf("Driftf: %v", d)
	}
	for _, e := range []error{&NoSignerError{Source: "./x", Digest: "sha256:1"}, &SourceChangeError{Name: "a", Version: "1.0.0", Trusted: "s1", Offered: "s2"}} {
		if strings.Contains(e.Error(), ": untrusted") || !errors.Is(e, trust.ErrUntrusted) {
			t.Errorf("%T: %v", e, e)
		}
	}
}
