//go:build !linux && !darwin

package sandbox

import (
	"net"
	"os/exec"
	"runtime"
)

func probe() *Support {
	return &Support{OS: runtime.GOOS, Notes: []string{"berth has no confinement for local servers on " + runtime.GOOS}}
}

// wrap leaves cmd as it is: the server runs unconfined, and the
// Enforcement says so (or Require refuses it).
func wrap(cmd *exec.Cmd, p *Policy, o *Options) (*Launch, error) {
	e, err := enforcement(p, Probe(), o)
	if err != nil {
		return nil, err
	}
	return &Launch{Enforcement: e, cmd: cmd}, nil
}

func (l *Launch) started(startErr error) (net.Listener, error) {
	if l.done {
		panic("sandbox: Launch.Started called twice")
	}
	l.done = true
	return nil, startErr
}

func launcherMain() {}
