//go:build unix

// Package testserver is a small MCP server built on go-sdk for berth's
// tests: it does on demand what a real server cannot be made to do (die in
// the middle of a call, hang, change a tool's description on the next
// start, announce a new tool with list_changed). The pool's tests run it
// by re-executing their own test binary; the CLI's tests build
// ./pool/internal/testserver/berth-testserver.
package testserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config selects the server's behaviour.
type Config struct {
	// Name is the server's implementation name.
	Name string
	// Tools lists the tools to register; empty means all (see AllTools).
	Tools []string
	// DescFile, when it exists, holds the description of the echo tool;
	// it is read once at start.
	DescFile string
	// MarkerDir is where die_once records that it died.
	MarkerDir string
	// DieAfter exits the process this long after the start.
	DieAfter time.Duration
	// Stderr lines are written to stderr at start.
	Stderr []string
	// Legacy serves only the protocol versions up to 2025-11-25.
	Legacy bool
	// ExitOnDiscover exits when the first message is server/discover, like
	// legacy servers that die on an unexpected first message (go-sdk #1177).
	ExitOnDiscover bool
	// HangStart never answers anything.
	HangStart bool
	// Extras registers a prompt ("greet") and resources.
	Extras bool
	// UIFile, when set, registers an MCP Apps UI template
	// ui://<name>/widget whose HTML is the file's contents at each read,
	// and a tool "show" that links it (_meta.ui.resourceUri).
	UIFile string
}

// AllTools are the tools the server can register.
var AllTools = []string{"echo", "sum", "die", "die_once", "hang", "slow", "fail", "pid", "grow", "env", "cwd", "destroy"}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type sumArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type slowArgs struct {
	MS int `json:"ms" jsonschema:"how long to sleep, in milliseconds; cancellation is ignored"`
}

type empty struct{}

type readArgs struct {
	Path string `json:"path"`
}

type fetchArgs struct {
	URL string `json:"url"`
}

// fetch GETs u through the proxy of the environment, which Go's own
// ProxyFromEnvironment would skip for loopback hosts; without one it
// connects directly.
func fetch(ctx context.Context, u string) string {
	tr := &http.Transport{}
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		if v := os.Getenv(k); v != "" {
			if pu, err := url.Parse(v); err == nil {
				tr.Proxy = http.ProxyURL(pu)
				break
			}
		}
	}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	resp, err := c.Do(r)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer returns the server described by cfg.
func NewServer(cfg *Config) *mcp.Server {
	name := cfg.Name
	if name == "" {
		name = "berth-testserver"
	}
	opts := &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	}
	if cfg.Legacy {
		opts.SupportedProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	}
	if cfg.Extras || cfg.UIFile != "" {
		opts.Capabilities.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	if cfg.Extras {
		opts.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		opts.Capabilities.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, opts)
	want := func(tool string) bool { return len(cfg.Tools) == 0 || slices.Contains(cfg.Tools, tool) }
	yes := true

	if want("echo") {
		desc := "Echoes its text."
		if cfg.DescFile != "" {
			if b, err := os.ReadFile(cfg.DescFile); err == nil {
				desc = strings.TrimSpace(string(b))
			}
		}
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: desc, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
				return text("echo: " + in.Text), nil, nil
			})
	}
	if want("sum") {
		mcp.AddTool(s, &mcp.Tool{Name: "sum", Description: "Adds a and b.", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest, in sumArgs) (*mcp.CallToolResult, any, error) {
				return text(fmt.Sprint(in.A + in.B)), nil, nil
			})
	}
	if want("die") {
		mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "Exits the server in the middle of the call."},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				fmt.Fprintln(os.Stderr, "testserver: dying in the middle of a call")
				os.Exit(3)
				return nil, nil, nil
			})
	}
	if want("die_once") {
		mcp.AddTool(s, &mcp.Tool{Name: "die_once", Description: "Exits the server the first time it is called, then answers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				marker := filepath.Join(cfg.MarkerDir, "died-once")
				if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
					os.WriteFile(marker, []byte("x"), 0o644)
					fmt.Fprintln(os.Stderr, "testserver: dying once")
					os.Exit(3)
				}
				return text("survived"), nil, nil
			})
	}
	if want("hang") {
		mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				fmt.Fprintln(os.Stderr, "testserver: hanging")
				select {}
			})
	}
	if want("slow") {
		mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleeps, ignoring cancellation."},
			func(ctx context.Context, req *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
				fmt.Fprintln(os.Stderr, "testserver: slow call started")
				time.Sleep(time.Duration(in.MS) * time.Millisecond)
				return text("slept"), nil, nil
			})
	}
	if want("fail") {
		mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails as a tool."},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				return nil, nil, errors.New("the fail tool always fails")
			})
	}
	if want("pid") {
		mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's process ids.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				pgid, _ := syscall.Getpgid(0)
				b, _ := json.Marshal(map[string]int{"pid": os.Getpid(), "ppid": os.Getppid(), "pgid": pgid})
				return text(string(b)), nil, nil
			})
	}
	if want("grow") {
		mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds the tool extra (list_changed follows)."},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "Added at run time."},
					func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
						return text("extra"), nil, nil
					})
				return text("grown"), nil, nil
			})
	}
	if want("env") {
		mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns the environment.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				env := os.Environ()
				slices.Sort(env)
				return text(strings.Join(env, "\n")), nil, nil
			})
	}
	if want("cwd") {
		mcp.AddTool(s, &mcp.Tool{Name: "cwd", Description: "Returns the working directory and arguments.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				wd, _ := os.Getwd()
				b, _ := json.Marshal(map[string]any{"cwd": wd, "args": os.Args[1:]})
				return text(string(b)), nil, nil
			})
	}
	if slices.Contains(cfg.Tools, "meta") { // only when named: telemetry tests
		s.AddTool(&mcp.Tool{Name: "meta", Description: "Returns the params._meta of its request, as JSON.", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				b, _ := json.Marshal(req.Params.Meta)
				return text(string(b)), nil
			})
	}
	if slices.Contains(cfg.Tools, "fetch") { // only when named: it reaches the network
		mcp.AddTool(s, &mcp.Tool{Name: "fetch", Description: "GETs a URL through the proxy HTTP_PROXY names (for every host, loopback too), and returns the status and body."},
			func(ctx context.Context, req *mcp.CallToolRequest, in fetchArgs) (*mcp.CallToolResult, any, error) {
				return text(fetch(ctx, in.URL)), nil, nil
			})
	}
	if slices.Contains(cfg.Tools, "readfile") { // only when named: it reads any path
		mcp.AddTool(s, &mcp.Tool{Name: "readfile", Description: "Returns the content of a file, or the error reading it."},
			func(ctx context.Context, req *mcp.CallToolRequest, in readArgs) (*mcp.CallToolResult, any, error) {
				b, err := os.ReadFile(in.Path)
				if err != nil {
					return text("error: " + err.Error()), nil, nil
				}
				return text(string(b)), nil, nil
			})
	}
	if want("destroy") {
		mcp.AddTool(s, &mcp.Tool{Name: "destroy", Description: "Pretends to delete things.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
			func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
				return text("destroyed"), nil, nil
			})
	}
	if cfg.Extras {
		s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets someone.", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
			func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
			})
		s.AddResource(&mcp.Resource{URI: "test://" + name + "/static", Name: "static", MIMEType: "text/plain"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "static from " + name}}}, nil
			})
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://" + name + "/item/{id}", Name: "item", MIMEType: "text/plain"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + req.Params.URI}}}, nil
			})
	}
	if cfg.UIFile != "" {
		addUI(s, name, cfg.UIFile)
	}
	return s
}

