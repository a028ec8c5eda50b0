package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const keyA, keyB = "key sha256:aa", "key sha256:bb"

func TestMatchPolicy(t *testing.T) {
	rules := []PolicyRule{
		{Plugin: "acme", Pattern: "acme__*", Action: "allow", Signer: keyA},
		{Plugin: "acme-notes", Pattern: "acme-notes__*", Action: "ask"},
		{Plugin: "acme-notes", Pattern: "acme-notes__notes__delete*", Action: "deny"},
		{Plugin: "acme-notes", Pattern: "acme-notes__notes__delete_draft", Action: "allow", Signer: keyA},
		{Plugin: "acme-notes", Pattern: "acme-notes__notes__read", Action: "allow", Signer: keyA},
	}
	sub := func(plugin, name string) PolicySubject {
		return PolicySubject{Plugin: plugin, Signer: keyA, Name: name}
	}
	for _, tc := range []struct {
		sub  PolicySubject
		want PolicyMatch
	}{
		{sub("acme", "acme__s__x"), PolicyMatch{Action: "allow", Pattern: "acme__*"}},
		{sub("acme-notes", "acme-notes__notes__write"), PolicyMatch{Action: "ask", Pattern: "acme-notes__*"}},
		{sub("acme-notes", "acme-notes__notes__delete_all"), PolicyMatch{Action: "deny", Pattern: "acme-notes__notes__delete*"}},
		{sub("acme-notes", "acme-notes__notes__delete_draft"), PolicyMatch{Action: "allow", Pattern: "acme-notes__notes__delete_draft", Exact: true}},
		// Another signer: an allow asks; a deny still denies.
		{PolicySubject{"acme-notes", keyB, "acme-notes__notes__read"}, PolicyMatch{Action: "ask", Pattern: "acme-notes__notes__read", Exact: true, OtherSigner: true}},
		{PolicySubject{"acme-notes", keyB, "acme-notes__notes__delete_x"}, PolicyMatch{Action: "deny", Pattern: "acme-notes__notes__delete*"}},
		// A rule never matches another plugin's names, even a name that
		// fits its pattern.
		{sub("acme-x", "acme__s__x"), PolicyMatch{Action: "ask"}},
		{sub("acme-notes-x", "acme-notes__notes__read"), PolicyMatch{Action: "ask"}},
	} {
		if got := MatchPolicy(rules, tc.sub); got != tc.want {
			t.Errorf("MatchPolicy(%+v) = %+v, want %+v", tc.sub, got, tc.want)
		}
	}
	if got := MatchPolicy(nil, sub("x", "x__s__t")); got != (PolicyMatch{Action: "ask"}) {
		t.Errorf("default %+v", got)
	}
	for _, bad := range []PolicyRule{
		{Plugin: "a", Pattern: "a b", Action: "allow", Signer: keyA}, {Plugin: "a", Pattern: "a__x", Action: "maybe"},
		{Plugin: "a", Pattern: "", Action: "deny"}, {Plugin: "a", Pattern: "x[1]", Action: "deny"},
		{Plugin: "a", Pattern: "b__*", Action: "deny"}, {Plugin: "a", Pattern: "a*", Action: "deny"},
		{Plugin: "a", Pattern: "a__x", Action: "allow"}, {Pattern: "a-s__x", Action: "deny"},
	} {
		if CheckPolicyRule(bad) == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	if err := CheckPolicyRule(PolicyRule{Pattern: "a-s__x", Action: "deny"}); !errors.Is(err, ErrOldPolicyRule) || !strings.Contains(err.Error(), "berth policy migrate") {
		t.Errorf("an old rule: %v", err)
	}
}

func TestPolicyMatchString(t *testing.T) {
	for _, tc := range []struct {
		m    PolicyMatch
		want string
	}{
		{PolicyMatch{Action: ActionAsk}, "ask (default)"},
		{PolicyMatch{Action: ActionAllow, Pattern: "demo__main__echo", Exact: true}, "allow (exact)"},
		{PolicyMatch{Action: ActionAllow, Pattern: "demo__*"}, "allow (demo__*)"},
		{PolicyMatch{Action: ActionAsk, Pattern: "demo__*", OtherSigner: true}, "ask (demo__*, an allow for another signer)"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.m, got, tc.want)
		}
	}
}

