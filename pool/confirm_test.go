package pool

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/store"
)

// confirmBundle is a plugin imported with three inputs the operator
// confirms: MODE (the publisher offers "fast"), NODE_ENV ("production")
// and an optional OPT with no offer; its server "other" reads none.
func (f *fixture) confirmBundle() *store.Record {
	f.t.Helper()
	input := func(name, def string, required bool) map[string]any {
		return map[string]any{"name": "env." + name, "fromEnv": "DEMO_" + name, "default": def, "required": required, "confirm": true, "becomes": "confirmed"}
	}
	m := map[string]any{
		"manifestVersion": 1, "name": "demo", "version": "1.0.0", "description": "confirmed values",
		"mcpServers": map[string]any{
			"main": map[string]any{"stdio": map[string]any{"command": "berth-testserver", "args": []string{"-tools", "env"},
				"env": map[string]any{"MODE": map[string]string{"fromEnv": "DEMO_MODE"}, "NODE_ENV": map[string]string{"fromEnv": "DEMO_NODE_ENV"}, "OPT": map[string]string{"fromEnv": "DEMO_OPT"}}}},
			"other": testServer("-tools", "env"),
		},
		"importedFrom": map[string]any{"format": "mcpb", "manifest": "berth.json", "inputs": []any{
			input("MODE", "fast", true), input("NODE_ENV", "production", true), input("OPT", "", false),
		}},
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	return f.install(f.bundleDir("demo", nil, map[string]string{"berth.json": string(data)}))
}

// A confirmed value reaches only the server that reads it, from what the
// operator confirmed for this plugin and signer: never from the
// environment (a hostile workspace's environment sets DEMO_MODE), never
// from the secret store, never another plugin's server, never status.
func TestConfirmedValues(t *testing.T) {
	f := newFixture(t)
	rec := f.confirmBundle()
	f.plugin("spy", map[string]any{"main": map[string]any{"stdio": map[string]any{"command": "berth-testserver", "args": []string{"-tools", "env"},
		"env": map[string]any{"MODE": map[string]string{"fromEnv": "DEMO_MODE"}}}}})
	var asked []string
	tune := func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "DEMO_MODE" || k == "DEMO_NODE_ENV" {
				return "from-hostile-env", true
			}
			return "", false
		}
		o.Secrets = func(_ context.Context, _, _, name string) (string, bool, error) {
			asked = append(asked, name)
			return "from-secret-store", true, nil
		}
	}

	// Not confirmed: the server does not start, and says what to run.
	p := f.open(tune)
	st := status(t, p, "demo__main")
	for _, w := range []string{"DEMO_MODE (for MODE)", `publisher offers "fast"`, "berth confirm demo DEMO_MODE", "DEMO_NODE_ENV (for NODE_ENV)", "berth confirm demo DEMO_NODE_ENV", "never read from the environment"} {
		if !strings.Contains(st.LastError, w) {
			t.Errorf("error %q lacks %q", st.LastError, w)
		}
	}
	if st.State != StateFailed || len(st.Sources) != 3 || !st.Sources[0].Confirm || st.Sources[0].Set || st.Sources[0].ConfirmCommand == "" {
		t.Errorf("status %+v", st)
	}
	p.Close()

	ctx := context.Background()
	now := time.Now().UTC()
	cv := func(name, offered, value string) store.ConfirmedValue {
		return store.ConfirmedValue{Plugin: "demo", Signer: rec.SignerIdentity(), Source: rec.ConfirmSource(), Name: name, Offered: offered, Value: value, Confirmed: now}
	}
	if err := f.store.Confirm(ctx, cv("DEMO_MODE", "fast", "turbo-confirmed"), cv("DEMO_NODE_ENV", "production", "production"), cv("DEMO_OPT", "", "")); err != nil {
		t.Fatal(err)
	}
	p = f.open(tune)
	env := callText(t, p, "demo__main__env", "{}")
	for _, w := range []string{"MODE=turbo-confirmed", "NODE_ENV=production"} {
		if !strings.Contains(env, w) {
			t.Errorf("main's environment lacks %s:\n%s", w, env)
		}
	}
	if strings.Contains(env, "from-hostile-env") || strings.Contains(env, "from-secret-store") || strings.Contains(env, "OPT=") {
		t.Errorf("main's environment has a value that was not confirmed:\n%s", env)
	}
	if other := callText(t, p, "demo__other__env", "{}"); strings.Contains(other, "turbo-confirmed") {
		t.Errorf("another server got the confirmed value:\n%s", other)
	}
	if spy := callText(t, p, "spy__main__env", "{}"); strings.Contains(spy, "turbo-confirmed") {
		t.Errorf("another plugin reading DEMO_MODE got the confirmed value:\n%s", spy)
	}
	if slices.ContainsFunc(asked, func(n string) bool { return n != "DEMO_MODE" }) {
		t.Errorf("the secret store was asked for a confirmed value: %v", asked)
	}
	js, _ := json.Marshal(p.Status())
	if strings.Contains(string(js), "turbo-confirmed") {
		t.Errorf("status shows the value: %s", js)
	}
	if st := status(t, p, "demo__main"); len(st.Sources) != 3 || st.Sources[1].From != FromConfirmed || !st.Sources[2].Empty {
		t.Errorf("sources %+v", st.Sources)
	}
	p.Close()

	// The value was confirmed for another offer only (as before a bundle
	// update that changed it): berth asks again, and the server says so.
	if _, err := f.store.UpdateConfig(ctx, func(c *store.Config) error {
		for i := range c.Confirmed {
			if c.Confirmed[i].Name == "DEMO_NODE_ENV" {
				c.Confirmed[i].Offered, c.Confirmed[i].Value = "development", "development"
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p = f.open(tune)
	st = status(t, p, "demo__main")
	if !strings.Contains(st.LastError, `publisher offered "development", and this version offers "production", so berth asks again`) {
		t.Errorf("error after the offer changed: %q", st.LastError)
	}
	p.Close()

	// Confirmed for another source of an unsigned plugin of that name:
	// not this version's value.
	if err := f.store.Confirm(ctx, store.ConfirmedValue{Plugin: "demo", Signer: rec.SignerIdentity(), Source: "https://elsewhere.example/demo", Name: "DEMO_NODE_ENV", Offered: "production", Value: "production", Confirmed: now}); err != nil {
		t.Fatal(err)
	}
	p = f.open(tune)
	if st = status(t, p, "demo__main"); st.State != StateFailed || !strings.Contains(st.LastError, "another source") {
		t.Errorf("a value confirmed for another source was used: %+v", st)
	}
	p.Close()

	// Confirmed for another signer: not this version's value.
	if err := f.store.Confirm(ctx, store.ConfirmedValue{Plugin: "demo", Signer: "key abc", Name: "DEMO_NODE_ENV", Offered: "production", Value: "production", Confirmed: now}); err != nil {
		t.Fatal(err)
	}
	p = f.open(tune)
	if st = status(t, p, "demo__main"); st.State != StateFailed || !strings.Contains(st.LastError, "DEMO_NODE_ENV") {
		t.Errorf("a value confirmed for another signer was used: %+v", st)
	}
}
