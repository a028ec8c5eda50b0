package bundle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Without a registered format (this package's tests cannot import
// bundle/formats), Load reads berth bundles only: a server.json is
// refused with an error that names the package to import, and a
// directory of another format is a bundle without berth.json.
func TestLoadWithoutFormats(t *testing.T) {
	if n := len(Formats()); n != 0 {
		t.Fatalf("%d formats registered in package bundle's own tests", n)
	}
	ctx := context.Background()
	src := filepath.Join("..", "testdata", "import", "good", "registry-weather.json")
	b, _, err := Load(ctx, src, nil)
	if err == nil {
		b.Close()
		t.Fatalf("Load(%s) read a server.json with no format registered", src)
	}
	if !strings.Contains(err.Error(), "reads no format") || !strings.Contains(err.Error(), "github.com/berth-mcp/berth/bundle/formats") {
		t.Errorf("error %q does not say to import bundle/formats", err)
	}
	for _, name := range []string{"mcpb-node", "claude-plugin", "tiny-tools-0.4.1.mcpb"} {
		src := filepath.Join("..", "testdata", "import", "good", name)
		b, ps, err := Load(ctx, src, nil)
		if err != nil {
			t.Fatalf("Load(%s): %v", src, err)
		}
		b.Close()
		if b.Import != nil || !slices.ContainsFunc(ps, func(p *Problem) bool { return p.Rule == RuleManifestMissing }) {
			t.Errorf("Load(%s) with no format registered: import %+v, problems %v", name, b.Import, ps)
		}
	}
}

// A format that Options names is read as a registered one is: recognized
// by its manifest, converted, and its problems located in the source.
func TestLoadDispatchesToAFormat(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake.json"), []byte(`{"name": "Fake"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var converted string
	fake := &Format{
		Name: "fake", Manifest: "fake.json", Title: "a fake manifest",
		Convert: func(d string) *Conversion {
			converted = d
			m := &Manifest{ManifestVersion: 1, Name: "Fake", Version: "1.0.0", Description: "d",
				ImportedFrom: &ImportedFrom{Format: "fake", Manifest: "fake.json"}}
			return &Conversion{Manifest: m, Locations: map[string]string{"name": "fake.json: name"}}
		},
	}
	b, ps, err := Load(context.Background(), dir, &Options{Formats: []*Format{fake}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if converted == "" || converted == dir || b.Import == nil || b.Import.Format != "fake" || b.Import.Manifest != "fake.json" {
		t.Fatalf("converted in %q, import %+v", converted, b.Import)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Rule+"\t"+p.Path)
	}
	// The name is not a berth name: its problem is located at the
	// source's field; the missing servers at the source's manifest.
	slices.Sort(got)
	if !slices.Equal(got, []string{RuleNameFormat + "\tfake.json: name", RuleNoComponents + "\tfake.json"}) {
		t.Fatalf("problems %q", got)
	}
	if !errors.Is(error(&InvalidError{Problems: ps}), ErrInvalidBundle) {
		t.Fatal("not an invalid bundle")
	}
}
