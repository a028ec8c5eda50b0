// Command conformanceclient is berth's client for the official MCP
// conformance suite's client scenarios (`conformance client --command
// conformanceclient`, docs/conformance.md): it connects berth's
// remote-server client (pool.DialRemote: the pool's guard, and for the
// auth scenarios the sign-in of a remote that declares auth.oauth) to the
// URL the suite gives as the last argument, and does what the scenario in
// MCP_CONFORMANCE_SCENARIO expects (MCP_CONFORMANCE_CONTEXT carries its
// settings). Its asker plays the browser: it opens the authorization URL,
// and the suite's authorization server redirects at once to berth's
// loopback redirect listener, so the whole loopback flow runs.
//
// Tokens go to a fresh secret store in a temporary directory (the file
// backend), removed at exit. Test tooling only: nothing of berth's
// commands uses it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zalando/go-keyring"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/signin"
)

// cimdURL is the client ID metadata document the suite's basic-cimd
// scenario expects (as go-sdk's own conformance client configures).
const cimdURL = "https://conformance-test.local/client-metadata.json"

func main() {
	log.SetFlags(0)
	log.SetPrefix("conformanceclient: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: conformanceclient URL (with MCP_CONFORMANCE_SCENARIO set)")
	}
	target := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var cfg map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cfg); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run(ctx, scenario, target, cfg); err != nil {
		log.Fatalf("scenario %s: %v", scenario, err)
	}
}

func run(ctx context.Context, scenario, target string, cfg map[string]any) error {
	// No keychain: the tokens stay in the temporary store.
	keyring.MockInitWithError(errors.New("the conformance client keeps its tokens in a temporary file store"))
	dir, err := os.MkdirTemp("", "berth-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sec := secrets.Open(filepath.Join(dir, "secrets"), nil)

	remote := &bundle.Remote{Transport: bundle.TransportStreamableHTTP, URL: target}
	opts := pool.Options{SignIns: sec, SignInAsk: follow}
	if strings.HasPrefix(scenario, "auth/") {
		remote.Auth = &bundle.RemoteAuth{OAuth: &bundle.OAuth{}}
		client := &signin.Client{MetadataDocumentURL: cimdURL}
		if id, ok := cfg["client_id"].(string); ok {
			client.ClientID = id
			client.ClientSecret, _ = cfg["client_secret"].(string)
		}
		if client.ClientSecret != "" {
			// Bound to the authorization server the server names now,
			// as berth login records an operator's client.
			iss, err := signin.DiscoverIssuer(ctx, signin.Target{Plugin: "conformance", Server: "srv", Resource: target, OAuth: *remote.Auth.OAuth})
			if err != nil {
				return err
			}
			client.Issuer = iss
		}
		opts.SignInClient = func(signin.Target) (*signin.Client, error) { return client, nil }
	}
	var copts *mcp.ClientOptions
	switch scenario {
	case "elicitation-sep1034-client-defaults", "sep-2322-client-request-state":
		copts = &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				content := map[string]any{}
				if scenario == "sep-2322-client-request-state" {
					content["confirmed"] = true
				}
				return &mcp.ElicitResult{Action: "accept", Content: content}, nil
			},
		}
	}
	cs, err := pool.DialRemote(ctx, pool.RemoteDial{Plugin: "conformance", Server: "srv", Remote: remote, Options: opts, Client: copts})
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil && scenario != "json-schema-ref-no-deref" && scenario != "request-metadata" {
		return fmt.Errorf("tools/list: %w", err)
	}
	callOne := func(name string, args map[string]any) error {
		if tools != nil && !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
			return fmt.Errorf("the server has no tool %q", name)
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", name, err)
		}
		return nil
	}
	switch {
	case strings.HasPrefix(scenario, "auth/"):
		return callOne("test-tool", map[string]any{})
	case scenario == "initialize", scenario == "request-metadata", scenario == "json-schema-ref-no-deref":
		return nil
	case scenario == "tools_call":
		return callOne("add_numbers", map[string]any{"a": 5, "b": 3})
	case scenario == "elicitation-sep1034-client-defaults":
		return callOne("test_client_elicitation_defaults", map[string]any{})
	case scenario == "sse-retry":
		return callOne("test_reconnection", map[string]any{})
	case scenario == "json-schema-2020-12-preservation":
		i := slices.IndexFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
		if i < 0 {
			return errors.New("no tool json_schema_2020_12_tool")
		}
		return callOne("json_schema_echo", map[string]any{"schema": tools.Tools[i].InputSchema})
	case scenario == "sep-2322-client-request-state":
		for _, n := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: n, Arguments: map[string]any{}}); err != nil {
				log.Printf("tools/call %s: %v", n, err)
			}
		}
		return nil
	case scenario == "http-standard-headers":
		if len(tools.Tools) > 0 {
			cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{}})
		}
		if res, err := cs.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
			cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
		}
		if ps, err := cs.ListPrompts(ctx, nil); err == nil && len(ps.Prompts) > 0 {
			cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: ps.Prompts[0].Name, Arguments: map[string]string{}})
		}
		return nil
	case scenario == "http-custom-headers":
		calls, _ := cfg["toolCalls"].([]any)
		for _, c := range calls {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			args, _ := m["arguments"].(map[string]any)
			if args == nil {
				args = map[string]any{}
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil {
				log.Printf("tools/call %s: %v", name, err)
			}
		}
		return nil
	case scenario == "http-invalid-tool-headers":
		for _, t := range tools.Tools {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.Name, Arguments: map[string]any{"region": "us-west1"}}); err != nil {
				log.Printf("tools/call %s: %v", t.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown scenario %q", scenario)
}

// follow plays the browser for the suite's authorization server, which
// answers the authorization request with a redirect to berth's loopback
// listener at once: it opens the URL and follows that one redirect, only
// to 127.0.0.1.
func follow(ctx context.Context, p signin.Prompt) error {
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Hostname() != "127.0.0.1" {
		return fmt.Errorf("the authorization server answered %d, redirecting to %q, not to berth's loopback listener", resp.StatusCode, resp.Header.Get("Location"))
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return err
	}
	resp, err = c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
