package nativetool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/berth-mcp/berth/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/berth-mcp/berth/internal/procgroup"
)

// DefaultStartTimeout bounds the start and handshake of a plugin when
// LaunchOptions.StartTimeout is zero.
const DefaultStartTimeout = 30 * time.Second

// LaunchOptions are the optional settings of Launch. The zero value (or a
// nil pointer) is valid: an empty environment, the executable's directory
// as working directory, output discarded.
type LaunchOptions struct {
	// Env is the plugin's whole environment, as KEY=VALUE entries. Nothing
	// of the host's environment is inherited; the caller builds it (PATH,
	// HOME, LANG, TMPDIR and the declared fromEnv sources). go-plugin adds
	// its handshake variables.
	Env []string
	// Workspace, if set, is the absolute workspace directory, passed to the
	// plugin as BERTH_WORKSPACE. It must not contradict a BERTH_WORKSPACE
	// entry of Env.
	Workspace string
	// Dir is the working directory; empty means the directory that holds
	// the executable.
	Dir string
	// Stderr receives the plugin's stderr (its JSON log lines re-logged,
	// other lines as they are), anything it prints after serving, and
	// go-plugin's own log lines. Nil discards them. Writes are serialized.
	Stderr io.Writer
	// StartTimeout bounds the start and handshake; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Sandbox, when set, confines the plugin (sandbox.Wrap): go-plugin's
	// socket directory is added to its Write paths and Unix sockets are
	// allowed, since the plugin listens on one. Nil runs it unconfined.
	Sandbox *sandbox.Policy
	// SandboxOptions are Wrap's options.
	SandboxOptions *sandbox.Options
	// Egress serves the listener a launch with a host list returns (the
	// caller's egress proxy); it owns ln. Required when Sandbox.Network is
	// sandbox.NetworkHosts.
	Egress func(ln net.Listener)
}

// Client is a running native tool provider. Its methods are safe for
// concurrent use. Once the plugin has exited or Kill was called every call
// fails with ErrExited; launch a new Client to restart it.
type Client struct {
	exe    string
	pc     *plugin.Client
	rpc    *rpcClient
	runner *procRunner

	killOnce sync.Once
	killDone chan struct{}
}

// Launch starts the native tool provider at exe, an absolute path, and
// completes go-plugin's handshake with it (gRPC only, AutoMTLS).
//
// Immediately before exec, the file's SHA-256 must equal checksum, the
// value from the staged listing; otherwise Launch returns a *ChecksumError
// (ErrChecksumMismatch) and no process is started. The plugin runs in its
// own process group with stdin from /dev/null and exactly the environment
// of opts. If ctx ends before the handshake completes, the process is
// killed and ctx's error returned. The caller must Kill the Client.
func Launch(ctx context.Context, exe string, checksum [32]byte, opts *LaunchOptions) (*Client, error) {
	if opts == nil {
		opts = &LaunchOptions{}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(exe) {
		return nil, fmt.Errorf("nativetool: the executable path %q is not absolute", exe)
	}
	exe = filepath.Clean(exe)
	if checksum == ([32]byte{}) {
		return nil, fmt.Errorf("nativetool: no checksum given for %s; it comes from the staged listing", exe)
	}
	fi, err := os.Lstat(exe)
	if err != nil {
		return nil, fmt.Errorf("nativetool: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("nativetool: %s is not a regular file (mode %v); a native tool must be an executable file in the bundle", exe, fi.Mode())
	}
	env, err := launchEnv(opts)
	if err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Dir(exe)
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	var out io.Writer = io.Discard
	if opts.Stderr != nil {
		out = &lockedWriter{w: opts.Stderr}
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name: "nativetool",
		// Debug, because go-plugin re-logs plugin stderr lines that are
		// not hclog JSON (such as a crash's stack trace) at Debug.
		Level:  hclog.Debug,
		Output: out,
	})
	if opts.Sandbox != nil && opts.Sandbox.Network == sandbox.NetworkHosts && opts.Egress == nil {
		return nil, fmt.Errorf("nativetool: the sandbox of %s has a host list but LaunchOptions.Egress is nil: nothing would serve its proxy", exe)
	}
	r := &procRunner{exe: exe, checksum: checksum, env: env, dir: dir, policy: opts.Sandbox, sbOpts: opts.SandboxOptions, egress: opts.Egress}
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake(),
		Plugins:          plugin.PluginSet{PluginName: &grpcPlugin{}},
		RunnerFunc:       r.build,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		Managed:          false, // the owner calls Kill
		StartTimeout:     timeout,
		SyncStdout:       out,
		SyncStderr:       out,
		Logger:           logger,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxWireBytes), grpc.MaxCallSendMsgSize(maxWireBytes))},
	})
	c := &Client{exe: exe, pc: pc, runner: r, killDone: make(chan struct{})}

	stop := context.AfterFunc(ctx, r.abort)
	proto, err := pc.Client()
	if !stop() || ctx.Err() != nil {
		c.Kill()
		return nil, fmt.Errorf("nativetool: launching %s: %w", exe, context.Cause(ctx))
	}
	if err != nil {
		c.Kill()
		var ce *ChecksumError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, fmt.Errorf("nativetool: launching %s: %w", exe, err)
	}
	if v := pc.NegotiatedVersion(); v != ProtocolVersion {
		c.Kill()
		return nil, fmt.Errorf("nativetool: %s negotiated protocol version %d; this berth speaks %d", exe, v, ProtocolVersion)
	}
	raw, err := proto.Dispense(PluginName)
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("nativetool: %s: %w", exe, err)
	}
	c.rpc = raw.(*rpcClient)
	return c, nil
}

