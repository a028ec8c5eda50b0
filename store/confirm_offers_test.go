package store

import (
	"context"
	"testing"
	"time"
)

// berth confirm confirms a value for every installed version of a plugin
// (internal/cli/confirm.go builds one batch over them). When two versions
// offer different values (1.0 offers "production", 1.1 "development"),
// both confirmations are kept: Confirm replaces by plugin, signer, source,
// name and offered value, so the other version, still enabled in some
// workspace, keeps starting.
func TestConfirmKeepsEveryVersionsOffer(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	a := ConfirmedValue{Plugin: "acme", Signer: "unsigned", Source: "https://market.example/acme", Name: "ACME_NODE_ENV", Offered: "production", Value: "x", Confirmed: now}
	b := a
	b.Offered = "development"
	if err := s.Confirm(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	c, err := s.Config()
	if err != nil {
		t.Fatalf("the config with both offers confirmed does not read back: %v", err)
	}
	_, okA := c.Confirmation("acme", "unsigned", a.Source, "ACME_NODE_ENV", "production")
	_, okB := c.Confirmation("acme", "unsigned", a.Source, "ACME_NODE_ENV", "development")
	if !okA || !okB {
		t.Errorf("one Confirm of both versions' offers kept production=%v development=%v", okA, okB)
	}
	// Confirming one offer again replaces only that one.
	a.Value = "y"
	if err := s.Confirm(ctx, a); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Config()
	if got, _ := c.Confirmation("acme", "unsigned", a.Source, "ACME_NODE_ENV", "production"); got.Value != "y" || len(c.Confirmed) != 2 {
		t.Errorf("after confirming production again: %+v", c.Confirmed)
	}
}
