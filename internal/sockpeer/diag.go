package sockpeer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// The wire format of the kernel's socket diagnostics (linux/sock_diag.h,
// linux/inet_diag.h): a netlink header, then inet_diag_req_v2 in a
// request and inet_diag_msg in a reply. Multi-byte fields are in the
// host's order except ports and addresses, which are in network order.
const (
	nlmsgHdrLen      = 16
	diagReqLen       = 56
	diagMsgLen       = 72
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	nlmsgError       = 2  // NLMSG_ERROR
	nlmsgDone        = 3  // NLMSG_DONE
	nlmFRequest      = 1  // NLM_F_REQUEST
	tcpEstablished   = 1  // TCP_ESTABLISHED
	tcpFinWait1      = 4  // TCP_FIN_WAIT1
	tcpFinWait2      = 5  // TCP_FIN_WAIT2
	tcpTimeWait      = 6  // TCP_TIME_WAIT
	tcpCloseWait     = 8  // TCP_CLOSE_WAIT
	tcpLastAck       = 9  // TCP_LAST_ACK
	tcpListen        = 10 // TCP_LISTEN
	tcpClosing       = 11 // TCP_CLOSING
	ipprotoTCP       = 6
	afInet           = 2
	afInet6          = 10
)

// diagID is inet_diag_sockid without the interface and cookie.
type diagID struct {
	family   uint8
	sport    uint16
	dport    uint16
	src, dst [16]byte
}

// diagReply is what berth reads of an inet_diag_msg.
type diagReply struct {
	id    diagID
	state uint8
	uid   uint32
	// inode is the inode of the socket's file, 0 when no process holds
	// it (closed, or not yet accepted).
	inode uint32
}

// tcpID is the diagID of the TCP socket whose local address is src and
// remote address is dst (nil for a listening socket).
func tcpID(src, dst *net.TCPAddr) (diagID, error) {
	var id diagID
	ip4 := src.IP.To4()
	if ip4 != nil && (dst == nil || dst.IP.To4() != nil) {
		id.family = afInet
		copy(id.src[:], ip4)
		if dst != nil {
			copy(id.dst[:], dst.IP.To4())
		}
	} else if ip16 := src.IP.To16(); ip16 != nil && (dst == nil || dst.IP.To16() != nil) {
		id.family = afInet6
		copy(id.src[:], ip16)
		if dst != nil {
			copy(id.dst[:], dst.IP.To16())
		}
	} else {
		return id, fmt.Errorf("%v and %v are not a pair of IP addresses", src, dst)
	}
	id.sport = uint16(src.Port)
	if dst != nil {
		id.dport = uint16(dst.Port)
	}
	return id, nil
}

// encodeRequest is the netlink message that asks for the one TCP socket
// of id, in any state.
func encodeRequest(id diagID, seq uint32) []byte {
	b := make([]byte, nlmsgHdrLen+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], sockDiagByFamily)
	ne.PutUint16(b[6:], nlmFRequest)
	ne.PutUint32(b[8:], seq)
	r := b[nlmsgHdrLen:]
	r[0], r[1] = id.family, ipprotoTCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	binary.BigEndian.PutUint16(r[8:], id.sport)
	binary.BigEndian.PutUint16(r[10:], id.dport)
	copy(r[12:28], id.src[:])
	copy(r[28:44], id.dst[:])
	// r[44:48] the interface, any; the cookie: INET_DIAG_NOCOOKIE.
	ne.PutUint32(r[48:], 0xffffffff)
	ne.PutUint32(r[52:], 0xffffffff)
	return b
}

var errNoReply = errors.New("sock_diag sent no answer for the socket")

