package marketplace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/trust"
)

// genPlugin makes a catalog entry that passes every rule, with made-up
// digests (nothing is downloaded from it).
func genPlugin(name, desc string, tier catalog.Tier, tags []string, signer *catalog.Signer, versions ...string) *catalog.Plugin {
	p := &catalog.Plugin{Name: name, Description: desc, Tier: tier, Tags: tags, Signers: []*catalog.Signer{signer}, Publisher: &catalog.Publisher{Name: "Gen"}}
	for i, v := range versions {
		p.Versions = append(p.Versions, &catalog.Version{
			Version:      v,
			Digest:       fmt.Sprintf("sha256:%064x", len(name)*1000+i),
			Archive:      catalog.Archive{Format: "tar.gz", Size: 1000, SHA256: fmt.Sprintf("sha256:%064x", i+1)},
			URLs:         []string{"bundles/" + name + "/" + v + "/" + name + "-" + v + ".tar.gz"},
			SignatureURL: "bundles/" + name + "/" + v + "/" + name + "-" + v + ".tar.gz.sigstore.json",
			Released:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Status:       catalog.StatusActive,
			Summary: catalog.Summary{
				Files: catalog.SummaryFiles{Count: 3, TotalSize: 1200},
				Servers: []catalog.SummaryServer{{Name: "main", Kind: "stdio",
					Stdio:    &catalog.SummaryStdio{Program: "host", Command: "npx", Argv: []string{"npx", "-y", name + "@" + v}, Cwd: "${bundle}", Env: []catalog.EnvSource{{Name: "TOKEN", FromEnv: "GEN_TOKEN"}}, Fetches: []catalog.Fetch{{Tool: "npx", Package: name + "@" + v, Ecosystem: "npm", Registry: "https://registry.npmjs.org/"}}},
					Tools:    catalog.ToolFilter{Allow: []string{}, Deny: []string{}},
					Timeouts: catalog.Timeouts{Startup: "30s", Call: "1m0s"}}},
				NativeTools: []catalog.SummaryNativeTool{},
			},
		})
	}
	return p
}

