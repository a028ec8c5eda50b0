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
