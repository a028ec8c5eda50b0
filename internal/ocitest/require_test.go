package ocitest

import "testing"

func TestWithoutModFlag(t *testing.T) {
	if got := withoutModFlag("-p=1 -mod=vendor -buildvcs=false --mod=mod"); got != "-p=1 -buildvcs=false" {
		t.Fatalf("got %q", got)
	}
}