// publishCatalog writes plugins into the working copy and signs it.
func (e *testEnv) publishCatalog(plugins ...*catalog.Plugin) {
	e.t.Helper()
	cat := &catalog.Catalog{CatalogVersion: 1, Name: "acme", Plugins: plugins}
	e.write(repo.WorkingFile, cat.Marshal())
	if _, err := e.repo().Sign(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *testEnv) catalogSigner() *catalog.Signer {
	_, pub, err := trust.GenerateKey()
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := trust.NewKeySigner("gen", pub, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return &catalog.Signer{Kind: trust.KindKey, Fingerprint: s.Fingerprint, PublicKey: s.PublicKey}
}

func names(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestSearchRanking(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	s := e.catalogSigner()
	e.publishCatalog(
		genPlugin("notes", "Take notes", catalog.TierCommunity, nil, s, "1.0.0"),
		genPlugin("notes-pro", "Notes for teams", catalog.TierOfficial, nil, s, "2.0.0"),
		genPlugin("acme-notes", "Search your notes", catalog.TierVerified, []string{"notes"}, s, "1.0.0", "1.1.0"),
		genPlugin("weather", "Weather and NOTES of the sky", catalog.TierOfficial, []string{"forecast"}, s, "0.1.0"),
		genPlugin("git-tools", "Work with git", catalog.TierCommunity, []string{"vcs"}, s, "3.0.0"),
		genPlugin("sky-cli", "Stars", catalog.TierCommunity, []string{"notes-app"}, s, "1.0.0"),
	)
	e.addCatalog()
	for _, c := range []struct {
		q    Query
		want []string
	}{
		{Query{Text: "notes"}, []string{"notes", "notes-pro", "acme-notes", "sky-cli", "weather"}},
		{Query{Text: "NOTES"}, []string{"notes", "notes-pro", "acme-notes", "sky-cli", "weather"}},
		{Query{}, []string{"notes-pro", "weather", "acme-notes", "git-tools", "notes", "sky-cli"}},
		{Query{Text: "notes", Tier: catalog.TierOfficial}, []string{"notes-pro", "weather"}},
		{Query{Tag: "vcs"}, []string{"git-tools"}},
		{Query{Text: "git work"}, []string{"git-tools"}},
		{Query{Text: "git teams"}, nil},
		{Query{Text: "gen"}, []string{"notes-pro", "weather", "acme-notes", "git-tools", "notes", "sky-cli"}},
	} {
		res, err := e.cache.Search(c.q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(res.Results); !slices.Equal(got, c.want) {
			t.Errorf("%+v: got %v, want %v", c.q, got, c.want)
		}
	}
	res, _ := e.cache.Search(Query{Text: "acme-notes"}, nil)
	if r := res.Results[0]; r.Match != MatchExact || r.Latest != "1.1.0" || r.Status != catalog.StatusActive || r.Catalog != "acme" || r.Tier != catalog.TierVerified {
		t.Errorf("result: %+v", r)
	}
	p, ci, err := e.cache.Plugin("acme", "weather")
	if err != nil || p.Description != "Weather and NOTES of the sky" || ci.Name != "acme" {
		t.Fatalf("%v %+v", err, p)
	}
	if _, _, err := e.cache.Plugin("acme", "nope"); !errors.Is(err, ErrNoPlugin) {
		t.Errorf("a plugin not listed: %v", err)
	}
	if cats, err := e.cache.Lookup("git-tools"); err != nil || !slices.Equal(cats, []string{"acme"}) {
		t.Errorf("lookup: %v %v", cats, err)
	}
	if _, err := e.cache.Search(Query{Catalog: "nope"}, nil); err == nil {
		t.Error("searching a catalog that is not there is no error")
	}
}

func TestSearchTwoCatalogs(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	s := e.catalogSigner()
	e.publishCatalog(genPlugin("notes", "Take notes", catalog.TierCommunity, nil, s, "1.0.0"))
	e.addCatalog()
	f := newEnv(t, repo.Expiries{})
	f.publishCatalog(genPlugin("notes", "Other notes", catalog.TierOfficial, nil, s, "2.0.0"))
	src, _ := ParseSource(f.repoDir)
	if _, err := e.cache.Add(e.ctx, "other", src, RootPin{SHA256: f.init.RootSHA256}); err != nil {
		t.Fatal(err)
	}
	res, err := e.cache.Search(Query{Text: "notes"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[0].Catalog != "other" || res.Results[1].Catalog != "acme" {
		t.Fatalf("%+v", res.Results)
	}
	res, _ = e.cache.Search(Query{Text: "notes", Catalog: "acme"}, nil)
	if len(res.Results) != 1 || res.Results[0].Latest != "1.0.0" {
		t.Fatalf("%+v", res.Results)
	}
}

func TestSearchLatestSkips(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	s := e.catalogSigner()
	p := genPlugin("notes", "Take notes", catalog.TierCommunity, nil, s, "1.0.0", "1.1.0", "2.0.0-rc.1")
	p.Versions[1].Status, p.Versions[1].Reason = catalog.StatusRevoked, "leaked tokens"
	q := genPlugin("gone", "All yanked", catalog.TierCommunity, nil, s, "1.0.0")
	q.Versions[0].Status, q.Versions[0].Reason = catalog.StatusYanked, "broken"
	e.publishCatalog(p, q)
	e.addCatalog()
	res, _ := e.cache.Search(Query{}, nil)
	for _, r := range res.Results {
		switch r.Name {
		case "notes":
			if r.Latest != "1.0.0" {
				t.Errorf("notes: latest %q, want 1.0.0 (1.1.0 revoked, 2.0.0-rc.1 a prerelease)", r.Latest)
			}
		case "gone":
			if r.Latest != "" {
				t.Errorf("gone: latest %q, want none", r.Latest)
			}
		}
	}
}

func TestResolve(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-30 * 24 * time.Hour)
	fresh := now.Add(-time.Hour)
	p := &catalog.Plugin{Name: "notes"}
	for _, v := range []struct {
		v        string
		status   catalog.Status
		released time.Time
		requires string
	}{
		{"1.0.0", catalog.StatusActive, old, ""},
		{"1.1.0", catalog.StatusYanked, old, ""},
		{"1.2.0", catalog.StatusRevoked, old, ""},
		{"1.3.0", catalog.StatusActive, old, ">=9.0.0"},
		{"1.3.1", catalog.StatusActive, fresh, ""},
		{"1.4.0-beta.1", catalog.StatusActive, old, ""},
		{"2.0.0", catalog.StatusDeprecated, fresh, ""},
	} {
		reason := ""
		if v.status != catalog.StatusActive {
			reason = "because"
		}
		p.Versions = append(p.Versions, &catalog.Version{Version: v.v, Status: v.status, Reason: reason, Released: v.released, RequiresBerth: v.requires})
	}
	day := 24 * time.Hour
	for _, c := range []struct {
		constraint string
		age        time.Duration
		yanked     bool
		want       string // "" means none
		skip       map[string]string
	}{
		{"", 0, false, "2.0.0", map[string]string{"1.4.0-beta.1": "a prerelease", "1.3.0": "needs berth >=9.0.0", "1.2.0": "revoked: because", "1.1.0": "yanked: because", "1.3.1": "older than 2.0.0"}},
		{"", day, false, "1.0.0", map[string]string{"2.0.0": "min-release-age", "1.3.1": "min-release-age"}},
		{"^1.1", 0, false, "1.3.1", map[string]string{"2.0.0": "does not satisfy ^1.1"}},
		{"~1.2", 0, false, "", map[string]string{"1.2.0": "revoked"}},
		{">=1.4.0-0", 0, false, "2.0.0", nil},
		{"1.4.0-beta.1", 0, false, "1.4.0-beta.1", nil},
		{"^1.4.0-0", 0, false, "1.4.0-beta.1", nil},
		{"1.1.0", 0, false, "", map[string]string{"1.1.0": "yanked"}},
		{"1.1.0", 0, true, "1.1.0", nil},
		{"1.2.0", 0, true, "", map[string]string{"1.2.0": "revoked"}},
		{"3", 0, false, "", nil},
	} {
		r, err := Resolve(p, c.constraint, &ResolveOptions{Now: now, MinReleaseAge: c.age, AllowYanked: c.yanked, BerthVersion: "0.1.0"})
		got := ""
		if r != nil && r.Chosen != nil {
			got = r.Chosen.Version
		}
		if got != c.want {
			t.Errorf("%q (age %s): chose %q, want %q", c.constraint, c.age, got, c.want)
		}
		if (c.want == "") != (err != nil) {
			t.Errorf("%q: error %v", c.constraint, err)
		}
		for v, why := range c.skip {
			for _, cand := range r.Candidates {
				if cand.Version.Version == v && !strings.Contains(cand.Skipped, why) {
					t.Errorf("%q: %s skipped as %q, want %q", c.constraint, v, cand.Skipped, why)
				}
			}
		}
	}
	if _, err := Resolve(p, "not a constraint", nil); err == nil || !strings.Contains(err.Error(), "is not a version constraint") {
		t.Errorf("bad constraint: %v", err)
	}
	_, err := Resolve(p, "~1.2", &ResolveOptions{Now: now})
	if err == nil || !strings.Contains(err.Error(), "1.2.0: revoked: because") {
		t.Errorf("the error does not say why: %v", err)
	}
}
