package pool

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berth-mcp/berth/secrets"
)

// A source the environment does not set comes from Options.Secrets, and
// only into the server that declared it; Status says where each came
// from, never the value.
func TestSecretsHook(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{
		"main": map[string]any{"stdio": map[string]any{"command": "berth-testserver", "args": []string{"-tools", "env"},
			"env": map[string]any{"FROM_STORE": map[string]string{"fromEnv": "STORED_TOKEN"}, "FROM_ENV": map[string]string{"fromEnv": "HOST_VAR"}}}},
		"other": testServer("-tools", "env"),
	})
	var asked []string
	p := f.open(func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "HOST_VAR" {
				return "host-value", true
			}
			return "", false
		}
		o.Secrets = func(_ context.Context, _, _, name string) (string, bool, error) {
			asked = append(asked, name)
			if name == "STORED_TOKEN" {
				return "stored-s3cret", true, nil
			}
			return "", false, nil
		}
	})
	env := callText(t, p, "demo__main__env", "{}")
	if !strings.Contains(env, "FROM_STORE=stored-s3cret") || !strings.Contains(env, "FROM_ENV=host-value") {
		t.Fatalf("main's environment lacks its sources:\n%s", env)
	}
	if other := callText(t, p, "demo__other__env", "{}"); strings.Contains(other, "stored-s3cret") || strings.Contains(other, "host-value") {
		t.Fatalf("another server got a value it did not declare:\n%s", other)
	}
	if !slices.Equal(asked, []string{"STORED_TOKEN"}) {
		t.Fatalf("the store was asked for %v; want only the source the environment lacks", asked)
	}
	st := status(t, p, "demo__main")
	want := []SourceStatus{{Name: "HOST_VAR", For: "FROM_ENV", Set: true, From: FromEnvironment}, {Name: "STORED_TOKEN", For: "FROM_STORE", Set: true, From: FromStore}}
	if !slices.Equal(st.Sources, want) {
		t.Fatalf("sources %+v, want %+v", st.Sources, want)
	}
}

// The missing-variable error names both places and the command that
// fixes it; a store that fails says so.
func TestSecretsMissing(t *testing.T) {
	f := newFixture(t)
	f.plugin("demo", map[string]any{
		"needs": map[string]any{"stdio": map[string]any{"command": "berth-testserver",
			"env": map[string]any{"A": map[string]string{"fromEnv": "MISSING_VAR"}, "B": map[string]string{"fromEnv": "BROKEN_VAR"}}}},
	})
	p := f.open(func(o *Options) {
		o.Secrets = func(_ context.Context, _, _, name string) (string, bool, error) {
			if name == "BROKEN_VAR" {
				return "", false, errors.New("the keychain did not answer within 10s")
			}
			return "", false, nil
		}
	})
	st := status(t, p, "demo__needs")
	for _, w := range []string{"MISSING_VAR (for A)", "BROKEN_VAR (for B)", "neither in the environment berth runs in nor in berth's secret store", "berth secret set MISSING_VAR", "did not answer"} {
		if !strings.Contains(st.LastError, w) {
			t.Errorf("error %q lacks %q", st.LastError, w)
		}
	}
	if st.State != StateFailed || !st.GaveUp || len(st.Sources) != 2 || st.Sources[0].Set || st.Sources[1].Error == "" {
		t.Fatalf("status %+v", st)
	}
}

// A secret stored for one plugin reaches that plugin's server only: the
// server of another plugin that names the same variable does not start,
// and its error and status say that the store holds it for another plugin
// and the command that binds it, never the value.
func TestSecretBoundToPlugin(t *testing.T) {
	f := newFixture(t)
	srv := map[string]any{"main": map[string]any{"stdio": map[string]any{"command": "berth-testserver", "args": []string{"-tools", "env"},
		"env": map[string]any{"TOKEN": map[string]string{"fromEnv": "SHARED_TOKEN"}}}}}
	f.plugin("alpha", srv)
	f.plugin("beta", srv)
	sec := secrets.Open(filepath.Join(t.TempDir(), "secrets"), nil)
	if _, err := sec.Set(context.Background(), "SHARED_TOKEN", "alpha-only-s3cret", secrets.File, secrets.Binding{Plugin: "alpha", Signer: "unsigned"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // the two plugins' servers start concurrently
	var asked []string
	p := f.open(func(o *Options) {
		o.LookupEnv = func(string) (string, bool) { return "", false }
		o.Secrets = func(ctx context.Context, plugin, signer, name string) (string, bool, error) {
			mu.Lock()
			asked = append(asked, plugin+":"+signer+":"+name)
			mu.Unlock()
			return sec.For(ctx, plugin, signer, name)
		}
	})
	if env := callText(t, p, "alpha__main__env", "{}"); !strings.Contains(env, "TOKEN=alpha-only-s3cret") {
		t.Fatalf("alpha's server lacks the secret bound to alpha:\n%s", env)
	}
	st := status(t, p, "beta__main")
	for _, w := range []string{"SHARED_TOKEN (for TOKEN)", "holds SHARED_TOKEN, but for alpha, not for plugin beta", "berth secret bind SHARED_TOKEN --plugin beta"} {
		if !strings.Contains(st.LastError, w) {
			t.Errorf("error %q lacks %q", st.LastError, w)
		}
	}
	if strings.Contains(st.LastError, "alpha-only-s3cret") || strings.Contains(st.LastError, "berth secret set") {
		t.Errorf("error %q shows the value or says the secret is not stored", st.LastError)
	}
	if st.State != StateFailed || len(st.Sources) != 1 || st.Sources[0].Set || !st.Sources[0].NotBound || st.Sources[0].Bind != "berth secret bind SHARED_TOKEN --plugin beta" {
		t.Fatalf("status %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(asked, "beta:unsigned:SHARED_TOKEN") || !slices.Contains(asked, "alpha:unsigned:SHARED_TOKEN") {
		t.Fatalf("the hook was asked %v; want each plugin by name and signer", asked)
	}
}
