package clientconfig

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"
)

func runtimeGOOS() string { return runtime.GOOS }

// FuzzEdit feeds arbitrary files to connect and disconnect. Whatever the
// input, an edit either is refused or passes verify (every other value
// kept); and disconnecting what connect wrote gives back the original
// values.
func FuzzEdit(f *testing.F) {
	for _, s := range []string{
		"{}", jsoncOld, `{"mcpServers":{"a":{}}}`, "{\n  \"servers\": {\n    // c\n  },\n}\n",
		`{"servers": {"berth": {"command": "/x", "args": ["serve"]}}}`, "\xef\xbb\xbf{\r\n}", `[1]`, `{"a":/*x*/1,}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	e := Entry{Type: "stdio", Command: "/opt/berth", Args: []string{"serve", "--workspace", "/w"}}
	f.Fuzz(func(t *testing.T, data []byte, jsonc bool) {
		rk := "mcpServers"
		if jsonc {
			rk = "servers"
		}
		tg := Target{Client: VSCode, Path: "/x/mcp.json", RootKey: rk, JSONC: jsonc}
		d, err := parse(tg, data)
		if err != nil || d == nil {
			return
		}
		c, err := d.connect("berth", e, true)
		if err != nil {
			if errors.Is(err, errBug) {
				t.Fatalf("connect produced a bad file: %v\ninput %q", err, data)
			}
			return
		}
		if c.data == nil {
			return
		}
		d2, err := parse(tg, c.data)
		if err != nil {
			t.Fatalf("connect output does not parse: %v\n%q", err, c.data)
		}
		c2, err := d2.disconnect("berth", true, "")
		if err != nil {
			t.Fatalf("disconnect of connect output: %v\n%q", err, c.data)
		}
		before, _ := decodeJSONC(d.src)
		after, err := decodeJSONC(bytes.TrimPrefix(c2.data, utf8BOM))
		if err != nil {
			t.Fatalf("disconnect output does not parse: %v\n%q", err, c2.data)
		}
		b, a := before.(map[string]any), after.(map[string]any)
		if _, had := b[rk]; !had {
			if s, ok := a[rk].(map[string]any); ok && len(s) == 0 {
				delete(a, rk)
			}
		} else if s, ok := b[rk].(map[string]any); ok {
			delete(s, "berth")
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("connect+disconnect changed values:\nbefore %v\nafter  %v\ninput %q", b, a, data)
		}
	})
}
