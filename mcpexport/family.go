package mcpexport

import (
	"errors"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// A family is the Server New made (its root) and the siblings made from
// it (WithView): one Server per view of the workspace, each with its own
// go-sdk server, catalog, list_changed notices and sync worker, sharing
// the pool, the approval queue, the audit log (one writer), the pending
// limits (MaxPending counts the calls of every view), the approval
// states, the HTTP requests in flight, the sign-ins, the log levels and
// the log, and the registry of sessions.
type family struct {
	root *Server

	mu       sync.Mutex
	closed   bool
	members  []*Server          // the siblings, in the order they were made
	profiles map[string]*Server // the siblings Handler made, by profile
	registry *registry          // nil unless Options.RecordSessions
	// watch is the generation watch the views read the state through
	// (Server.current), made at the first read and closed with the family.
	watch *store.GenerationWatch
}

// state is the berth state as the family's generation watch has it now
// (one watch for every view: no read of state.json while the generation
// stands).
func (f *family) state(st *store.Store) (*store.State, error) {
	f.mu.Lock()
	if f.watch == nil {
		f.watch = st.WatchGeneration()
	}
	w := f.watch
	f.mu.Unlock()
	state, _, err := w.Check()
	return state, err
}

// ErrClosed refuses a sibling of a Server that was closed.
var ErrClosed = errors.New("mcpexport: the server is closed")

// WithView returns a sibling of s that offers the view v (nil: the whole
// workspace in full mode): a Server of its own for its sessions, over the
// same pool, sharing s's approval queue, audit log, pending limits,
// approval states, sign-ins and log (docs/profiles.md §Serving profiles
// over HTTP). Closing the Server New made closes every sibling; closing a
// sibling stops its own work only. It fails once that Server is closed.
func (s *Server) WithView(v *View) (*Server, error) {
	f := s.fam
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	c := f.root.sibling(v)
	f.members = append(f.members, c)
	return c, nil
}

// profileServer is the sibling that serves the profile name to the
// handlers' /profiles/NAME paths, made on first use and then kept. It is
// kept even when the profile is removed: its view then offers nothing
// (every request is refused with RemovedProfileError), and a profile made
// again under that name is served by it again. The siblings are bounded
// by the profiles a workspace ever had while this berth serve runs (the
// router serves only names the state holds), and Close stops them.
func (s *Server) profileServer(name string) (*Server, error) {
	f := s.fam
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	if c := f.profiles[name]; c != nil {
		return c, nil
	}
	c := f.root.sibling(&View{Profile: name})
	f.members = append(f.members, c)
	f.profiles[name] = c
	return c, nil
}

// sibling makes a Server for v that shares what root shares. The caller
// holds the family's lock.
func (root *Server) sibling(v *View) *Server {
	c := &Server{
		pool:        root.pool,
		store:       root.store,
		queue:       root.queue,
		audit:       root.audit,
		states:      root.states,
		pending:     root.pending,
		hints:       root.hints,
		requests:    root.requests,
		timeout:     root.timeout,
		onWaiting:   root.onWaiting,
		log:         root.log,
		protocols:   root.protocols,
		tel:         root.tel,
		fam:         root.fam,
		levels:      root.levels,
		outbox:      root.outbox,
		signIns:     root.signIns,
		signInFlows: root.signInFlows,
		flights:     root.flights,
		tools:       map[string]string{},
		prompts:     map[string]string{},
		resources:   map[string]string{},
		templates:   map[string]string{},
		syncSem:     make(chan struct{}, 1),
		catchUp:     root.catchUp,
	}
	if v != nil {
		c.view = *v
		c.view.Always = slices.Clone(v.Always)
	}
	c.start()
	return c
}

// close marks the family closed and returns the siblings to stop.
func (f *family) close() []*Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return slices.Clone(f.members)
}

// closeWatch releases the generation watch; a later state read stats.
func (f *family) closeWatch() {
	f.mu.Lock()
	w := f.watch
	f.mu.Unlock()
	if w != nil {
		w.Close()
	}
}

// servers are the root and every sibling.
func (f *family) servers() []*Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Server{f.root}, f.members...)
}

// sessions are the live sessions of every Server of the family.
func (f *family) sessions() []*mcp.ServerSession {
	var out []*mcp.ServerSession
	for _, s := range f.servers() {
		for ss := range s.ms.Sessions() {
			out = append(out, ss)
		}
	}
	return out
}
