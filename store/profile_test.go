package store

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

// stateWithProfile is goodState with a profile "work" of workspace /w.
func stateWithProfile(profile string) string {
	return strings.Replace(goodState, `
      }
    }
  }
}`, `
      },
      "profiles": {`+profile+`}
    }
  }
}`, 1)
}

const goodProfile = `"work": {"plugins": ["demo"], "tools": ["demo__main__*"], "mode": "lazy", "always": ["demo__main__echo"], "createdAt": "2026-01-02T03:04:07Z"}`

// TestStateProfiles: a profile in state.json is read back as written, and
// a damaged one is an error naming state.json, the profile's JSON path,
// the rule broken and the fix, never a profile that offers something
// else than it says.
func TestStateProfiles(t *testing.T) {
	s := newStore(t)
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(s.Paths().State(), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(stateWithProfile(goodProfile))
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	p := st.ProfileOf("/w", "work")
	if p == nil || p.Mode != ToolsLazy || p.Plugins[0] != "demo" || p.Tools[0] != "demo__main__*" || p.Always[0] != "demo__main__echo" {
		t.Fatalf("the good profile: %+v", p)
	}
	if st.ProfileOf("/w", "other") != nil || st.ProfileOf("/x", "work") != nil {
		t.Fatal("ProfileOf found a profile that is not there")
	}
	// A profile may name a plugin that is not enabled (it was disabled
	// since): it then offers nothing of it.
	write(stateWithProfile(strings.Replace(goodProfile, `["demo"]`, `["demo", "gone"]`, 1)))
	if _, err := s.State(); err != nil {
		t.Fatalf("a profile naming a disabled plugin: %v", err)
	}
	pp := `workspaces["/w"].profiles.`
	for _, tc := range []struct{ name, profile, want string }{
		{"upper-case name", strings.Replace(goodProfile, `"work"`, `"Work"`, 1), pp + `Work: "Work" is not a profile name: use 1 to 32 lower-case letters, digits and inner hyphens`},
		{"slash in name", strings.Replace(goodProfile, `"work"`, `"../x"`, 1), `is not a profile name`},
		{"empty name", strings.Replace(goodProfile, `"work"`, `""`, 1), `"" is not a profile name`},
		{"long name", strings.Replace(goodProfile, `"work"`, `"`+strings.Repeat("a", 33)+`"`, 1), `(profile-name)`},
		{"trailing hyphen", strings.Replace(goodProfile, `"work"`, `"work-"`, 1), `(profile-name)`},
		{"null profile", `"work": null`, pp + `work: is null`},
		{"bad plugin", strings.Replace(goodProfile, `["demo"]`, `["demo", "De mo"]`, 1), pp + `work: plugins: "De mo" is not a plugin name`},
		{"plugin twice", strings.Replace(goodProfile, `["demo"]`, `["demo", "demo"]`, 1), `plugins: demo is named twice (profile-plugin)`},
		{"bad mode", strings.Replace(goodProfile, `"lazy"`, `"eager"`, 1), pp + `work: mode: "eager" is not a tools mode; use full or lazy (profile-mode)`},
		{"empty mode", strings.Replace(goodProfile, `"lazy"`, `""`, 1), `(profile-mode)`},
		{"missing mode", strings.Replace(goodProfile, `"mode": "lazy", `, ``, 1), `work.mode: is missing`},
		{"always in full mode", strings.Replace(goodProfile, `"lazy"`, `"full"`, 1), `always: tools listed beside the meta-tools need lazy mode; in full mode every tool is listed (profile-always)`},
		{"bad tool pattern", strings.Replace(goodProfile, `"demo__main__*"`, `"demo__main__[a]"`, 1), `tools: "demo__main__[a]" is not a name or glob`},
		{"pattern of no plugin", strings.Replace(goodProfile, `"demo__main__*"`, `"*"`, 1), `tools: the pattern "*" does not name one plugin`},
		{"pattern of a plugin not offered", strings.Replace(goodProfile, `"demo__main__*"`, `"other__*"`, 1), `tools: the pattern "other__*" names plugin other, which the profile does not offer (it offers demo), so it can match no tool (profile-pattern)`},
		{"bad always", strings.Replace(goodProfile, `"demo__main__echo"`, `"demo-*"`, 1), `always: the pattern "demo-*" does not name one plugin`},
		{"missing createdAt", strings.Replace(goodProfile, `, "createdAt": "2026-01-02T03:04:07Z"`, ``, 1), `work.createdAt: is missing`},
		{"unknown field", strings.Replace(goodProfile, `"mode"`, `"widen": true, "mode"`, 1), `work.widen: unknown field "widen"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := stateWithProfile(tc.profile)
			write(doc)
			_, err := s.State()
			var fe *FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.Paths().State()) {
				t.Fatalf("got %v\nwant a *FileError naming %s and %q", err, s.Paths().State(), tc.want)
			}
			if _, err := s.Update(context.Background(), func(*State) error { return nil }); err == nil {
				t.Fatal("Update wrote over a damaged state")
			}
			if data, _ := os.ReadFile(s.Paths().State()); string(data) != doc {
				t.Fatal("the damaged state.json was changed")
			}
		})
	}
}

// TestSetProfile: profiles are created, refused, replaced and removed
// under the lock, each change bumping the generation; a profile names
// only enabled plugins, and removing it leaves the plugins enabled.
func TestSetProfile(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := os.WriteFile(s.Paths().State(), []byte(goodState), 0o600); err != nil {
		t.Fatal(err)
	}
	gen := func() uint64 {
		t.Helper()
		st, err := s.State()
		if err != nil {
			t.Fatal(err)
		}
		return uint64(st.Generation)
	}
	g0 := gen()
	p := &Profile{Plugins: []string{"demo"}, Tools: []string{"demo__main__*"}, Mode: ToolsLazy, Always: []string{"demo__main__echo"}}
	if old, err := s.SetProfile(ctx, "/w", "work", p, false); err != nil || old != nil {
		t.Fatalf("create: %v %v", old, err)
	}
	if g := gen(); g != g0+1 {
		t.Fatalf("generation %d after create, want %d", g, g0+1)
	}
	st, _ := s.State()
	got := st.ProfileOf("/w", "work")
	if got == nil || got.CreatedAt.IsZero() || got.Mode != ToolsLazy || !p.CreatedAt.IsZero() {
		t.Fatalf("stored %+v", got)
	}

	// An existing name is refused unless replace; nothing is written.
	_, err := s.SetProfile(ctx, "/w", "work", &Profile{Mode: ToolsFull}, false)
	if !errors.Is(err, ErrProfileExists) || !strings.Contains(err.Error(), "berth profile create work --workspace /w --replace") {
		t.Fatalf("create again: %v", err)
	}
	if g := gen(); g != g0+1 {
		t.Fatal("a refused create bumped the generation")
	}
	if old, err := s.SetProfile(ctx, "/w", "work", &Profile{Mode: ToolsFull}, true); err != nil || old == nil || old.Mode != ToolsLazy {
		t.Fatalf("replace: %v %v", old, err)
	}

	// A plugin not enabled, by name or by pattern, is refused naming
	// berth enable; so is a workspace with nothing enabled.
	for _, tc := range []struct {
		ws   string
		p    *Profile
		want string
	}{
		{"/w", &Profile{Plugins: []string{"other"}, Mode: ToolsFull}, "other is not enabled in /w: a profile only narrows what is enabled; enable it first (berth enable other --workspace /w)"},
		{"/w", &Profile{Tools: []string{"other__*"}, Mode: ToolsFull}, "other is not enabled in /w"},
		{"/w", &Profile{Always: []string{"other__x__y"}, Mode: ToolsLazy}, "other is not enabled in /w"},
		{"/empty", &Profile{Mode: ToolsFull}, "no plugin is enabled in /empty"},
		{"/w", &Profile{Mode: "eager"}, `"eager" is not a tools mode`},
		{"/w", &Profile{Plugins: []string{"demo"}, Tools: []string{"*"}, Mode: ToolsFull}, `does not name one plugin`},
		{"w", &Profile{Mode: ToolsFull}, "not an absolute, clean path"},
	} {
		if _, err := s.SetProfile(ctx, tc.ws, "x", tc.p, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetProfile(%s, %+v) = %v, want %q", tc.ws, tc.p, err, tc.want)
		}
	}
	if _, err := s.SetProfile(ctx, "/w", "Bad", &Profile{Mode: ToolsFull}, false); err == nil || !strings.Contains(err.Error(), "not a profile name") {
		t.Fatalf("bad name: %v", err)
	}

	// Remove: gone, generation bumped; the plugin stays enabled.
	g1 := gen()
	if gone, err := s.RemoveProfile(ctx, "/w", "work"); err != nil || gone == nil || gone.Mode != ToolsFull {
		t.Fatalf("remove: %v %v", gone, err)
	}
	if g := gen(); g != g1+1 {
		t.Fatal("remove did not bump the generation")
	}
	st, _ = s.State()
	if st.ProfileOf("/w", "work") != nil || st.Workspaces["/w"].Plugins["demo"] == nil {
		t.Fatalf("after remove: %+v", st.Workspaces["/w"])
	}
	if _, err := s.RemoveProfile(ctx, "/w", "work"); !errors.Is(err, ErrNoProfile) || !strings.Contains(err.Error(), "berth profile list --workspace /w") {
		t.Fatalf("remove again: %v", err)
	}
}

// TestEmptyWorkspace: a workspace is dropped from the state only when it
// has neither plugins nor profiles.
func TestEmptyWorkspace(t *testing.T) {
	w := &Workspace{}
	if !w.Empty() {
		t.Fatal("an empty workspace is not Empty")
	}
	w.Profiles = map[string]*Profile{"work": {Mode: ToolsFull}}
	if w.Empty() {
		t.Fatal("a workspace with a profile is Empty")
	}
}

// TestProfileRulesDocumented: every rule ID CheckProfile names has its row
// in docs/state.md, and the table names no rule CheckProfile lacks.
func TestProfileRulesDocumented(t *testing.T) {
	src, err := os.ReadFile("profile.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/state.md")
	if err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile(`\((profile-[a-z]+)\)`).FindAllStringSubmatch(string(src), -1)
	if len(ids) < 6 {
		t.Fatalf("found %d rule IDs in profile.go", len(ids))
	}
	inCode := map[string]bool{}
	for _, m := range ids {
		inCode[m[1]] = true
		if !strings.Contains(string(doc), "| `"+m[1]+"` |") {
			t.Errorf("docs/state.md has no row for rule %s", m[1])
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(profile-[a-z]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		if !inCode[m[1]] {
			t.Errorf("docs/state.md documents rule %s, which CheckProfile does not name", m[1])
		}
	}
}

// The commands SetProfile's and RemoveProfile's errors suggest name the
// workspace, quoted for a shell.
func TestProfileErrorsQuoteTheWorkspace(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	p := &Profile{Mode: ToolsFull}
	_, err := s.SetProfile(ctx, "/my notes", "work", p, false)
	if err == nil || !strings.Contains(err.Error(), "berth enable NAME --workspace '/my notes'") {
		t.Fatalf("set: %v", err)
	}
	_, err = s.RemoveProfile(ctx, "/my notes", "work")
	if err == nil || !strings.Contains(err.Error(), "berth profile list --workspace '/my notes' shows its profiles") {
		t.Fatalf("remove: %v", err)
	}
}
