//go:build !linux

package sockpeer

import (
	"fmt"
	"net"
)

func probe(ln net.Listener) (Method, error) {
	return None, fmt.Errorf("a %T: %w", ln, ErrUnsupported)
}

func peerUID(net.Conn, Method) (int, error) { return -1, ErrUnsupported }

func listenerOwner(*net.TCPAddr) (int, error) { return -1, ErrUnsupported }

func supported(Method) bool { return false }
