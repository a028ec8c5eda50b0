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
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, Binding{"plugin-a", signerA}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.For(ctx, "plugin-a", signerA, "ACME_TOKEN"); err != nil || !ok || v != value {
		t.Fatalf("For(plugin-a) = %q, %v, %v", v, ok, err)
	}
	v, ok, err := s.For(ctx, "plugin-b", signerA, "ACME_TOKEN")
	var nb *NotBoundError
	if ok || v != "" || !errors.Is(err, ErrNotBound) || !errors.As(err, &nb) || !slices.Equal(nb.BoundTo, []string{"plugin-a"}) {
		t.Fatalf("For(plugin-b) = %q, %v, %v; want not bound", v, ok, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "berth secret bind ACME_TOKEN --plugin plugin-b") || strings.Contains(msg, value) {
		t.Fatalf("the error does not say how to bind it (or shows the value): %s", msg)
	}
	if _, ok, err := s.For(ctx, "plugin-a", signerA, "OTHER"); ok || err != nil {
		t.Fatalf("For of a name not stored: %v, %v", ok, err)
	}

	e, err := s.Bind(ctx, "ACME_TOKEN", false, Binding{"plugin-b", signerA}, Binding{"plugin-a", signerA})
	if err != nil || !slices.Equal(e.Plugins, []string{"plugin-a", "plugin-b"}) {
		t.Fatalf("Bind: %+v, %v", e, err)
	}
	if _, ok, err := s.For(ctx, "plugin-b", signerA, "ACME_TOKEN"); !ok || err != nil {
		t.Fatalf("For(plugin-b) after Bind: %v, %v", ok, err)
	}
	if e, err := s.Bind(ctx, "ACME_TOKEN", true, Binding{Plugin: "plugin-a"}); err != nil || !slices.Equal(e.Plugins, []string{"plugin-b"}) {
		t.Fatalf("unbind: %+v, %v", e, err)
	}
	// Set again replaces the bindings.
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); err != nil || len(list) != 1 || len(list[0].Plugins) != 0 || list[0].Plugins == nil {
		t.Fatalf("List after Set without plugins: %+v, %v", list, err)
	}
	if _, err := s.Bind(ctx, "NOT_STORED", false, Binding{"plugin-a", signerA}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Bind of a name not stored: %v", err)
	}
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, Binding{Plugin: "Not A Plugin"}); err == nil {
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
	if _, ok, err := s.For(ctx, "plugin-a", signerA, "ACME_TOKEN"); ok || !errors.Is(err, ErrNotBound) {
		t.Fatalf("a version 1 index binds a secret before migration: %v, %v", ok, err)
	}

	calls := 0
	namers := func() (map[string][]Binding, error) {
		calls++
		return map[string][]Binding{"ACME_TOKEN": {{"plugin-b", signerA}, {"plugin-a", signerA}}, "NOT_STORED": {{"plugin-c", signerA}}}, nil
	}
	got, err := s.Migrate(ctx, namers)
	if err != nil || len(got) != 2 || !slices.Equal(got[0].Plugins, []string{"plugin-a", "plugin-b"}) || len(got[1].Plugins) != 0 {
		t.Fatalf("Migrate: %+v, %v", got, err)
	}
	for _, p := range []string{"plugin-a", "plugin-b"} {
		if v, ok, err := s.For(ctx, p, signerA, "ACME_TOKEN"); !ok || err != nil || v != value {
			t.Fatalf("For(%s) after migration: %v, %v", p, ok, err)
		}
	}
	// Once: the next run finds version 2 and does not ask again, even when
	// more plugins name the secret by then.
	if got, err := s.Migrate(ctx, func() (map[string][]Binding, error) {
		calls++
		return map[string][]Binding{"ACME_TOKEN": {{"plugin-c", signerA}}}, nil
	}); err != nil || got != nil || calls != 1 {
		t.Fatalf("second Migrate: %+v, %v (namers called %d times)", got, err, calls)
	}
	if _, ok, _ := s.For(ctx, "plugin-c", signerA, "ACME_TOKEN"); ok {
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
	if _, err := s.Migrate(ctx, func() (map[string][]Binding, error) { return nil, errors.New("boom") }); err == nil {
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
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, Binding{"plugin-a", signerA}); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(s.Dir(), "index.json")
	data, _ := os.ReadFile(index)
	for _, bad := range []string{
		strings.Replace(string(data), `"plugin-a"`, `"../x"`, 1),
		strings.Replace(string(data), `"plugins": [`, `"plugins": [{"plugin": "plugin-a", "signer": "`+signerA+`"},`, 1),
		strings.Replace(string(data), signerA, "key \\u001b[2J", 1),
		strings.Replace(string(data), `"version": 2`, `"version": 1`, 1),
		strings.Replace(string(data), `"version": 2`, `"version": 3`, 1),
	} {
		os.WriteFile(index, []byte(bad), 0o600)
		if _, err := s.List(); err == nil {
			t.Errorf("List accepted:\n%s", bad)
		}
	}
}

const (
	signerA = "key SHA256:publisher-a"
	signerB = "identity https://issuer.example mallory@example.com"
)

// A binding names the plugin and its signer: a plugin of the same name
// signed by someone else (another publisher's, trusted after a revoke or
// with a signer change) does not receive the secret, and is told whose
// it is and how to bind it; a version signed by the same signer (an
// upgrade) does.
func TestForOnlyTheBoundSigner(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, Binding{"acme-notes", signerA}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.For(ctx, "acme-notes", signerA, "ACME_TOKEN"); !ok || err != nil || v != value {
		t.Fatalf("For(acme-notes, signer A) = %q, %v, %v", v, ok, err)
	}
	v, ok, err := s.For(ctx, "acme-notes", signerB, "ACME_TOKEN")
	var nb *NotBoundError
	if ok || v != "" || !errors.As(err, &nb) || !slices.Equal(nb.HeldFor, []string{signerA}) {
		t.Fatalf("For(acme-notes, signer B) = %q, %v, %v; want not bound", v, ok, err)
	}
	for _, want := range []string{"for the plugin acme-notes signed by " + signerA, "this acme-notes is signed by " + signerB, "berth secret bind ACME_TOKEN --plugin acme-notes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	// Binding the other signer too lets both use it; unbinding one signer
	// keeps the other.
	if e, err := s.Bind(ctx, "ACME_TOKEN", false, Binding{"acme-notes", signerB}); err != nil || len(e.Bindings) != 2 || !slices.Equal(e.Plugins, []string{"acme-notes"}) {
		t.Fatalf("Bind signer B: %+v, %v", e, err)
	}
	if e, err := s.Bind(ctx, "ACME_TOKEN", true, Binding{"acme-notes", signerA}); err != nil || !slices.Equal(e.Bindings, []Binding{{"acme-notes", signerB}}) {
		t.Fatalf("unbind signer A: %+v, %v", e, err)
	}
	if _, ok, _ := s.For(ctx, "acme-notes", signerA, "ACME_TOKEN"); ok {
		t.Fatal("an unbound signer still receives the secret")
	}
}

// A binding made before the plugin was trusted has no signer: it applies
// until Pin records the signer; Forget drops every binding of a plugin.
func TestPinAndForget(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if got, err := s.Forget(ctx, "acme-notes"); err != nil || got != nil {
		t.Fatalf("Forget on an empty store: %v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "index.json")); err == nil {
		t.Fatal("Forget on an empty store wrote an index")
	}
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File, Binding{Plugin: "acme-notes"}, Binding{"acme-tasks", signerA}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.For(ctx, "acme-notes", signerB, "ACME_TOKEN"); !ok || err != nil {
		t.Fatalf("an unpinned binding: %v, %v", ok, err)
	}
	if got, err := s.Pin(ctx, "acme-notes", signerA); err != nil || !slices.Equal(got, []string{"ACME_TOKEN"}) {
		t.Fatalf("Pin: %v, %v", got, err)
	}
	if got, err := s.Pin(ctx, "acme-notes", signerB); err != nil || got != nil {
		t.Fatalf("Pin again: %v, %v", got, err)
	}
	if _, ok, _ := s.For(ctx, "acme-notes", signerB, "ACME_TOKEN"); ok {
		t.Fatal("a pinned binding applies to another signer")
	}
	if _, ok, _ := s.For(ctx, "acme-notes", signerA, "ACME_TOKEN"); !ok {
		t.Fatal("a pinned binding does not apply to its signer")
	}
	if got, err := s.Forget(ctx, "acme-notes"); err != nil || !slices.Equal(got, []string{"ACME_TOKEN"}) {
		t.Fatalf("Forget: %v, %v", got, err)
	}
	e, _, err := s.Lookup("ACME_TOKEN")
	if err != nil || !slices.Equal(e.Bindings, []Binding{{"acme-tasks", signerA}}) {
		t.Fatalf("after Forget: %+v, %v", e, err)
	}
}
