package bundle

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/berth-mcp/berth/bundle/internal/lexical"
)

// MaxConfirmedValue is the longest value an operator may confirm (4 KiB).
const MaxConfirmedValue = 4096

// credentialKeyWords mark variable names whose value is a credential.
// KEY and PAT must be whole words of the name (API_KEY, GITLAB_PAT), the
// others may be part of one (ACCESS_TOKEN, DBPASSWORD).
var credentialKeyWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE", "SESSION", "AUTH", "APIKEY", "PRIVATE"}

// credentialPrefixes start the values of well-known credentials.
var credentialPrefixes = []string{
	"sk-", "sk_live_", "sk_test_", "rk_live_", "pk_live_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
	"glpat-", "xoxb-", "xoxp-", "xoxa-", "xoxc-", "xoxd-", "xoxe", "xapp-", "AKIA", "ASIA", "AIza", "ya29.",
	"eyJ", "-----BEGIN", "Bearer ", "Basic ", "npm_", "hf_", "pypi-", "sq0", "shpat_", "dop_v1_", "lin_api_",
}

// LooksLikeCredential reports whether the value of the variable key looks
// like a credential: its name says so (TOKEN, SECRET, PASSWORD, API_KEY,
// ...), the value starts as well-known credentials do (ghp_, sk-, xoxb-,
// AKIA, eyJ, -----BEGIN ...), is a URL with a password, or is a long run
// of letters and digits. It errs towards yes: such a value belongs in the
// secret store, never in a bundle or berth's config. why never holds the
// value.
func LooksLikeCredential(key, value string) (why string, yes bool) {
	up := strings.ToUpper(key)
	for _, w := range credentialKeyWords {
		if strings.Contains(up, w) {
			return fmt.Sprintf("its name %s says it holds a credential (%s)", key, w), true
		}
	}
	for _, w := range strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if w == "KEY" || w == "PAT" || w == "PASS" || w == "PWD" {
			return fmt.Sprintf("its name %s says it holds a credential (%s)", key, w), true
		}
	}
	return credentialValue(value)
}

// credentialValue is the part of LooksLikeCredential that reads the value.
func credentialValue(value string) (string, bool) {
	for _, p := range credentialPrefixes {
		if strings.HasPrefix(value, p) {
			return "its value starts as a credential does (" + strings.TrimSpace(p) + "…)", true
		}
	}
	if u, err := url.Parse(value); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return "its value is a URL with a password", true
		}
	}
	if tokenLike(value) {
		return "its value is a long run of letters and digits, as keys and tokens are", true
	}
	return "", false
}

// secretValue is credentialValue without its long-run heuristic: the
// value starts as a well-known credential does, or is a URL with a
// password. It is for values that are public by nature but are often long
// random runs, like an OAuth client ID.
func secretValue(value string) (string, bool) {
	if tokenLike(value) {
		// Only the prefixes and a password say so.
		for _, p := range credentialPrefixes {
			if strings.HasPrefix(value, p) {
				return "its value starts as a credential does (" + strings.TrimSpace(p) + "…)", true
			}
		}
		return "", false
	}
	return credentialValue(value)
}

// tokenLike reports a run of at least 20 characters of the alphabets
// keys are written in, with letters and digits both.
func tokenLike(s string) bool {
	if len(s) < 20 {
		return false
	}
	letters, digits := 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r < utf8.RuneSelf && unicode.IsLetter(r):
			letters++
		case strings.ContainsRune("+/=_-", r):
		default:
			return false
		}
	}
	return letters >= 4 && digits >= 4
}

// ConfirmInputs are the inputs of m's importedFrom that the operator
// confirms (ImportInput.Confirm), in the manifest's order.
func (m *Manifest) ConfirmInputs() []ImportInput {
	if m == nil || m.ImportedFrom == nil {
		return nil
	}
	var out []ImportInput
	for _, in := range m.ImportedFrom.Inputs {
		if in.Confirm {
			out = append(out, in)
		}
	}
	return out
}

