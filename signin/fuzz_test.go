package signin

import (
	"strings"
	"testing"
)

// The token endpoint's answer is the authorization server's text.
func FuzzParseTokenResponse(f *testing.F) {
	f.Add(200, []byte(`{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r","scope":"x y"}`))
	f.Add(400, []byte(`{"error":"invalid_grant","error_description":"spent"}`))
	f.Add(200, []byte(`{"access_token":"a","token_type":"DPoP"}`))
	f.Add(200, []byte(`{"access_token":"a","expires_in":"1e99"}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		tok, err := parseTokenResponse(status, body)
		if err == nil {
			if tok.AccessToken == "" || tok.TokenType != "Bearer" {
				t.Fatalf("accepted %+v", tok)
			}
		} else if strings.ContainsAny(err.Error(), "\x00\x1b") {
			t.Fatalf("control characters in the error: %q", err)
		}
	})
}

// A stored record may have been edited by hand.
func FuzzParseRecord(f *testing.F) {
	r := &record{V: 1, Plugin: "p", Server: "s", Resource: "https://x/", AccessToken: "a"}
	f.Add(r.encode())
	f.Add(`{"v":2}`)
	f.Fuzz(func(t *testing.T, s string) {
		rec, err := parseRecord(s)
		if err == nil && rec.V != 1 {
			t.Fatal("accepted another version")
		}
	})
}

func FuzzParsePRM(f *testing.F) {
	f.Add([]byte(`{"resource":"https://x/mcp","authorization_servers":["https://a"]}`))
	f.Fuzz(func(t *testing.T, b []byte) { parsePRM(b) })
}

func FuzzSubjectOf(f *testing.F) {
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.")
	f.Fuzz(func(t *testing.T, s string) {
		if sub := subjectOf(s); strings.ContainsAny(sub, "\x00\n\x1b") {
			t.Fatalf("subject %q", sub)
		}
	})
}
