package lock

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

func TestLockRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if l, err := Read(dir); l != nil || err != nil {
		t.Fatalf("missing lock: %v %v", l, err)
	}
	id := strings.Repeat("ab", 32)
	l := &Lock{LockVersion: 1}
	l.Set(Plugin{Name: "zeta", Version: "1.0.0", Digest: "sha256:" + strings.Repeat("1", 64), Signer: Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)}, Catalog: Catalog{Name: "acme", RootKeyIDs: []string{id}, TargetsVersion: 7}})
	l.Set(Plugin{Name: "alpha", Version: "2.0.0-rc.1", Constraint: "^2.0.0-0", Digest: "sha256:" + strings.Repeat("3", 64), Signer: Signer{Kind: trust.KindIdentity, Issuer: "https://accounts.google.com", SAN: "a@example.com"}, Catalog: Catalog{Name: "acme", RootKeyIDs: []string{id}, TargetsVersion: 7}})
	if err := Write(dir, l); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Plugins) != 2 || got.Plugins[0].Name != "alpha" {
		t.Fatalf("%+v", got)
	}
	if p, ok := got.Plugin("zeta"); !ok || p.Catalog.TargetsVersion != 7 || !p.Signer.Matches(&store.SignerRef{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)}) {
		t.Errorf("zeta: %+v", p)
	}
	fi, _ := os.Stat(filepath.Join(dir, File))
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("berth.lock has mode %o", fi.Mode().Perm())
	}
	// Bad locks name every problem.
	for doc, want := range map[string]string{
		`{"lockVersion": 2, "plugins": []}`:         "lockVersion is 2",
		`{"lockVersion": 1, "plugins": [], "x": 1}`: "unknown field",
		`{"lockVersion": 1, "plugins": [{"name": "A", "version": "1", "digest": "x", "signer": {"kind": "key"}, "catalog": {"name": "", "rootKeyIDs": [], "targetsVersion": 0}}]}`: "must be a plugin name",
	} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", doc, err)
		}
	}
	_, err = Parse([]byte(`{"lockVersion": 1, "plugins": [{"name": "A", "version": "1", "digest": "x", "signer": {"kind": "key"}, "catalog": {"name": "", "rootKeyIDs": [], "targetsVersion": 0}}]}`))
	for _, want := range []string{"digest", "fingerprint", "catalog", "rootKeyIDs is empty", "targetsVersion"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the lock error does not mention %s: %v", want, err)
		}
	}
	if err := Write(dir, &Lock{Plugins: []Plugin{{Name: "x"}}}); err == nil {
		t.Error("an invalid lock was written")
	}
}

// TestLockDuplicateKey: a key given twice (readers disagree on which one
// wins), or twice but for letter case, makes the lock invalid: the error
// names the file, the rule and the fix, and the file is left as it is.
func TestLockDuplicateKey(t *testing.T) {
	l := &Lock{LockVersion: 1}
	l.Set(Plugin{Name: "notes", Version: "1.0.0", Digest: "sha256:" + strings.Repeat("1", 64), Signer: Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)}, Catalog: Catalog{Name: "acme", RootKeyIDs: []string{strings.Repeat("ab", 32)}, TargetsVersion: 7}})
	good := string(l.Marshal())
	for name, tc := range map[string]struct{ doc, want string }{
		"top level":   {strings.Replace(good, `"lockVersion": 1,`, `"lockVersion": 1, "lockVersion": 1,`, 1), `the key "lockVersion" appears more than once`},
		"in a plugin": {strings.Replace(good, `"version": "1.0.0",`, `"version": "1.0.0", "version": "9.9.9",`, 1), `plugins[0].version: the key "version" appears more than once`},
		"case folded": {strings.Replace(good, `"digest":`, `"Digest": "sha256:`+strings.Repeat("4", 64)+`", "digest":`, 1), `plugins[0].digest: the keys "Digest" and "digest" differ only in letter case`},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.doc == good {
				t.Fatal("the test did not change the lock")
			}
			dir := t.TempDir()
			p := filepath.Join(dir, File)
			if err := os.WriteFile(p, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(dir)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Read = %v, want ErrInvalid", err)
			}
			for _, want := range []string{p + ": invalid berth.lock", tc.want, "restore it from version control"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q: %v", want, err)
				}
			}
			if data, _ := os.ReadFile(p); string(data) != tc.doc {
				t.Error("the lock was rewritten")
			}
		})
	}
}

