package fetched

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

func TestNPMUserSettings(t *testing.T) {
	rc := `; the operator's npmrc
registry = https://mirror.corp/npm/
@acme:registry="https://npm.acme.example/"
//mirror.corp/npm/:_authToken=${NPM_TOKEN}
//other.example/:_authToken=${UNSET_TOKEN}
//quiet.example/:_authToken=${UNSET_TOKEN?}
cafile=/etc/corp/ca.pem ; inline comment
ca[]="-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----"
https-proxy='http://proxy.corp:3128'
noproxy=localhost,.corp
strict-ssl=false
node-options=--require /tmp/evil.js
script-shell=/tmp/evil.sh
ignore-scripts=false
//mirror.corp/npm/:_password=c2VjcmV0
registry=https://mirror.corp/npm2/
[section]
cafile=/not/top/level
`
	u := NPMUserSettings(ParseNPMRC(rc), lookup("NPM_TOKEN=tok-1"))
	got := map[string]string{}
	for _, s := range u.Settings {
		got[s.Key] = s.Value
	}
	want := map[string]string{
		"registry":                      "https://mirror.corp/npm2/",
		"@acme:registry":                "https://npm.acme.example/",
		"//mirror.corp/npm/:_authToken": "tok-1",
		"//quiet.example/:_authToken":   "",
		"cafile":                        "/etc/corp/ca.pem",
		"ca":                            "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----",
		"https-proxy":                   "http://proxy.corp:3128",
		"noproxy":                       "localhost,.corp",
	}
	if len(got) != len(want) {
		t.Errorf("settings %v\nwant %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"strict-ssl", "node-options", "script-shell", "ignore-scripts", "//mirror.corp/npm/:_password", "//other.example/:_authToken (${UNSET_TOKEN} is not set)"} {
		if !slices.Contains(u.Ignored, k) {
			t.Errorf("ignored %q lacks %q", u.Ignored, k)
		}
	}
	out := string(npmrcFor(u, []byte("registry=http://berth.mirror/\n")))
	if strings.Contains(out, "npm2") || !strings.HasSuffix(out, "registry=http://berth.mirror/\n") {
		t.Errorf("berth's file does not win:\n%s", out)
	}
}

// An expanded value cannot add a line or a ${ for npm to expand again.
func TestNPMUserSettingsInjection(t *testing.T) {
	u := NPMUserSettings(ParseNPMRC("registry=${EVIL}\nproxy=${LOOP}\n"), lookup("EVIL=x\nscript-shell=/tmp/evil.sh", "LOOP=${NPM_TOKEN}"))
	if len(u.Settings) != 0 {
		t.Errorf("kept %+v", u.Settings)
	}
}

func TestReadOperatorRefusesWritable(t *testing.T) {
	home := t.TempDir()
	rc := filepath.Join(home, ".npmrc")
	if err := os.WriteFile(rc, []byte("registry=https://x.example/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(rc, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOperator(lookup("HOME=" + home)); err == nil || !strings.Contains(err.Error(), "chmod go-w "+rc) {
		t.Errorf("a world-writable ~/.npmrc: %v", err)
	}
	os.Chmod(rc, 0o600)
	op, err := ReadOperator(lookup("HOME="+home, "NPM_CONFIG_USERCONFIG="+filepath.Join(home, "none")))
	if err != nil || op.NPM != nil {
		t.Errorf("NPM_CONFIG_USERCONFIG names the file: %+v %v", op, err)
	}
	op, err = ReadOperator(lookup("HOME=" + home))
	if err != nil || op.NPM.Summary() != "registry from "+rc {
		t.Errorf("summary %q %v", op.NPM.Summary(), err)
	}
}

func TestPipUserSettings(t *testing.T) {
	home := t.TempDir()
	conf := filepath.Join(home, ".config", "pip", "pip.conf")
	os.MkdirAll(filepath.Dir(conf), 0o700)
	os.WriteFile(conf, []byte("[global]\nindex-url = https://pypi.corp/simple\ncert: /etc/corp/ca.pem\ntrusted-host = pypi.corp\n[install]\nproxy = http://no/\n"), 0o600)
	op, err := ReadOperator(lookup("HOME="+home, "PIP_PROXY=http://proxy.corp:3128"))
	if err != nil {
		t.Fatal(err)
	}
	if op.Pip.Get("index-url") != "https://pypi.corp/simple" || op.Pip.Get("cert") != "/etc/corp/ca.pem" || op.Pip.Get("proxy") != "http://proxy.corp:3128" {
		t.Errorf("pip settings %+v", op.Pip)
	}
	if !slices.Contains(op.Pip.Ignored, "trusted-host") || op.Pip.File != conf+" and PIP_* variables" {
		t.Errorf("pip settings %+v", op.Pip)
	}
	uv := filepath.Join(home, ".config", "uv", "uv.toml")
	os.MkdirAll(filepath.Dir(uv), 0o700)
	os.WriteFile(uv, []byte("[[index]]\nurl = \"https://uv.corp/simple\"\ndefault = true\n"), 0o600)
	op, err = ReadOperator(lookup("HOME="+home, "SSL_CERT_FILE=/etc/corp/ca.pem"))
	if err != nil || op.UV.Get("index-url") != "https://uv.corp/simple" || op.UV.Get("cert") != "/etc/corp/ca.pem" {
		t.Errorf("uv settings %+v %v", op.UV, err)
	}
}

// Whatever the npmrc, what berth writes for npm reads back as the kept
// settings and nothing else.
func FuzzNPMRC(f *testing.F) {
	for _, s := range []string{"registry=https://x/\n", "ca[]=\"a\\nb\"\nca[]=c\n", "//h/:_authToken=${T}\n", "@s:registry='x' ; c\n", "k=\"\\u000ascript-shell=x\"\n", "[a]\nx=y\n", "a\\;b=c\\#d"} {
		f.Add(s, "T=v")
	}
	f.Fuzz(func(t *testing.T, rc, envKV string) {
		u := NPMUserSettings(ParseNPMRC(rc), lookup(envKV))
		back := ParseNPMRC(string(npmrcFor(u, nil)))
		if len(back) != len(u.Settings) {
			t.Fatalf("wrote %d settings, read back %d: %q", len(u.Settings), len(back), npmrcFor(u, nil))
		}
		for i, e := range back {
			s := u.Settings[i]
			if e.Key != s.Key || e.Value != s.Value || !npmAllowed(e.Key) || strings.Contains(e.Value, "${") {
				q, _ := json.Marshal(s)
				t.Fatalf("setting %s read back as %+v", q, e)
			}
		}
	})
}

// lookup is a getenv of kvs ("NAME=value").
func lookup(kvs ...string) func(string) string {
	return func(key string) string {
		for _, kv := range kvs {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}

// --pin resolves against the operator's registries where berth's files
// name none, trusting the operator's CA; berth's own win.
func TestFillResolver(t *testing.T) {
	home := t.TempDir()
	ca := filepath.Join(home, "ca.pem")
	os.WriteFile(ca, []byte(testCAPEM), 0o600)
	os.WriteFile(filepath.Join(home, ".npmrc"), []byte("registry=https://npm.corp/\n@acme:registry=https://acme.corp/\ncafile="+ca+"\n"), 0o600)
	op, err := ReadOperator(lookup("HOME="+home, "PIP_INDEX_URL=https://pypi.corp/simple/"))
	if err != nil {
		t.Fatal(err)
	}
	ro := &runtimefetch.ResolverOptions{NPMScopes: map[string]string{"@acme": "https://berth.mirror/"}}
	if err := FillResolver(ro, op); err != nil {
		t.Fatal(err)
	}
	if ro.NPMRegistry != "https://npm.corp/" || ro.NPMScopes["@acme"] != "https://berth.mirror/" || ro.PipIndex != "https://pypi.corp/simple/" || ro.UVIndex != "" || ro.RootCAs == nil {
		t.Errorf("resolver options %+v", ro)
	}
	os.Remove(ca)
	if err := FillResolver(&runtimefetch.ResolverOptions{}, op); err == nil || !strings.Contains(err.Error(), ca) {
		t.Errorf("a missing cafile: %v", err)
	}
}

// testCAPEM is a certificate (any will do for a pool).
const testCAPEM = `-----BEGIN CERTIFICATE-----
MIIBdzCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjAYMRYwFAYDVQQDEw1iZXJ0aCB0
ZXN0IENBMB4XDTI0MDEwMTAwMDAwMFoXDTM0MDEwMTAwMDAwMFowGDEWMBQGA1UE
AxMNYmVydGggdGVzdCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABFmYh6tX
-----END CERTIFICATE-----
`

func BenchmarkNPMUserSettings(b *testing.B) {
	rc := strings.Repeat("registry=https://npm.corp/\n@acme:registry=\"https://acme.corp/\"\n//npm.corp/:_authToken=${NPM_TOKEN}\ncafile=/etc/ca.pem ; c\nstrict-ssl=false\n", 4)
	env := lookup("NPM_TOKEN=t")
	for b.Loop() {
		NPMUserSettings(ParseNPMRC(rc), env)
	}
}
