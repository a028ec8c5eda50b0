package loopback

import (
	"net/http/httptest"
	"testing"
)

func TestIsHostAndOrigin(t *testing.T) {
	for h, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true,
		"": false, "0.0.0.0": false, "10.0.0.1": false, "attacker.example": false, "localhost.attacker.example": false, "::": false,
	} {
		if IsHost(h) != want {
			t.Errorf("IsHost(%q) = %v", h, !want)
		}
	}
	for o, want := range map[string]bool{
		"http://127.0.0.1:8080": true, "https://localhost": true, "http://[::1]:9": true,
		"null": false, "file://": false, "http://evil.example": false, "ftp://127.0.0.1": false,
	} {
		if IsOrigin(o) != want {
			t.Errorf("IsOrigin(%q) = %v", o, !want)
		}
	}
}

func TestCheckRequest(t *testing.T) {
	for _, c := range []struct {
		host, origin string
		ok           bool
	}{
		{"127.0.0.1:8080", "", true},
		{"localhost:8080", "http://localhost:8080", true},
		{"[::1]:8080", "", true},
		{"rebind.attacker.example:8080", "", false},
		{"127.0.0.1:8080", "https://attacker.example", false},
		{"127.0.0.1:8080", "null", false},
		{"", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if err := CheckRequest(r); (err == nil) != c.ok {
			t.Errorf("Host %q Origin %q: %v", c.host, c.origin, err)
		}
	}
}
