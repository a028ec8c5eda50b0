package store

import "testing"

func TestMatchPolicy(t *testing.T) {
	rules := []PolicyRule{
		{Pattern: "*", Action: "allow"},
		{Pattern: "acme-*", Action: "ask"},
		{Pattern: "acme-notes-notes__delete*", Action: "deny"},
		{Pattern: "acme-notes-notes__delete_draft", Action: "allow"},
		{Pattern: "acme-notes-*", Action: "ask"},
	}
	for _, tc := range []struct {
		tool string
		want PolicyMatch
	}{
		{"other__x", PolicyMatch{Action: "allow", Pattern: "*"}},
		{"acme-notes-notes__read", PolicyMatch{Action: "ask", Pattern: "acme-notes-*"}},
		{"acme-notes-notes__delete_all", PolicyMatch{Action: "deny", Pattern: "acme-notes-notes__delete*"}},
		{"acme-notes-notes__delete_draft", PolicyMatch{Action: "allow", Pattern: "acme-notes-notes__delete_draft", Exact: true}},
	} {
		if got := MatchPolicy(rules, tc.tool); got != tc.want {
			t.Errorf("MatchPolicy(%s) = %+v, want %+v", tc.tool, got, tc.want)
		}
	}
	if got := MatchPolicy(nil, "x"); got != (PolicyMatch{Action: "ask"}) {
		t.Errorf("default %+v", got)
	}
	for _, bad := range []PolicyRule{{Pattern: "a b", Action: "allow"}, {Pattern: "a", Action: "maybe"}, {Pattern: "", Action: "allow"}, {Pattern: "x[1]", Action: "allow"}} {
		if CheckPolicyRule(bad) == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func TestPolicyMatchString(t *testing.T) {
	for _, tc := range []struct {
		m    PolicyMatch
		want string
	}{
		{PolicyMatch{Action: ActionAsk}, "ask (default)"},
		{PolicyMatch{Action: ActionAllow, Pattern: "demo-main__echo", Exact: true}, "allow (exact)"},
		{PolicyMatch{Action: ActionAllow, Pattern: "demo-*"}, "allow (demo-*)"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.m, got, tc.want)
		}
	}
}
