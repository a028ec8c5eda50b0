package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

const goodState = `{
  "generation": 3,
  "workspaces": {
    "/w": {
      "plugins": {
        "demo": {
          "version": "1.0.0",
          "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
          "enabledAt": "2026-01-02T03:04:05Z",
          "surfaces": {"main": {"tools": {"echo": "sha256:ab"}, "recordedAt": "2026-01-02T03:04:06Z"}}
        }
      }
    }
  }
}`

// TestStateStrict: state.json is decoded as strictly as a manifest, and
// every problem is an error naming the file, the JSON path and the fix,
// where a null plugin entry used to panic berth later.
func TestStateStrict(t *testing.T) {
	s := newStore(t)
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(s.Paths().State(), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(goodState)
	st, err := s.State()
	if err != nil || st.Generation != 3 || st.Workspaces["/w"].Plugins["demo"].Surfaces["main"].Tools["echo"] != "sha256:ab" {
		t.Fatalf("the good state: %+v %v", st, err)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"null plugin", strings.Replace(goodState, `"demo": {`, `"demo": null, "x": {`, 1), `workspaces["/w"].plugins.demo: is null, where an object is required`},
		{"null workspace", `{"generation": 1, "workspaces": {"/w": null}}`, `workspaces["/w"]: is null`},
		{"null surface", strings.Replace(goodState, `"main": {"tools"`, `"main": null, "m2": {"tools"`, 1), `surfaces.main: is null`},
		{"duplicate key", strings.Replace(goodState, `"generation": 3,`, `"generation": 3, "generation": 4,`, 1), `generation: the key "generation" appears more than once`},
		{"case variant", strings.Replace(goodState, `"generation": 3,`, `"generation": 3, "Generation": 4,`, 1), `the keys "generation" and "Generation" differ only in letter case`},
		{"unknown field", strings.Replace(goodState, `"generation": 3,`, `"generation": 3, "future": true,`, 1), `future: unknown field "future"; this berth does not know that field`},
		{"wrong type", strings.Replace(goodState, `"generation": 3`, `"generation": "3"`, 1), `generation: must be a whole number written as plain digits, not a string`},
		{"negative", strings.Replace(goodState, `"generation": 3`, `"generation": -1`, 1), `generation: must be a whole number`},
		{"fraction", strings.Replace(goodState, `"generation": 3`, `"generation": 3.0`, 1), `generation: must be a whole number written as plain digits, not the number 3.0`},
		{"missing", strings.Replace(goodState, `"version": "1.0.0",`, ``, 1), `plugins.demo.version: is missing`},
		{"bad digest", strings.Replace(goodState, `sha256:0000`, `sha256:../../`, 1), `plugins.demo.digest: not a digest`},
		{"bad version", strings.Replace(goodState, `"1.0.0"`, `"1.0"`, 1), `plugins.demo.version: not a strict semver version`},
		{"bad name", strings.Replace(goodState, `"demo": {`, `"../demo": {`, 1), `plugins["../demo"]: not a plugin name`},
		{"relative workspace", strings.Replace(goodState, `"/w"`, `"w"`, 1), `workspaces.w: a workspace is an absolute, clean path`},
		{"bad time", strings.Replace(goodState, `"2026-01-02T03:04:05Z"`, `"yesterday"`, 1), `enabledAt: "yesterday" is not a time`},
		{"trailing", goodState + `{}`, `it has data after its JSON value`},
		{"syntax", `{"generation": 1,}`, `it is not well-formed JSON`},
		{"array", `[]`, `the document: must be an object, not an array`},
		{"bom", "\xef\xbb\xbf" + goodState, `byte-order mark`},
		{"not utf-8", strings.Replace(goodState, `demo`, "d\xffmo", 1), `not valid UTF-8`},
		{"deep", `{"generation": 1, "workspaces": ` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}`, `nest deeper than 32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.doc)
			_, err := s.State()
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != s.Paths().State() || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.Paths().State()) {
				t.Fatalf("got %v\nwant a *FileError naming %s and %q", err, s.Paths().State(), tc.want)
			}
			// No change goes through on a state berth cannot read, and
			// the file stays as it was.
			if _, err := s.Update(context.Background(), func(*State) error { return nil }); err == nil {
				t.Fatal("Update wrote over a damaged state")
			}
			if data, _ := os.ReadFile(s.Paths().State()); string(data) != tc.doc {
				t.Fatal("the damaged state.json was changed")
			}
		})
	}
}

const goodConfig = `{
  "signers": null,
  "toolPolicy": [{"pattern": "demo-main__*", "action": "deny"}]
}`

