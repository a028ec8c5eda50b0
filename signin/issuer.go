package signin

import (
	"context"
	"net/http"
)

// DiscoverIssuer finds, without signing in, the authorization server a
// target's server names now (the issuer its metadata says, checked as a
// sign-in checks it: the reviewed resource, the manifest's pin, https):
// for binding the operator's client registration to it.
func DiscoverIssuer(ctx context.Context, t Target) (string, error) {
	rules, err := rulesFor(t.Resource)
	if err != nil {
		return "", err
	}
	_, resp, err := probe(ctx, t, rules)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden && len(resp.Header.Values("WWW-Authenticate")) == 0 {
		resp.Header = http.Header{}
	}
	d, err := discover(ctx, t, rules, rules.httpClient(), resp)
	if err != nil {
		return "", err
	}
	return d.asm.Issuer, nil
}
