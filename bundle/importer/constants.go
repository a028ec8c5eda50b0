package importer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

// Literal environment constants and non-sensitive options: berth.json
// never holds a value, so each becomes an environment source whose value
// the operator confirms when installing or enabling the plugin
// (bundle.ImportInput.Confirm; docs/secrets.md, "Confirmed values"). The
// publisher's literal is kept as the input's default, shown at review and
// offered at install; berth keeps the confirmed value in its config.

// literalConstant reports whether an env value is a constant berth can
// offer for confirmation: no ${…} in it (a variable is not a constant).
func literalConstant(v string) bool { return !strings.Contains(v, "${") }

// constantInput is the input of the literal v of the environment variable
// key, found at name in the source and kept as from.
func constantInput(name, key, v, from, server string) *bundle.ImportInput {
	where := "the environment variable " + key + " of the server"
	if server != "" {
		where += " " + server
	}
	return &bundle.ImportInput{
		Name: name, Type: "string", Required: v != "", Default: v, FromEnv: from, Confirm: true,
		Becomes: fmt.Sprintf("%s: the publisher fixes it to %q; you confirm that value (or give your own) when you install or enable the plugin, and berth keeps it in its config under %s, never in the bundle", where, v, from),
	}
}

// credentialLiteral is the problem of a literal that looks like a
// credential: never carried over, never shown.
func credentialLiteral(key, v string) (string, bool) {
	why, yes := bundle.LooksLikeCredential(key, v)
	if !yes {
		return "", false
	}
	return fmt.Sprintf("the fixed value of %s looks like a credential (%s; not shown), and berth puts no credential in a bundle or its config: read it from an option marked sensitive, which berth takes from its secret store (berth secret set)", key, why), true
}

// constant maps the literal env value v of key in an MCPB mcp_config to
// an input the operator confirms, or reports why it cannot.
func (x *mcpbImport) constant(kp, key, v string) (string, bool) {
	d := x.d
	if why, yes := credentialLiteral(key, v); yes {
		d.add(kp, bundle.RuleMCPBEnvValue, "%s", why)
		return "", false
	}
	from := inputEnvName(x.name, key)
	for _, k := range x.order {
		if x.opts[k].envName == from {
			d.add(kp, bundle.RuleMCPBUserConfigName, "the fixed value of %s and the user_config key %q would both be kept as %s; rename one", key, k, from)
			return "", false
		}
	}
	x.consts = append(x.consts, constantInput(kp, key, v, from, ""))
	return from, true
}

// confirmOptions decides, once the env is read, which options used in env
// the operator confirms: those not sensitive and not named or valued as a
// credential (those stay environment or secret-store sources, as before).
func (x *mcpbImport) confirmOptions() {
	for _, k := range x.order {
		o := x.opts[k]
		if len(o.envKeys) == 0 {
			continue
		}
		confirm := !o.sensitive
		for _, ek := range append(slices.Clone(o.envKeys), k) {
			if _, yes := bundle.LooksLikeCredential(ek, o.def); yes {
				confirm = false
			}
		}
		for _, ek := range o.envKeys {
			use := fmt.Sprintf("the environment variable %s of the server", ek)
			switch {
			case confirm && o.required:
				use += ": the value you confirm when you install or enable the plugin, kept in berth's config under " + o.envName + " (never read from the environment)"
			case confirm:
				use += ": the value you confirm when you install or enable the plugin (optional: left empty, the server starts without it), kept in berth's config under " + o.envName + " (never read from the environment)"
			case !o.required:
				use += ", read from your $" + o.envName + " (berth starts the server only when it is set)"
			default:
				use += ", read from your $" + o.envName
			}
			o.uses = append(o.uses, use)
		}
		o.input.Confirm = confirm
	}
}

// claudeConst is a literal env value of a Claude Code plugin's server.
type claudeConst struct {
	in  *bundle.ImportInput
	d   *doc
	loc string
}

// constant maps the literal env value v of key of the server named server
// to an input the operator confirms, kept as PLUGIN_SERVER_KEY, or reports
// why it cannot.
func (x *claudeImport) constant(d *doc, kp, key, v, server string, env *map[string]bundle.EnvSource, envPath string) {
	if why, yes := credentialLiteral(key, v); yes {
		d.add(kp, bundle.RuleClaudeLiteralValue, "%s", why)
		return
	}
	from := inputEnvName(x.name, server+"_"+key)
	x.consts = append(x.consts, claudeConst{in: constantInput(d.file+": "+kp, key, v, from, fmt.Sprintf("%q", server)), d: d, loc: kp})
	x.c.fromEnv(env, envPath, key, from, d.loc(kp))
}

// constants adds the confirmed constants to the inputs, once every
// variable is known: a constant kept under the name of a host variable or
// an option another value reads, or of another constant, is refused.
func (x *claudeImport) constants() {
	taken := map[string]string{}
	for _, v := range x.varOrder {
		taken[v] = "the host variable ${" + v + "}"
	}
	for _, k := range x.order {
		taken[x.opts[k].envName] = "the userConfig option " + k
	}
	for _, c := range x.consts {
		if other, dup := taken[c.in.FromEnv]; dup {
			c.d.add(c.loc, bundle.RuleClaudeLiteralValue, "its fixed value would be kept as %s, the name of %s; rename one", c.in.FromEnv, other)
			continue
		}
		taken[c.in.FromEnv] = "another fixed value"
		x.imp.Inputs = append(x.imp.Inputs, *c.in)
	}
}
