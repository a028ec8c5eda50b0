//go:build unix

package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/berth-mcp/berth/secrets"
	"github.com/berth-mcp/berth/signin"
)

// A remote that refuses a tools/call with a 403 a sign-in cannot fix
// (a plain 403, or insufficient_scope for scopes the sign-in holds): the
// call fails with *signin.ForbiddenError, the refused request is not sent
// again, and the connection stays up (a refusal is not a broken
// connection, nor a reason to restart the server).
func TestRemoteForbiddenNotReplayed(t *testing.T) {
	keyring.MockInitWithError(errors.New("no keychain in tests"))
	for name, hdr := range map[string]string{"plain": "", "held scopes": `Bearer error="insufficient_scope", scope="read"`} {
		t.Run(name, func(t *testing.T) {
			o := newOAuthRemote(t, "streamable-http")
			inner := o.rs.Config.Handler
			var forbid atomic.Bool
			var refused, inits atomic.Int32
			o.rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if bytes.Contains(body, []byte(`"initialize"`)) && r.Header.Get("Authorization") != "" {
					inits.Add(1)
				}
				if forbid.Load() && bytes.Contains(body, []byte(`"tools/call"`)) {
					refused.Add(1)
					if hdr != "" {
						w.Header().Set("WWW-Authenticate", hdr)
					}
					http.Error(w, "forbidden", http.StatusForbidden)
					return
				}
				inner.ServeHTTP(w, r)
			})
			sec := secrets.Open(filepath.Join(t.TempDir(), "secrets"), nil)
			tg := signin.Target{Plugin: "web", Server: "api", Resource: o.rs.URL + "/mcp"}
			if _, err := signin.Login(context.Background(), tg, signin.Options{Secrets: sec, Ask: followSignIn}, "read"); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t)
			f.plugin("web", map[string]any{"api": remoteServer(o.rs.URL+"/mcp", "streamable-http", map[string]any{"auth": map[string]any{"oauth": map[string]any{}}})})
			p := f.open(func(opts *Options) { opts.SignIns = sec })
			if got := callText(t, p, "web__api__echo", `{"text":"a"}`); got != "echo: a" {
				t.Fatalf("%q %+v", got, status(t, p, "web__api"))
			}
			forbid.Store(true)
			ctx := signin.WithAsk(context.Background(), func(context.Context, signin.Prompt) error {
				t.Error("a human was asked to sign in for a refusal a sign-in cannot fix")
				return errors.New("no")
			})
			_, err := p.Call(ctx, "web__api__echo", json.RawMessage(`{"text":"b"}`), allow)
			var fe *signin.ForbiddenError
			if !errors.As(err, &fe) {
				t.Fatalf("call refused with 403: %v, want a *signin.ForbiddenError", err)
			}
			if n := refused.Load(); n != 1 {
				t.Errorf("the refused tools/call reached the server %d times, want 1", n)
			}
			forbid.Store(false)
			if got := callText(t, p, "web__api__echo", `{"text":"c"}`); got != "echo: c" {
				t.Fatalf("%q %+v", got, status(t, p, "web__api"))
			}
			if n := inits.Load(); n != 1 {
				t.Errorf("the server was connected %d times, want once: the refusal was taken for a broken connection", n)
			}
		})
	}
}
