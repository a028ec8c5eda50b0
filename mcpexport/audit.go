package mcpexport

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/pool"
)

// AuditEntry is one line of $BERTH_HOME/audit.log: a decision about a tool
// call, a prompt or a resource read, and what came of it. It never holds
// argument values, only their shape.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Kind is "prompt" or "resource" for a prompts/get or resources/read;
	// empty for a tool call.
	Kind pool.RequestKind `json:"kind,omitempty"`
	// Tool is the name the policy decided by: the tool's or prompt's
	// exported name, or the identity of a resource's server.
	Tool string `json:"tool"`
	// URI is the resource read.
	URI    string `json:"uri,omitempty"`
	Plugin string `json:"plugin,omitempty"`
	Server string `json:"server,omitempty"`
	Client string `json:"client,omitempty"`
	// Transport and Authenticated say how the client reached berth
	// (Pending.Transport, Pending.Authenticated).
	Transport     string `json:"transport,omitempty"`
	Authenticated bool   `json:"authenticated"`
	// ArgumentsDigest is "sha256:" and the hex SHA-256 of the canonical
	// arguments the decision was made on (and the server received).
	ArgumentsDigest string `json:"argumentsDigest,omitempty"`
	// Arguments is the shape of the arguments: every value replaced by its
	// JSON type.
	Arguments any `json:"arguments"`
	// Policy is the operator's policy as it applied (store.PolicyMatch's
	// String: "allow (exact)", "allow (demo-*)", "ask (default)").
	Policy string `json:"policy"`
	// DecidedBy is who or what decided.
	DecidedBy DecidedBy `json:"decidedBy"`
	// Decision is allow or deny, or none for a call withdrawn before
	// anyone decided; Always marks an "allow always".
	Decision Verdict `json:"decision"`
	Always   bool    `json:"always,omitempty"`
	// Approval is the queue ID when the queue decided.
	Approval string `json:"approval,omitempty"`
	// Outcome is what came of the call.
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason,omitempty"`
	// Via names the meta-tool a tool call came through in lazy mode
	// ("berth_call_tool"); empty for a direct call. Tool is the real
	// tool's name either way.
	Via string `json:"via,omitempty"`
}

// DecidedBy is who or what decided a call (AuditEntry.DecidedBy).
type DecidedBy string

// Deciders of a call.
const (
	ByPolicy        DecidedBy = "policy"
	ByElicitation   DecidedBy = "elicitation"
	ByInputRequests DecidedBy = "input-requests"
	ByQueue         DecidedBy = "queue"
	ByTimeout       DecidedBy = "timeout"
	ByError         DecidedBy = "error"
	// ByBerth marks a call berth refused before asking anyone (too many
	// calls waiting, ambiguous arguments).
	ByBerth DecidedBy = "berth"
	// ByOperator marks an operator's own action at the command line
	// (berth revoke --lift).
	ByOperator DecidedBy = "operator"
)

// KindRevocationLift is the AuditEntry.Kind of the operator's lift of a
// catalog's revocation (berth revoke --lift): Tool is NAME@VERSION, Reason
// the catalog and its reason.
const KindRevocationLift pool.RequestKind = "revocation-lift"

// Verdict is the decision about a call (AuditEntry.Decision).
type Verdict string

// Verdicts.
const (
	VerdictAllow Verdict = "allow"
	VerdictDeny  Verdict = "deny"
	VerdictNone  Verdict = "none"
)

// Outcome is what came of a call (AuditEntry.Outcome).
type Outcome string

// Outcomes.
const (
	OutcomeRan       Outcome = "ran"
	OutcomeToolError Outcome = "tool-error"
	OutcomeFailed    Outcome = "failed"
	OutcomeRefused   Outcome = "refused"
	// OutcomeWithdrawn: the call's request was cancelled, its session
	// ended or its connection went away while it waited for a human; it
	// did not run and can no longer be approved.
	OutcomeWithdrawn Outcome = "withdrawn"
	// OutcomeLifted: a revocation was lifted (KindRevocationLift).
	OutcomeLifted Outcome = "lifted"
)

// Audit appends entries to the audit log. Each entry is one write of one
// line to a file opened with O_APPEND, so lines from several processes do
// not interleave. It is safe for concurrent use. Once closed it stays
// closed: an Append after Close fails with ErrAuditClosed and opens
// nothing.
type Audit struct {
	path   string
	mu     sync.Mutex
	f      *os.File // kept open between appends; reopened when the path no longer names it
	seen   time.Time
	closed bool
}

// ErrAuditClosed is the error of an Audit.Append after Audit.Close (for a
// Server, a call that ends after Server.Close): the entry is not written.
var ErrAuditClosed = errors.New("the audit log is closed")

// NewAudit returns the audit log at path.
func NewAudit(path string) *Audit { return &Audit{path: path} }

// Append writes one entry.
func (a *Audit) Append(e AuditEntry) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return fmt.Errorf("berth: not writing the audit entry of %s %q (decision %q, outcome %q) to %s: %w", auditKind(e.Kind), e.Tool, e.Decision, e.Outcome, a.path, ErrAuditClosed)
	}
	if err := a.openLocked(); err != nil {
		return err
	}
	_, err = a.f.Write(append(line, '\n'))
	return err
}

// openLocked keeps one open file across appends, and opens the path again
// when it no longer names that file (the log was rotated or removed); that
// is checked at most once a second.
func (a *Audit) openLocked() error {
	if a.f != nil && time.Since(a.seen) < time.Second {
		return nil
	}
	a.seen = time.Now()
	if a.f != nil {
		open, err1 := a.f.Stat()
		named, err2 := os.Lstat(a.path)
		if err1 == nil && err2 == nil && os.SameFile(open, named) {
			return nil
		}
		a.f.Close()
		a.f = nil
	}
	// Never through a symbolic link, nor into a file or directory that is
	// not the operator's alone.
	f, err := fsx.OpenPrivateAppend(a.path)
	if err != nil {
		return err
	}
	a.f = f
	return nil
}

// auditKind names an entry's kind in an error.
func auditKind(k pool.RequestKind) string {
	if k == "" {
		return "the tool"
	}
	return "the " + string(k)
}

// Close closes the log file; later appends fail with ErrAuditClosed.
func (a *Audit) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// ArgumentShape replaces every value of a JSON document by its type:
// {"path": "string", "n": "number", "opts": {"deep": "boolean"}, "list":
// ["string"]}. Arrays keep the shapes of their distinct elements.
func ArgumentShape(raw json.RawMessage) any {
	var v any
	if len(raw) == 0 {
		return map[string]any{}
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON"
	}
	return shape(v, 0)
}

// shapeOf is ArgumentShape of a document already decoded (numbers as
// float64 or json.Number).
func shapeOf(v any) any { return shape(v, 0) }

func shape(v any, depth int) any {
	if depth > 8 {
		return "…"
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = shape(e, depth+1)
		}
		return out
	case []any:
		seen := map[string]bool{}
		var out []any
		for _, e := range x {
			s := shape(e, depth+1)
			key, _ := json.Marshal(s)
			if !seen[string(key)] {
				seen[string(key)] = true
				out = append(out, s)
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			a, _ := json.Marshal(out[i])
			b, _ := json.Marshal(out[j])
			return string(a) < string(b)
		})
		if out == nil {
			out = []any{}
		}
		return out
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "unknown"
}
