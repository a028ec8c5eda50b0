package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/clientconfig"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/store"
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
	helper, warnings, err := a.tokenHelper(s.client, f)
	if err != nil {
		return nil, auth, err
	}
	if auth, err = clientconfig.HTTPAuthOf(s.client, helper); err != nil {
		return nil, auth, err
	}
	p := &connectPlan{s: s, entry: clientconfig.NewHTTPEntry(s.client, f.HTTP, auth), warnings: warnings}
	p.running = clientconfig.Running(ctx, s.client, s.env)
	return p, auth, nil
}

// tokenHelper is the headersHelper command of a Claude Code entry, and
// what to warn about it ("" for the other clients). In the user's own file (--user) it names berth's
// and the token file's absolute paths, so that it works whatever Claude
// Code's PATH. The project's .mcp.json is usually committed, so there it
// names no path of this machine: "berth token --header", which runs the
// berth on Claude Code's PATH and reads the default token file; only a
// token file other than the default is named (with a warning), and a
// berth not on PATH is warned about.
func (a *app) tokenHelper(c clientconfig.Client, f *connectOptions) (string, []string, error) {
	if c != clientconfig.ClaudeCode {
		return "", nil, nil // the others expand a variable in the header
	}
	paths, err := a.paths()
	if err != nil {
		return "", nil, err
	}
	tokenFile := paths.ServeToken()
	if f.TokenFile != "" {
		if tokenFile, err = filepath.Abs(f.TokenFile); err != nil {
			return "", nil, err
		}
	}
	if f.User {
		exe, err := a.executable()
		if err != nil {
			return "", nil, err
		}
		var warnings []string
		if temporaryBuild(exe) {
			warnings = append(warnings, fmt.Sprintf("%s is a temporary build (go run) that disappears when it exits: install berth and run connect with the installed binary", exe))
		}
		return shellQuote(exe) + " " + clientconfig.TokenHelperArg + " --token-file " + shellQuote(tokenFile), warnings, nil
	}
	var warnings []string
	helper := "berth " + clientconfig.TokenHelperArg
	if def, err := store.NewPaths(store.DefaultRoot(func(k string) string {
		if k == "BERTH_HOME" {
			return ""
		}
		return a.getenv(k)
	})); err != nil || def.ServeToken() != tokenFile {
		helper += " --token-file " + shellQuote(tokenFile)
		warnings = append(warnings, fmt.Sprintf("the project's .mcp.json names the token file %s, a path on this machine that others who open the project may not have: serve with the default token file (no --token-file, BERTH_HOME unset), or keep the entry in your own file with --user", tokenFile))
	}
	if !onPath(a.getenv("PATH"), "berth") {
		warnings = append(warnings, "berth is not on PATH here, and the headersHelper runs the berth on Claude Code's PATH: put berth on PATH, or keep the entry in your own file with --user (it names berth's full path)")
	}
	return helper, warnings, nil
}

// onPath reports whether an executable file name is in a directory of
// the list path (PATH).
func onPath(path, name string) bool {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		for _, n := range []string{name, name + ".exe"} {
			if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return true
			}
		}
	}
	return false
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
