//go:build linux

package mcpexport

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
)

// otherUserEnv makes the test binary act as another local user's
// program: it tries to call berth without the token and to read the
// token file, and prints what happened.
const otherUserEnv = "BERTH_TEST_OTHER_USER"

type otherUserReport struct {
	UID        int    `json:"uid"`
	Status     int    `json:"status"`
	Auth       string `json:"wwwAuthenticate"`
	ReadErr    string `json:"readErr"`
	ReadTokenN int    `json:"readTokenBytes"`
}

func otherUserMain() {
	url, tokenPath := os.Args[1], os.Args[2]
	rep := otherUserReport{UID: os.Getuid()}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if res, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		rep.Status, rep.Auth = res.StatusCode, res.Header.Get("WWW-Authenticate")
	}
	if data, err := os.ReadFile(tokenPath); err != nil {
		rep.ReadErr = err.Error()
	} else {
		rep.ReadTokenN = len(data)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
}

// TestAnotherUserNeedsTheToken runs a program as user nobody against a
// loopback listener that uses the default token file: it is refused (401,
// WWW-Authenticate: Bearer), and it cannot read the token file even where
// the directories on the way let it through (mode 0755): the file is 0600.
func TestAnotherUserNeedsTheToken(t *testing.T) {
	testkit.NeedRoot(t, "to run a program as user nobody")
	setpriv := testkit.NeedSetpriv(t)
	e := newEnv(t, nil)
	// A world-traversable home, so that only the token file's own mode
	// keeps the other user out.
	dir, err := os.MkdirTemp("", "berth-otheruser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	tokenPath := filepath.Join(dir, "serve.token")
	token, created, err := LoadOrCreateToken(tokenPath)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	exe, _ := os.Executable()
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "other")
	if err := os.WriteFile(prog, data, 0o755); err != nil {
		t.Fatal(err)
	}
	o := &HTTPOptions{Token: token}
	url := "http://" + serveEnv(t, e, o) + "/mcp"

	cmd := exec.Command(setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", prog, url, tokenPath)
	cmd.Env = []string{otherUserEnv + "=1", "HOME=/nonexistent"}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running as nobody: %v\n%s", err, out)
	}
	var rep otherUserReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.UID == 0 {
		t.Fatal("the program did not run as another user")
	}
	if rep.Status != http.StatusUnauthorized || !strings.HasPrefix(rep.Auth, "Bearer") {
		t.Errorf("another user without the token got %d (WWW-Authenticate %q), want 401 Bearer", rep.Status, rep.Auth)
	}
	if rep.ReadTokenN != 0 || !strings.Contains(rep.ReadErr, "permission denied") {
		t.Errorf("another user read the token file: %+v", rep)
	}
	// The owner, with the token, gets in.
	if code, body := post(t, e.srv.Handler(o), "/mcp", map[string]string{"Authorization": "Bearer " + token}); code != http.StatusOK {
		t.Errorf("the owner with the token: %d %s", code, body)
	}
}
