package foreign

import "testing"

// Only the fields berth uses keep their values; the others keep their
// names, so the review still lists them, and every other byte stays.
func TestKeepUsedFields(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name":"a/b","_meta":{"x":"` + "yyyy" + `"},"version":"1.0.0"}`, `{"name":"a/b","_meta":{},"version":"1.0.0"}`},
		{`{"icons":[{"src":"https://x/i.png"}],"packages":[{"registryType":"npm"}],"_meta":{}}`, `{"icons":[],"packages":[{"registryType":"npm"}],"_meta":{}}`},
		{`{"unknown":{"a":1},"other":[1,2],"flag":true,"remotes":[{"type":"sse"}]}`, `{"unknown":{},"other":[],"flag":true,"remotes":[{"type":"sse"}]}`},
		{`{"_meta":{"a":1},"_meta":{"b":2}}`, `{"_meta":{},"_meta":{}}`},
		{`{"\u005fmeta":{"a":1},"title":"T"}`, `{"\u005fmeta":{},"title":"T"}`},
		{`{"name":"a/b","version":"1.0.0"}`, `{"name":"a/b","version":"1.0.0"}`},
		{`[1,2]`, `[1,2]`},
	} {
		if got := string(KeepUsedFields([]byte(tc.in))); got != tc.want {
			t.Errorf("KeepUsedFields(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
