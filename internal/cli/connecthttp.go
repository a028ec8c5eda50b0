package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/clientconfig"
	"github.com/berth-mcp/berth/mcpexport"
)

// checkHTTPURL checks the URL of connect --http: http or https with a
// host, no credentials in it, and plain http only to a loopback address
// (the token would cross the network in clear text otherwise).
func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return usagef("--http %q is not an http:// or https:// URL with a host (the address berth serve --http listens on, with its path /mcp)", raw)
	}
	if u.User != nil {
		return usagef("--http %q carries credentials in the URL; berth sends its token in the Authorization header, never in the URL: remove them", u.Redacted())
	}
	if u.Scheme == "http" {
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return usagef("--http %q is plain http to %s, which is not a loopback address: the bearer token would cross the network in clear text; use https:// (berth behind a TLS proxy) or a loopback address", raw, host)
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell (a headersHelper runs in one).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// planConnectHTTP works out the HTTP entry of connect --http.
func (a *app) planConnectHTTP(ctx context.Context, f *connectOptions) (*connectPlan, clientconfig.HTTPAuth, error) {
	var auth clientconfig.HTTPAuth
	switch {
	case f.Portable:
		return nil, auth, usagef("--portable is for stdio entries; an --http entry names the URL only")
	case len(f.Env) > 0 || f.NoPath:
		return nil, auth, usagef("--env and --no-path are for stdio entries, which start berth; an --http entry connects to a berth serve that is already running")
	case f.Profile != "":
		return nil, auth, usagef("--profile is chosen by the server: run berth serve --http ADDR --profile %s and connect its URL (--name names the entry)", f.Profile)
	}
	if err := checkHTTPURL(f.HTTP); err != nil {
		return nil, auth, err
	}
	s, err := a.clientSetup(f.Client, f, false)
	if err != nil {
		return nil, auth, err
	}
	tokenFile := f.TokenFile
	if tokenFile == "" {
		paths, err := a.paths()
		if err != nil {
			return nil, auth, err
		}
		tokenFile = paths.ServeToken()
	} else if tokenFile, err = filepath.Abs(tokenFile); err != nil {
		return nil, auth, err
	}
	exe, err := a.executable()
	if err != nil {
		return nil, auth, err
	}
	helper := shellQuote(exe) + " " + clientconfig.TokenHelperArg + " --token-file " + shellQuote(tokenFile)
	if auth, err = clientconfig.HTTPAuthOf(s.client, helper); err != nil {
		return nil, auth, err
	}
	p := &connectPlan{s: s, entry: clientconfig.NewHTTPEntry(s.client, f.HTTP, auth)}
	if temporaryBuild(exe) && auth.Helper != "" {
		p.warnings = append(p.warnings, fmt.Sprintf("%s is a temporary build (go run) that disappears when it exits: install berth and run connect with the installed binary", exe))
	}
	p.running = clientconfig.Running(ctx, s.client, s.env)
	return p, auth, nil
}

// tokenAdvice says how the client gets the token.
func (a *app) tokenAdvice(c clientconfig.Client, auth clientconfig.HTTPAuth) {
	fmt.Fprintf(a.stdout, "The token is not in the file: %s.\n", auth.How)
	if auth.Header != "" {
		fmt.Fprintf(a.stdout, "For example, from a shell: export %s=\"$(berth token)\", then start %s from that shell.\n", clientconfig.TokenEnv, c.Title())
	}
}

func newTokenCmd(a *app) *cobra.Command {
	opts := &tokenOptions{}
	cmd := &cobra.Command{
		Use:   "token [--header] [--token-file FILE]",
		Short: "Print the bearer token of berth serve --http",
		Long: `Token prints the bearer token that berth serve --http and --sse require
(of --token-file FILE, else $BERTH_HOME/serve.token, made on first use as
berth serve makes it), for a client that reads it from the environment
(export BERTH_TOKEN="$(berth token)"). --header prints the Authorization
header as a JSON object instead, as Claude Code's headersHelper expects
(berth connect claude-code --http URL writes one that runs it), so the
token never has to be written into a client's file. See docs/connect.md.`,
		Example: `  export BERTH_TOKEN="$(berth token)"
  berth token --header`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runToken(a, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Header, "header", false, `print {"Authorization": "Bearer TOKEN"} (for a headersHelper)`)
	cmd.Flags().StringVar(&opts.TokenFile, "token-file", "", "the token file of berth serve --token-file (default $BERTH_HOME/serve.token)")
	return cmd
}

// tokenOptions are the inputs of berth token.
type tokenOptions struct {
	Header    bool
	TokenFile string
}

func runToken(a *app, opts *tokenOptions) error {
	path := opts.TokenFile
	if path == "" {
		paths, err := a.paths()
		if err != nil {
			return err
		}
		path = paths.ServeToken()
	}
	tok, _, err := mcpexport.LoadOrCreateToken(path)
	if err != nil {
		return err
	}
	if opts.Header {
		return json.NewEncoder(a.stdout).Encode(map[string]string{"Authorization": "Bearer " + tok})
	}
	fmt.Fprintln(a.stdout, tok)
	return nil
}
