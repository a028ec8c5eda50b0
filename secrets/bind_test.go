package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A secret reaches only the plugins it is bound to: another plugin that
// names the same variable is told it exists, for whom, and how to bind it.
func TestForOnlyTheBoundPlugins(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, "plugin-a"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.For(ctx, "plugin-a", "ACME_TOKEN"); err != nil || !ok || v != value {
		t.Fatalf("For(plugin-a) = %q, %v, %v", v, ok, err)
	}
	v, ok, err := s.For(ctx, "plugin-b", "ACME_TOKEN")
	var nb *NotBoundError
	if ok || v != "" || !errors.Is(err, ErrNotBound) || !errors.As(err, &nb) || !slices.Equal(nb.BoundTo, []string{"plugin-a"}) {
		t.Fatalf("For(plugin-b) = %q, %v, %v; want not bound", v, ok, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "berth secret bind ACME_TOKEN --plugin plugin-b") || strings.Contains(msg, value) {
		t.Fatalf("the error does not say how to bind it (or shows the value): %s", msg)
	}
	if _, ok, err := s.For(ctx, "plugin-a", "OTHER"); ok || err != nil {
		t.Fatalf("For of a name not stored: %v, %v", ok, err)
	}

	e, err := s.Bind(ctx, "ACME_TOKEN", false, "plugin-b", "plugin-a")
	if err != nil || !slices.Equal(e.Plugins, []string{"plugin-a", "plugin-b"}) {
		t.Fatalf("Bind: %+v, %v", e, err)
	}
	if _, ok, err := s.For(ctx, "plugin-b", "ACME_TOKEN"); !ok || err != nil {
		t.Fatalf("For(plugin-b) after Bind: %v, %v", ok, err)
	}
	if e, err := s.Bind(ctx, "ACME_TOKEN", true, "plugin-a"); err != nil || !slices.Equal(e.Plugins, []string{"plugin-b"}) {
		t.Fatalf("unbind: %+v, %v", e, err)
	}
	// Set again replaces the bindings.
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); err != nil || len(list) != 1 || len(list[0].Plugins) != 0 || list[0].Plugins == nil {
		t.Fatalf("List after Set without plugins: %+v, %v", list, err)
	}
	if _, err := s.Bind(ctx, "NOT_STORED", false, "plugin-a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Bind of a name not stored: %v", err)
	}
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, "Not A Plugin"); err == nil {
		t.Fatal("Set accepted a plugin name that is not one")
	}
}

// An index of format version 1 has no bindings: Migrate binds each secret
// to the plugins that name it, once, and records it (version 2).
func TestMigrateBindsOnce(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, "UNUSED_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	// Rewrite it as the berth before bindings wrote it.
	index := filepath.Join(s.Dir(), "index.json")
	data, _ := os.ReadFile(index)
	old := strings.Replace(string(data), `"version": 2`, `"version": 1`, 1)
	if old == string(data) {
		t.Fatalf("the index has no version 2:\n%s", data)
	}
	os.WriteFile(index, []byte(old), 0o600)
	if _, ok, err := s.For(ctx, "plugin-a", "ACME_TOKEN"); ok || !errors.Is(err, ErrNotBound) {
		t.Fatalf("a version 1 index binds a secret before migration: %v, %v", ok, err)
	}

	calls := 0
	namers := func() (map[string][]string, error) {
		calls++
		return map[string][]string{"ACME_TOKEN": {"plugin-b", "plugin-a"}, "NOT_STORED": {"plugin-c"}}, nil
	}
	got, err := s.Migrate(ctx, namers)
	if err != nil || len(got) != 2 || !slices.Equal(got[0].Plugins, []string{"plugin-a", "plugin-b"}) || len(got[1].Plugins) != 0 {
		t.Fatalf("Migrate: %+v, %v", got, err)
	}
	for _, p := range []string{"plugin-a", "plugin-b"} {
		if v, ok, err := s.For(ctx, p, "ACME_TOKEN"); !ok || err != nil || v != value {
			t.Fatalf("For(%s) after migration: %v, %v", p, ok, err)
		}
	}
	// Once: the next run finds version 2 and does not ask again, even when
	// more plugins name the secret by then.
	if got, err := s.Migrate(ctx, func() (map[string][]string, error) {
		calls++
		return map[string][]string{"ACME_TOKEN": {"plugin-c"}}, nil
	}); err != nil || got != nil || calls != 1 {
		t.Fatalf("second Migrate: %+v, %v (namers called %d times)", got, err, calls)
	}
	if _, ok, _ := s.For(ctx, "plugin-c", "ACME_TOKEN"); ok {
		t.Fatal("a second migration bound another plugin")
	}
	data, _ = os.ReadFile(index)
	if !strings.Contains(string(data), `"version": 2`) || strings.Contains(string(data), value) {
		t.Fatalf("the migrated index:\n%s", data)
	}
	// A store without an index has nothing to migrate.
	if got, err := newStore(t).Migrate(ctx, namers); err != nil || got != nil || calls != 1 {
		t.Fatalf("Migrate of an empty store: %+v, %v", got, err)
	}
	// A failing namers leaves the index as it was.
	os.WriteFile(index, []byte(old), 0o600)
	if _, err := s.Migrate(ctx, func() (map[string][]string, error) { return nil, errors.New("boom") }); err == nil {
		t.Fatal("Migrate with a failing namers did not fail")
	}
	if data, _ := os.ReadFile(index); string(data) != old {
		t.Fatalf("a failed migration changed the index:\n%s", data)
	}
}

// The strict reading of the index holds for the bindings: a plugin name
// berth would not write, or bindings in a version 1 index, are refused.
func TestIndexBindingsReadStrictly(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, "plugin-a"); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(s.Dir(), "index.json")
	data, _ := os.ReadFile(index)
	for _, bad := range []string{
		strings.Replace(string(data), `"plugin-a"`, `"../x"`, 1),
		strings.Replace(string(data), `"plugin-a"`, `"plugin-a", "plugin-a"`, 1),
		strings.Replace(string(data), `"version": 2`, `"version": 1`, 1),
		strings.Replace(string(data), `"version": 2`, `"version": 3`, 1),
	} {
		os.WriteFile(index, []byte(bad), 0o600)
		if _, err := s.List(); err == nil {
			t.Errorf("List accepted:\n%s", bad)
		}
	}
}
