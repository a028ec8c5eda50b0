package mcpexport

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

// The choices of an approval form.
const (
	choiceOnce   = "allow-once"
	choiceAlways = "allow-always"
	choiceDeny   = "deny"
)

// inputKey names berth's input request in an InputRequests map.
const inputKey = "berth-approval"

// approvalSchema is the form every approval asks: one required choice.
// It has no default, so an empty answer never becomes a yes.
var approvalSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "decision": {
      "type": "string",
      "title": "Run this tool call?",
      "enum": ["allow-once", "allow-always", "deny"],
      "description": "allow-once runs this call; allow-always also sets berth's policy to allow this exact tool from now on; deny refuses it"
    }
  },
  "required": ["decision"]
}`)

// approvalMessage is what a person reads before deciding. Arguments too
// long for a form are summarized (ShowArguments), naming the queue entry
// id that shows them whole.
func approvalMessage(req *pool.ApprovalRequest, o origin, client, id string) string {
	var b strings.Builder
	switch req.Kind {
	case pool.RequestPrompt:
		fmt.Fprintf(&b, "berth: allow getting this prompt?\n\n")
		fmt.Fprintf(&b, "Prompt:      %s\n", req.Tool)
		fmt.Fprintf(&b, "Server:      %s of plugin %s (prompt %q there)\n", req.Server, req.Plugin, req.UpstreamTool)
	case pool.RequestResource:
		fmt.Fprintf(&b, "berth: allow reading this resource?\n\n")
		fmt.Fprintf(&b, "Resource:    %s\n", review.Printable(req.URI))
		fmt.Fprintf(&b, "Server:      %s of plugin %s (policy name %s)\n", req.Server, req.Plugin, req.Tool)
	default:
		fmt.Fprintf(&b, "berth: allow this tool call?\n\n")
		fmt.Fprintf(&b, "Tool:        %s\n", req.Tool)
		if req.Plugin != "" {
			fmt.Fprintf(&b, "Server:      %s of plugin %s (tool %q there)\n", req.Server, req.Plugin, req.UpstreamTool)
		}
	}
	fmt.Fprintf(&b, "Annotations: %s\n", describeAnnotations(req.Annotations))
	fmt.Fprintf(&b, "Policy:      %s\n", req.Policy)
	fmt.Fprintf(&b, "Client:      %s\n", describeClient(client, o))
	args, _ := ShowArguments(req.Arguments, maxFormArgs, id)
	fmt.Fprintf(&b, "Arguments:\n%s\n", args)
	return b.String()
}

// describeClient says who asks: the client's own name, marked as such,
// and what berth knows of the session.
func describeClient(name string, o origin) string {
	return fmt.Sprintf("%q (as it names itself), over %s, %s", name, o.Transport, authWords(o))
}

func authWords(o origin) string {
	switch {
	case o.Transport == TransportStdio:
		return "started by the client"
	case o.Authenticated:
		return "authenticated with the token"
	}
	return "NOT authenticated"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func describeAnnotations(a *mcp.ToolAnnotations) string {
	if a == nil {
		return "none (the tool says nothing about its effects)"
	}
	var parts []string
	if a.Title != "" {
		parts = append(parts, fmt.Sprintf("title %q", a.Title))
	}
	if a.ReadOnlyHint {
		parts = append(parts, "read-only")
	}
	if a.DestructiveHint != nil && *a.DestructiveHint {
		parts = append(parts, "DESTRUCTIVE")
	}
	if a.IdempotentHint {
		parts = append(parts, "idempotent")
	}
	if a.OpenWorldHint != nil && *a.OpenWorldHint {
		parts = append(parts, "reaches the outside world")
	}
	if len(parts) == 0 {
		return "no hints"
	}
	return strings.Join(parts, ", ") + " (as the server claims)"
}

// choiceOf reads the decision out of an elicitation answer. Anything but
// an accepted, valid choice is a refusal: never run on an ambiguous
// answer.
func choiceOf(res *mcp.ElicitResult) (choice, reason string) {
	if res == nil {
		return choiceDeny, "the client returned no answer"
	}
	switch res.Action {
	case "accept":
	case "decline":
		return choiceDeny, "the user declined"
	case "cancel":
		return choiceDeny, "the user dismissed the request"
	default:
		return choiceDeny, fmt.Sprintf("the client answered %q, which is not accept, decline or cancel", res.Action)
	}
	if len(res.Content) != 1 {
		return choiceDeny, "the answer did not hold exactly one decision"
	}
	d, ok := res.Content["decision"].(string)
	if !ok {
		return choiceDeny, "the answer's decision was not a string"
	}
	switch d {
	case choiceOnce, choiceAlways:
		return d, ""
	case choiceDeny:
		return choiceDeny, "the user chose deny"
	}
	return choiceDeny, fmt.Sprintf("the answer %q is not one of allow-once, allow-always, deny", d)
}

// stateBox makes and checks the opaque RequestState of an InputRequests
// round trip. A state is bound to the tool and the exact arguments (their
// canonical encoding, which is what runs), is signed with a secret of this process, expires, and is good for one use,
// so a client cannot replay an approval for another call.
type stateBox struct {
	secret []byte
	ttl    time.Duration
	mu     sync.Mutex
	used   map[string]time.Time
}

func newStateBox(ttl time.Duration) *stateBox {
	s := &stateBox{secret: make([]byte, 32), ttl: ttl, used: map[string]time.Time{}}
	if _, err := rand.Read(s.secret); err != nil {
		panic(err)
	}
	return s
}

func (s *stateBox) mac(nonce []byte, expiry int64, tool string, args json.RawMessage) []byte {
	h := hmac.New(sha256.New, s.secret)
	h.Write(nonce)
	binary.Write(h, binary.BigEndian, expiry)
	h.Write([]byte(tool))
	h.Write([]byte{0})
	argSum := sha256.Sum256(args)
	h.Write(argSum[:])
	return h.Sum(nil)
}

// issue returns a fresh state for tool and args.
func (s *stateBox) issue(tool string, args json.RawMessage, now time.Time) string {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	expiry := now.Add(s.ttl).Unix()
	var b bytes.Buffer
	b.Write(nonce)
	binary.Write(&b, binary.BigEndian, expiry)
	b.Write(s.mac(nonce, expiry, tool, args))
	return base64.RawURLEncoding.EncodeToString(b.Bytes())
}

var errBadState = errors.New("the approval state is invalid, expired, used or for another call")

// redeem checks a state for tool and args and burns it.
func (s *stateBox) redeem(state, tool string, args json.RawMessage, now time.Time) error {
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(raw) != 16+8+32 {
		return errBadState
	}
	nonce, expiry, mac := raw[:16], int64(binary.BigEndian.Uint64(raw[16:24])), raw[24:]
	if !hmac.Equal(mac, s.mac(nonce, expiry, tool, args)) || now.Unix() > expiry {
		return errBadState
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.used {
		if now.After(t) {
			delete(s.used, k)
		}
	}
	if _, seen := s.used[string(nonce)]; seen {
		return errBadState
	}
	s.used[string(nonce)] = time.Unix(expiry, 0)
	return nil
}

// refusal is the text of a refused call: it names the tool and says
// exactly how to allow it.
func refusal(tool, reason string) string {
	return fmt.Sprintf("berth refused to run %s: %s. Nothing was run. To allow it, approve the call when berth asks (in your MCP client, or with `berth approve ID` while it waits), or allow the tool for good with `berth policy set %s allow`.", tool, reason, tool)
}

// notifyWaiting sends progress and log notifications while a call waits in
// the queue.
func notifyWaiting(ctx context.Context, req *mcp.CallToolRequest, id string, deadline time.Time, started time.Time) {
	ss := req.Session
	if ss == nil {
		return
	}
	msg := fmt.Sprintf("berth: this call waits for approval %s; run `berth approve %s` (or `berth deny %s`) in a terminal before %s", id, id, id, deadline.Format(time.TimeOnly))
	//lint:ignore SA1019 legacy sessions still get MCP logging during the SEP-2577 deprecation window
	ss.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "berth", Data: msg})
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	total := deadline.Sub(started).Seconds()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: time.Since(started).Seconds(), Total: total, Message: msg})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
