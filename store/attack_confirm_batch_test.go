package store

import (
	"context"
	"testing"
	"time"
)

// REVIEW: internal/cli/confirm.go confirmValues builds one batch over
// every installed version of a plugin, one ConfirmedValue per (signer,
// name, offered). Store.Confirm replaces by (plugin, signer, name) only,
// so when two installed versions offer different values (1.0 offers
// "production", 1.1 offers "development"), `berth confirm acme
// ACME_NODE_ENV=x` keeps only the last one: the other version, still
// enabled in some workspace, stays unconfirmed and does not start.
func TestAttackConfirmBatchDropsOtherVersionsOffer(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	a := ConfirmedValue{Plugin: "acme", Signer: "unsigned", Name: "ACME_NODE_ENV", Offered: "production", Value: "x", Confirmed: now}
	b := a
	b.Offered = "development"
	if err := s.Confirm(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Config()
	_, okA := c.Confirmation("acme", "unsigned", "ACME_NODE_ENV", "production")
	_, okB := c.Confirmation("acme", "unsigned", "ACME_NODE_ENV", "development")
	if !okA || !okB {
		t.Errorf("one Confirm of both versions' offers kept production=%v development=%v", okA, okB)
	}
}
