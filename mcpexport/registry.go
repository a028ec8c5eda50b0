package mcpexport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/store"
)

// WorkspaceView is the profile a ServeSession names when it is offered
// the whole workspace rather than a profile.
const WorkspaceView = "workspace"

// ServeRecord is the registry file of one running berth serve
// (store.Paths.Serving, <pid>.json): which sessions it serves and what
// each is offered. docs/profiles.md documents every field.
type ServeRecord struct {
	// PID is the process of the berth serve.
	PID int `json:"pid"`
	// Workspace is the directory of the workspace it serves.
	Workspace string `json:"workspace"`
	// StartedAt is when it started serving.
	StartedAt time.Time `json:"startedAt"`
	// Sessions are its live sessions, the oldest first.
	Sessions []ServeSession `json:"sessions"`
}

// ServeSession is one session of a running berth serve.
type ServeSession struct {
	// Profile is the profile the session is offered, or "workspace"
	// (WorkspaceView) for the whole workspace.
	Profile string `json:"profile"`
	// Mode is the tools mode of the session's view when it began: "full"
	// or "lazy".
	Mode store.ToolsMode `json:"mode"`
	// Transport is how the client reached berth (TransportStdio,
	// TransportSSE, TransportHTTP; "in-process" for a Server embedded in
	// another program).
	Transport string `json:"transport"`
	// Client is the name and version the client gave itself: the client
	// chooses it, nothing checks it.
	Client string `json:"client"`
	// Since is when the session began (its first request).
	Since time.Time `json:"since"`
	// PID is the process of the berth serve that holds the session.
	PID int `json:"pid"`
}

// registry keeps the ServeRecord of this process in its file: rewritten
// atomically (mode 0600) at every session that begins or ends, removed at
// Close. The exclusive lock on <pid>.lock beside it is held for the
// serve's whole life: it, not the PID, tells a reader that the record is
// live (a PID is reused by another process once this one is gone, and is
// another number in another PID namespace). A nil *registry records
// nothing.
type registry struct {
	path    string
	release func() // gives the record's lock back
	log     *slog.Logger

	mu     sync.Mutex
	closed bool
	rec    ServeRecord
	m      map[*mcp.ServerSession]*ServeSession
}

// newRegistry starts the record of this process in dir. When dir cannot
// be made private, the sessions are not recorded, and that is logged.
func newRegistry(dir, workspace string, log *slog.Logger) *registry {
	r := &registry{log: log, m: map[*mcp.ServerSession]*ServeSession{},
		rec: ServeRecord{PID: os.Getpid(), Workspace: workspace, StartedAt: time.Now().UTC(), Sessions: []ServeSession{}}}
	if err := fsx.EnsurePrivateDir(dir); err != nil {
		log.Warn("berth serve: not recording the sessions for berth status", "dir", dir, "error", err)
		return r
	}
	base := filepath.Join(dir, strconv.Itoa(r.rec.PID))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	release, err := fsx.HoldLock(ctx, base+".lock")
	if err != nil {
		log.Warn("berth serve: not recording the sessions for berth status: cannot lock its record", "file", base+".lock", "error", err)
		return r
	}
	r.path, r.release = base+".json", release
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writeLocked()
	return r
}

// has reports whether ss is recorded.
func (r *registry) has(ss *mcp.ServerSession) bool {
	if r == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.m[ss]
	return ok || r.closed
}

// add records ss, and forgets it when it ends.
func (r *registry) add(ss *mcp.ServerSession, e ServeSession) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[ss]; ok || r.closed {
		return
	}
	r.m[ss] = &e
	r.writeLocked()
	go func() {
		_ = ss.Wait()
		r.remove(ss)
	}()
}

func (r *registry) remove(ss *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[ss]; !ok || r.closed {
		return
	}
	delete(r.m, ss)
	r.writeLocked()
}

// close removes the file, then gives its lock back.
func (r *registry) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.path != "" {
		if err := os.Remove(r.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("berth serve: cannot remove its sessions file", "file", r.path, "error", err)
		}
		r.release()
	}
}

