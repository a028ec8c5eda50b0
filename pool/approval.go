package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/store"
)

// ErrDenied means a call was refused: the operator's policy denies the
// tool, or the approver did not allow the call. The CLI maps it to exit
// code 6. A refused call's error wraps it.
var ErrDenied = errors.New("denied")

// RequestKind is what a request asks for: a tool call, a prompt or a
// resource read. All three go through the operator's policy and the
// approver.
type RequestKind string

// Request kinds.
const (
	// RequestTool is a tools/call; it is the zero value.
	RequestTool RequestKind = ""
	// RequestPrompt is a prompts/get.
	RequestPrompt RequestKind = "prompt"
	// RequestResource is a resources/read.
	RequestResource RequestKind = "resource"
)

// ApprovalRequest describes a call waiting for a decision.
type ApprovalRequest struct {
	// Kind is what is asked for: a tool call (the zero value), a prompt or
	// a resource.
	Kind RequestKind
	// Tool is the name the policy decides the request by: the exported
	// name of a tool or prompt, "<plugin>__<provider>__<name>", or for a
	// resource the identity of its server, "<plugin>__<server>".
	Tool string
	// URI is the resource's URI, for a resource read.
	URI string
	// Plugin and Server name the plugin and its server (the manifest's
	// key; for a native tool, the nativeTools key of its provider);
	// UpstreamTool is the tool's (or prompt's) name on that server.
	Plugin, Server, UpstreamTool string
	// Version is the enabled version of the plugin.
	Version string
	// Native is set for a tool of a native tool provider.
	Native bool
	// Arguments are the call's arguments, a JSON object (a prompt's
	// arguments; {"uri": URI} for a resource).
	Arguments json.RawMessage
	// Annotations are the tool's annotations as listed (and pinned); nil
	// when it has none.
	Annotations *mcp.ToolAnnotations
	// Policy is the operator's policy for the tool.
	Policy store.PolicyMatch
	// Surface is the hash of the tool's definition as served (the one
	// its pinned surface is checked against); "" for a prompt or a
	// resource. An approval remembered for a call's retry is bound to it.
	Surface string
}

// Approver decides whether a call runs. Call consults it for every call
// that the policy does not deny; the CLI and the MCP exporter supply their
// own. Approve may block (waiting for a human) until ctx is done.
type Approver interface {
	Approve(ctx context.Context, req *ApprovalRequest) (Decision, error)
}

// Decision is an approver's answer.
type Decision struct {
	Allow bool
	// By says who or what decided ("policy", "terminal", "--yes",
	// "elicitation", ...), for the audit log.
	By string
	// Reason explains a refusal, and is part of the error Call returns.
	Reason string
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req *ApprovalRequest) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req *ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}

// AllowedByPolicy reports whether the operator's policy alone allows the
// call, so that no human needs to be asked (store.PolicyMatch.Allows): the
// action is allow, and either the rule names the tool exactly or the tool
// does not say destructiveHint: true.
func AllowedByPolicy(req *ApprovalRequest) bool {
	return req != nil && req.Policy.Allows(destructive(req.Annotations))
}

func destructive(a *mcp.ToolAnnotations) bool {
	return a != nil && a.DestructiveHint != nil && *a.DestructiveHint
}

// policyOnly is the approver used when Call is given none: it allows what
// AllowedByPolicy allows and refuses the rest.
var policyOnly = ApproverFunc(func(ctx context.Context, req *ApprovalRequest) (Decision, error) {
	if AllowedByPolicy(req) {
		return Decision{Allow: true, By: "policy"}, nil
	}
	return Decision{By: "policy", Reason: "no approver was given and the policy does not allow the call by itself"}, nil
})

// deniedf returns an error worded as given that is also ErrDenied
// (errors.Is), without the word "denied" glued into the sentence.
func deniedf(format string, args ...any) error {
	return &deniedError{fmt.Errorf(format, args...)}
}

type deniedError struct{ err error }

func (e *deniedError) Error() string   { return e.err.Error() }
func (e *deniedError) Unwrap() []error { return []error{ErrDenied, e.err} }
