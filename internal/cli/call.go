package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
)

// cliApprover approves calls for `berth call`: what the policy allows by
// itself, what --yes approves, or what the operator confirms on a
// terminal.
type cliApprover struct {
	a   *app
	yes bool
}

func (c cliApprover) Approve(ctx context.Context, req *pool.ApprovalRequest) (pool.Decision, error) {
	if pool.AllowedByPolicy(req) {
		return pool.Decision{Allow: true, By: "policy"}, nil
	}
	if c.yes {
		return pool.Decision{Allow: true, By: "--yes"}, nil
	}
	if !c.a.isTerminal() {
		why := fmt.Sprintf("the policy for %s is %s", req.Tool, req.Policy)
		if globAsks(req.Policy, req.Annotations) {
			why += fmt.Sprintf(", but %s is destructive (destructiveHint), so a glob allow still asks; only an exact allow skips that: berth policy set %s allow", req.Tool, req.Tool)
		}
		return pool.Decision{By: "berth call", Reason: why + "; berth is not on a terminal, so it cannot ask; pass --yes to approve this call"}, nil
	}
	w := c.a.stdout
	fmt.Fprintf(w, "Call %s?\n", req.Tool)
	on := "server"
	if req.Native {
		on = "native tool provider"
	}
	fmt.Fprintf(w, "  tool:        %s on %s %s of plugin %s\n", review.PrintableLines(req.UpstreamTool), on, req.Server, req.Plugin)
	fmt.Fprintf(w, "  arguments:   %s\n", req.Arguments)
	fmt.Fprintf(w, "  annotations: %s\n", annotationText(req.Annotations))
	fmt.Fprintf(w, "  policy:      %s\n", req.Policy)
	ok, err := c.a.ask("Run it?")
	if err != nil {
		return pool.Decision{}, err
	}
	if ok {
		return pool.Decision{Allow: true, By: "terminal"}, nil
	}
	return pool.Decision{By: "terminal", Reason: "the operator said no"}, nil
}

// globAsks reports a tool that a glob allow matches but that still asks,
// because it says destructiveHint: true.
func globAsks(m store.PolicyMatch, an *mcp.ToolAnnotations) bool {
	return m.Action == store.ActionAllow && !m.Exact && an != nil && an.DestructiveHint != nil && *an.DestructiveHint
}

func annotationText(an *mcp.ToolAnnotations) string {
	if an == nil {
		return "none"
	}
	var parts []string
	if an.Title != "" {
		parts = append(parts, fmt.Sprintf("title %q", an.Title))
	}
	if an.ReadOnlyHint {
		parts = append(parts, "readOnlyHint")
	}
	if an.IdempotentHint {
		parts = append(parts, "idempotentHint")
	}
	if an.DestructiveHint != nil {
		parts = append(parts, fmt.Sprintf("destructiveHint=%v", *an.DestructiveHint))
	}
	if an.OpenWorldHint != nil {
		parts = append(parts, fmt.Sprintf("openWorldHint=%v", *an.OpenWorldHint))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// callArgs builds the arguments object from --args or --arg k=v. A value
// is a string when the tool's input schema says the property is a string;
// otherwise JSON when it parses as JSON, else a string.
func callArgs(raw string, kvs []string, schema any) (json.RawMessage, error) {
	if raw != "" && len(kvs) > 0 {
		return nil, usagef("use either --args JSON or --arg k=v, not both")
	}
	if raw != "" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
			return nil, usagef("--args must be a JSON object, like '{\"text\": \"hi\"}'")
		}
		return json.RawMessage(raw), nil
	}
	props := map[string]any{}
	if s, ok := schema.(map[string]any); ok {
		if p, ok := s["properties"].(map[string]any); ok {
			props = p
		}
	}
	obj := map[string]json.RawMessage{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--arg %q is not k=v", kv)
		}
		isString := false
		if p, ok := props[k].(map[string]any); ok && p["type"] == "string" {
			isString = true
		}
		if !isString && json.Valid([]byte(v)) {
			obj[k] = json.RawMessage(v)
			continue
		}
		b, _ := json.Marshal(v)
		obj[k] = b
	}
	b, err := json.Marshal(obj)
	return b, err
}

func newCallCmd(a *app) *cobra.Command {
	opts := &callOptions{}
	cmd := &cobra.Command{
		Use: "call TOOL",
		Example: `  berth call acme-notes__notes__search --arg query=invoices
  berth call acme-notes__notes__search --args '{"query": "q3"}' --yes --json`,
		Short: "Call one tool of the workspace",
		Long: `Call starts the workspace's servers and calls one tool by its exported name
(berth tools lists them), with arguments from --args JSON or --arg k=v
(repeatable; a value is a string when the tool's schema says so, else JSON
when it parses as JSON, else a string).

The operator's policy decides: allow runs, ask asks on a terminal (showing
the tool, server, arguments and annotations) and needs --yes without one,
deny refuses. A destructive tool (destructiveHint: true) asks even when a
glob allows it; only an exact-name allow skips that.

Exit codes: 0 ok, 1 the tool failed (its error text is printed), 5 the
plugin drifted or the tool changed since it was pinned, 6 the call was
refused.`,
		Args: exactArgs(1, "one TOOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Tool = args[0]
			return runCall(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	cmd.Flags().StringVar(&opts.RawArgs, "args", "", "the arguments as a JSON object")
	cmd.Flags().StringArrayVar(&opts.KVs, "arg", nil, "one argument as k=v (repeatable)")
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "approve the call without asking (needed without a terminal when the policy says ask)")
	a.jsonFlag(cmd, &opts.JSON, mcp.CallToolResult{})
	return cmd
}

// callOptions are the inputs of berth call.
type callOptions struct {
	// Tool is the positional argument.
	Tool               string
	KVs                []string
	Workspace, RawArgs string
	Yes, JSON          bool
}

func runCall(ctx context.Context, a *app, opts *callOptions) error {
	if opts.RawArgs != "" && len(opts.KVs) > 0 {
		return usagef("use either --args JSON or --arg k=v, not both")
	}
	p, err := a.openPool(ctx, opts.Workspace, !opts.JSON)
	if err != nil {
		return err
	}
	defer p.Close()
	var schema any
	if len(opts.KVs) > 0 {
		if tools, err := p.Tools(ctx); err == nil {
			for _, t := range tools {
				if t.Name == opts.Tool {
					schema = t.Definition.InputSchema
				}
			}
		}
	}
	body, err := callArgs(opts.RawArgs, opts.KVs, schema)
	if err != nil {
		return err
	}
	res, err := p.Call(ctx, opts.Tool, body, cliApprover{a: a, yes: opts.Yes})
	var unknown *pool.UnknownToolError
	if errors.As(err, &unknown) {
		unknown.DidYouMean = p.SuggestTools(opts.Tool)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	} else if !res.IsError {
		writeResult(a.stdout, res)
	}
	if res.IsError {
		msg := resultText(res)
		if !opts.JSON {
			fmt.Fprintf(a.stderr, "berth: the tool %s failed: %s\n", opts.Tool, msg)
		}
		return &reported{fmt.Errorf("the tool %s failed: %s", opts.Tool, msg)}
	}
	return nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// writeResult prints a tool result for a person: text as is, other
// content described.
func writeResult(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s]\n%s\n", c.Resource.URI, c.Resource.Text)
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintln(w, string(b))
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, string(b))
	}
}
