package mcpexport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/berth-mcp/berth/internal/sockpeer"
)

// TestPortTaken: an address in use is a *PortTakenError unless the
// kernel names berth's own user as its owner: another user's (UID), and
// one whose owner cannot be found (UID -1, and why), since its holder
// may have received the token.
func TestPortTaken(t *testing.T) {
	inUse := &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	for _, tc := range []struct {
		name    string
		uid     int
		err     error
		wantUID int // -2: not a PortTakenError
		want    string
	}{
		{"own", os.Geteuid(), nil, -2, "address already in use"},
		{"another user", 65534, nil, 65534, "127.0.0.1:8931 is taken by another user's program (user "},
		{"no sock_diag", -1, fmt.Errorf("x: %w", sockpeer.ErrUnsupported), -1, "127.0.0.1:8931 is in use, and berth cannot tell by whom (this system does not name the owner of a socket): if another user's program listens there"},
		{"not found", -1, errors.New("sock_diag found no listening socket"), -1, "cannot tell by whom (sock_diag found no listening socket)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := listenerOwner
			defer func() { listenerOwner = old }()
			listenerOwner = func(*net.TCPAddr) (int, error) { return tc.uid, tc.err }
			err := portTaken("127.0.0.1:8931", inUse)
			var taken *PortTakenError
			if got := errors.As(err, &taken); got != (tc.wantUID != -2) || (got && taken.UID != tc.wantUID) {
				t.Fatalf("%#v, want uid %d", err, tc.wantUID)
			}
			if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
	other := errors.New("permission denied")
	if err := portTaken("127.0.0.1:80", other); err != other {
		t.Errorf("another error became %v", err)
	}
}

// TestListenOwnPortInUse: on Linux, a port held by a listener of berth's
// own user is reported as the bind's error, with no PortTakenError (the
// token stays: no one else could have read it).
func TestListenOwnPortInUse(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sock_diag is Linux's")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String(), &HTTPOptions{Token: strings.Repeat("t", MinTokenLen)})
	var taken *PortTakenError
	if !errors.Is(err, syscall.EADDRINUSE) || errors.As(err, &taken) {
		t.Fatalf("%v", err)
	}
}
