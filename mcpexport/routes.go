package mcpexport

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/berth-mcp/berth/internal/fsx"
)

// profilesPrefix is where a listener serves each profile of the
// workspace: /profiles/NAME/mcp (or /profiles/NAME/sse).
const profilesPrefix = "/profiles/"

// router holds the paths of one listener (Handler): a front per path,
// made on first use, all counted by one sessionCap.
type router struct {
	s        *Server // the Server Handler was called on
	o        *HTTPOptions
	cap      *sessionCap
	endpoint string // "/mcp" or "/sse"

	mu     sync.Mutex
	fronts map[string]*front // by path
}

// front is the front of path, served by s; made on first use.
func (rt *router) front(path string, s *Server) *front {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if f := rt.fronts[path]; f != nil {
		return f
	}
	f := s.newFront(rt.o, path, rt.cap)
	rt.fronts[path] = f
	return f
}

// serveProfile serves /profiles/NAME/mcp (or /sse): NAME must be a
// profile of the workspace in the state at the time of the request, and,
// when the Server's own view is a profile, that one. A profile is served
// by a sibling of the Server made at its first request; the Server's own
// profile by the Server itself, at a path of its own.
func (rt *router) serveProfile(w http.ResponseWriter, r *http.Request) {
	name, tail, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, profilesPrefix), "/")
	if !ok || name == "" || "/"+tail != rt.endpoint {
		http.Error(w, fmt.Sprintf("404 page not found: profiles are served at %sNAME%s", profilesPrefix, rt.endpoint), http.StatusNotFound)
		return
	}
	served := rt.s.view.Profile
	if served != "" && name != served {
		refuseProfile(w, http.StatusNotFound, fmt.Sprintf("berth: this berth serve offers the profile %q only (berth serve --profile %s), at %s and %s%s%s; it does not serve the profile %q: start a berth serve without --profile to serve every profile at %sNAME%s",
			served, served, rt.endpoint, profilesPrefix, served, rt.endpoint, name, profilesPrefix, rt.endpoint))
		return
	}
	ws := rt.s.pool.WorkspaceDir()
	st, err := rt.s.fam.state(rt.s.store)
	if err != nil {
		rt.s.log.Warn("cannot read the state to serve a profile", "profile", name, "error", err)
		refuseProfile(w, http.StatusServiceUnavailable, fmt.Sprintf("berth: cannot read the state to serve the profile %q: %v", name, err))
		return
	}
	if st.ProfileOf(ws, name) == nil {
		refuseProfile(w, http.StatusNotFound, fmt.Sprintf("berth: the workspace %s has no profile %q; list its profiles with: berth profile list --workspace %s", ws, name, fsx.ShellQuote(ws)))
		return
	}
	srv := rt.s
	if name != served {
		if srv, err = rt.s.profileServer(name); err != nil {
			refuseProfile(w, http.StatusServiceUnavailable, "berth: "+err.Error())
			return
		}
	}
	rt.front(r.URL.Path, srv).ServeHTTP(w, r)
}

// refuseProfile answers a request for a profile that is not served with
// a JSON-RPC error that says why and what to run.
func refuseProfile(w http.ResponseWriter, status int, msg string) {
	out, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
}