func launchEnv(opts *LaunchOptions) ([]string, error) {
	env := make([]string, 0, len(opts.Env)+1)
	for _, kv := range opts.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("nativetool: environment entry %q is not KEY=VALUE", kv)
		}
		if k == EnvWorkspace && opts.Workspace != "" && v != opts.Workspace {
			return nil, fmt.Errorf("nativetool: Env sets %s=%s but Workspace is %s; set one of them", EnvWorkspace, v, opts.Workspace)
		}
		env = append(env, kv)
	}
	if opts.Workspace != "" {
		if !filepath.IsAbs(opts.Workspace) {
			return nil, fmt.Errorf("nativetool: the workspace %q is not an absolute path", opts.Workspace)
		}
		env = append(env, EnvWorkspace+"="+opts.Workspace)
	}
	return env, nil
}

// Enforcement is the confinement in effect for the plugin; nil when it
// runs unconfined (LaunchOptions.Sandbox nil).
func (c *Client) Enforcement() *sandbox.Enforcement {
	c.runner.mu.Lock()
	defer c.runner.mu.Unlock()
	if c.runner.launch == nil {
		return nil
	}
	e := c.runner.launch.Enforcement
	return &e
}

// Pid returns the plugin's process ID, which is also its process group ID
// on unix.
func (c *Client) Pid() int {
	c.runner.mu.Lock()
	defer c.runner.mu.Unlock()
	return c.runner.pid
}

// Exited reports whether the plugin process has exited or was killed.
// Processes the plugin started may still run until Kill.
func (c *Client) Exited() bool {
	if c.pc.Exited() {
		return true
	}
	pid := c.Pid()
	return pid != 0 && procgroup.Exited(pid)
}

// Kill stops the plugin: a graceful shutdown through go-plugin, SIGKILL to
// its process group if it has not exited after 2 s, then SIGTERM and
// SIGKILL to any process left in the group. It blocks until that is done,
// may be called more than once and from any goroutine, and makes calls in
// progress fail with ErrExited.
func (c *Client) Kill() {
	c.killOnce.Do(func() {
		if pid := c.Pid(); pid != 0 && procgroup.Exited(pid) {
			// The plugin died and left children behind, which may hold
			// its stdout or stderr open: stop them first, or go-plugin
			// waits for those pipes to close.
			c.runner.stopGroup(500 * time.Millisecond)
		}
		c.pc.Kill()
		c.runner.stopGroup(500 * time.Millisecond)
		close(c.killDone)
	})
	<-c.killDone
}

func (c *Client) killed() bool {
	select {
	case <-c.killDone:
		return true
	default:
		return false
	}
}

