package mcpexport

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// TestAuditAppendAfterClose: once closed, an Audit refuses to append with
// ErrAuditClosed, and does not open the log again (it used to reopen it
// and leak the descriptor).
func TestAuditAppendAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	a := NewAudit(path)
	if err := a.Append(AuditEntry{Tool: "demo__echo", Decision: VerdictAllow, Outcome: OutcomeRan}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	err := a.Append(AuditEntry{Tool: "demo__echo", Decision: VerdictAllow, Outcome: OutcomeRan})
	if !errors.Is(err, ErrAuditClosed) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"demo__echo"`) {
		t.Fatalf("an append after Close: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an append after Close created the log again: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestCallAfterServerCloseIsNotAudited: a call that ends after
// Server.Close is not written to audit.log, which is not reopened; the
// refused append is logged.
func TestCallAfterServerCloseIsNotAudited(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, store.PolicyRule{Pattern: echoTool, Action: "allow"})
	cs := e.client(legacy, nil)
	if text, isErr := callTool(t, cs, echoTool, "before"); isErr {
		t.Fatal(text)
	}
	if got := readAudit(t, e.paths); len(got) != 1 || got[0].Outcome != OutcomeRan {
		t.Fatalf("audit before Close: %+v", got)
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(e.paths.Audit())
	// Sessions outlive Close (it does not end them): the call runs, and
	// its entry is refused.
	if text, isErr := callTool(t, cs, echoTool, "after"); isErr || !strings.Contains(text, "after") {
		t.Fatalf("a call after Close: %q", text)
	}
	if _, err := os.Lstat(e.paths.Audit()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a call after Close reopened audit.log: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "cannot write the audit log") || !strings.Contains(l, ErrAuditClosed.Error()) {
		t.Fatalf("the refused append is not logged:\n%s", l)
	}
}

// TestCloseWaitsForCallsInFlight: Server.Close closes the audit log only
// once the calls in flight have ended (up to CloseWait), so a call that
// ends while it waits is audited.
func TestCloseWaitsForCallsInFlight(t *testing.T) {
	e := newEnv(t, &Options{ApprovalTimeout: time.Second})
	cs := e.client(legacy, nil) // no elicitation: the call waits in the queue
	done := make(chan string, 1)
	go func() {
		text, _ := callTool(t, cs, echoTool, "hi")
		done <- text
	}()
	testkit.Eventually(t, 20*time.Second, "the call to wait in the queue", func() bool {
		list, _ := e.srv.queue.List()
		return len(list) == 1
	})
	start := time.Now()
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > CloseWait {
		t.Fatalf("Close took %v, more than CloseWait", d)
	}
	if text := <-done; !strings.Contains(text, "no one approved it") {
		t.Fatalf("the call: %q", text)
	}
	if a := readAudit(t, e.paths); len(a) != 1 || a[0].DecidedBy != ByTimeout {
		t.Fatalf("audit after Close: %+v, want the call's timeout", a)
	}
}