// TestConfigStrict: config.json refuses duplicate and case-variant keys
// (a deny could vanish behind a second toolPolicy), two rules for one
// pattern, and unknown fields, which berth refuses rather than drop at
// its next write.
func TestConfigStrict(t *testing.T) {
	s := newStore(t)
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(s.Paths().Config(), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(goodConfig)
	if c, err := s.Config(); err != nil || len(c.ToolPolicy) != 1 || c.Signers != nil {
		t.Fatalf("the good config: %+v %v", c, err)
	}
	allow := `[{"pattern": "demo-main__*", "action": "allow"}]`
	for _, tc := range []struct{ name, doc, want string }{
		{"duplicate toolPolicy", strings.Replace(goodConfig, `"signers": null,`, `"signers": null, "toolPolicy": `+allow+`,`, 1), `toolPolicy: the key "toolPolicy" appears more than once`},
		{"case-variant toolPolicy", strings.Replace(goodConfig, `"signers": null,`, `"signers": null, "ToolPolicy": `+allow+`,`, 1), `the keys "ToolPolicy" and "toolPolicy" differ only in letter case`},
		{"case-variant only", `{"signers": [], "ToolPolicy": ` + allow + `}`, `ToolPolicy: unknown field "ToolPolicy"`},
		{"two rules, one pattern", `{"signers": [], "toolPolicy": [{"pattern": "a__x", "action": "deny"}, {"pattern": "a__x", "action": "allow"}]}`, `toolPolicy[1]: a second rule for "a__x"`},
		{"unknown field", `{"signers": [], "requireApproval": true}`, `requireApproval: unknown field "requireApproval"; this berth does not know that field`},
		{"unknown rule field", `{"signers": [], "toolPolicy": [{"pattern": "a__x", "action": "deny", "until": "2030"}]}`, `toolPolicy[0].until: unknown field`},
		{"null rule", `{"signers": [], "toolPolicy": [null]}`, `toolPolicy[0]: is null`},
		{"missing action", `{"signers": [], "toolPolicy": [{"pattern": "a__x"}]}`, `toolPolicy[0].action: is missing`},
		{"null signer", `{"signers": [null]}`, `signers[0]: is null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.doc)
			_, err := s.Config()
			var fe *FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.Paths().Config()) {
				t.Fatalf("got %v\nwant a *FileError naming %s and %q", err, s.Paths().Config(), tc.want)
			}
			// Nothing berth did not understand is dropped: a change is
			// refused and the file stays as it was.
			if _, err := s.UpdateConfig(context.Background(), func(*Config) error { return nil }); err == nil {
				t.Fatal("UpdateConfig wrote over a config it could not read")
			}
			if data, _ := os.ReadFile(s.Paths().Config()); string(data) != tc.doc {
				t.Fatal("config.json was changed")
			}
		})
	}
}

// FuzzDecodeState: no input panics the state decoder, and what it accepts
// survives a write and a read unchanged.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(goodState))
	f.Add([]byte(`{"generation": 0}`))
	f.Add([]byte(`{"generation": 1, "workspaces": {"/w": {"plugins": {"x": null}}}}`))
	f.Add([]byte(`{"generation": 1, "generation": 2, "Workspaces": {}}`))
	f.Add([]byte(stateWithProfile(goodProfile)))
	f.Add([]byte(`{"generation": 1, "workspaces": {"/w": {"plugins": {}, "profiles": {"a": {"mode": "full", "createdAt": "2026-01-02T03:04:05Z"}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, func() checker { return &State{} })
	})
}

// FuzzDecodeConfig is FuzzDecodeState for config.json.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte(`{"signers": [{"name": "acme", "kind": "key", "publicKey": "x", "notBefore": "2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"signers": [], "toolPolicy": [{"pattern": "a", "action": "deny"}], "toolpolicy": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, func() checker { return &Config{} })
	})
}

type checker interface{ check() []string }

func roundTrip(t *testing.T, data []byte, fresh func() checker) {
	v := fresh()
	if ps, _ := decodeStrict(data, v); len(ps) > 0 {
		return
	}
	if len(v.check()) > 0 {
		return
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal what was decoded: %v", err)
	}
	w := fresh()
	if ps, _ := decodeStrict(out, w); len(ps) > 0 {
		t.Fatalf("berth cannot read what it writes: %v\n%s", ps, out)
	}
	again, _ := json.Marshal(w)
	if !bytes.Equal(out, again) {
		t.Fatalf("the round trip changed the document:\n%s\n%s", out, again)
	}
}
