package clientconfig

import (
	"errors"
	"fmt"
	"strings"
)

// TokenEnv is the environment variable an HTTP entry reads berth's bearer
// token from, in the clients that expand variables in headers.
const TokenEnv = "BERTH_TOKEN"

// ErrNoSafeHeaders refuses an HTTP entry for a client whose file offers no
// way to send the token without writing it into the file.
var ErrNoSafeHeaders = errors.New("no safe way to send the token")

// TokenHelperArg is the argument of berth's own command that prints the
// Authorization header as JSON (berth token --header), which an entry's
// headersHelper runs.
const TokenHelperArg = "token --header"

// HTTPAuth says how an HTTP entry of a client gets the bearer token, never
// with the token in the file.
type HTTPAuth struct {
	// Header is the Authorization header's value as written, with a
	// reference to TokenEnv the client expands; "" when Helper is used.
	Header string
	// Helper is a command the client runs for the headers
	// (headersHelper); "" when Header is used.
	Helper string
	// How says, for people, where the client takes the token from.
	How string
}

// HTTPAuthOf is how client c's HTTP entry gets the token: helper is the
// command that prints the header (Claude Code's headersHelper); the
// others reference TokenEnv in the header with the syntax the client
// expands. Claude Desktop's file takes stdio servers only: an
// ErrNoSafeHeaders.
func HTTPAuthOf(c Client, helper string) (HTTPAuth, error) {
	switch c {
	case ClaudeCode:
		return HTTPAuth{Helper: helper, How: "Claude Code runs the headersHelper command, which reads the token file, for the headers of each connection"}, nil
	case Cursor, VSCode:
		return HTTPAuth{Header: "Bearer ${env:" + TokenEnv + "}", How: c.Title() + " expands ${env:" + TokenEnv + "} from its own environment: start it with " + TokenEnv + " set"}, nil
	}
	return HTTPAuth{}, fmt.Errorf("%s's %s takes stdio servers only (command, args, env): it has no headers, so an HTTP entry would need the token written into the file; %w: connect it over stdio (berth connect %s), or add the URL in the app under Settings → Connectors", c.Title(), claudeDesktopFile, ErrNoSafeHeaders, c)
}

// NewHTTPEntry is the HTTP entry of client c for url, authenticated as
// auth says.
func NewHTTPEntry(c Client, url string, auth HTTPAuth) Entry {
	e := Entry{URL: url, HeadersHelper: auth.Helper}
	if c == ClaudeCode || c == VSCode {
		e.Type = "http"
	}
	if auth.Header != "" {
		e.Headers = map[string]string{"Authorization": auth.Header}
	}
	return e
}

// isBerthHTTPAuth reports whether an HTTP entry takes its token as berth
// connect --http writes it.
func isBerthHTTPAuth(e Entry) bool {
	if e.HeadersHelper != "" {
		return strings.Contains(e.HeadersHelper, " "+TokenHelperArg)
	}
	return strings.Contains(e.Headers["Authorization"], "${env:"+TokenEnv+"}")
}
