package mcpexport

import (
	"strings"
	"testing"
)

// A server that pins no issuer and now names another authorization server
// than the one signed in to before: the message says so, escaped.
func TestSignInMessageNamesMove(t *testing.T) {
	p := testPrompt
	p.PreviousIssuer = "https://old.example\nberth: done\x1b[2J"
	msg := signInMessage(p)
	if !strings.Contains(msg, "the server now names this authorization server; you signed in at https://old.example") {
		t.Errorf("the message does not name the authorization server signed in to before:\n%s", msg)
	}
	if strings.Count(msg, "\n") != 5 || strings.Contains(msg, "\x1b") {
		t.Errorf("the previous issuer is not escaped:\n%s", msg)
	}
	if msg := signInMessage(testPrompt); strings.Contains(msg, "signed in at") {
		t.Errorf("a first sign-in's message speaks of a previous one:\n%s", msg)
	}
}