// CheckConfirmedValue checks a value the operator confirms for in: text of
// at most MaxConfirmedValue bytes without control characters, one of the
// choices when there are some, a number or a boolean when the input says
// so, and nothing that looks like a credential (that belongs in the secret
// store: berth secret set). An empty value is refused for a required
// input; for an optional one it means "not set". The error never holds
// the value.
func CheckConfirmedValue(in ImportInput, value string) error {
	switch {
	case value == "" && in.Required:
		return fmt.Errorf("%s is required; give a value", in.FromEnv)
	case value == "":
		return nil
	case len(value) > MaxConfirmedValue:
		return fmt.Errorf("the value of %s has %d bytes; at most %d", in.FromEnv, len(value), MaxConfirmedValue)
	case !utf8.ValidString(value) || strings.ContainsFunc(value, unicode.IsControl):
		return fmt.Errorf("the value of %s is not text: it holds a control character or invalid UTF-8", in.FromEnv)
	case len(in.Choices) > 0 && !slices.Contains(in.Choices, value):
		return fmt.Errorf("the value of %s must be one of %s", in.FromEnv, strings.Join(quoteAll(in.Choices), ", "))
	}
	switch in.Type {
	case "number":
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Errorf("the value of %s must be a number", in.FromEnv)
		}
	case "boolean":
		if value != "true" && value != "false" {
			return fmt.Errorf("the value of %s must be true or false", in.FromEnv)
		}
	}
	if why, yes := credentialValue(value); yes {
		return fmt.Errorf("the value of %s looks like a credential (%s), and berth keeps confirmed values in its config, not its secret store; if it is one, the plugin should mark it sensitive", in.FromEnv, why)
	}
	return nil
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// confirmInputs checks the inputs the operator confirms: not sensitive,
// each named by its own variable that a server reads in its environment
// or a header (never a bearer token), with a default (the publisher's
// literal) that may be confirmed, and no credential.
func (v *validator) confirmInputs(m *Manifest) {
	imp := m.ImportedFrom
	users := map[string][]string{} // variable → the env keys and headers that read it
	bearer := map[string]bool{}
	for _, s := range m.MCPServers {
		switch {
		case s == nil:
		case s.Stdio != nil:
			for k, e := range s.Stdio.Env {
				users[e.FromEnv] = append(users[e.FromEnv], k)
			}
		case s.Remote != nil:
			for k, e := range s.Remote.Headers {
				users[e.FromEnv] = append(users[e.FromEnv], k)
			}
			if s.Remote.Auth != nil {
				bearer[s.Remote.Auth.BearerFromEnv] = true
			}
		}
	}
	plain := map[string]bool{}
	for _, in := range imp.Inputs {
		if !in.Confirm && in.FromEnv != "" {
			plain[in.FromEnv] = true
		}
	}
	seen := map[string]bool{}
	for i, in := range imp.Inputs {
		if !in.Confirm {
			continue
		}
		p := fmt.Sprintf("importedFrom.inputs[%d]", i)
		switch {
		case !lexical.EnvName(in.FromEnv):
			v.ps.add(p+".fromEnv", RuleConfirmInput, "an input you confirm needs fromEnv, the name [A-Za-z_][A-Za-z0-9_]* under which berth keeps your value; got %q", in.FromEnv)
			continue
		case in.Sensitive:
			v.ps.add(p+".confirm", RuleConfirmInput, "%s is sensitive, and berth keeps confirmed values in its config, not its secret store; drop confirm so that it is read from the secret store (berth secret set %s)", in.FromEnv, in.FromEnv)
		case bearer[in.FromEnv]:
			v.ps.add(p+".confirm", RuleConfirmInput, "%s is a remote's bearer token, a credential; drop confirm so that it is read from the secret store (berth secret set %s)", in.FromEnv, in.FromEnv)
		case len(users[in.FromEnv]) == 0:
			v.ps.add(p+".fromEnv", RuleConfirmInput, "no server reads %s in its env or headers, so there is nothing to confirm; remove the input or fix the name", in.FromEnv)
		case plain[in.FromEnv]:
			v.ps.add(p+".fromEnv", RuleConfirmInput, "another input reads %s from the environment; one variable is either confirmed or read from the environment, never both", in.FromEnv)
		case seen[in.FromEnv]:
			v.ps.add(p+".fromEnv", RuleConfirmInput, "a second input you confirm is kept as %s; give each its own name", in.FromEnv)
		}
		seen[in.FromEnv] = true
		for _, k := range append(slices.Sorted(slices.Values(users[in.FromEnv])), in.FromEnv) {
			if why, yes := LooksLikeCredential(k, in.Default); yes {
				v.ps.add(p+".default", RuleConfirmInput, "%s, which %s receives, looks like a credential (%s; not shown); a credential is never confirmed into berth's config: mark the input sensitive and store it with berth secret set %s", in.FromEnv, k, why, in.FromEnv)
				break
			}
		}
		if in.Default != "" && len(in.Choices) > 0 && !slices.Contains(in.Choices, in.Default) {
			v.ps.add(p+".default", RuleConfirmInput, "the default of %s is not one of its choices %s", in.FromEnv, strings.Join(quoteAll(in.Choices), ", "))
		}
	}
}
