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

// A server whose step-up scope list is not well-formed (here more than 20
// scopes) gets no sign-in page on either protocol: signin refuses the
// step-up, and berth asks the human for nothing; the call fails with
// signin's reason.
func TestSignInMalformedStepUpNotAsked(t *testing.T) {
	for _, proto := range []string{"2025-11-25", ""} {
		t.Run("proto="+proto, func(t *testing.T) {
			o := newOAuthEnv(t, true)
			o.waitRunning()
			o.f.mu.Lock()
			o.f.stepUp = strings.TrimSpace(strings.Repeat("s ", 25))
			o.f.mu.Unlock()
			bc := o.browserClientOn(proto, "accept")
			text, isErr := callTool(t, bc.cs, adminTool, "x")
			if !isErr || !strings.Contains(text, "names 25 scopes") {
				t.Errorf("call: %q %v, want a tool error saying the server's list was refused", text, isErr)
			}
			if n := len(bc.elicitations()); n != 0 {
				t.Errorf("the human was asked %d time(s) for a step-up berth refused", n)
			}
		})
	}
}
