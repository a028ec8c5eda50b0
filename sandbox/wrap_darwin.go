package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
)

const sandboxExec = "/usr/bin/sandbox-exec"

func probe() *Support {
	s := &Support{OS: "darwin"}
	if _, err := os.Stat(sandboxExec); err == nil {
		s.Seatbelt = true
	} else {
		s.Notes = append(s.Notes, "Seatbelt: "+sandboxExec+" is missing")
	}
	return s
}

// wrap runs the program under sandbox-exec with the profile generated from
// p. For NetworkHosts berth listens on a loopback port itself, allows the
// profile only that port and points the proxy variables at it.
func wrap(cmd *exec.Cmd, p *Policy, o *Options) (*Launch, error) {
	e, err := enforcement(p, Probe(), o)
	if err != nil {
		return nil, err
	}
	l := &Launch{Enforcement: e, cmd: cmd}
	if !e.Confined {
		return l, nil
	}
	port := 0
	env := cmd.Environ()
	if p.Network == NetworkHosts {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("sandbox: the egress proxy's listener: %w", err)
		}
		l.proxy = ln
		port = ln.Addr().(*net.TCPAddr).Port
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		for _, n := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"} {
			env = withoutEnv(env, n)
		}
		for _, n := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
			env = append(env, n+"="+url)
		}
	}
	args := []string{"sandbox-exec", "-p", seatbeltProfile(p, port), cmd.Path}
	if len(cmd.Args) > 1 {
		args = append(args, cmd.Args[1:]...)
	}
	cmd.Path, cmd.Args, cmd.Env = sandboxExec, args, env
	return l, nil
}

func (l *Launch) started(startErr error) (net.Listener, error) {
	if l.done {
		panic("sandbox: Launch.Started called twice")
	}
	l.done = true
	if startErr != nil {
		if l.proxy != nil {
			l.proxy.Close()
		}
		return nil, startErr
	}
	return l.proxy, nil
}

func launcherMain() {}
