package nativetool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/sandbox"
)

// The test binary doubles as two helper programs (the self-exec pattern):
// with envTestPlugin=1 it serves testTools through Serve, the way a plugin
// built with this SDK does; with envTestSleeper=1 it sleeps, standing in
// for a child process that a plugin starts.
const (
	envTestPlugin  = "NATIVETOOL_TEST_PLUGIN"
	envTestMarker  = "NATIVETOOL_TEST_MARKER"
	envTestSleeper = "NATIVETOOL_TEST_SLEEPER"
)

func TestMain(m *testing.M) {
	// A test binary re-executed as the sandbox launcher never runs tests.
	sandbox.Main()
	switch {
	case os.Getenv(envTestSleeper) == "1":
		time.Sleep(5 * time.Minute)
		os.Exit(0)
	case os.Getenv(envTestPlugin) == "1":
		if p := os.Getenv(envTestMarker); p != "" {
			if err := os.WriteFile(p, []byte("started\n"), 0o600); err != nil {
				os.Exit(2)
			}
		}
		Serve(testTools()...)
		os.Exit(0)
	}
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// testTools are the behaviours the host must survive.
func testTools() []Tool {
	obj := json.RawMessage(`{"type":"object"}`)
	return []Tool{
		{Name: "echo", Description: "returns its arguments", InputSchema: obj,
			Annotations: &Annotations{ReadOnlyHint: true, OpenWorldHint: Bool(false)},
			Handler: func(_ context.Context, args json.RawMessage) (*Result, error) {
				return Structured(args), nil
			}},
		{Name: "panic", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			panic("boom")
		}},
		{Name: "exit", Handler: func(ctx context.Context, _ json.RawMessage) (*Result, error) {
			Logger(ctx).Error("exiting now")
			os.Exit(3)
			return nil, nil
		}},
		{Name: "hang", Handler: func(ctx context.Context, _ json.RawMessage) (*Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{Name: "slow_ok", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			time.Sleep(300 * time.Millisecond)
			return Text("done"), nil
		}},
		{Name: "hang_hard", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			time.Sleep(time.Hour)
			return nil, nil
		}},
		{Name: "spawn", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, err
			}
			cmd := exec.Command(self)
			cmd.Env = []string{envTestSleeper + "=1"}
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			go func() { _ = cmd.Wait() }()
			return Structured(map[string]int{"pid": cmd.Process.Pid}), nil
		}},
		{Name: "orphan", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			// A child that inherits the plugin's real stdout and stderr
			// (fds 1 and 2, which go-plugin reads), then the plugin dies
			// between calls.
			self, err := os.Executable()
			if err != nil {
				return nil, err
			}
			cmd := exec.Command(self)
			cmd.Env = []string{envTestSleeper + "=1"}
			cmd.Stdout, cmd.Stderr = os.NewFile(1, "stdout"), os.NewFile(2, "stderr")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			go func() {
				time.Sleep(100 * time.Millisecond)
				os.Exit(4)
			}()
			return Structured(map[string]int{"pid": cmd.Process.Pid}), nil
		}},
		{Name: "env", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			wd, _ := os.Getwd()
			in, err1 := os.Stdin.Stat()
			null, err2 := os.Stat(os.DevNull)
			return Structured(map[string]any{
				"env":            os.Environ(),
				"cwd":            wd,
				"stdinIsDevNull": err1 == nil && err2 == nil && os.SameFile(in, null),
			}), nil
		}},
		{Name: "log", Handler: func(ctx context.Context, _ json.RawMessage) (*Result, error) {
			Logger(ctx).Info("hello from the log", "k", "v")
			fmt.Fprintln(os.Stderr, "plain stderr line")
			fmt.Println("stdout line after serve")
			return Text("logged"), nil
		}},
		{Name: "big", Handler: func(context.Context, json.RawMessage) (*Result, error) {
			return Text(strings.Repeat("x", MaxMessageBytes+1)), nil
		}},
	}
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	fmttools  string
)

// buildFmttools builds examples/fmttools into a temporary directory once
// per test run and returns its path and checksum.
//
// go test caches results by the files the test process opens; the build
// runs in a subprocess, so the example's sources are read here too, so
// that editing them invalidates a cached result.
func buildFmttools(t *testing.T) (string, [32]byte) {
	t.Helper()
	buildOnce.Do(func() {
		src := filepath.Join("..", "examples", "fmttools")
		_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				_, _ = os.ReadFile(p)
			}
			return nil
		})
		buildDir, buildErr = os.MkdirTemp("", "nativetool-test-")
		if buildErr != nil {
			return
		}
		fmttools = filepath.Join(buildDir, "fmttools")
		buildErr = testkit.GoBuild(buildDir, "./"+filepath.ToSlash(src))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return fmttools, fileSum(t, fmttools)
}

// selfPlugin returns the test binary's path and checksum.
func selfPlugin(t *testing.T) (string, [32]byte) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self, fileSum(t, self)
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// baseEnv is the kind of environment the pool builds.
func baseEnv(t *testing.T) []string {
	return []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + t.TempDir(),
		"LANG=C",
		"TMPDIR=" + os.TempDir(),
	}
}

// launchSelf launches the test binary as a plugin serving testTools.
func launchSelf(t *testing.T, opts *LaunchOptions) *Client {
	t.Helper()
	exe, sum := selfPlugin(t)
	if opts == nil {
		opts = &LaunchOptions{}
	}
	// A race-enabled binary sleeps 1 s at exit unless told otherwise.
	opts.Env = append(append(baseEnv(t), envTestPlugin+"=1", "GORACE=atexit_sleep_ms=0"), opts.Env...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Launch(ctx, exe, sum, opts)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(c.Kill)
	return c
}

// syncBuffer is a bytes.Buffer safe to read while the plugin writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// textOf joins the text items of a result.
func textOf(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
