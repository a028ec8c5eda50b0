package schemas_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/lock"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/schemas"
	"github.com/berth-mcp/berth/trust"
)

// catalogRequired mirrors the catalogVersion 1 contract (see
// contractRequired for why it is written out).
var catalogRequired = map[reflect.Type][]string{
	reflect.TypeFor[catalog.Catalog]():           {"catalogVersion", "plugins"},
	reflect.TypeFor[catalog.Plugin]():            {"name", "description", "tier", "signers", "versions"},
	reflect.TypeFor[catalog.Publisher]():         {"name"},
	reflect.TypeFor[catalog.Signer]():            {"kind"},
	reflect.TypeFor[catalog.Version]():           {"version", "digest", "archive", "urls", "signatureURL", "released", "status", "summary"},
	reflect.TypeFor[catalog.Archive]():           {"format", "size", "sha256"},
	reflect.TypeFor[catalog.Summary]():           {"files", "servers", "nativeTools", "contextTokens"},
	reflect.TypeFor[catalog.SummaryFiles]():      {"count", "totalSize"},
	reflect.TypeFor[catalog.SummaryServer]():     {"name", "kind", "tools", "timeouts"},
	reflect.TypeFor[catalog.SummaryStdio]():      {"program", "command", "argv", "cwd", "env"},
	reflect.TypeFor[catalog.SummaryRemote]():     {"endpoint", "transport", "headers", "hosts"},
	reflect.TypeFor[catalog.EnvSource]():         {"name", "fromEnv"},
	reflect.TypeFor[catalog.Fetch]():             {"tool", "package", "ecosystem", "registry"},
	reflect.TypeFor[catalog.ToolFilter]():        {"allow", "deny"},
	reflect.TypeFor[catalog.Timeouts]():          {"startup", "call"},
	reflect.TypeFor[catalog.SummaryNativeTool](): {"name", "executable", "sha256", "size"},
	reflect.TypeFor[catalog.Tool]():              {"server", "name"},
	reflect.TypeFor[bundle.SandboxNetwork]():     {"mode"},
}

var lockRequired = map[reflect.Type][]string{
	reflect.TypeFor[lock.Lock]():          {"lockVersion", "plugins"},
	reflect.TypeFor[lock.Plugin]():        {"name", "version", "digest", "signer", "catalog"},
	reflect.TypeFor[lock.Signer]():        {"kind"},
	reflect.TypeFor[lock.Catalog]():       {"name"},
	reflect.TypeFor[lock.CatalogSource](): {"name", "rootPin"},
}

func TestCatalogSchemaMatchesGoTypes(t *testing.T) {
	doc := loadSchemaDoc(t, schemas.Catalog())
	if doc.root["$id"] != schemas.CatalogURL {
		t.Errorf("$id is %v", doc.root["$id"])
	}
	for _, p := range checkDrift(doc, reflect.TypeFor[catalog.Catalog](), catalogRequired) {
		t.Error(p)
	}
}

func TestLockSchemaMatchesGoTypes(t *testing.T) {
	doc := loadSchemaDoc(t, schemas.Lock())
	if doc.root["$id"] != schemas.LockURL {
		t.Errorf("$id is %v", doc.root["$id"])
	}
	for _, p := range checkDrift(doc, reflect.TypeFor[lock.Lock](), lockRequired) {
		t.Error(p)
	}
}

func compile(t *testing.T, data []byte, url string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s does not compile: %v", url, err)
	}
	return sch
}

