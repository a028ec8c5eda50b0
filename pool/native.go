package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/procgroup"
	"github.com/berth-mcp/berth/nativetool"
	"github.com/berth-mcp/berth/sandbox"
	"github.com/berth-mcp/berth/store"
)

// Kind is what a pool supervises (ServerStatus.Kind).
type Kind string

// Kinds of what a pool supervises.
const (
	// KindServer is an MCP server of the manifest's mcpServers.
	KindServer Kind = "server"
	// KindNative is a native tool provider of the manifest's nativeTools:
	// a go-plugin executable (package nativetool). Its Transport is
	// TransportNative.
	KindNative Kind = "native"
)

// Transport is how the pool talks to a server (ServerStatus.Transport).
type Transport string

// Transports.
const (
	TransportStdio          Transport = "stdio"
	TransportStreamableHTTP Transport = bundle.TransportStreamableHTTP
	TransportSSE            Transport = bundle.TransportSSE
	// TransportNative is go-plugin's gRPC to a native tool provider.
	TransportNative Transport = "native"
)

// nativeProtocol is what Status reports as a provider's protocol.
var nativeProtocol = "nativetool/" + strconv.Itoa(nativetool.ProtocolVersion)

// nativeExitPoll is how often the pool looks whether an idle provider
// exited. (A call in progress finds out at once.)
const nativeExitPoll = 100 * time.Millisecond

// connectNative launches a native tool provider through nativetool.Launch
// and lists its tools. The executable's checksum comes from the staged
// listing, never from the file: a file that differs is not started and
// the error is a *launchDriftError. The provider runs in its own process
// group with the pool's base environment plus BERTH_WORKSPACE, in the
// staged snapshot, its stderr and go-plugin's log lines going to the
// provider's output.
func (s *server) connectNative(c *conn) ([]*mcp.Tool, error) {
	exe, sum, err := s.nativeExecutable()
	if err != nil {
		return nil, err
	}
	if hook := s.p.opts.testBeforeLaunch; hook != nil {
		hook(exe)
	}
	w := &lineWriter{out: s.out}
	conf, err := s.confine(exe, envValue(s.p.baseEnv, "PATH"), nil, nil, nil, true)
	if err != nil {
		s.setRefused(err)
		return nil, err
	}
	var egress *egressProxy
	lo := &nativetool.LaunchOptions{
		Env:          overrideEnv(slices.Clone(s.p.baseEnv), conf.env),
		Workspace:    s.p.workspace,
		Dir:          s.pl.dir,
		Stderr:       w,
		StartTimeout: s.startup,
	}
	if conf.policy != nil {
		lo.Sandbox, lo.SandboxOptions = conf.policy, conf.opts
		if conf.policy.Network == sandbox.NetworkHosts {
			egress, err = newEgressProxy(s.id, conf.policy.Hosts, conf.upstream, s.out.event)
			if err != nil {
				conf.done()
				return nil, permanent("native tool provider %s: %v", s.id, err)
			}
			lo.Egress = egress.serve
		}
	}
	cl, err := nativetool.Launch(c.ctx, exe, sum, lo)
	release := func() {
		if egress != nil {
			egress.close()
		}
		conf.done()
	}
	if err == nil {
		if e := cl.Enforcement(); e != nil {
			conf.enf = *e
		}
		s.setEnforcement(&conf.enf)
		context.AfterFunc(c.ctx, release)
	} else {
		release()
		if conf.policy == nil {
			s.setEnforcement(&conf.enf)
		}
	}
	if err != nil {
		w.flush()
		if errors.Is(err, sandbox.ErrNotEnforced) {
			err = permanent("native tool provider %s: %v [%s]; berth status shows what this host lacks; run it unconfined with berth config set sandbox-unconfined %s, or turn the requirement off with berth config set sandbox-require off", s.id, err, RuleSandboxRequired, s.id)
			s.setRefused(err)
			return nil, err
		}
		var ce *nativetool.ChecksumError
		if errors.As(err, &ce) {
			return nil, &launchDriftError{plugin: s.pl.name + "@" + s.pl.version, err: ce}
		}
		return nil, err
	}
	ns := &nativeSession{c: cl, stderr: w}
	c.sess, c.native = ns, ns
	c.protocol = nativeProtocol
	s.out.event("started pid %d: %s", cl.Pid(), exe)
	go s.watchNative(c)
	tools, err := ns.listTools(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("listing its tools: %w", err)
	}
	return tools, nil
}

