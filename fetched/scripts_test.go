package fetched

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/sandbox"
)

// TestAllowedScriptSeesNoCredential: an allowed install script that dumps
// its environment, the configuration npm_config_userconfig names, and
// berth's own npm configuration into its tree finds no credential: not
// the configuration's token (literal or ${VAR}), not the variable it
// refers to, not a NODE_AUTH_TOKEN of berth's environment. The registry
// is kept.
func TestAllowedScriptSeesNoCredential(t *testing.T) {
	if sup := sandbox.Probe(); sup.LandlockABI == 0 || !sup.UserNamespaces {
		t.Skipf("this host cannot confine install scripts: %v", sup.Notes)
	}
	dump := testkit.NPMPackage{Name: "dump", Version: "1.0.0", Bin: "bin/s.js",
		Scripts: map[string]string{"postinstall": "node postinstall.js"},
		Files: map[string]string{
			"bin/s.js": testkit.MCPServerJS(""),
			"postinstall.js": `const fs = require("fs");
fs.writeFileSync("env.json", JSON.stringify(process.env));
try { fs.copyFileSync(process.env.npm_config_userconfig, "userconfig.txt"); } catch (e) { fs.writeFileSync("userconfig.err", String(e)); }
try { fs.copyFileSync(process.env.BERTH_TEST_FETCHERS + "/npmrc", "fetchers.txt"); } catch (e) { fs.writeFileSync("fetchers.err", String(e)); }
`}}
	e := newNPMEnv(t)
	reg := testkit.NewNPMRegistry(t, dump)
	const literal, viaVar, nodeAuth, password = "npm_LITERALTOKEN0001", "npm_VARTOKEN0002", "npm_NODEAUTH0003", "cGFzc3dvcmQwMDA0"
	host := reg.URL()[len("http:"):]
	cfg := "registry=" + reg.URL() + "\n" +
		host + ":_authToken=" + literal + "\n" +
		"//other.example/:_authToken=${NPM_TOKEN}\n" +
		"//third.example/:username=u\n//third.example/:_password=" + password + "\n" +
		"strict-ssl=true\n"
	if err := os.WriteFile(filepath.Join(e.fetchers, NPMUserConfig), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.opts.Env = append(e.opts.Env, "NPM_TOKEN="+viaVar, "NODE_AUTH_TOKEN="+nodeAuth, "BERTH_TEST_FETCHERS="+e.fetchers)
	e.opts.AllowScripts = []string{"dump"}
	_, dir, err := e.resolve(t, "-y", "dump@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, "node_modules", "dump")
	env, err := os.ReadFile(filepath.Join(pkg, "env.json"))
	if err != nil {
		t.Fatalf("the script did not run: %v", err)
	}
	if !bytes.Contains(env, []byte(reg.URL())) {
		t.Errorf("the script's environment lost the registry: %s", env)
	}
	if _, err := os.Stat(filepath.Join(pkg, "userconfig.txt")); err != nil {
		t.Errorf("the stripped configuration was not readable by npm's script: %v", err)
	}
	if _, err := os.Stat(filepath.Join(pkg, "fetchers.txt")); err == nil {
		t.Errorf("the script read $BERTH_HOME/fetchers/npmrc")
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, _ := os.ReadFile(p)
		for _, s := range []string{literal, viaVar, nodeAuth, password} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("a credential (%s) reached the staged tree through the install script: %s", s, p)
			}
		}
		return nil
	})
}

func TestScriptConfig(t *testing.T) {
	in := strings.Join([]string{
		"registry=https://reg.example/",
		"@acme:registry=https://acme.example/npm/",
		"cafile=/etc/ssl/acme.pem",
		"strict-ssl=true",
		"; comment _authToken=x",
		"//reg.example/:_authToken=T1",
		"  //acme.example/npm/:_auth = T2",
		`"//q.example/:_password"=T3`,
		"_authToken=T4",
		"_auth=T5",
		"username=T6",
		"_password=T7",
		"email=T8@x",
		"certfile=/home/u/T9.pem",
		"keyfile=/home/u/T10.key",
		"@acme:_authToken=T11",
		"KEY=T12",
		"registry-token=${T13}",
		"[section]",
		"registry=https://T14/",
	}, "\n")
	got := string(scriptConfig([]byte(in)))
	want := "registry=https://reg.example/\n@acme:registry=https://acme.example/npm/\ncafile=/etc/ssl/acme.pem\nstrict-ssl=true\n"
	if got != want {
		t.Errorf("scriptConfig =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(got, "T1") {
		t.Errorf("a credential was kept: %s", got)
	}
}

func FuzzScriptConfig(f *testing.F) {
	f.Add("registry=https://r/\n//r/:_authToken=SECRET\n")
	f.Add("\"//r/:_auth\" = SECRET\n_password=SECRET\n")
	f.Fuzz(func(t *testing.T, s string) {
		out := string(scriptConfig([]byte(s)))
		for line := range strings.SplitSeq(out, "\n") {
			k, _, _ := strings.Cut(line, "=")
			k = strings.ToLower(strings.Trim(strings.TrimSpace(k), `"'`))
			if strings.HasPrefix(k, "//") || strings.HasSuffix(k, "_authtoken") || strings.HasSuffix(k, "_auth") || strings.HasSuffix(k, "_password") {
				t.Fatalf("kept a credential line %q of %q", line, s)
			}
		}
	})
}
