package sandbox

import (
	"fmt"
	"strings"
)

// The macOS base set (docs/sandbox.md §Enforcement, macOS): the system's
// programs and libraries, its configuration, and the harmless devices.
var (
	seatbeltBaseExec = []string{"/usr", "/bin", "/sbin", "/System", "/Library/Apple", "/private/var/select"}
	seatbeltBaseRead = []string{"/etc", "/private/etc", "/private/var/db/timezone", "/Library/Preferences/Logging", "/dev/fd"}
	// the only devices: no /dev subpath (disks, terminals, the rest)
	seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper"}
)

// SeatbeltProfile is the macOS sandbox-exec profile (SBPL) for p. For
// NetworkHosts it allows no network: Wrap adds the loopback port of
// berth's egress proxy, which exists only at the launch.
func SeatbeltProfile(p *Policy) string { return seatbeltProfile(p, 0) }

// seatbeltProfile is SeatbeltProfile with the egress proxy's port (0: none).
func seatbeltProfile(p *Policy, proxyPort int) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	paths := func(ps []string) string {
		var s []string
		for _, p := range ps {
			s = append(s, "(subpath "+sbplString(p)+")")
		}
		return strings.Join(s, " ")
	}
	literals := func(ps []string) string {
		var s []string
		for _, p := range ps {
			s = append(s, "(literal "+sbplString(p)+")")
		}
		return strings.Join(s, " ")
	}
	line(";; berth: generated from the server's sandbox policy (docs/sandbox.md)")
	line("(version 1)")
	line("(deny default)")
	line(`(import "system.sb")`)
	line("(allow process-fork)")
	line("(allow signal (target same-sandbox))")
	line("(allow sysctl-read)")
	line("(allow file-read-metadata)")
	line(";; base set: system programs and libraries, configuration, devices")
	line("(allow process-exec file-read* %s)", paths(seatbeltBaseExec))
	line("(allow file-read* %s)", paths(seatbeltBaseRead))
	line("(allow file-read* file-write-data %s)", literals(seatbeltDevices))
	if len(p.Exec) > 0 {
		line(";; exec: read and execute")
		line("(allow process-exec file-read* %s)", paths(p.Exec))
	}
	if len(p.Read) > 0 {
		line(";; read")
		line("(allow file-read* %s)", paths(p.Read))
	}
	if len(p.Write) > 0 {
		line(";; write: read and write, never execute")
		line("(allow file-read* file-write* %s)", paths(p.Write))
		line("(deny process-exec %s)", paths(p.Write))
	}
	if len(p.ReadOnly) > 0 {
		// after the write allow: in SBPL the last matching rule wins
		line(";; read-only inside a write path (.git)")
		line("(deny file-write* %s)", paths(p.ReadOnly))
	}
	switch p.Network {
	case NetworkOpen:
		line(";; network: open")
		line("(allow network*)")
	case NetworkHosts:
		line(";; network: only berth's egress proxy on loopback")
		if proxyPort > 0 {
			line(`(allow network-outbound (remote tcp "localhost:%d"))`, proxyPort)
		}
	default:
		line(";; network: none")
	}
	if p.UnixSockets {
		line(";; Unix sockets: its own listener")
		line("(allow network-bind network-inbound (local unix))")
		line("(allow network-outbound (remote unix))")
	} else if p.Network == NetworkOpen {
		line(";; no Unix sockets (the session bus, agents, Docker)")
		line("(deny network-outbound (remote unix))")
	}
	return b.String()
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
