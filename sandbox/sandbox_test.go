package sandbox

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the Seatbelt golden files in testdata/")

func TestSeatbeltProfile(t *testing.T) {
	base := Policy{
		Exec:  []string{"/Users/me/.berth/bundles/sha256-ab", "/opt/homebrew/Cellar/node/22.1.0"},
		Read:  []string{"/Users/me/notes"},
		Write: []string{"/Users/me/src/project", "/Users/me/.berth/cache/srv \"quoted\""},
	}
	for _, c := range []struct {
		name string
		edit func(*Policy)
		port int
	}{
		{"open", func(p *Policy) { p.Network = NetworkOpen }, 0},
		{"none", func(p *Policy) { p.Network = NetworkNone }, 0},
		{"hosts", func(p *Policy) { p.Network, p.Hosts = NetworkHosts, []string{"api.example.com:443"} }, 41234},
		{"unix", func(p *Policy) { p.Network, p.UnixSockets = NetworkNone, true }, 0},
		{"readonly", func(p *Policy) {
			p.Network, p.ReadOnly = NetworkOpen, []string{"/Users/me/src/project/.git"}
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := base
			c.edit(&p)
			got := seatbeltProfile(&p, c.port)
			if c.port == 0 && got != SeatbeltProfile(&p) {
				t.Error("SeatbeltProfile differs from seatbeltProfile without a port")
			}
			golden := filepath.Join("testdata", c.name+".sb")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./sandbox -run TestSeatbeltProfile -update)", err)
			}
			if got != string(want) {
				t.Errorf("profile differs from %s (-update to accept):\n%s", golden, got)
			}
			// never executable where it may write
			if !strings.Contains(got, `(deny process-exec (subpath "/Users/me/src/project")`) {
				t.Error("the workspace is not denied process-exec")
			}
			// read-only paths denied writes after (so over) the write allow
			for _, ro := range p.ReadOnly {
				deny := strings.Index(got, `(deny file-write* (subpath `+sbplString(ro)+`))`)
				allow := strings.Index(got, `(allow file-read* file-write* `)
				if deny < 0 || deny < allow {
					t.Errorf("%s is not denied file-write* after the write allow", ro)
				}
			}
			// only the listed devices, not all of /dev
			if strings.Contains(got, `(subpath "/dev")`) {
				t.Error("the profile allows all of /dev")
			}
		})
	}
}

func TestEnforcementLinux(t *testing.T) {
	full := &Support{OS: "linux", LandlockABI: 7, Seccomp: true, UserNamespaces: true}
	p := &Policy{Network: NetworkHosts, Hosts: []string{"a.example:443"}}
	e, err := enforcement(p, full, &Options{Require: true})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Confined || e.Mechanism != "landlock" || e.LandlockABI != 7 || !e.Seccomp || !e.NoNewPrivs || !e.NetworkNamespace || len(e.NotEnforced) != 0 {
		t.Errorf("full support: %+v", e)
	}

	// native-tool provider below ABI 9: pathname sockets not blocked
	p = &Policy{Network: NetworkOpen, UnixSockets: true}
	e, err = enforcement(p, full, &Options{})
	if err != nil || !e.Confined || len(e.NotEnforced) != 1 || !strings.Contains(e.NotEnforced[0], "pathname Unix sockets") {
		t.Errorf("unix sockets: %+v %v", e, err)
	}
	if _, err := enforcement(p, full, &Options{Require: true}); !errors.Is(err, ErrNotEnforced) {
		t.Errorf("Require with unix sockets below ABI 9: %v", err)
	}
	if e, _ := enforcement(p, &Support{OS: "linux", LandlockABI: 9, Seccomp: true}, &Options{}); len(e.NotEnforced) != 0 {
		t.Errorf("ABI 9 guards pathname sockets: %+v", e)
	}

	// no namespaces: host list not enforced; Require refuses
	nons := &Support{OS: "linux", LandlockABI: 7, Seccomp: true}
	p = &Policy{Network: NetworkNone}
	e, err = enforcement(p, nons, &Options{})
	if err != nil || e.NetworkNamespace || !slices.ContainsFunc(e.NotEnforced, func(s string) bool { return strings.Contains(s, "network none") }) {
		t.Errorf("no namespaces: %+v %v", e, err)
	}
	if _, err := enforcement(p, nons, &Options{Require: true}); !errors.Is(err, ErrNotEnforced) || !strings.Contains(err.Error(), "namespaces") {
		t.Errorf("Require without namespaces: %v", err)
	}
	// no invented setting: the callers name the real fix (sandbox-require
	// off, sandbox-unconfined ID, fetch-allow-scripts)
	if _, err := enforcement(p, nons, &Options{Require: true}); err == nil || strings.Contains(err.Error(), "not required") {
		t.Errorf("Require's error names a setting that does not exist: %v", err)
	}

	// no Landlock: unconfined, said why
	e, _ = enforcement(&Policy{Network: NetworkOpen}, &Support{OS: "linux", Seccomp: true}, &Options{})
	if e.Confined || !strings.Contains(e.Unconfined, "Landlock") {
		t.Errorf("no Landlock: %+v", e)
	}
	// old Landlock: scoping missing
	e, _ = enforcement(&Policy{Network: NetworkOpen}, &Support{OS: "linux", LandlockABI: 3, Seccomp: true}, &Options{})
	if !e.Confined || !slices.ContainsFunc(e.NotEnforced, func(s string) bool { return strings.Contains(s, "signals") }) {
		t.Errorf("ABI 3: %+v", e)
	}
}

func TestEnforcementOtherOS(t *testing.T) {
	e, err := enforcement(&Policy{Network: NetworkOpen}, &Support{OS: "windows"}, &Options{})
	if err != nil || e.Confined || e.Mechanism != "none" || !strings.Contains(e.Unconfined, "your user's rights") {
		t.Errorf("windows: %+v %v", e, err)
	}
	if _, err := enforcement(&Policy{Network: NetworkOpen}, &Support{OS: "windows"}, &Options{Require: true}); !errors.Is(err, ErrNotEnforced) {
		t.Errorf("windows with Require: %v", err)
	}
	e, err = enforcement(&Policy{Network: NetworkHosts}, &Support{OS: "darwin", Seatbelt: true}, &Options{Require: true})
	if err != nil || !e.Confined || e.Mechanism != "seatbelt" {
		t.Errorf("darwin: %+v %v", e, err)
	}
}
