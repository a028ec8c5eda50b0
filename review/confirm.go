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
