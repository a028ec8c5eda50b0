package review

import (
	"bytes"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/fetched"
)

func TestFetchedChanges(t *testing.T) {
	old := []*fetched.Lock{{Server: "main", Package: "a@1.0.0", Packages: []fetched.Package{
		{Name: "a", Version: "1.0.0"}, {Name: "dep", Version: "1.0.0"}, {Name: "gone", Version: "2.0.0"}, {Name: "same", Version: "3.0.0"}}}}
	cur := []*fetched.Lock{{Server: "main", Package: "a@1.1.0", Size: 2_500_000, Tree: "sha256:t", Registry: "https://r/", Packages: []fetched.Package{
		{Name: "a", Version: "1.1.0"}, {Name: "dep", Version: "1.0.0"}, {Name: "dep", Version: "1.1.0", Path: "node_modules/a/node_modules/dep"},
		{Name: "new", Version: "0.1.0", Scripts: true}, {Name: "same", Version: "3.0.0"}}}}
	got := FetchedChanges(old, cur)
	want := []PackageChange{
		{Server: "main", Name: "a", From: "1.0.0", To: "1.1.0"},
		{Server: "main", Name: "dep", From: "1.0.0", To: "1.0.0, 1.1.0"},
		{Server: "main", Name: "gone", From: "2.0.0"},
		{Server: "main", Name: "new", To: "0.1.0"},
	}
	if len(got) != len(want) {
		t.Fatalf("changes %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	var b bytes.Buffer
	WriteFetchedChanges(&b, got)
	for _, w := range []string{"fetched main: ~ a 1.0.0 -> 1.1.0", "fetched main: - gone 2.0.0 (removed)", "fetched main: + new 0.1.0 (added)"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("changes text lacks %q:\n%s", w, b.String())
		}
	}
	if n := FetchedChanges(cur, cur); len(n) != 0 {
		t.Errorf("no upgrade: %+v", n)
	}
	b.Reset()
	WriteFetched(&b, cur)
	for _, w := range []string{"fetched  main: a@1.1.0: 5 packages, 2.5 MB, lock " + cur[0].Digest() + "; staged at trust, starts offline", "install scripts ran, confined (allowed by name): new@0.1.0"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("review text lacks %q:\n%s", w, b.String())
		}
	}
}
