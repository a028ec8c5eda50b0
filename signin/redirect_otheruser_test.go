package signin

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// TestRedirectRefusesOtherUser: another local user who knows the state
// (it may have seen the authorization URL) cannot deliver a code to the
// sign-in's loopback listener: where the kernel names a connection's
// user, the listener closes the connection before reading it.
func TestRedirectRefusesOtherUser(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the listener names its peers' users on Linux only")
	}
	testkit.NeedRoot(t, "to connect as user nobody")
	setpriv := testkit.NeedSetpriv(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash")
	}
	r, err := listenRedirect(0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.expect("known-state")
	port := r.ln.Addr().String()[len("127.0.0.1:"):]
	script := `exec 3<>/dev/tcp/127.0.0.1/` + port + ` || exit 9
printf 'GET /callback?code=attackers-code&state=known-state HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
cat <&3`
	out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bash, "-c", script).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 9 {
		t.Fatalf("user nobody could not connect at all: %s", out)
	}
	if strings.Contains(string(out), "HTTP/1") {
		t.Errorf("user nobody got an answer from the sign-in's listener: %q", out)
	}
	select {
	case cb := <-r.ch:
		t.Fatalf("the listener took user nobody's answer: code %q", cb.code)
	case <-time.After(200 * time.Millisecond):
	}
	// This user's own answer is still taken.
	r2, err := listenRedirect(0)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.close()
	r2.expect("mine")
	port2 := r2.ln.Addr().String()[len("127.0.0.1:"):]
	cmd := exec.Command(bash, "-c", `exec 3<>/dev/tcp/127.0.0.1/`+port2+`; printf 'GET /callback?code=c&state=mine HTTP/1.0\r\n\r\n' >&3; cat <&3`)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "200 OK") {
		t.Fatalf("this user's own answer: %v %q", err, out)
	}
	if cb, err := r2.wait(t.Context(), 5*time.Second); err != nil || cb.code != "c" {
		t.Fatalf("this user's answer was not delivered: %+v %v", cb, err)
	}
}
