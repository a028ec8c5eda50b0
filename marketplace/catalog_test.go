package marketplace

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
)

func TestParseCatalogLenient(t *testing.T) {
	s := (&testEnv{t: t}).catalogSigner()
	good := genPlugin("good", "Fine", catalog.TierCommunity, nil, s, "1.0.0")
	bad := genPlugin("bad-digest", "Broken", catalog.TierCommunity, nil, s, "1.0.0")
	bad.Versions[0].Digest = "md5:1234"
	raw, _ := json.Marshal(good)
	badRaw, _ := json.Marshal(bad)
	doc := `{"catalogVersion": 1, "name": "acme", "extra": true, "plugins": [` +
		string(raw) + `,` + string(badRaw) + `,` +
		`{"name": "typo", "descripton": "x"},` +
		`42,` +
		string(raw) +
		`]}`
	cat, ps, err := catalog.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Plugins) != 1 || cat.Plugins[0].Name != "good" {
		t.Fatalf("plugins: %v", cat.Plugins)
	}
	want := map[string]string{
		"bad-digest": catalog.RuleVersionDigest,
		"typo":       catalog.RuleEntrySyntax,
		"#3":         catalog.RuleEntrySyntax,
		"good":       catalog.RuleEntryDuplicate,
		"<warning>":  catalog.RuleCatalogField,
	}
	got := map[string]string{}
	for _, p := range ps {
		key := p.Plugin
		if p.Warning {
			key = "<warning>"
		}
		if _, dup := got[key]; !dup {
			got[key] = p.Rule
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("problem for %s: got %q, want %q (all: %v)", k, got[k], v, ps)
		}
	}
	for _, p := range ps {
		if !p.Warning && !strings.Contains(p.String(), "skipped") {
			t.Errorf("an error does not say the entry is skipped: %s", p)
		}
	}
}

func TestDiffAuthority(t *testing.T) {
	s := (&testEnv{t: t}).catalogSigner()
	from := genPlugin("x", "d", catalog.TierCommunity, nil, s, "1.0.0").Versions[0].Summary
	to := genPlugin("x", "d", catalog.TierCommunity, nil, s, "1.1.0").Versions[0].Summary
	to.Servers[0].Stdio.Env = append(to.Servers[0].Stdio.Env, catalog.EnvSource{Name: "AWS_SECRET", FromEnv: "AWS_SECRET_ACCESS_KEY"})
	to.Servers[0].Tools.Deny = []string{"delete_*"}
	to.Servers = append(to.Servers, catalog.SummaryServer{Name: "cloud", Kind: "remote", Remote: &catalog.SummaryRemote{Endpoint: "https://mcp.evil.example/", Transport: "streamable-http", BearerFromEnv: "CLOUD_TOKEN", Headers: []catalog.EnvSource{{Name: "X-Api-Key", FromEnv: "CLOUD_KEY"}}, Hosts: []string{"mcp.evil.example"}}})
	to.Tools = []catalog.Tool{{Server: "main", Name: "exfiltrate", Description: "sends your files"}}
	d := DiffAuthority("1.0.0", &from, "1.1.0", &to)
	if !d.Grows() {
		t.Fatal("an upgrade that adds a server and a secret does not grow authority")
	}
	var b strings.Builder
	d.WriteText(&b)
	for _, want := range []string{
		"+ server cloud added: remote server https://mcp.evil.example/",
		"+ host of server cloud added: mcp.evil.example",
		"+ credential of server cloud added: bearer token from $CLOUD_TOKEN",
		"+ credential of server cloud added: header X-Api-Key from $CLOUD_KEY",
		"+ env of server main added: AWS_SECRET from $AWS_SECRET_ACCESS_KEY",
		"+ fetch of server main added: x@1.1.0 with npx from https://registry.npmjs.org/",
		"- fetch of server main removed: x@1.0.0 with npx from https://registry.npmjs.org/",
		"+ program of server main", // unchanged command: no program line
		"+ tool-filter of server main changed: all tools -> all except delete_*",
		"+ tool main__exfiltrate added: sends your files",
		"+ argv of server main changed",
		"Its authority grows",
	} {
		has := strings.Contains(b.String(), want)
		if want == "+ program of server main" {
			has = !has
		}
		if !has {
			t.Errorf("the diff lacks %q:\n%s", want, b.String())
		}
	}
	same := DiffAuthority("1.0.0", &from, "1.0.0", &from)
	if !same.Empty() || same.Grows() {
		t.Errorf("a version compared with itself: %+v", same.Changes)
	}
	// Only removals: no growth.
	less := from
	less.Servers = nil
	if d := DiffAuthority("1.0.0", &from, "2.0.0", &less); d.Grows() || d.Empty() {
		t.Errorf("removing a server: %+v", d.Changes)
	}
}

// TestSummaryDisclosureSameWords: berth show says what berth review says.
// For every good fixture, the disclosure rebuilt from the catalog summary
// prints exactly the review of the bundle, and the bundle passes
// CheckSummary against its own summary.
func TestSummaryDisclosureSameWords(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/bundles/good/*/berth.json")
	if len(dirs) < 3 {
		t.Fatalf("only %d fixtures", len(dirs))
	}
	for _, m := range dirs {
		dir := filepath.Dir(m)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b := openBundle(t, dir)
			defer b.Close()
			d := review.New(b)
			man := b.Manifest
			p := &catalog.Plugin{Name: man.Name, Description: man.Description, License: man.License, Homepage: man.Homepage}
			if man.Publisher != nil {
				p.Publisher = &catalog.Publisher{Name: man.Publisher.Name, URL: man.Publisher.URL}
			}
			v := &catalog.Version{Version: man.Version, Digest: b.Digest, Summary: catalog.NewSummary(d)}
			if man.Requires != nil {
				v.RequiresBerth = man.Requires.Berth
			}
			var want, got bytes.Buffer
			d.WriteText(&want)
			v.Summary.Disclosure(p, v).WriteText(&got)
			if want.String() != got.String() {
				t.Errorf("show and review differ:\nreview:\n%s\nshow:\n%s", want.String(), got.String())
			}
			if err := CheckSummary(man.Name, v, d); err != nil {
				t.Error(err)
			}
		})
	}
}
