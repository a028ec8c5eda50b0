package nativetool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The handshake of protocol version 1. Host and plugin must agree on all
// three values; go-plugin refuses to connect otherwise. A breaking change
// to the service or its messages gets a new ProtocolVersion, never a new
// cookie.
const (
	ProtocolVersion  = 1
	MagicCookieKey   = "BERTH_NATIVE_TOOL"
	MagicCookieValue = "8c5e2f71-3b9d-4a06-b1e4-6f0d92a7c3b8"
)

// PluginName is the go-plugin plugin name under which the tool provider
// service is dispensed.
const PluginName = "tools"

// ServiceName is the fully qualified gRPC service of protocol version 1.
// Its methods are ListTools and CallTool; see docs/native-tools.md.
const ServiceName = "berth.nativetool.v1.ToolProvider"

const (
	methodListTools = "/" + ServiceName + "/ListTools"
	methodCallTool  = "/" + ServiceName + "/CallTool"
)

// EnvWorkspace is the environment variable through which the host tells a
// plugin the absolute path of the workspace it serves.
const EnvWorkspace = "BERTH_WORKSPACE"

// Limits of protocol version 1. Both sides enforce them: a host refuses a
// tool list or result over the limit, and Serve refuses to send one.
const (
	// MaxMessageBytes bounds the JSON document carried by any one message:
	// a tool list, the arguments of a call, or a call result (16 MiB).
	MaxMessageBytes = 16 << 20
	// MaxTools bounds the number of tools one provider may offer.
	MaxTools = 1000
)

// maxWireBytes is the gRPC message size limit: the JSON document plus the
// few bytes of the BytesValue framing.
const maxWireBytes = MaxMessageBytes + 64

// toolNameRe is the rule for tool names: what every MCP client accepts.
var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// The JSON documents carried inside google.protobuf.BytesValue. Field
// names follow MCP, so a result maps onto an MCP CallToolResult as is.

// wireToolList is the ListTools response.
type wireToolList struct {
	Tools []wireTool `json:"tools"`
}

type wireTool struct {
	Name         string           `json:"name"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *wireAnnotations `json:"annotations,omitempty"`
}

// wireAnnotations holds the MCP tool annotations. An absent hint means the
// MCP default: readOnly false, destructive true, idempotent false,
// openWorld true.
type wireAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// wireCallRequest is the CallTool request.
type wireCallRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// wireCallResult is the CallTool response.
type wireCallResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
}

// checkContentItem reports whether raw is a JSON object with a known
// "type" and the fields MCP requires of that type.
func checkContentItem(raw json.RawMessage) error {
	if !isJSONObject(raw) {
		return errors.New("content item is not a JSON object")
	}
	var c struct {
		Type     *string `json:"type"`
		Text     *string `json:"text"`
		Data     *string `json:"data"`
		MIMEType *string `json:"mimeType"`
		URI      *string `json:"uri"`
		Name     *string `json:"name"`
		Resource *struct {
			URI  *string `json:"uri"`
			Text *string `json:"text"`
			Blob *string `json:"blob"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("content item: %v", err)
	}
	if c.Type == nil {
		return errors.New(`content item has no "type"`)
	}
	var missing string
	switch *c.Type {
	case "text":
		if c.Text == nil {
			missing = "text"
		}
	case "image", "audio":
		if c.Data == nil {
			missing = "data"
		} else if c.MIMEType == nil {
			missing = "mimeType"
		}
	case "resource_link":
		if c.URI == nil {
			missing = "uri"
		} else if c.Name == nil {
			missing = "name"
		}
	case "resource":
		switch {
		case c.Resource == nil:
			missing = "resource"
		case c.Resource.URI == nil:
			missing = "resource.uri"
		case c.Resource.Text == nil && c.Resource.Blob == nil:
			missing = "resource.text or resource.blob"
		}
	default:
		return fmt.Errorf("content item has unsupported type %q (want text, image, audio, resource_link or resource)", *c.Type)
	}
	if missing != "" {
		return fmt.Errorf("%s content item has no %q", *c.Type, missing)
	}
	return nil
}

// isJSONObject reports whether b is valid JSON whose top-level value is an
// object.
func isJSONObject(b []byte) bool {
	return startsObject(b) && json.Valid(b)
}

// startsObject reports whether b's first non-space byte opens an object;
// json.Unmarshal then gives the detail of any later error.
func startsObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// checkObjectSchema reports whether raw is a JSON object whose "type" is
// "object", as MCP requires of a tool's input schema.
func checkObjectSchema(raw json.RawMessage) error {
	if !isJSONObject(raw) {
		return errors.New("schema is not a JSON object")
	}
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	if string(s.Type) != `"object"` {
		if len(s.Type) == 0 {
			return errors.New(`schema has no "type"; it must be "object"`)
		}
		return fmt.Errorf(`schema "type" is %s; it must be "object"`, s.Type)
	}
	return nil
}

// providerServer is the server side of the service, what
// protoc-gen-go-grpc would generate from the .proto in docs/native-tools.md.
type providerServer interface {
	ListTools(context.Context, *emptypb.Empty) (*wrapperspb.BytesValue, error)
	CallTool(context.Context, *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error)
}

func unary[Req any](method string, call func(providerServer, context.Context, *Req) (*wrapperspb.BytesValue, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: method,
		Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(Req)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				return call(srv.(providerServer), ctx, req.(*Req))
			}
			if ic == nil {
				return h(ctx, in)
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + ServiceName + "/" + method}, h)
		},
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*providerServer)(nil),
	Methods: []grpc.MethodDesc{
		unary("ListTools", func(s providerServer, ctx context.Context, in *emptypb.Empty) (*wrapperspb.BytesValue, error) {
			return s.ListTools(ctx, in)
		}),
		unary("CallTool", func(s providerServer, ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
			return s.CallTool(ctx, in)
		}),
	},
	Metadata: "berth/nativetool/v1/tool_provider.proto",
}

// grpcPlugin is the go-plugin glue. server is set only in the plugin.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	server providerServer
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.server == nil {
		return errors.New("nativetool: no tool provider to serve")
	}
	s.RegisterService(&serviceDesc, p.server)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &rpcClient{cc: cc}, nil
}