func TestParseCatalogSources(t *testing.T) {
	base := &Lock{LockVersion: 1}
	base.Set(Plugin{Name: "notes", Version: "1.0.0", Digest: "sha256:" + strings.Repeat("1", 64),
		Signer:  Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)},
		Catalog: Catalog{Name: "acme", RootKeyIDs: []string{strings.Repeat("a", 64)}, TargetsVersion: 2}})
	// A lock without catalogs (written before berth recorded them) reads.
	old, err := Parse(base.Marshal())
	if err != nil || old.Catalog("acme") != nil {
		t.Fatalf("old lock: %v, %v", old, err)
	}
	good := CatalogSource{Name: "acme", Source: "https://catalog.example/acme/", RootPin: "sha256:" + strings.Repeat("3", 64)}
	for _, tc := range []struct {
		c    CatalogSource
		want string
	}{
		{good, ""},
		{CatalogSource{Name: "other", Source: good.Source, RootPin: good.RootPin}, "no plugin is resolved from catalog"},
		// A catalog added from a local directory: no source recorded.
		{CatalogSource{Name: "acme", Source: "", RootPin: good.RootPin}, ""},
		{CatalogSource{Name: "acme", Source: "https://x/\x1b[2J", RootPin: good.RootPin}, "control or unprintable"},
		{CatalogSource{Name: "acme", Source: "https://x/" + strings.Repeat("a", MaxSourceLen), RootPin: good.RootPin}, "over the limit"},
		{CatalogSource{Name: "acme", Source: good.Source, RootPin: strings.Repeat("3", 64)}, "rootPin"},
		{CatalogSource{Name: "acme", Source: good.Source, RootPin: "sha256:" + strings.Repeat("A", 64)}, "rootPin"},
	} {
		l := *base
		l.Catalogs = []CatalogSource{tc.c}
		_, err := Parse(l.Marshal())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
	twice := *base
	twice.Catalogs = []CatalogSource{good, good}
	if _, err := Parse(twice.Marshal()); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("twice: %v", err)
	}
}

func TestCheckAddable(t *testing.T) {
	for src, ok := range map[string]bool{
		"https://catalog.example/acme/": true,
		"file:///etc":                   false,
		"/etc":                          false,
		"http://127.0.0.1:8080/":        false,
		"http://catalog.example/":       false,
		"ftp://catalog.example/":        false,
	} {
		c := &CatalogSource{Name: "acme", Source: src, RootPin: "sha256:" + strings.Repeat("3", 64)}
		if err := c.CheckAddable(); (err == nil) != ok {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// A plugin of berth's built-in catalog is locked with signer kind
// builtin and catalog name and source builtin and a berth version, and
// nothing else: a lock cannot dress another source up as built in, nor
// give the built-in catalog a catalogs entry (a teammate's sync would
// otherwise be asked to add a catalog named builtin from anywhere).
func TestParseBuiltin(t *testing.T) {
	digest := "sha256:" + strings.Repeat("4", 64)
	good := Plugin{Name: "filesystem", Version: "2026.8.31", Digest: digest,
		Signer: Signer{Kind: SignerBuiltin}, Catalog: Catalog{Name: "builtin", Source: SourceBuiltin, BerthVersion: "0.1.0"}}
	l := &Lock{LockVersion: 1}
	l.Set(good)
	data := l.Marshal()
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if p, _ := got.Plugin("filesystem"); !p.IsBuiltin() || !reflect.DeepEqual(p, good) {
		t.Fatalf("read back %+v", p)
	}
	if strings.Contains(string(data), "rootKeyIDs") || strings.Contains(string(data), "targetsVersion") {
		t.Errorf("a built-in entry is written with TUF fields:\n%s", data)
	}
	bad := map[string]func(p *Plugin, l *Lock){
		"another source":       func(p *Plugin, _ *Lock) { p.Catalog.Source = "https://evil.example/" },
		"another catalog name": func(p *Plugin, _ *Lock) { p.Catalog.Name = "acme" },
		"a signer":             func(p *Plugin, _ *Lock) { p.Signer.Fingerprint = "sha256:" + strings.Repeat("2", 64) },
		"a key signer": func(p *Plugin, _ *Lock) {
			p.Signer = Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)}
		},
		"root keys":           func(p *Plugin, _ *Lock) { p.Catalog.RootKeyIDs = []string{strings.Repeat("a", 64)} },
		"a targets version":   func(p *Plugin, _ *Lock) { p.Catalog.TargetsVersion = 1 },
		"no berth version":    func(p *Plugin, _ *Lock) { p.Catalog.BerthVersion = "" },
		"a control character": func(p *Plugin, _ *Lock) { p.Catalog.BerthVersion = "0.1.0\n" },
		"builtin signer only": func(p *Plugin, _ *Lock) {
			p.Catalog = Catalog{Name: "acme", RootKeyIDs: []string{strings.Repeat("a", 64)}, TargetsVersion: 1}
		},
		"a TUF berth version": func(p *Plugin, _ *Lock) {
			*p = Plugin{Name: p.Name, Version: p.Version, Digest: p.Digest, Signer: Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)},
				Catalog: Catalog{Name: "acme", BerthVersion: "0.1.0", RootKeyIDs: []string{strings.Repeat("a", 64)}, TargetsVersion: 1}}
		},
		"a catalogs entry": func(_ *Plugin, l *Lock) {
			l.Catalogs = []CatalogSource{{Name: "builtin", Source: "https://evil.example/", RootPin: "sha256:" + strings.Repeat("3", 64)}}
		},
	}
	for name, change := range bad {
		p := good
		l := &Lock{LockVersion: 1}
		change(&p, l)
		l.Plugins = []Plugin{p}
		data := textio.MustJSON(l)
		if _, err := Parse(data); err == nil {
			t.Errorf("%s: accepted\n%s", name, data)
		}
	}
}

// Only an https:// source is written into a lock: a directory, a file://
// URL or a loopback http:// source names the writer's machine.
func TestRecordable(t *testing.T) {
	for src, want := range map[string]bool{
		"https://catalog.example/acme/": true,
		"/home/someone/private-catalog": false,
		"file:///home/someone/catalog":  false,
		"http://127.0.0.1:8080/":        false,
		"":                              false,
	} {
		if got := Recordable(src); got != want {
			t.Errorf("Recordable(%q) = %v, want %v", src, got, want)
		}
	}
}