// nativeExecutable resolves the provider's executable in the staged
// snapshot and returns it with its SHA-256 from the staged listing.
func (s *server) nativeExecutable() (string, [32]byte, error) {
	var none [32]byte
	if s.native == nil || s.native.Executable == "" {
		return "", none, permanent("native tool provider %s has no executable in its manifest entry; re-trust a valid bundle", s.id)
	}
	rel, ok := strings.CutPrefix(s.native.Executable, "${bundle}/")
	if !ok || !fs.ValidPath(rel) {
		return "", none, permanent("native tool provider %s: the executable %q is not a clean ${bundle}/ path; re-trust a valid bundle", s.id, s.native.Executable)
	}
	e, ok := s.pl.listing.Lookup(rel)
	if !ok || e.Mode != bundle.ModeExec {
		return "", none, permanent("native tool provider %s: %s is not an executable file in the reviewed listing of %s@%s; re-trust a valid bundle", s.id, rel, s.pl.name, s.pl.version)
	}
	return filepath.Join(s.pl.dir, filepath.FromSlash(rel)), e.SHA256, nil
}

// watchNative ends the connection when the provider's process exits while
// no call is in progress to notice it.
func (s *server) watchNative(c *conn) {
	t := time.NewTicker(nativeExitPoll)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			if c.native.exited() {
				c.cancel(&providerExitError{id: s.id, tail: s.out.tail()})
				return
			}
		}
	}
}

// nativeSession is the session of a native tool provider.
type nativeSession struct {
	c      *nativetool.Client
	stderr *lineWriter
}

func (n *nativeSession) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	return n.c.ListTools(ctx)
}

func (n *nativeSession) callTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	return n.c.CallTool(ctx, name, args)
}

// answered: everything but an exited provider and a request that ended
// without an answer (a timeout) comes from a provider that is still up:
// nativetool checks its health before it reports a broken connection.
func (n *nativeSession) answered(err error) bool {
	return !errors.Is(err, nativetool.ErrExited) && !errors.Is(err, errCallTimeout) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// close stops the provider and its process group: go-plugin's graceful
// shutdown (SIGKILL after 2 s), or SIGKILL to the group at once when hard.
func (n *nativeSession) close(_ time.Duration, hard bool) {
	if pid := n.c.Pid(); hard && pid > 0 {
		procgroup.Kill(pid)
	}
	n.c.Kill()
	n.stderr.flush()
}

func (n *nativeSession) exited() bool { return n.c.Exited() }

// launchDriftError refuses a native tool executable whose SHA-256 is not
// the one in the staged listing: the plugin drifted. It wraps
// store.ErrDrift (CLI exit code 5) and the *nativetool.ChecksumError,
// which names the file and says to run berth verify and re-trust.
type launchDriftError struct {
	plugin string // name@version
	err    *nativetool.ChecksumError
}

func (e *launchDriftError) Error() string { return e.plugin + " drifted: " + e.err.Error() }

// Unwrap returns store.ErrDrift and the checksum error.
func (e *launchDriftError) Unwrap() []error { return []error{store.ErrDrift, e.err} }

// providerExitError describes a native tool provider whose process ended
// on its own. It wraps nativetool.ErrExited.
type providerExitError struct {
	id   string
	tail []string
}

func (e *providerExitError) Error() string {
	return fmt.Sprintf("the native tool provider process exited (berth logs %s has its log)%s", e.id, tailSuffix(e.tail))
}

func (e *providerExitError) Unwrap() error { return nativetool.ErrExited }

// lineWriter splits what a provider writes — its stderr and go-plugin's
// log lines, which nativetool serializes — into lines of its output,
// cutting lines longer than maxLineLen as copyLines does.
type lineWriter struct {
	out *output

	mu  sync.Mutex
	buf []byte
	cut bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		w.emitLocked()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) add(b []byte) {
	if w.cut {
		return
	}
	if room := maxLineLen - len(w.buf); len(b) > room {
		b, w.cut = b[:room], true
	}
	w.buf = append(w.buf, b...)
}

func (w *lineWriter) emitLocked() {
	s := strings.TrimSuffix(string(w.buf), "\r")
	if w.cut {
		s += " [line cut]"
	}
	w.out.line(s)
	w.buf, w.cut = w.buf[:0], false
}

// flush emits a last line that has no newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 || w.cut {
		w.emitLocked()
	}
}
