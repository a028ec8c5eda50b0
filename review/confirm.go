package review

import (
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

// inputDetails shows what the source says of an input beyond its title:
// its description, choices and example, and, for a value the operator
// confirms, that it is asked at install and kept in berth's config.
func (p *printer) inputDetails(in bundle.ImportInput) {
	if in.Description != "" {
		p.field("description", in.Description)
	}
	if len(in.Choices) > 0 {
		q := make([]string, len(in.Choices))
		for i, c := range in.Choices {
			q[i] = strconv.Quote(c)
		}
		p.field("choices", strings.Join(q, ", "))
	}
	if in.Placeholder != "" {
		p.field("example", strconv.Quote(in.Placeholder))
	}
	if in.Confirm {
		what := "you confirm it as " + in.FromEnv + " when you install or enable the plugin (berth confirm " + in.FromEnv + "); berth keeps your value in its config, never in the bundle, and the server receives only that value"
		if in.Default != "" {
			what = "the publisher offers " + strconv.Quote(in.Default) + "; " + what
		}
		p.field("confirm", what)
	}
}

// markConfirmed marks the environment variables and headers whose value
// the operator confirms.
func (d *Disclosure) markConfirmed(m *bundle.Manifest) {
	names := map[string]bool{}
	for _, in := range m.ConfirmInputs() {
		names[in.FromEnv] = true
	}
	if len(names) == 0 {
		return
	}
	for i := range d.Servers {
		s := &d.Servers[i]
		if s.Stdio != nil {
			for j := range s.Stdio.Env {
				s.Stdio.Env[j].Confirm = names[s.Stdio.Env[j].FromEnv]
			}
		}
		if s.Remote != nil {
			for j := range s.Remote.Headers {
				s.Remote.Headers[j].Confirm = names[s.Remote.Headers[j].FromEnv]
			}
		}
	}
}