// parseReply reads the kernel's answer to the request of seq: the
// socket's inet_diag_msg, or the error the kernel reported. It checks
// every length against the buffer; a reply for another sequence number
// is skipped.
func parseReply(b []byte, seq uint32) (diagReply, error) {
	ne := binary.NativeEndian
	for len(b) >= nlmsgHdrLen {
		n := ne.Uint32(b[0:])
		typ := ne.Uint16(b[4:])
		mseq := ne.Uint32(b[8:])
		if n < nlmsgHdrLen || uint64(n) > uint64(len(b)) {
			return diagReply{}, fmt.Errorf("sock_diag answered with a message of length %d in %d bytes", n, len(b))
		}
		body := b[nlmsgHdrLen:n]
		// Messages are aligned to 4 bytes.
		next := (uint64(n) + 3) &^ 3
		if next > uint64(len(b)) {
			next = uint64(len(b))
		}
		b = b[next:]
		if mseq != seq {
			continue
		}
		switch typ {
		case nlmsgError:
			if len(body) < 4 {
				return diagReply{}, errors.New("sock_diag answered with a short error message")
			}
			code := int32(ne.Uint32(body))
			if code == 0 {
				continue // an acknowledgement
			}
			if code < 0 {
				code = -code
			}
			return diagReply{}, fmt.Errorf("sock_diag: %w", syscall.Errno(code))
		case nlmsgDone:
			return diagReply{}, errNoReply
		case sockDiagByFamily:
			if len(body) < diagMsgLen {
				return diagReply{}, fmt.Errorf("sock_diag answered with %d bytes, want %d", len(body), diagMsgLen)
			}
			var r diagReply
			r.id.family, r.state = body[0], body[1]
			id := body[4:]
			r.id.sport = binary.BigEndian.Uint16(id[0:])
			r.id.dport = binary.BigEndian.Uint16(id[2:])
			copy(r.id.src[:], id[4:20])
			copy(r.id.dst[:], id[20:36])
			r.uid = ne.Uint32(body[64:])
			r.inode = ne.Uint32(body[68:])
			return r, nil
		}
	}
	return diagReply{}, errNoReply
}

// check refuses a reply that is not about the socket asked for, or whose
// owner the kernel does not know. The kernel found the socket by the
// exact address pair asked for; this checks its answer against the
// question. An IPv6 socket connected to an IPv4 address (dual-stack,
// through ::ffff:a.b.c.d) is reported as IPv6, with its addresses mapped,
// or unset.
//
// A socket no process holds any more has no owner: its inode is 0, and
// its uid is 0 (root's) for a time-wait socket, whether in TIME_WAIT or
// in the FIN_WAIT2 of a client that wrote its request and closed at once,
// and on older kernels for any closed socket. So a connection is let in
// only while its client's socket is open (inode not 0) and connected:
// ESTABLISHED, or shut down for writing (FIN_WAIT1, FIN_WAIT2, CLOSING;
// CLOSE_WAIT, LAST_ACK when this end closed first). A client that closes
// its socket before the answer, even one of berth's own user, is refused.
func (r diagReply) check(want diagID) error {
	got := r.id
	if want.family == afInet && got.family == afInet {
		// The kernel fills only the first word of an IPv4 address.
		clear(got.src[4:])
		clear(got.dst[4:])
	}
	if want.family == afInet && got.family == afInet6 {
		got.family = afInet
		got.src, got.dst = unmap(got.src, want.src), unmap(got.dst, want.dst)
	}
	if got != want {
		return fmt.Errorf("sock_diag answered about another socket (%+v, not %+v)", got, want)
	}
	switch {
	case r.state == tcpTimeWait:
		return errors.New("the connecting socket is already closed (TIME_WAIT), so its owner is unknown")
	case r.inode == 0:
		return fmt.Errorf("the connecting socket is already closed by its program (state %s, no inode), so its owner is unknown; a client must keep its connection open until it has the answer", stateName(r.state))
	case !connected(r.state):
		return fmt.Errorf("the connecting socket is not connected (state %s), so its owner is not trusted", stateName(r.state))
	}
	return nil
}

// connected reports whether a TCP socket in state is connected: open, or
// closing after both ends met.
func connected(state uint8) bool {
	switch state {
	case tcpEstablished, tcpFinWait1, tcpFinWait2, tcpCloseWait, tcpLastAck, tcpClosing:
		return true
	}
	return false
}

// stateName is the name of a TCP state (include/net/tcp_states.h).
func stateName(state uint8) string {
	names := [...]string{1: "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV"}
	if int(state) < len(names) && names[state] != "" {
		return names[state]
	}
	return fmt.Sprintf("%d", state)
}

// unmap is the IPv4 address in the first word of a [16]byte of an IPv6
// address that is the IPv4-mapped form of want's, or unset; any other
// address is returned as it is (and then differs from want).
func unmap(a, want [16]byte) [16]byte {
	var v4 [16]byte
	copy(v4[:4], a[12:])
	mapped := [12]byte{10: 0xff, 11: 0xff}
	switch {
	case [12]byte(a[:12]) == mapped && v4 == want:
		return v4
	case a == [16]byte{}:
		return want
	}
	return a
}
