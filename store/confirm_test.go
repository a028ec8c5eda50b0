package store

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestConfirm(t *testing.T) {
	ctx := context.Background()
	paths, err := NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := Open(paths, nil)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	v := ConfirmedValue{Plugin: "acme", Signer: "unsigned", Name: "ACME_NODE_ENV", Offered: "production", Value: "production", Confirmed: now}
	if err := st.Confirm(ctx, v); err != nil {
		t.Fatal(err)
	}
	c, err := st.Config()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Confirmation("acme", "unsigned", "", "ACME_NODE_ENV", "production"); !ok || got.Value != "production" {
		t.Fatalf("Confirmation = %+v, %v", got, ok)
	}
	// Another plugin, another signer, another source, another offer: not
	// confirmed.
	for _, q := range [][5]string{
		{"other", "unsigned", "", "ACME_NODE_ENV", "production"},
		{"acme", "key abc", "", "ACME_NODE_ENV", "production"},
		{"acme", "unsigned", "https://elsewhere.example/acme", "ACME_NODE_ENV", "production"},
		{"acme", "unsigned", "", "ACME_NODE_ENV", "development"},
		{"acme", "unsigned", "", "ACME_MCP_DXT", "production"},
	} {
		if _, ok := c.Confirmation(q[0], q[1], q[2], q[3], q[4]); ok {
			t.Errorf("Confirmation%v is confirmed", q)
		}
	}
	// A new confirmation replaces the old one for that plugin, signer,
	// source, name and offer.
	v.Value = "test"
	if err := st.Confirm(ctx, v); err != nil {
		t.Fatal(err)
	}
	if c, _ = st.Config(); len(c.Confirmed) != 1 || c.Confirmed[0].Value != "test" || len(c.ConfirmationsOf("acme", "ACME_NODE_ENV")) != 1 {
		t.Fatalf("after a second Confirm: %+v", c.Confirmed)
	}
	// What berth would not write is refused, and never kept.
	for _, bad := range []ConfirmedValue{
		{Plugin: "Acme", Signer: "unsigned", Name: "X", Value: "a"},
		{Plugin: "acme", Signer: "", Name: "X", Value: "a"},
		{Plugin: "acme", Signer: "unsigned", Name: "1X", Value: "a"},
		{Plugin: "acme", Signer: "unsigned", Name: "X", Value: "a\nb"},
		{Plugin: "acme", Signer: "unsigned", Name: "X", Value: "ghp_0123456789abcdefghij"},
	} {
		if err := st.Confirm(ctx, bad); err == nil {
			t.Errorf("Confirm(%+v) = nil", bad)
		}
	}
	gone, err := st.ForgetConfirmed(ctx, "acme")
	if err != nil || len(gone) != 1 {
		t.Fatalf("ForgetConfirmed = %v, %v", gone, err)
	}
	if c, _ = st.Config(); len(c.Confirmed) != 0 {
		t.Fatalf("after ForgetConfirmed: %+v", c.Confirmed)
	}
	// A hand-edited config.json with two values for one input is refused.
	dup := `{"signers": [], "confirmed": [
{"plugin": "acme", "signer": "unsigned", "name": "X", "offered": "", "value": "a", "confirmed": "2026-12-02T10:00:00Z"},
{"plugin": "acme", "signer": "unsigned", "name": "X", "offered": "", "value": "b", "confirmed": "2026-12-02T10:00:00Z"}]}`
	if err := os.WriteFile(paths.Config(), []byte(dup), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Config(); err == nil || !strings.Contains(err.Error(), "a second value of X") {
		t.Fatalf("Config with a duplicate = %v", err)
	}
}
