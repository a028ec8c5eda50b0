package fetched

import (
	"strings"
	"testing"
)

// ATTACK (issue 25, the operator's npm settings): ~/.npmrc's registry now
// reaches npm through the allow-list, ${VAR} expanded, and npm (its
// registry-fetch) takes a user and password in the registry URL as basic
// auth: registry=https://ci:${NPM_PASS}@npm.corp.example/. berth prints
// that URL, password included, in the hint of a failed install (npmHint,
// fetched/operator.go; the error reaches the terminal, --json and logs),
// where pip's index is always shown through RedactURL.
//
// Latent with the npm of testdata/peers: it refuses `npm config get
// registry` when the registry carries credentials ("The registry option
// is protected"), so resolveNPM fails before npmHint runs (checked end to
// end). An npm that answers (older ones did), or a future caller of
// npmHint with the configured registry, prints the password.
func TestAttack25NPMHintShowsRegistryPassword(t *testing.T) {
	op := &Operator{NPM: &UserSettings{File: "/home/u/.npmrc", Settings: []Setting{{Key: "registry", Value: "https://ci:s3cret-pw@npm.corp.example/"}}}}
	for _, out := range []string{"npm ERR! code E401", "npm ERR! code SELF_SIGNED_CERT_IN_CHAIN", "npm ERR! code ENOTFOUND", "npm ERR! code E404", "npm ERR! something else"} {
		hint := npmHint([]byte(out), "https://ci:s3cret-pw@npm.corp.example/", t.TempDir(), op)
		if strings.Contains(hint, "s3cret-pw") {
			t.Errorf("for %q the hint shows the registry's password: %s", out, hint)
		}
	}
}
