package publicaddr

import (
	"net/netip"
	"testing"
)

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		addr, why string
	}{
		{"127.0.0.1", "loopback"}, {"10.1.2.3", "private"}, {"169.254.169.254", "link-local (cloud metadata)"},
		{"64:ff9b::7f00:1", "loopback (through NAT64)"}, {"64:ff9b::a00:1", "private (through NAT64)"},
		{"64:ff9b::a9fe:a9fe", "link-local (cloud metadata) (through NAT64)"}, {"64:ff9b:1::1", "local NAT64"},
		{"fec0::1", "site-local (deprecated, private)"}, {"2002:a00:1::", "private (through 6to4)"},
		{"::ffff:192.168.0.1", "private"}, {"fe80::1%eth0", "link-local"},
		{"::127.0.0.1", "loopback (IPv4-compatible)"}, {"::169.254.169.254", "link-local (cloud metadata) (IPv4-compatible)"},
		{"::10.0.0.1", "private (IPv4-compatible)"}, {"::", "unspecified"}, {"::1", "loopback"},
		{"::ffff:0:127.0.0.1", "loopback (IPv4-translated)"}, {"::ffff:0:a9fe:a9fe", "link-local (cloud metadata) (IPv4-translated)"},
		{"::ffff:0:192.168.1.1", "private (IPv4-translated)"}, {"::8.8.8.8", ""}, {"::ffff:0:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, {"8.8.8.8", ""}, {"2606:4700::1111", ""}, {"2002:808:808::", ""},
	} {
		if got := Refused(netip.MustParseAddr(tc.addr)); got != tc.why {
			t.Errorf("Refused(%s) = %q, want %q", tc.addr, got, tc.why)
		}
	}
	if Public(netip.Addr{}) {
		t.Error("the zero Addr counts as public")
	}
}