// addUI registers the MCP Apps template and the tool that links it.
func addUI(s *mcp.Server, name, file string) {
	const mime = "text/html;profile=mcp-app"
	uri := "ui://" + name + "/widget"
	meta := mcp.Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []any{"https://api.example.com"}}}}
	s.AddResource(&mcp.Resource{URI: uri, Name: "widget", MIMEType: mime, Meta: meta},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: string(b), Meta: meta}}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "show", Description: "Shows a widget.", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": uri}}},
		func(ctx context.Context, req *mcp.CallToolRequest, in empty) (*mcp.CallToolResult, any, error) {
			return text("shown"), nil, nil
		})
}

type listFlag struct{ dst *[]string }

func (f listFlag) String() string { return "" }
func (f listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*f.dst = append(*f.dst, s)
		}
	}
	return nil
}

// Main parses args (without the program name), serves one session over
// stdin and stdout, and returns the exit code.
func Main(args []string) int {
	cfg := &Config{}
	fs := flag.NewFlagSet("berth-testserver", flag.ContinueOnError)
	fs.StringVar(&cfg.Name, "name", "", "implementation name")
	fs.Var(listFlag{&cfg.Tools}, "tools", "comma-separated tools to register (default all)")
	fs.StringVar(&cfg.DescFile, "desc-file", "", "file holding the echo tool's description")
	fs.StringVar(&cfg.MarkerDir, "marker-dir", ".", "where die_once records that it died")
	fs.DurationVar(&cfg.DieAfter, "die-after", 0, "exit this long after the start")
	fs.Var(listFlag{&cfg.Stderr}, "stderr", "comma-separated lines to write to stderr at start")
	fs.BoolVar(&cfg.Legacy, "legacy", false, "serve only protocol versions up to 2025-11-25")
	fs.BoolVar(&cfg.ExitOnDiscover, "exit-on-discover", false, "exit when the first message is server/discover")
	fs.BoolVar(&cfg.HangStart, "hang-start", false, "never answer")
	fs.BoolVar(&cfg.Extras, "extras", false, "register a prompt and resources")
	fs.StringVar(&cfg.UIFile, "ui-file", "", "register an MCP Apps UI template read from this file, and a tool \"show\" that links it")
	fs.String("root", "", "ignored (the cwd tool reports the arguments)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, l := range cfg.Stderr {
		fmt.Fprintln(os.Stderr, l)
	}
	if cfg.HangStart {
		select {}
	}
	if cfg.DieAfter > 0 {
		time.AfterFunc(cfg.DieAfter, func() {
			fmt.Fprintln(os.Stderr, "testserver: dying after", cfg.DieAfter)
			os.Exit(4)
		})
	}
	var in io.ReadCloser = os.Stdin
	if cfg.ExitOnDiscover {
		r := bufio.NewReader(os.Stdin)
		first, err := r.ReadBytes('\n')
		if err != nil {
			return 1
		}
		if strings.Contains(string(first), `"server/discover"`) {
			fmt.Fprintln(os.Stderr, "testserver: unexpected first message server/discover; exiting")
			return 1
		}
		in = io.NopCloser(io.MultiReader(strings.NewReader(string(first)), r))
	}
	t := &mcp.IOTransport{Reader: in, Writer: nopCloser{os.Stdout}}
	if err := NewServer(cfg).Run(context.Background(), t); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "testserver:", err)
	}
	return 0
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