func instance(t *testing.T, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPublishedCatalogPassesSchema publishes a real bundle (the stdio and
// the remote fixtures, signed with a key made here) and checks that the
// catalog berth writes passes the schema, and that documents berth skips
// entries of fail it.
func TestPublishedCatalogPassesSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "repo")
	if _, err := repo.Init(ctx, repoDir, filepath.Join(dir, "keys"), &repo.Options{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	priv, pub, _ := trust.GenerateKey()
	s, _ := trust.NewKeySigner("acme", pub, nil)
	v, _ := trust.NewVerifier([]trust.Signer{s}, nil)
	r, err := repo.Open(repoDir, filepath.Join(dir, "keys"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range []string{"stdio-bundled", "remote", "host-program", "native-tool"} {
		src := filepath.Join(dir, fx)
		if out, err := exec.Command("cp", "-a", filepath.Join(fixtures, "good", fx), src).CombinedOutput(); err != nil {
			t.Fatalf("%s", out)
		}
		b := openBundle(t, src)
		sig, err := trust.Sign(ctx, b.Listing().Bytes(), priv)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Add(ctx, repo.AddRequest{Source: src, Signature: sig, Verifier: v, Tags: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(repoDir, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	sch := compile(t, schemas.Catalog(), schemas.CatalogURL)
	if err := sch.Validate(instance(t, data)); err != nil {
		t.Fatalf("the schema rejects a catalog berth published:\n%v", err)
	}
	// What ParseCatalog skips, the schema rejects.
	var cat map[string]any
	json.Unmarshal(data, &cat)
	for name, edit := range map[string]func(p map[string]any){
		"tier":           func(p map[string]any) { p["tier"] = "gold" },
		"unknown field":  func(p map[string]any) { p["stars"] = 5 },
		"no signers":     func(p map[string]any) { p["signers"] = []any{} },
		"bad digest":     func(p map[string]any) { version(p)["digest"] = "md5:0" },
		"revoked reason": func(p map[string]any) { version(p)["status"] = "revoked" },
		"bad url":        func(p map[string]any) { version(p)["urls"] = []any{} },
		"svg icon": func(p map[string]any) {
			p["icon"] = base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`))
		},
		"long readme": func(p map[string]any) { p["readme"] = strings.Repeat("é", 40000) + strings.Repeat("a", 30000) },
		"kind without its object": func(p map[string]any) {
			delete(server(p), "remote")
			delete(server(p), "stdio")
		},
	} {
		var c map[string]any
		json.Unmarshal(data, &c)
		p := c["plugins"].([]any)[0].(map[string]any)
		edit(p)
		edited, _ := json.Marshal(c)
		if err := sch.Validate(instance(t, edited)); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
		parsed, problems, err := catalog.Parse(edited)
		if err != nil || len(parsed.Plugins) != 3 || !catalog.HasErrors(problems) {
			t.Errorf("%s: berth does not skip it: %v %v", name, err, problems)
		}
	}
}

func version(p map[string]any) map[string]any {
	return p["versions"].([]any)[0].(map[string]any)
}

func server(p map[string]any) map[string]any {
	return version(p)["summary"].(map[string]any)["servers"].([]any)[0].(map[string]any)
}

func openBundle(t *testing.T, src string) *bundle.Bundle {
	t.Helper()
	b, err := bundle.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLockPassesSchema(t *testing.T) {
	dir := t.TempDir()
	id := strings.Repeat("ab", 32)
	l := &lock.Lock{LockVersion: 1}
	l.Set(lock.Plugin{Name: "acme-notes", Version: "1.4.2", Constraint: "^1.4", Digest: "sha256:" + strings.Repeat("1", 64),
		Signer:  lock.Signer{Kind: trust.KindKey, Fingerprint: "sha256:" + strings.Repeat("2", 64)},
		Catalog: lock.Catalog{Name: "acme", RootKeyIDs: []string{id}, TargetsVersion: 3}})
	l.Set(lock.Plugin{Name: "cloud", Version: "2.0.0", Digest: "sha256:" + strings.Repeat("3", 64),
		Signer:  lock.Signer{Kind: trust.KindIdentity, Issuer: "https://accounts.google.com", SAN: "a@example.com"},
		Catalog: lock.Catalog{Name: "acme", RootKeyIDs: []string{id}, TargetsVersion: 3}})
	l.Set(lock.Plugin{Name: "filesystem", Version: "2026.8.31", Digest: "sha256:" + strings.Repeat("4", 64),
		Signer:  lock.Signer{Kind: lock.SignerBuiltin},
		Catalog: lock.Catalog{Name: "builtin", Source: lock.SourceBuiltin, BerthVersion: "0.1.0"}})
	if err := lock.Write(dir, l); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, lock.File))
	sch := compile(t, schemas.Lock(), schemas.LockURL)
	if err := sch.Validate(instance(t, data)); err != nil {
		t.Fatalf("the schema rejects a lock berth wrote:\n%v", err)
	}
	for _, bad := range []string{
		`{"lockVersion": 1, "plugins": [], "x": 1}`,
		`{"lockVersion": 2, "plugins": []}`,
		strings.Replace(string(data), `"kind": "key"`, `"kind": "identity"`, 1),
		// A built-in plugin with root keys, a TUF one with a source, another source.
		strings.Replace(string(data), `"berthVersion": "0.1.0"`, `"berthVersion": "0.1.0", "rootKeyIDs": ["`+id+`"]`, 1),
		strings.Replace(string(data), `"name": "acme",`, `"name": "acme", "source": "builtin",`, 1),
		strings.Replace(string(data), `"source": "builtin"`, `"source": "https://evil.example/"`, 1),
		strings.Replace(string(data), `"kind": "builtin"`, `"kind": "builtin", "fingerprint": "sha256:`+strings.Repeat("2", 64)+`"`, 1),
	} {
		if sch.Validate(instance(t, []byte(bad))) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
		if _, err := lock.Parse([]byte(bad)); err == nil {
			t.Errorf("berth accepts %s", bad)
		}
	}
}