// ListTools asks the plugin for its tools. The list is validated: at most
// MaxTools tools, valid and unique names, object input schemas. The
// schemas are returned as map[string]any, as the go-sdk client returns
// them.
func (c *Client) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	b, err := c.rpc.listTools(ctx)
	if err != nil {
		return nil, c.rpcError(ctx, "ListTools", err)
	}
	tools, err := decodeToolList(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: ListTools: %v", ErrProtocol, c.exe, err)
	}
	return tools, nil
}

// CallTool calls the tool name with args, a JSON object (nil means {}). A
// tool's own failure is a result with IsError set; an error means the call
// could not be made or its result was unusable: ErrExited if the plugin
// died (the Client is then finished), ErrProtocol for a malformed result,
// ctx's error if ctx ended.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if !toolNameRe.MatchString(name) {
		return nil, fmt.Errorf("nativetool: invalid tool name %q", name)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !isJSONObject(args) {
		return nil, fmt.Errorf("nativetool: the arguments of %q are not a JSON object", name)
	}
	req, err := json.Marshal(wireCallRequest{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("nativetool: encoding the call of %q: %w", name, err)
	}
	if len(req) > MaxMessageBytes {
		return nil, fmt.Errorf("nativetool: the arguments of %q are %d bytes; the limit is %d", name, len(req), MaxMessageBytes)
	}
	b, err := c.rpc.callTool(ctx, req)
	if err != nil {
		return nil, c.rpcError(ctx, fmt.Sprintf("calling %q", name), err)
	}
	// A result that comes after the caller's deadline (or cancellation) is
	// not returned: the plugin's context ends at the same deadline, so its
	// answer is then typically the isError result of a handler that gave
	// up, and a late timer in this process must not turn that into a
	// success.
	if err := ctxErr(ctx); err != nil {
		return nil, fmt.Errorf("nativetool: %s: calling %q: %w", c.exe, name, err)
	}
	res, err := decodeCallResult(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: the result of %q: %v", ErrProtocol, c.exe, name, err)
	}
	return res, nil
}

// rpcError classifies a failed RPC. A broken connection to a plugin that
// no longer answers its health check means the plugin is gone: the Client
// kills what remains of its process group, so Exited reports true.
func (c *Client) rpcError(ctx context.Context, what string, err error) error {
	if code := status.Code(err); code == codes.DeadlineExceeded || code == codes.Canceled {
		// gRPC may report the caller's deadline a moment before the
		// context itself says so.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := ctxErr(ctx); err != nil {
		return fmt.Errorf("nativetool: %s: %s: %w", c.exe, what, err)
	}
	if c.killed() {
		return fmt.Errorf("%w: %s was stopped during %s", ErrExited, c.exe, what)
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unavailable, codes.Canceled:
		if c.lost() {
			return fmt.Errorf("%w: %s stopped during %s (%v); see its log", ErrExited, c.exe, what, st.Message())
		}
	case codes.ResourceExhausted:
		return fmt.Errorf("%w: %s: %s: %v", ErrProtocol, c.exe, what, st.Message())
	case codes.NotFound:
		return fmt.Errorf("nativetool: %s: %s: %v", c.exe, what, st.Message())
	}
	return fmt.Errorf("nativetool: %s: %s: %w", c.exe, what, err)
}

// ctxErr is ctx's cause once ctx has ended, or context.DeadlineExceeded
// once its deadline has passed even if its timer has not fired yet (under
// load it can fire well after the deadline, after gRPC has already given
// up or the plugin's answer has come).
func ctxErr(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// lost reports whether the plugin is gone, after giving go-plugin a moment
// to notice an exit and then checking the plugin's health.
func (c *Client) lost() bool {
	for range 15 {
		if c.Exited() {
			c.Kill()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c.rpc.healthy(ctx) {
		return false
	}
	c.Kill()
	return true
}

// rpcClient is the client side of the service.
type rpcClient struct{ cc *grpc.ClientConn }

func (c *rpcClient) listTools(ctx context.Context) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := c.cc.Invoke(ctx, methodListTools, &emptypb.Empty{}, out, grpc.MaxCallRecvMsgSize(maxWireBytes)); err != nil {
		return nil, err
	}
	return out.GetValue(), nil
}

func (c *rpcClient) callTool(ctx context.Context, req []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := c.cc.Invoke(ctx, methodCallTool, wrapperspb.Bytes(req), out, grpc.MaxCallRecvMsgSize(maxWireBytes)); err != nil {
		return nil, err
	}
	return out.GetValue(), nil
}

func (c *rpcClient) healthy(ctx context.Context) bool {
	_, err := grpc_health_v1.NewHealthClient(c.cc).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName})
	return err == nil
}

