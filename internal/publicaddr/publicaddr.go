// Package publicaddr says whether an IP address is a public one that
// berth may reach for a plugin's remote server or a download off a
// catalog's origin, or a private, loopback, link-local, NAT64-local or
// other special address it refuses (cloud metadata services live at
// several of them). It is the one list both checks use.
package publicaddr

import (
	"context"
	"errors"
	"net"
	"net/netip"
)

var refused = func() []struct {
	p   netip.Prefix
	why string
} {
	list := []struct{ p, why string }{
		{"0.0.0.0/8", "unspecified"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared (carrier-grade NAT, cloud metadata)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (cloud metadata)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignment (cloud metadata)"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"fc00::/7", "private (unique local, cloud metadata)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated, private)"},
		{"ff00::/8", "multicast"},
		{"64:ff9b:1::/48", "local NAT64"},
	}
	out := make([]struct {
		p   netip.Prefix
		why string
	}, len(list))
	for i, x := range list {
		out[i].p, out[i].why = netip.MustParsePrefix(x.p), x.why
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	// compat is the deprecated IPv4-compatible form ::a.b.c.d (RFC 4291
	// 2.5.5.1); :: and ::1 in it are the unspecified and loopback
	// addresses and stay on the list as such.
	compat = netip.MustParsePrefix("::/96")
	// siit is the IPv4-translated form ::ffff:0:a.b.c.d (SIIT, RFC 2765).
	siit = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// Refused returns why a may not be reached ("private", "loopback (through
// NAT64)", ...), or "" when a is a public address. IPv4 embedded in IPv6
// (mapped, IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d,
// the well-known NAT64 prefix 64:ff9b::/96, 6to4) is checked as
// the IPv4 address it leads to. A zone is ignored (netip.Prefix.Contains
// never matches an address with one).
func Refused(a netip.Addr) string {
	if !a.IsValid() {
		return "not a valid address"
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			if why := Refused(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
				return why + " (through NAT64)"
			}
		case compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
			if why := Refused(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
				return why + " (IPv4-compatible)"
			}
		case siit.Contains(a):
			if why := Refused(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
				return why + " (IPv4-translated)"
			}
		case sixToFour.Contains(a):
			if why := Refused(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
				return why + " (through 6to4)"
			}
		}
	}
	for _, r := range refused {
		if r.p.Contains(a) {
			return r.why
		}
	}
	return ""
}

// Public reports whether a is a public address (Refused gives no
// reason).
func Public(a netip.Addr) bool { return Refused(a) == "" }

// DialChecked returns a DialContext for an http.Transport that resolves
// the host, refuses the connection when check refuses any of its
// addresses (so a name cannot lead past the check through one address
// and be dialled through another), and dials the addresses in turn.
func DialChecked(d *net.Dialer, check func(host string, a netip.Addr) error) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			if err := check(host, ip.Unmap()); err != nil {
				return nil, err
			}
		}
		var errs []error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}
