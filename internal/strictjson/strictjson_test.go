package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

type doc struct {
	Name  string            `json:"name"`
	Count int               `json:"count,omitempty"`
	Tags  []string          `json:"tags"`
	Env   map[string]string `json:"env,omitempty"`
	When  time.Time         `json:"when,omitzero"`
	Raw   json.RawMessage   `json:"raw,omitempty"`
	Any   any               `json:"any,omitempty"`
	Inner *struct {
		On bool `json:"on"`
	} `json:"inner,omitempty"`
}

func TestEveryProblemAtOnce(t *testing.T) {
	data := `{"name": 5, "count": 1.5, "tags": "x", "env": {"a": "1", "a": "2", "A": "3"}, "when": "nope", "inner": {"on": null}, "extra": true}`
	var d doc
	ps := Decode([]byte(data), &d, Options{FoldCase: true})
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{
		`env.a: the key "a" appears more than once (JSON readers disagree on which one wins)`,
		`env.A: the keys "a" and "A" differ only in letter case (some JSON readers take them for one key)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("duplicate keys stop before binding:\n%s", strings.Join(got, "\n"))
	}
	ps = Bind(&d, mustParse(t, `{"name": 5, "count": 1.5, "tags": "x", "when": "nope", "inner": {"on": null}, "extra": true}`), Options{})
	got = nil
	for _, p := range ps {
		got = append(got, p.String())
	}
	want = []string{
		`name: must be a string, not the number 5`,
		`count: must be an integer written as plain digits, not the number 1.5`,
		`tags: must be an array, not a string`,
		`when: "nope" is not a time (parsing time "nope" as "2006-01-02T15:04:05Z07:00": cannot parse "nope" as "2006")`,
		`inner.on: is null, where true or false is required`,
		`extra: unknown field "extra"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mustParse(t *testing.T, s string) *Node {
	t.Helper()
	n, ps := Parse([]byte(s), Options{})
	if n == nil || len(ps) > 0 {
		t.Fatalf("Parse(%s) = %v", s, ps)
	}
	return n
}

func TestUnmarshal(t *testing.T) {
	var d doc
	err := Unmarshal("doc.json", []byte(`{"name":"x","tags":null,"raw":{"b": [1, "x"]},"any":{"n":1.5},"inner":{"on":true}}`), &d, Options{RequireFields: true})
	if err != nil || d.Name != "x" || string(d.Raw) != `{"b":[1,"x"]}` || d.Any.(map[string]any)["n"] != 1.5 || !d.Inner.On {
		t.Fatalf("Unmarshal = %v, %+v", err, d)
	}
	err = Unmarshal("doc.json", []byte(`{"tags":[],"name":"x","name":"y"} `), &d, Options{})
	var se *Error
	if !errors.As(err, &se) || err.Error() != `doc.json: name: the key "name" appears more than once (JSON readers disagree on which one wins)` {
		t.Fatalf("a key twice: %v", err)
	}
	err = Unmarshal("doc.json", []byte(`{"tags":[]}`), &d, Options{RequireFields: true})
	if err == nil || err.Error() != `doc.json: name: is missing` {
		t.Fatalf("a missing field: %v", err)
	}
	for in, want := range map[string]string{
		"\xef\xbb\xbf{}":   "it starts with a UTF-8 byte-order mark",
		"{\"a\":\"\xff\"}": "it is not valid UTF-8",
		`{"a":`:            "it is not well-formed JSON (EOF, near byte 5)",
		`{} {}`:            "it has data after its JSON value (near byte 4)",
		strings.Repeat("[", 40) + strings.Repeat("]", 40): "it is not well-formed JSON (objects and arrays nest deeper than 32 levels, near byte 33)",
	} {
		if err := Unmarshal("", []byte(in), &d, Options{}); err == nil || err.Error() != want {
			t.Errorf("Unmarshal(%q) = %v, want %s", in, err, want)
		}
	}
	if err := Unmarshal("", []byte(`{"name":"x"}`), &d, Options{MaxSize: 4}); err == nil || err.Error() != "it is over 4 bytes" {
		t.Errorf("over MaxSize: %v", err)
	}
}

func TestJoinPathAndLineCol(t *testing.T) {
	if got := JoinPath(JoinPath("", "a"), "x y"); got != `a["x y"]` {
		t.Errorf("JoinPath = %s", got)
	}
	if l, c := LineCol([]byte("ab\ncd"), 4); l != 2 || c != 2 {
		t.Errorf("LineCol = %d, %d", l, c)
	}
}
