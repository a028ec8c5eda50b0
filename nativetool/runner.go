package nativetool

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/berth-mcp/berth/internal/procgroup"
	"github.com/berth-mcp/berth/sandbox"
)

// errAborted is returned by a launch whose context ended before the
// process started.
var errAborted = errors.New("launch cancelled")

// procRunner starts and stops one plugin process for go-plugin. go-plugin's
// own runner hands the plugin the host's stdin, which under `berth serve`
// is the MCP client's channel; this one gives it /dev/null, puts it in its
// own process group, and checks the executable's checksum with go-plugin's
// SecureConfig immediately before exec.
//
// go-plugin calls build once, then Start, Wait and Kill from its own
// goroutines; abort and stopGroup may be called at any time.
type procRunner struct {
	exe      string
	checksum [32]byte
	env      []string
	dir      string
	policy   *sandbox.Policy // nil: unconfined
	sbOpts   *sandbox.Options
	egress   func(net.Listener)

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdout  io.ReadCloser
	stderr  io.ReadCloser
	pid     int // 0 until started
	aborted bool
	launch  *sandbox.Launch // set by build when confined
}

var _ runner.Runner = (*procRunner)(nil)

// build is the ClientConfig.RunnerFunc. spec carries the environment
// go-plugin prepared (magic cookie, protocol versions, mTLS certificate,
// socket directory); tmpDir is the socket directory it created.
func (r *procRunner) build(_ hclog.Logger, spec *exec.Cmd, tmpDir string) (runner.Runner, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fail := func(err error) (runner.Runner, error) {
		_ = os.RemoveAll(tmpDir)
		return nil, err
	}
	if r.aborted {
		return fail(errAborted)
	}
	// A fresh SecureConfig and hash for every launch: go-plugin never
	// resets the hash, so reusing one fails the second check.
	sc := &plugin.SecureConfig{Checksum: r.checksum[:], Hash: sha256.New()}
	ok, err := sc.Check(r.exe)
	if err != nil {
		return fail(fmt.Errorf("nativetool: cannot check the checksum of %s: %w", r.exe, err))
	}
	if !ok {
		e := &ChecksumError{Path: r.exe, Want: r.checksum}
		copy(e.Got[:], sc.Hash.Sum(nil))
		return fail(e)
	}
	cmd := &exec.Cmd{
		Path: r.exe, // the checked file itself, never a shell or a PATH lookup
		Args: []string{r.exe},
		Dir:  r.dir,
		// Later entries win: go-plugin's variables override any that the
		// caller's environment happens to carry.
		Env: append(slices.Clip(r.env), spec.Env...),
	}
	cmd.SysProcAttr = procgroup.Attr()
	if r.stdout, err = cmd.StdoutPipe(); err != nil {
		return fail(err)
	}
	if r.stderr, err = cmd.StderrPipe(); err != nil {
		return fail(err)
	}
	if r.policy != nil {
		p := *r.policy
		sock, err := filepath.EvalSymlinks(tmpDir)
		if err != nil {
			return fail(fmt.Errorf("nativetool: the socket directory %s: %w", tmpDir, err))
		}
		p.Write = append(slices.Clone(p.Write), sock)
		p.UnixSockets = true
		if r.launch, err = sandbox.Wrap(cmd, &p, r.sbOpts); err != nil {
			_ = r.stdout.Close()
			_ = r.stderr.Close()
			return fail(fmt.Errorf("nativetool: confining %s: %w", r.exe, err))
		}
	}
	r.cmd = cmd
	return r, nil
}

func (r *procRunner) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborted {
		_ = r.stdout.Close()
		_ = r.stderr.Close()
		return errAborted
	}
	err := r.cmd.Start()
	if r.launch != nil {
		ln, lerr := r.launch.Started(err)
		if err == nil && lerr != nil {
			procgroup.Kill(r.cmd.Process.Pid)
			_ = r.cmd.Wait()
			return fmt.Errorf("nativetool: confining %s: %w", r.exe, lerr)
		}
		if err == nil && ln != nil {
			r.egress(ln)
		}
	}
	if err != nil {
		return fmt.Errorf("nativetool: starting %s: %w", r.exe, err)
	}
	r.pid = r.cmd.Process.Pid
	return nil
}

func (r *procRunner) Wait(context.Context) error { return r.cmd.Wait() }

// Kill is go-plugin's last resort after a graceful shutdown did not end the
// process within 2 s: SIGKILL to the whole group.
func (r *procRunner) Kill(context.Context) error {
	r.mu.Lock()
	pid := r.pid
	r.mu.Unlock()
	if pid == 0 {
		return nil
	}
	procgroup.Kill(pid)
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.exe }

func (r *procRunner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (r *procRunner) Diagnose(context.Context) string {
	return "the executable did not complete berth's native tool handshake: it must call nativetool.Serve " +
		"(or speak go-plugin gRPC with handshake " + MagicCookieKey + ", protocol version " + strconv.Itoa(ProtocolVersion) +
		") and write nothing to stdout before serving; it may also be built for another OS or architecture"
}

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// abort stops a launch in progress: a process not yet started never
// starts, a started one is killed with its group.
func (r *procRunner) abort() {
	r.mu.Lock()
	r.aborted = true
	pid := r.pid
	r.mu.Unlock()
	if pid != 0 {
		procgroup.Kill(pid)
	}
}

// stopGroup ends whatever is left of the process group once the plugin
// itself is gone: children it started that outlived it. SIGTERM, up to
// grace for them to exit, then SIGKILL.
func (r *procRunner) stopGroup(grace time.Duration) {
	r.mu.Lock()
	pid := r.pid
	r.mu.Unlock()
	if pid == 0 || !procgroup.Alive(pid) {
		return
	}
	procgroup.Terminate(pid, grace, func(d time.Duration) bool { return procgroup.WaitGone(pid, d) })
}
