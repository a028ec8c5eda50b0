//go:build linux

package sockpeer

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// probe finds how ln's peers can be identified, and checks that it works
// by looking up ln's own socket.
func probe(ln net.Listener) (Method, error) {
	switch l := ln.(type) {
	case *net.UnixListener:
		return PeerCred, nil
	case *net.TCPListener:
		a, ok := l.Addr().(*net.TCPAddr)
		if !ok || !a.IP.IsLoopback() {
			return None, fmt.Errorf("%v is not a loopback address: %w", l.Addr(), ErrUnsupported)
		}
		uid, err := listenerOwner(a)
		if err != nil {
			return None, fmt.Errorf("cannot find the owner of this listener's own socket with sock_diag (is the inet_diag module loaded? modprobe inet_diag tcp_diag): %w", err)
		}
		if me := syscall.Geteuid(); uid != me {
			return None, fmt.Errorf("sock_diag reports uid %d for this listener's own socket, not %d", uid, me)
		}
		return SockDiag, nil
	}
	return None, fmt.Errorf("a %T: %w", ln, ErrUnsupported)
}

func peerUID(c net.Conn, m Method) (int, error) {
	switch m {
	case PeerCred:
		uc, err := unixPeer(c)
		if err != nil {
			return -1, err
		}
		return peerCred(uc)
	case SockDiag:
		local, ok1 := c.LocalAddr().(*net.TCPAddr)
		remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
		if !ok1 || !ok2 {
			return -1, fmt.Errorf("a %T is not a TCP connection", c)
		}
		// The peer's socket: its local address is our remote one.
		id, err := tcpID(remote, local)
		if err != nil {
			return -1, err
		}
		r, err := lookup(id)
		if err != nil {
			return -1, err
		}
		if err := r.check(id); err != nil {
			return -1, err
		}
		return int(r.uid), nil
	}
	return -1, ErrUnsupported
}

func peerCred(uc *net.UnixConn) (int, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return int(cred.Uid), nil
}

func listenerOwner(addr *net.TCPAddr) (int, error) {
	id, err := tcpID(addr, nil)
	if err != nil {
		return -1, err
	}
	r, err := lookup(id)
	if errors.Is(err, syscall.ENOENT) {
		return -1, fmt.Errorf("sock_diag found no socket listening on %v (one bound there that does not listen, or gone)", addr)
	}
	if err != nil {
		return -1, err
	}
	if r.state != tcpListen {
		return -1, fmt.Errorf("sock_diag found no listening socket on %v (state %d)", addr, r.state)
	}
	return int(r.uid), nil
}

var seq atomic.Uint32

// lookup asks the kernel for the one TCP socket of id.
func lookup(id diagID) (diagReply, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, syscall.NETLINK_INET_DIAG)
	if err != nil {
		return diagReply{}, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	tv := syscall.NsecToTimeval(int64(2 * time.Second))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return diagReply{}, fmt.Errorf("sock_diag: %w", err)
	}
	s := seq.Add(1)
	if err := syscall.Sendto(fd, encodeRequest(id, s), 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return diagReply{}, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 8192)
	for range 8 {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return diagReply{}, fmt.Errorf("sock_diag: %w", err)
		}
		r, err := parseReply(buf[:n], s)
		if errors.Is(err, errNoReply) {
			continue
		}
		return r, err
	}
	return diagReply{}, errNoReply
}

func supported(m Method) bool { return m == PeerCred || m == SockDiag }
