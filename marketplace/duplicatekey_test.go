package marketplace

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
)

// TestParseCatalogDuplicateKeys: a key given twice (JSON readers disagree
// on which one wins), or twice but for letter case, inside an entry makes
// that entry malformed (entry-syntax, skipped, the rest listed); at the
// top level it makes the whole catalog unreadable.
func TestParseCatalogDuplicateKeys(t *testing.T) {
	s := (&testEnv{t: t}).catalogSigner()
	raw := func(name string) string {
		data, _ := json.Marshal(genPlugin(name, "Fine", catalog.TierCommunity, nil, s, "1.0.0"))
		return string(data)
	}
	twice := strings.Replace(raw("twice"), `"description":"Fine"`, `"description":"Fine","description":"Evil"`, 1)
	folded := strings.Replace(raw("folded"), `"digest":`, `"Digest":"sha256:`+strings.Repeat("0", 64)+`","digest":`, 1)
	if twice == raw("twice") || folded == raw("folded") {
		t.Fatal("the test did not change the entries")
	}
	doc := `{"catalogVersion": 1, "plugins": [` + raw("good") + `,` + twice + `,` + folded + `]}`
	cat, ps, err := catalog.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Plugins) != 1 || cat.Plugins[0].Name != "good" {
		t.Fatalf("plugins: %v", cat.Plugins)
	}
	want := map[string]string{
		"twice":  `plugins[1] (twice): error: the entry does not decode (description: the key "description" appears more than once`,
		"folded": `plugins[2] (folded): error: the entry does not decode (versions[0].digest: the keys "Digest" and "digest" differ only in letter case`,
	}
	for _, p := range ps {
		if w, ok := want[p.Plugin]; ok {
			if p.Rule != catalog.RuleEntrySyntax || !strings.HasPrefix(p.String(), w) || !strings.Contains(p.String(), "it is skipped") {
				t.Errorf("%s: %s", p.Plugin, p)
			}
			delete(want, p.Plugin)
		}
	}
	if len(want) > 0 {
		t.Errorf("no problem for %v: %v", want, ps)
	}

	for name, tc := range map[string]struct{ doc, want string }{
		"twice":  {`{"catalogVersion": 1, "plugins": [], "plugins": [` + raw("good") + `]}`, `the catalog gives the key "plugins" more than once`},
		"folded": {`{"catalogVersion": 1, "Plugins": [` + raw("good") + `], "plugins": []}`, `the catalog gives the keys "Plugins" and "plugins", which differ only in letter case,`},
	} {
		_, _, err := catalog.Parse([]byte(tc.doc))
		if !errors.Is(err, catalog.ErrFormat) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "its curator must keep one and sign the catalog again") {
			t.Errorf("top level, %s: %v", name, err)
		}
	}
}

// publishCatalogBytes publishes data as the catalog, signed with the
// repository's real keys, bypassing the curator's checks (which refuse a
// key given twice): targets, snapshot and timestamp version v.
func (e *testEnv) publishCatalogBytes(v int64, data []byte) {
	e.t.Helper()
	tf, err := metadata.TargetFile().FromBytes(catalog.TargetName, data, "sha256")
	if err != nil {
		e.t.Fatal(err)
	}
	e.write(repo.TargetFile(tf), data)
	targets := metadata.Targets(e.clk.now().Add(24 * time.Hour).UTC().Truncate(time.Second))
	targets.Signed.Version = v
	targets.Signed.Targets[catalog.TargetName] = tf
	if _, err := targets.Sign(e.key(metadata.TARGETS)); err != nil {
		e.t.Fatal(err)
	}
	targData, err := targets.ToBytes(true)
	if err != nil {
		e.t.Fatal(err)
	}
	e.write(fmt.Sprintf("%d.targets.json", v), targData)
	e.publishTimestamp(v, v, e.publishSnapshot(v, v, targData))
}

// TestRefuseCatalogDuplicateKey: a signed catalog.json that gives a
// top-level key twice is refused by the client as malformed, naming the
// file, and the verified copy stays as it was.
func TestRefuseCatalogDuplicateKey(t *testing.T) {
	e := setup(t, repo.Expiries{})
	cat, err := e.repo().Working()
	if err != nil {
		t.Fatal(err)
	}
	data := cat.Marshal()
	dup := strings.Replace(string(data), `"catalogVersion": 1,`, `"catalogVersion": 1, "plugins": [],`, 1)
	if dup == string(data) {
		t.Fatal("the test did not change the catalog")
	}
	e.publishCatalogBytes(4, []byte(dup))
	e.refused(KindMalformed, `at catalog.json: unreadable catalog: the catalog gives the key "plugins" more than once`)
}