func (r *registry) writeLocked() {
	if r.path == "" || r.closed {
		return
	}
	list := make([]ServeSession, 0, len(r.m))
	for _, e := range r.m {
		list = append(list, *e)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Since.Before(list[j].Since) })
	r.rec.Sessions = list
	if err := atomicfile.WriteJSON(r.path, &r.rec, 0o600); err != nil {
		r.log.Warn("berth serve: cannot record its sessions for berth status", "file", r.path, "error", err)
	}
}

// sessionsMiddleware records each session in the registry at its first
// request (initialize for the legacy protocol): the profile and tools
// mode of this Server's view, the transport, the client's name.
// Stateless requests have no session and are not recorded.
func (s *Server) sessionsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r := s.fam.registry
		ss := sessionOf(req)
		if r == nil || err != nil || ss == nil || r.has(ss) {
			return res, err
		}
		o := originOf(ctx)
		if o.Transport == TransportStateless {
			return res, err
		}
		var ci *mcp.Implementation
		if ir, ok := req.(*mcp.InitializeRequest); ok && ir.Params != nil {
			ci = ir.Params.ClientInfo
		} else if x, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
			ci = x.ClientInfo()
		}
		r.add(ss, ServeSession{Profile: s.viewProfile(), Mode: s.viewMode(), Transport: o.Transport, Client: printableClient(ci), Since: time.Now().UTC(), PID: os.Getpid()})
		return res, err
	}
}

// viewProfile is the profile of s's view as the registry, the approval
// queue and the audit log name it: "" for the whole workspace in the
// last two, WorkspaceView in the first.
func (s *Server) viewProfile() string {
	if s.view.Profile == "" {
		return WorkspaceView
	}
	return s.view.Profile
}

// viewMode is the tools mode of s's view as the state has it now
// (store.EffectiveMode).
func (s *Server) viewMode() store.ToolsMode {
	var p *store.Profile
	if v, err := s.current(); err == nil {
		p = v.profile
	}
	return store.EffectiveMode(s.view.Mode, p)
}

// maxServeRecord is the largest registry file ReadServing reads: a
// record of thousands of sessions is far smaller.
const maxServeRecord = 1 << 20

// ReadServing returns the records of the berth serve processes that run
// now, from the registry directory dir (store.Paths.Serving), ordered
// by PID. A record is live while its serve holds the lock on <pid>.lock
// beside it; a record whose lock is free is stale (its serve was killed
// and could not remove it) and is removed with its lock file. The PID
// alone is never trusted. A file that cannot be read or parsed is
// skipped; a file over 1 MiB is skipped and named in the error, which
// comes with the records that could be read. A missing dir is no serve.
func ReadServing(dir string) ([]ServeRecord, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ServeRecord
	var errs []error
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		pid, err := strconv.Atoi(base)
		if err != nil || pid <= 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		rec, err := readServeRecord(path, filepath.Join(dir, base+".lock"), pid)
		if err != nil {
			errs = append(errs, err)
		}
		if rec != nil {
			out = append(out, *rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, errors.Join(errs...)
}

// readServeRecord reads the record path of pid if its serve holds lock,
// and removes a stale one. nil, nil is a record to skip quietly.
func readServeRecord(path, lock string, pid int) (*ServeRecord, error) {
	release, held, err := fsx.TryLock(lock)
	if err != nil {
		return nil, nil
	}
	if !held {
		os.Remove(path)
		os.Remove(lock)
		release()
		return nil, nil
	}
	f, err := fsx.OpenNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxServeRecord+1))
	if err != nil {
		return nil, nil
	}
	if len(data) > maxServeRecord {
		return nil, fmt.Errorf("skipped %s: it is over %d bytes, more than any berth serve writes; remove it if no berth serve of PID %d runs", path, maxServeRecord, pid)
	}
	var rec ServeRecord
	if json.Unmarshal(data, &rec) != nil || rec.PID != pid {
		return nil, nil
	}
	if rec.Sessions == nil {
		rec.Sessions = []ServeSession{}
	}
	return &rec, nil
}
