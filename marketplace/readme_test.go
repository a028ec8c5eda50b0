package marketplace

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
)

// testPNG makes a w×h PNG.
func testPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAddCarriesReadmeAndIcon: catalog add takes the README of the highest
// version and the icon it is given, and the cache reads both back.
func TestAddCarriesReadmeAndIcon(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	icon := testPNG(t, 32, 32)
	dir, sig := e.bundle("acme-notes", "1.2.0", "")
	if _, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier, Icon: icon}); err != nil {
		t.Fatal(err)
	}
	e.publish("acme-notes", "1.1.0") // lower: its README does not replace 1.2.0's
	e.addCatalog()
	p, _, err := e.cache.Plugin("acme", "acme-notes")
	if err != nil {
		t.Fatal(err)
	}
	if p.Readme != "notes 1.2.0\n" {
		t.Errorf("readme %q, want that of 1.2.0", p.Readme)
	}
	if !bytes.Equal(p.IconPNG(), icon) {
		t.Errorf("the icon did not come back")
	}
	dir, sig = e.bundle("acme-notes", "1.3.0", "")
	if _, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier, OmitReadme: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.refresh(); err != nil {
		t.Fatal(err)
	}
	p, _, _ = e.cache.Plugin("acme", "acme-notes")
	if p.Readme != "" || !bytes.Equal(p.IconPNG(), icon) {
		t.Errorf("OmitReadme: readme %q, icon kept %v", p.Readme, p.IconPNG() != nil)
	}
}

func TestCheckIcon(t *testing.T) {
	good := testPNG(t, 64, 48)
	if err := catalog.CheckIcon(good); err != nil {
		t.Fatal(err)
	}
	huge := append([]byte{}, good...)
	huge = append(huge, make([]byte, catalog.MaxIcon)...)
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"svg":       {[]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "not a PNG"},
		"too small": {testPNG(t, 8, 8), "16 to 512"},
		"too big":   {testPNG(t, 600, 20), "16 to 512"},
		"truncated": {good[:len(good)/2], "not a valid PNG"},
		"over cap":  {huge, "over the limit"},
	} {
		err := catalog.CheckIcon(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	e := newEnv(t, repo.Expiries{})
	dir, sig := e.bundle("acme-notes", "1.0.0", "")
	if _, err := e.repo().Add(e.ctx, repo.AddRequest{Source: dir, Signature: sig, Verifier: e.verifier, Icon: []byte("<svg/>")}); err == nil {
		t.Error("catalog add accepted an SVG icon")
	}
	// A catalog whose entry carries a bad icon or an oversized README has
	// that entry skipped, with the rule named.
	p := &catalog.Plugin{Icon: base64.StdEncoding.EncodeToString([]byte("<svg/>")), Readme: strings.Repeat("x", catalog.MaxReadme+1)}
	rules := map[string]bool{}
	for _, pr := range catalog.CheckPlugin(p, "plugins[0]") {
		rules[pr.Rule] = true
	}
	if !rules[catalog.RuleEntryIcon] || !rules[catalog.RuleEntryReadme] {
		t.Errorf("rules %v, want %s and %s", rules, catalog.RuleEntryIcon, catalog.RuleEntryReadme)
	}
}
