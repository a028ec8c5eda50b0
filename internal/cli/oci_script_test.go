package cli

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/berth-mcp/berth/internal/ocitest"
)

var (
	ociRegsMu sync.Mutex
	ociRegs   = map[string]*ocitest.Registry{} // by work dir + name
)

// ociRegistryCmd starts go-containerregistry's in-process registry on
// loopback: oci-registry NAME [referrers] [basic USER PASS], setting
// NAME_HOST (upper case) and, with basic, DOCKER_CONFIG to a directory
// whose config.json has the credentials.
func ociRegistryCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: oci-registry NAME [referrers] [basic USER PASS]")
	}
	o := ocitest.Options{}
	rest := args[1:]
	for len(rest) > 0 {
		switch rest[0] {
		case "referrers":
			o.Referrers, rest = true, rest[1:]
		case "basic":
			if len(rest) < 3 {
				ts.Fatalf("basic needs USER PASS")
			}
			o.BasicAuth, rest = &[2]string{rest[1], rest[2]}, rest[3:]
		default:
			ts.Fatalf("oci-registry: unknown option %q", rest[0])
		}
	}
	r := ocitest.Start(o)
	key := ts.Getenv("WORK") + "\x00" + args[0]
	ociRegsMu.Lock()
	ociRegs[key] = r
	ociRegsMu.Unlock()
	ts.Defer(func() {
		r.Server.Close()
		ociRegsMu.Lock()
		delete(ociRegs, key)
		ociRegsMu.Unlock()
	})
	ts.Setenv(strings.ToUpper(args[0])+"_HOST", r.Host())
	if o.BasicAuth != nil {
		dir := ts.MkAbs(".docker-" + args[0])
		if err := os.MkdirAll(dir, 0o700); err != nil {
			ts.Fatalf("%v", err)
		}
		cfg := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, r.Host(), b64(o.BasicAuth[0]+":"+o.BasicAuth[1]))
		if err := os.WriteFile(dir+"/config.json", []byte(cfg), 0o600); err != nil {
			ts.Fatalf("%v", err)
		}
		ts.Setenv("DOCKER_CONFIG", dir)
	}
}

func ociReg(ts *testscript.TestScript, name string) *ocitest.Registry {
	ociRegsMu.Lock()
	defer ociRegsMu.Unlock()
	r := ociRegs[ts.Getenv("WORK")+"\x00"+name]
	if r == nil {
		ts.Fatalf("no oci-registry %s", name)
	}
	return r
}

// ociStatsCmd prints the requests and bytes a registry served since the
// last oci-stats, and resets them: oci-stats NAME.
func ociStatsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: oci-stats NAME")
	}
	r := ociReg(ts, args[0])
	st := r.Stats()
	t := st.Total()
	fmt.Fprintf(ts.Stdout(), "requests: %d\nbytes up: %d\nbytes down: %d\n%s", t.Requests, t.RequestBytes, t.ResponseBytes, st)
	r.Reset()
}

// ociTamperCmd makes a registry alter every response body that holds
// the bytes of FILE (flipping one bit, or with "append" adding bytes, so
// the length changes too): oci-tamper NAME FILE [append], or
// oci-tamper NAME off.
func ociTamperCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 || len(args) == 3 && args[2] != "append" {
		ts.Fatalf("usage: oci-tamper NAME FILE [append] | oci-tamper NAME off")
	}
	appendBytes := len(args) == 3
	r := ociReg(ts, args[0])
	if args[1] == "off" {
		r.Tamper(nil)
		return
	}
	want := []byte(ts.ReadFile(args[1]))
	r.Tamper(func(_ *http.Request, body []byte) []byte {
		if bytes.Equal(body, want) {
			body = bytes.Clone(body)
			if appendBytes {
				return append(body, "a payload"...)
			}
			body[len(body)/2] ^= 1
		}
		return body
	})
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
