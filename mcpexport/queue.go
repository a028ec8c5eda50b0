package mcpexport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/pool"
)

// Pending is a call waiting in the approval queue, as `berth approvals`
// shows it.
type Pending struct {
	ID string `json:"id"`
	// Kind is "prompt" or "resource" for a prompts/get or resources/read;
	// empty for a tool call.
	Kind pool.RequestKind `json:"kind,omitempty"`
	// Tool is the name the policy decides by: the tool's or prompt's
	// exported name, or the identity of a resource's server.
	Tool string `json:"tool"`
	// URI is the resource to be read.
	URI    string `json:"uri,omitempty"`
	Plugin string `json:"plugin,omitempty"`
	// Version is the plugin's version that would run the call.
	Version string `json:"version,omitempty"`
	Server  string `json:"server,omitempty"`
	// Arguments are the call's arguments, whole, in their canonical
	// encoding (CanonicalArguments): exactly what the plugin's server
	// receives if the call is approved.
	Arguments json.RawMessage `json:"arguments"`
	// ArgumentsDigest is "sha256:" and the hex SHA-256 of Arguments.
	ArgumentsDigest string `json:"argumentsDigest"`
	// Annotations are the tool's annotations as its server declared them;
	// absent when it declared none (and for a prompt or a resource).
	Annotations *Annotations `json:"annotations,omitempty"`
	// AnnotationsText is set instead of annotations for a call that waits
	// in a berth serve older than this berth, which recorded them as a
	// sentence.
	AnnotationsText string `json:"annotationsText,omitempty"`
	// Workspace is the directory of the workspace whose berth serve
	// asks.
	Workspace string `json:"workspace,omitempty"`
	// Client is the name and version the client gave itself: the client
	// chooses it, nothing checks it.
	Client string `json:"client"`
	// Transport is how the client reached berth (TransportStdio, ...).
	Transport string `json:"transport"`
	// Authenticated reports whether the session proved it may use berth:
	// over HTTP, with the bearer token; over stdio, by being the process
	// that started berth serve. A session of a listener that runs without
	// a token (--unsafe-no-token) is not authenticated.
	Authenticated bool `json:"authenticated"`
	// Profile is the profile the client's session is offered (berth
	// serve --profile, /profiles/NAME/mcp); absent for the whole
	// workspace.
	Profile string `json:"profile,omitempty"`
	// Session tells the client's sessions apart (a short tag, not the
	// session's ID).
	Session   string    `json:"session,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Deadline is when the waiting call fails closed; after it the call
	// can no longer be settled.
	Deadline time.Time `json:"deadline"`
	PID      int       `json:"pid"`
	// Hash binds a decision to this exact request.
	Hash string `json:"hash"`
}

// Annotations are a tool's annotations under MCP's names, as the server
// claims them: nothing checks them. A hint is absent when the server gave
// none; readOnlyHint and idempotentHint are present only when true, since
// MCP's default for both is false and go-sdk does not tell an explicit
// false from an absent one.
type Annotations struct {
	// Title is the tool's human-readable title.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint, present only when true, says the tool does not
	// modify its environment.
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint says whether the tool may perform destructive
	// updates (MCP's default when absent: true).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint, present only when true, says calling the tool again
	// with the same arguments has no further effect.
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint says whether the tool reaches entities outside a closed
	// domain, such as the web (MCP's default when absent: true).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// annotationsOf converts go-sdk's annotations; nil stays nil.
func annotationsOf(a *mcp.ToolAnnotations) *Annotations {
	if a == nil {
		return nil
	}
	yes := func(b bool) *bool {
		if !b {
			return nil
		}
		return &b
	}
	return &Annotations{Title: a.Title, ReadOnlyHint: yes(a.ReadOnlyHint), DestructiveHint: a.DestructiveHint, IdempotentHint: yes(a.IdempotentHint), OpenWorldHint: a.OpenWorldHint}
}

// tool converts back to go-sdk's annotations; nil stays nil.
func (a *Annotations) tool() *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint != nil && *a.ReadOnlyHint, DestructiveHint: a.DestructiveHint, IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}

// UnmarshalJSON reads a pending file, also one an older berth serve
// wrote, with the annotations as a sentence: a call waiting in a serve
// that still runs from before an upgrade stays listed and can be settled.
func (p *Pending) UnmarshalJSON(data []byte) error {
	type plain Pending
	var v struct {
		*plain
		Annotations json.RawMessage `json:"annotations"`
	}
	v.plain = (*plain)(p)
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	p.Annotations = nil
	switch a := bytes.TrimSpace(v.Annotations); {
	case len(a) == 0 || string(a) == "null":
	case a[0] == '"':
		return json.Unmarshal(a, &p.AnnotationsText)
	default:
		p.Annotations = &Annotations{}
		return json.Unmarshal(a, p.Annotations)
	}
	return nil
}

// DescribeAnnotations says in words what the tool's annotations claim, as
// `berth approvals` and the approval form show them.
func (p *Pending) DescribeAnnotations() string {
	if p.Annotations == nil && p.AnnotationsText != "" {
		return p.AnnotationsText
	}
	return describeAnnotations(p.Annotations.tool())
}

// Age is how long the call has waited.
func (p *Pending) Age(now time.Time) time.Duration { return now.Sub(p.CreatedAt).Truncate(time.Second) }

// QueueDecision settles a pending call.
type QueueDecision struct {
	ID     string    `json:"id"`
	Hash   string    `json:"hash"`
	Allow  bool      `json:"allow"`
	Always bool      `json:"always,omitempty"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	// Withdrawn marks a call that no one waits for any more: its request
	// was cancelled, its session ended or its connection went away. It
	// can no longer be approved.
	Withdrawn bool   `json:"withdrawn,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Queue is the approval queue under $BERTH_HOME/approvals: one file per
// pending call (<id>.json) and one per decision (<id>.decision.json). The
// waiting process watches the directory and resumes as soon as a decision
// appears. Files are written atomically; the directory is private (0700).
// A Queue is safe for concurrent use, also across processes.
type Queue struct {
	dir string
}

// NewQueue returns the queue in dir.
func NewQueue(dir string) *Queue { return &Queue{dir: dir} }

// ErrNoSuchApproval means an ID names no pending call.
var ErrNoSuchApproval = errors.New("no such pending approval")

func (q *Queue) pendingPath(id string) string  { return filepath.Join(q.dir, id+".json") }
func (q *Queue) decisionPath(id string) string { return filepath.Join(q.dir, id+".decision.json") }

const idAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// newID returns a short random ID that is easy to type: xxxx-xxxx.
func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, idAlphabet[int(c)%len(idAlphabet)])
	}
	return string(out)
}

// ValidID reports whether id has the form of a queue ID, so it is safe to
// put in a path.
func ValidID(id string) bool {
	if len(id) != 9 || id[4] != '-' {
		return false
	}
	for i, c := range id {
		if i != 4 && !strings.ContainsRune(idAlphabet, c) {
			return false
		}
	}
	return true
}

func hashPending(p *Pending) string {
	data, _ := json.Marshal([]any{p.ID, p.Kind, p.Tool, p.URI, p.Plugin, p.Version, p.Server, p.Workspace, p.ArgumentsDigest, p.Client, p.Transport, p.Authenticated, p.Session, p.CreatedAt.UnixNano(), p.PID, p.Profile})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// Add records a pending call and returns it with its ID.
func (q *Queue) Add(p Pending) (*Pending, error) {
	if err := fsx.EnsurePrivateDir(q.dir); err != nil {
		return nil, err
	}
	p.ID = newID()
	p.PID = os.Getpid()
	sum := sha256.Sum256(p.Arguments)
	p.ArgumentsDigest = "sha256:" + hex.EncodeToString(sum[:])
	p.Hash = hashPending(&p)
	if err := atomicfile.WriteJSON(q.pendingPath(p.ID), &p, 0o600); err != nil {
		return nil, err
	}
	return &p, nil
}

// Remove deletes a pending call and its decision.
func (q *Queue) Remove(id string) {
	os.Remove(q.pendingPath(id))
	os.Remove(q.decisionPath(id))
}

// Withdraw records that no one waits for a pending call any more and
// removes it from the queue. A record of the withdrawal stays for
// withdrawnKept, so that `berth approve ID` can say what happened; a
// decision made before the withdrawal is kept instead (the caller is gone
// either way: nothing runs).
func (q *Queue) Withdraw(p *Pending, reason string) {
	d := &QueueDecision{ID: p.ID, Hash: p.Hash, By: "berth", At: time.Now().UTC(), Withdrawn: true, Reason: reason}
	_ = writeJSONOnce(q.decisionPath(p.ID), d)
	os.Remove(q.pendingPath(p.ID))
}

// withdrawnKept is how long the record of a withdrawal stays.
const withdrawnKept = time.Hour

// ErrWithdrawn means the call an approval ID named is no longer waiting:
// its client cancelled the request, ended the session or went away.
var ErrWithdrawn = errors.New("nobody is waiting for this approval any more")

func (q *Queue) withdrawn(id string) error {
	d := &QueueDecision{}
	if readJSON(q.decisionPath(id), d) != nil || !d.Withdrawn || d.ID != id {
		return nil
	}
	return fmt.Errorf("approval %s was withdrawn at %s: %s, so %w; nothing was run", id, d.At.Local().Format(time.TimeOnly), d.Reason, ErrWithdrawn)
}

// waiting reports whether a pending call can still be settled: its
// process is alive (a pending file left by a crash goes, even when its PID
// is reused) and its deadline has not passed (after it the call has
// failed closed).
func (p *Pending) waiting(now time.Time) bool {
	return alive(p.PID) && now.Before(p.Deadline)
}

// List returns the pending calls, oldest first. Calls that no longer wait
// (their process is gone or their deadline passed) are removed.
func (q *Queue) List() ([]*Pending, error) { return q.list(true) }

// Waiting returns the pending calls that still wait, oldest first, as
// List does, but only reads: it removes nothing (shell completion lists
// them, and must change nothing).
func (q *Queue) Waiting() ([]*Pending, error) { return q.list(false) }

// list is List; clean removes what no longer waits.
func (q *Queue) list(clean bool) ([]*Pending, error) {
	matches, err := filepath.Glob(filepath.Join(q.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Pending
	for _, m := range matches {
		if id, ok := strings.CutSuffix(filepath.Base(m), ".decision.json"); ok {
			// A decision without its call: a withdrawal's record, or what a
			// crash left. Both go after a while.
			if fi, err := os.Stat(m); clean && err == nil && time.Since(fi.ModTime()) > withdrawnKept && ValidID(id) {
				if _, err := os.Stat(q.pendingPath(id)); errors.Is(err, fs.ErrNotExist) {
					os.Remove(m)
				}
			}
			continue
		}
		p := &Pending{}
		if err := readJSON(m, p); err != nil {
			continue // half-visible or damaged; its waiter cleans up
		}
		if !ValidID(p.ID) || q.pendingPath(p.ID) != m {
			continue
		}
		if !p.waiting(time.Now()) {
			if clean {
				q.Remove(p.ID)
			}
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Get returns one pending call.
func (q *Queue) Get(id string) (*Pending, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%q is not an approval ID (they look like k7f3-9q2x; `berth approvals` lists them): %w", id, ErrNoSuchApproval)
	}
	if err := q.withdrawn(id); err != nil {
		return nil, err
	}
	p := &Pending{}
	if err := readJSON(q.pendingPath(id), p); err != nil || p.ID != id || !p.waiting(time.Now()) {
		return nil, fmt.Errorf("no call is waiting for approval %s (it may have been settled or timed out; `berth approvals` lists the waiting ones): %w", id, ErrNoSuchApproval)
	}
	return p, nil
}

// ErrSettled means a pending call already has a decision; the first
// decision is final.
var ErrSettled = errors.New("the approval is already settled")

// Decide settles a pending call. It fails when the call is not waiting or
// already has a decision: a later `berth approve` never overrides a
// `berth deny`, nor the other way round.
func (q *Queue) Decide(id string, allow, always bool, by string) (*Pending, error) {
	p, err := q.Get(id)
	if err != nil {
		return nil, err
	}
	d := &QueueDecision{ID: id, Hash: p.Hash, Allow: allow, Always: always && allow, By: by, At: time.Now().UTC()}
	if err := writeJSONOnce(q.decisionPath(id), d); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if err := q.withdrawn(id); err != nil {
				return nil, err
			}
			prev := "decided"
			if old := (&QueueDecision{}); readJSON(q.decisionPath(id), old) == nil {
				prev = map[bool]string{true: "approved", false: "denied"}[old.Allow] + " by " + old.By
			}
			return nil, fmt.Errorf("approval %s of %s was already %s; a decision cannot be changed: %w", id, p.Tool, prev, ErrSettled)
		}
		return nil, err
	}
	return p, nil
}

// Wait blocks until the pending call is decided or ctx is done. Only a
// decision bound to this exact request (its hash) counts.
func (q *Queue) Wait(ctx context.Context, p *Pending) (*QueueDecision, error) {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		if err := w.Add(q.dir); err != nil {
			w.Close()
			w = nil
		}
	}
	var events <-chan fsnotify.Event
	if w != nil {
		events = w.Events
	}
	// The poll is a safety net for file systems without notifications.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		d := &QueueDecision{}
		if err := readJSON(q.decisionPath(p.ID), d); err == nil && d.ID == p.ID && d.Hash == p.Hash {
			return d, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-events:
		case <-tick.C:
		}
	}
}

// writeJSONOnce creates path with v, failing with fs.ErrExist when it
// exists. A reader that sees the file before it is complete cannot parse
// it and looks again.
func writeJSONOnce(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteNew(path, append(data, '\n'), 0o600)
}

// readJSON reads an approval file, never through a symbolic link nor from
// a file that is not the operator's alone.
func readJSON(path string, v any) error {
	data, err := fsx.ReadPrivateFile(path, 4<<20)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	if p, ok := v.(*Pending); ok {
		// The file is indented; the arguments are the canonical (compact)
		// encoding, which their digest binds.
		var buf bytes.Buffer
		if err := json.Compact(&buf, p.Arguments); err != nil {
			return err
		}
		p.Arguments = buf.Bytes()
		sum := sha256.Sum256(p.Arguments)
		if p.ArgumentsDigest != "sha256:"+hex.EncodeToString(sum[:]) {
			return fmt.Errorf("%s: the arguments do not match their digest", path)
		}
	}
	return nil
}