// decodeToolList validates a ListTools response from an untrusted plugin.
func decodeToolList(b []byte) ([]*mcp.Tool, error) {
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("the tool list is %d bytes; the limit is %d", len(b), MaxMessageBytes)
	}
	var head struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if !startsObject(b) {
		return nil, errors.New("the response is not a JSON object")
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, err
	}
	if len(head.Tools) > MaxTools {
		return nil, fmt.Errorf("%d tools; a provider may offer at most %d", len(head.Tools), MaxTools)
	}
	tools := make([]*mcp.Tool, 0, len(head.Tools))
	seen := make(map[string]bool, len(head.Tools))
	for i, raw := range head.Tools {
		t, err := decodeTool(raw)
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %v", i, err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tools[%d]: the name %q is used twice", i, t.Name)
		}
		seen[t.Name] = true
		tools = append(tools, t)
	}
	return tools, nil
}

func decodeTool(raw json.RawMessage) (*mcp.Tool, error) {
	if !startsObject(raw) {
		return nil, errors.New("not a JSON object")
	}
	var w wireTool
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if !toolNameRe.MatchString(w.Name) {
		return nil, fmt.Errorf("name %q does not match %s", w.Name, toolNameRe)
	}
	if err := checkObjectSchema(w.InputSchema); err != nil {
		return nil, fmt.Errorf("%q: inputSchema: %v", w.Name, err)
	}
	t := &mcp.Tool{Name: w.Name, Description: w.Description}
	var in map[string]any
	if err := json.Unmarshal(w.InputSchema, &in); err != nil {
		return nil, fmt.Errorf("%q: inputSchema: %v", w.Name, err)
	}
	t.InputSchema = in
	if len(w.OutputSchema) > 0 && string(w.OutputSchema) != "null" {
		if !isJSONObject(w.OutputSchema) {
			return nil, fmt.Errorf("%q: outputSchema is not a JSON object", w.Name)
		}
		var out map[string]any
		if err := json.Unmarshal(w.OutputSchema, &out); err != nil {
			return nil, fmt.Errorf("%q: outputSchema: %v", w.Name, err)
		}
		t.OutputSchema = out
	}
	if a := w.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint != nil && *a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint != nil && *a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return t, nil
}

// decodeCallResult validates a CallTool response from an untrusted plugin.
// structuredContent is kept as the plugin's JSON (json.RawMessage), so
// numbers keep their precision.
func decodeCallResult(b []byte) (*mcp.CallToolResult, error) {
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("the result is %d bytes; the limit is %d", len(b), MaxMessageBytes)
	}
	if !startsObject(b) {
		return nil, errors.New("the result is not a JSON object")
	}
	var w wireCallResult
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	if w.Content == nil {
		w.Content = []json.RawMessage{}
	}
	for i, item := range w.Content {
		if err := checkContentItem(item); err != nil {
			return nil, fmt.Errorf("content[%d]: %v", i, err)
		}
	}
	// go-sdk decodes the items into its content types.
	doc, err := json.Marshal(struct {
		Content []json.RawMessage `json:"content"`
	}{w.Content})
	if err != nil {
		return nil, err
	}
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(doc, res); err != nil {
		return nil, fmt.Errorf("content: %v", err)
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	res.IsError = w.IsError
	if len(w.StructuredContent) > 0 && string(w.StructuredContent) != "null" {
		res.StructuredContent = w.StructuredContent
	}
	return res, nil
}

// lockedWriter serializes writes from go-plugin's logger and its stdout
// and stderr copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
