package cli

import (
	"testing"

	"github.com/berth-mcp/berth/mcpexport"
)

// TestServeHintsKeepTheText: the library's limit errors name no flag;
// berth serve's Hints turn them into the text its clients saw before.
func TestServeHintsKeepTheText(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&mcpexport.PendingLimitError{PerSession: true, Max: 16, Raise: serveHints.MaxPendingPerSession, Settle: serveHints.Approvals},
			"this session already has 16 calls waiting for approval, the most it may have (berth serve --max-pending-per-session): too many calls wait for approval; settle them (berth approvals) or let them time out first"},
		{&mcpexport.PendingLimitError{Max: 256, Raise: serveHints.MaxPending, Settle: serveHints.Approvals},
			"256 calls already wait for approval on this berth serve, the most it allows (berth serve --max-pending): too many calls wait for approval; settle them (berth approvals) or let them time out first"},
		{&mcpexport.SessionLimitError{Max: 256, Raise: serveHints.MaxSessions},
			"this listener has 256 sessions, all busy (the limit, --max-sessions)"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}