// trustAs records the good bundle renamed to name (and its servers
// renamed as given), signed by a fresh key.
func trustAs(t *testing.T, s *Store, name string, servers ...string) *Record {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	copyDir(t, goodBundle, dir)
	m, _ := os.ReadFile(filepath.Join(dir, "berth.json"))
	doc := strings.Replace(string(m), `"name": "acme-notes"`, `"name": "`+name+`"`, 1)
	for _, srv := range servers {
		doc = strings.Replace(doc, `"mcpServers": {`, `"mcpServers": {"`+srv+`": {"stdio": {"command": "${bundle}/bin/notes-server"}},`, 1)
	}
	os.WriteFile(filepath.Join(dir, "berth.json"), []byte(doc), 0o644)
	req, _ := signedRequest(t, openBundle(t, dir), "k-"+name)
	res, err := s.record(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Record
}

// A rule belongs to one plugin: set derives the plugin from the pattern
// and refuses a pattern that could match several, naming them and the
// scoped form; an allow is bound to the plugin's signer and needs it
// trusted.
func TestSetPolicyScope(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	notes := trustAs(t, s, "acme-notes")
	trustAs(t, s, "acme-notes-x")
	var se *PolicyScopeError
	err := s.SetPolicy(ctx, PolicyRule{Pattern: "acme-notes-*", Action: ActionAllow})
	if !errors.As(err, &se) || !slices.Equal(se.Plugins, []string{"acme-notes", "acme-notes-x"}) || !slices.Equal(se.Scoped, []string{"acme-notes__*", "acme-notes-x__*"}) {
		t.Fatalf("acme-notes-*: %v (%+v)", err, se)
	}
	if !strings.Contains(err.Error(), "acme-notes and acme-notes-x") || !strings.Contains(err.Error(), "'acme-notes__*' (for acme-notes)") {
		t.Fatalf("the error names neither both plugins nor the scoped form: %v", err)
	}
	for _, p := range []string{"*", "acme-*", "acme-notes*", "acme-notes_x"} {
		if err := s.SetPolicy(ctx, PolicyRule{Pattern: p, Action: ActionDeny}); !errors.As(err, &se) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := s.SetPolicy(ctx, PolicyRule{Pattern: "acme-notes__*", Action: ActionAllow}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPolicy(ctx, PolicyRule{Pattern: "unknown__*", Action: ActionAllow}); !errors.Is(err, ErrNotTrusted) {
		t.Fatalf("an allow for an untrusted plugin: %v", err)
	}
	if err := s.SetPolicy(ctx, PolicyRule{Pattern: "unknown__*", Action: ActionDeny}); err != nil {
		t.Fatalf("a deny for an untrusted plugin: %v", err)
	}
	cfg, _ := s.Config()
	want := []PolicyRule{
		{Plugin: "acme-notes", Pattern: "acme-notes__*", Action: ActionAllow, Signer: notes.SignerIdentity()},
		{Plugin: "unknown", Pattern: "unknown__*", Action: ActionDeny},
	}
	if !slices.Equal(cfg.ToolPolicy, want) {
		t.Fatalf("rules %+v, want %+v", cfg.ToolPolicy, want)
	}
	// The allow does not reach acme-notes-x, nor acme-notes from another
	// signer.
	if m := MatchPolicy(cfg.ToolPolicy, PolicySubject{"acme-notes-x", "", "acme-notes-x__notes__search"}); m.Action != ActionAsk || m.Pattern != "" {
		t.Fatalf("acme-notes-x: %+v", m)
	}
	if m := MatchPolicy(cfg.ToolPolicy, PolicySubject{"acme-notes", "key sha256:mallory", "acme-notes__notes__search"}); m.Action != ActionAsk || !m.OtherSigner {
		t.Fatalf("acme-notes from another signer: %+v", m)
	}
}

// MigratePolicy rewrites old rules that it can rewrite without widening
// an allow, and keeps (and reports) the rest.
func TestMigratePolicy(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	notes := trustAs(t, s, "acme-notes", "cloud")
	trustAs(t, s, "acme")
	old := []PolicyRule{
		{Pattern: "acme-notes-notes__search_*", Action: ActionAllow},
		{Pattern: "acme-notes-notes__delete_note", Action: ActionAllow},
		{Pattern: "acme-notes-*", Action: ActionDeny},
		{Pattern: "acme-notes-c*", Action: ActionAllow},
		{Pattern: "acme-*", Action: ActionDeny},
		{Pattern: "gone-main__x", Action: ActionDeny},
	}
	data := `{"signers": [], "toolPolicy": [`
	for i, r := range old {
		if i > 0 {
			data += ","
		}
		data += `{"pattern": "` + r.Pattern + `", "action": "` + string(r.Action) + `"}`
	}
	os.WriteFile(s.Paths().Config(), []byte(data+`]}`), 0o600)
	ms, err := s.MigratePolicy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range ms {
		var to []string
		for _, n := range m.New {
			to = append(to, n.Pattern+" "+string(n.Action))
		}
		got[m.Old.Pattern] = strings.Join(to, ",")
		if m.Kept != "" {
			got[m.Old.Pattern] = "kept: " + m.Kept
		}
	}
	for pattern, want := range map[string]string{
		"acme-notes-notes__search_*":    "acme-notes__notes__search_* allow",
		"acme-notes-notes__delete_note": "acme-notes__notes__delete_note allow",
		"acme-notes-*":                  "acme-notes__* deny",
		"acme-notes-c*":                 "kept: its wildcards cover which server",
		"acme-*":                        "kept: it could match tools of acme and acme-notes",
		"gone-main__x":                  "kept: it matches no tool of a plugin trusted now",
	} {
		if !strings.HasPrefix(got[pattern], want) {
			t.Errorf("%s: %q, want %q", pattern, got[pattern], want)
		}
	}
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	var allow PolicyRule
	kept := 0
	for _, r := range cfg.ToolPolicy {
		if r.Pattern == "acme-notes__notes__search_*" {
			allow = r
		}
		if r.Plugin == "" {
			kept++
		}
	}
	if allow.Plugin != "acme-notes" || allow.Signer != notes.SignerIdentity() || kept != 3 {
		t.Fatalf("after migrating: %+v", cfg.ToolPolicy)
	}
	// Running it again changes nothing but reports what is still kept.
	if ms, err := s.MigratePolicy(ctx); err != nil || len(ms) != 3 {
		t.Fatalf("again: %+v %v", ms, err)
	}
}
