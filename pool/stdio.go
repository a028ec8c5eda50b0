package pool

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/procgroup"
	"github.com/berth-mcp/berth/sandbox"
)

// baseEnvNames are the host variables every stdio server receives: a
// small documented base, plus the platform's equivalents.
func baseEnvNames() []string {
	if runtime.GOOS == "windows" {
		return []string{"PATH", "PATHEXT", "SystemRoot", "SystemDrive", "windir", "ComSpec", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "ProgramData", "TEMP", "TMP", "LANG"}
	}
	return []string{"PATH", "HOME", "LANG", "TMPDIR"}
}

// defaultPath is the PATH a server gets when the host has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// spawnSpec is a stdio server's resolved command line and environment.
type spawnSpec struct {
	path string   // the program, absolute
	argv []string // argv[0] is the manifest's command, substituted
	env  []string
	dir  string
	// cleanup, when set, runs once the process has exited or failed to
	// start (it removes a runtime fetcher's directory; see fetch.go).
	cleanup func()
	// fetchRead and fetchWrite are what a runtime fetcher needs of
	// berth's own files under confinement: its package managers'
	// configuration (read) and its run directory (write).
	fetchRead, fetchWrite []string
	// fetchedTrees are the staged fetched trees (fetched.Lock) a
	// runtime-fetched server starts from: readable and executable under
	// confinement. The start from a staged tree sets them and leaves
	// fetchWrite nil (nothing is fetched at start).
	fetchedTrees []string
}

// envValue returns the value of name in env ("NAME=value" entries).
func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// permanentError marks a start failure that retrying cannot fix (a missing
// variable, a missing program, a refused address); the server stays
// failed until the pool is reopened.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(format string, args ...any) error {
	return &permanentError{fmt.Errorf(format, args...)}
}

// resolveStdio builds the command line and environment of a stdio server:
// ${bundle} and ${workspace} substituted, the working directory (default
// the staged snapshot), the base environment and the declared fromEnv
// sources. Every missing variable is named, never a value.
func resolveStdio(id string, sp *bundle.Stdio, snapshot, workspace string, base []string, src *sources) (*spawnSpec, error) {
	r := strings.NewReplacer("${bundle}", snapshot, "${workspace}", workspace)
	env := map[string]string{}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sp.Env)) {
		if paths := sp.Env[k].BundlePath; paths != nil {
			v, err := bundlePathValue(id, k, paths, snapshot)
			if err != nil {
				return nil, err
			}
			env[k] = v
			continue
		}
		if v, ok := src.lookup(sp.Env[k].FromEnv, k); ok {
			env[k] = v
		}
	}
	if err := src.missing(id); err != nil {
		return nil, err
	}
	list := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}

	dir := snapshot
	if sp.Cwd != "" {
		dir = r.Replace(sp.Cwd)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, permanent("server %s: its working directory %s is not a directory; create it, or fix cwd in the manifest", id, dir)
	}
	command := r.Replace(sp.Command)
	argv := append([]string{command}, make([]string, len(sp.Args))...)
	for i, a := range sp.Args {
		argv[i+1] = r.Replace(a)
	}
	path := command
	if !strings.ContainsAny(sp.Command, `/\`) && !strings.HasPrefix(sp.Command, "${") {
		p, err := lookPath(command, env["PATH"])
		if err != nil {
			return nil, permanent("server %s: the program %q is not on the server's PATH (%s); install it there, or run berth with a PATH that has it", id, command, env["PATH"])
		}
		path = p
	} else if fi, err := os.Stat(path); err != nil || fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0) {
		return nil, permanent("server %s: the program %s is missing or not executable; for ${workspace} programs create it, for ${bundle} ones re-trust the bundle", id, path)
	}
	return &spawnSpec{path: path, argv: argv, env: list, dir: dir}, nil
}

// bundlePathValue is the value of a {"bundlePath": [...]} variable
// (PYTHONPATH, NODE_PATH): each path under the staged snapshot, joined
// with the platform's list separator. The manifest was validated (every
// element a clean path of the bundle); a snapshot directory whose own
// path holds the separator would split an element, so it is refused.
func bundlePathValue(id, key string, paths []string, snapshot string) (string, error) {
	sep := string(os.PathListSeparator)
	if strings.Contains(snapshot, sep) {
		return "", permanent("server %s: %s would name the bundle's folders, but the staged bundle's path %s holds the list separator %q, which would split it; move BERTH_HOME to a path without it", id, key, snapshot, sep)
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Join(snapshot, filepath.FromSlash(p))
	}
	return strings.Join(out, sep), nil
}

// lookPath finds a program on the server's PATH (not berth's). Relative
// PATH entries are ignored, and so is a name holding a path separator
// (exec.LookPath never searches one; joined to a PATH entry, "../x" would
// leave it).
func lookPath(name, pathList string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return "", fs.ErrNotExist
	}
	exts := []string{""}
	if runtime.GOOS == "windows" {
		exts = []string{".exe", ".cmd", ".bat", ""}
	}
	for _, d := range filepath.SplitList(pathList) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		for _, ext := range exts {
			p := filepath.Join(d, name+ext)
			fi, err := os.Stat(p)
			if err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0) {
				return p, nil
			}
		}
	}
	return "", fs.ErrNotExist
}

// process is a running stdio server: its own process group, pipes that
// berth owns, and the stderr copier.
type process struct {
	cmd        *exec.Cmd
	stdin      *os.File // berth's end
	stdout     *os.File // berth's end
	exited     chan struct{}
	waitErr    error // valid once exited is closed
	stderrDone chan struct{}
	stopOnce   sync.Once
	signalled  atomic.Bool // stop sent a signal
}

// startProcess starts the server with pipes created here, so that exec
// runs no copying goroutines and Wait never closes berth's ends: the
// process's exit is noticed even when a grandchild keeps the pipes open.
//
// conf confines it (sandbox.Wrap) unless its policy is nil; conf's
// variables (TMPDIR, XDG_CACHE_HOME) override the spec's; a listener the
// launch returns for a host list is served as the server's egress proxy
// until the process exits. conf's cleanup runs when the process has
// exited or failed to start.
func startProcess(id string, sp *spawnSpec, out *output, conf *confinement) (*process, error) {
	cleanup := func() {
		if sp.cleanup != nil {
			sp.cleanup()
		}
		conf.done()
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		cleanup()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		cleanup()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		cleanup()
		return nil, err
	}
	env := sp.env
	if conf != nil {
		env = overrideEnv(sp.env, conf.env)
	}
	cmd := &exec.Cmd{Path: sp.path, Args: sp.argv, Env: env, Dir: sp.dir, Stdin: inR, Stdout: outW, Stderr: errW, SysProcAttr: procgroup.Attr()}
	var launch *sandbox.Launch
	if conf != nil && conf.policy != nil {
		launch, err = sandbox.Wrap(cmd, conf.policy, conf.opts)
	}
	if err == nil {
		err = cmd.Start()
	}
	inR.Close()
	outW.Close()
	errW.Close()
	var egress *egressProxy
	if launch != nil {
		conf.enf = launch.Enforcement
		ln, lerr := launch.Started(err)
		if err == nil && lerr != nil {
			err = lerr
			procgroup.Kill(cmd.Process.Pid)
			cmd.Wait()
		}
		if err == nil && ln != nil {
			if egress, err = newEgressProxy(id, conf.policy.Hosts, conf.upstream, out.event); err == nil {
				egress.serve(ln)
			} else {
				ln.Close()
				procgroup.Kill(cmd.Process.Pid)
				cmd.Wait()
			}
		}
	}
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		cleanup()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go func() {
		out.copyLines(errR)
		errR.Close()
		close(p.stderrDone)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		if egress != nil {
			egress.close()
		}
		cleanup()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// killedByBerth reports whether the process ended by a signal that berth
// sent (SIGTERM or SIGKILL in stop) rather than on its own.
func (p *process) killedByBerth() bool {
	if !p.signalled.Load() || p.cmd.ProcessState == nil {
		return false
	}
	ws, ok := p.cmd.ProcessState.Sys().(interface{ Signaled() bool })
	return ok && ws.Signaled()
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// stop ends the server and its whole process group. Gracefully: close its
// stdin, wait, SIGTERM the group, wait, SIGKILL the group. Hard (drift):
// SIGKILL the group at once. Either way the group is SIGKILLed at the end,
// so that grandchildren that outlived the leader die too.
func (p *process) stop(grace time.Duration, hard bool) {
	p.stopOnce.Do(func() {
		pid := p.pid()
		if hard {
			p.signalled.Store(true)
			procgroup.Kill(pid)
		} else {
			p.stdin.Close()
			if !p.waitExit(grace) {
				p.signalled.Store(true)
				procgroup.Terminate(pid, grace, p.waitExit)
			}
		}
		p.waitExit(5 * time.Second)
		procgroup.Kill(pid)
		p.stdin.Close()
		p.stdout.Close()
		// The copier ends when the last holder of stderr is gone; a process
		// that left the group could hold it forever, so do not wait long.
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.stderrDone:
		case <-t.C:
		}
	})
}

// exitError describes how a server process ended.
type exitError struct {
	id   string
	err  error // from Wait; nil for exit status 0
	tail []string
}

func (e *exitError) Error() string {
	how := "exited with status 0"
	if e.err != nil {
		how = e.err.Error()
		var ee *exec.ExitError
		if errors.As(e.err, &ee) {
			how = ee.ProcessState.String()
			if ee.Exited() {
				how = fmt.Sprintf("exited with status %d", ee.ExitCode())
			}
		}
	}
	return fmt.Sprintf("the server process %s%s", how, tailSuffix(e.tail))
}

func tailSuffix(tail []string) string {
	const show = 5
	if len(tail) == 0 {
		return ""
	}
	if len(tail) > show {
		tail = tail[len(tail)-show:]
	}
	return "; its stderr ends with: " + strings.Join(tail, " | ")
}
