package store

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

// PolicyMigration is what MigratePolicy did with one rule of the old form.
type PolicyMigration struct {
	// Old is the rule as it was.
	Old PolicyRule `json:"old"`
	// New are the rules that replaced it; empty when it was kept.
	New []PolicyRule `json:"new"`
	// Kept says why the rule could not be rewritten and stays (berth still
	// uses no tool policy until it is removed or rewritten by hand).
	Kept string `json:"kept,omitempty"`
}

// MigratePolicy rewrites the tool policy rules of the old form (no plugin;
// names "<plugin>-<server>__<tool>" and "<plugin>__<tool>") into rules of
// one plugin each, with the names "<plugin>__<server>__<tool>". It never
// widens what a rule allows: a rule is rewritten only when the trusted
// plugins (their trust records and staged manifests) say which plugin it
// meant and
//
//   - it names one server's tools literally up to the tool part
//     ("acme-notes-notes__search_*" becomes "acme-notes__notes__search_*"),
//     or a native tool ("acme__fmt" becomes "acme__<provider>__fmt", once
//     per native tool provider of the plugin), which keeps what it matched;
//     or
//   - it is a deny or an ask whose wildcards cover more (as "acme-notes-*"),
//     which becomes "<plugin>__*": more of that plugin is denied or asked
//     about, never less.
//
// Every other rule is kept, with the reason: a pattern that could match
// several trusted plugins, or none, or an allow whose wildcards cover the
// server part. berth keeps refusing to run tools until those are removed
// (UnsetPolicy) or set again in the new form (SetPolicy). A rewritten allow
// is bound to the signer of the plugin's latest trusted version.
func (s *Store) MigratePolicy(ctx context.Context) ([]PolicyMigration, error) {
	recs, err := s.Records()
	if err != nil {
		return nil, err
	}
	plugins := map[string]*pluginNames{}
	for _, r := range recs {
		pn := plugins[r.Name]
		if pn == nil {
			pn = &pluginNames{servers: map[string]bool{}, natives: map[string]bool{}}
			plugins[r.Name] = pn
		}
		pn.signer = r.SignerIdentity() // records are sorted: the latest wins
		if err := s.addManifestNames(r, pn); err != nil {
			return nil, err
		}
	}
	var out []PolicyMigration
	_, err = s.UpdateConfig(ctx, func(c *Config) error {
		out = nil
		var rules []PolicyRule
		have := map[string]bool{}
		for _, r := range c.ToolPolicy {
			if r.Plugin != "" {
				rules = append(rules, r)
				have[r.Pattern] = true
			}
		}
		for _, r := range c.ToolPolicy {
			if r.Plugin != "" {
				continue
			}
			m := migrateRule(r, plugins)
			if m.Kept != "" {
				rules = append(rules, r)
			}
			var added []PolicyRule
			for _, n := range m.New {
				if have[n.Pattern] {
					continue // a rule of the new form for it is there already
				}
				have[n.Pattern] = true
				added = append(added, n)
			}
			m.New = added
			rules = append(rules, added...)
			out = append(out, m)
		}
		changed := false
		for _, m := range out {
			changed = changed || m.Kept == ""
		}
		if !changed {
			return ErrNoChange
		}
		slices.SortStableFunc(rules, func(a, b PolicyRule) int { return strings.Compare(a.Pattern, b.Pattern) })
		c.ToolPolicy = rules
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pluginNames is what migration knows of a trusted plugin: the names of
// its servers and native tool providers over all its trusted versions,
// and the signer of its latest.
type pluginNames struct {
	servers, natives map[string]bool
	signer           string
}

// addManifestNames adds the servers and native tool providers of a
// record's staged manifest.
func (s *Store) addManifestNames(r *Record, pn *pluginNames) error {
	d, err := ParseDigest(r.Digest)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(s.paths.Snapshot(d), bundle.ManifestFile))
	if err != nil {
		return fmt.Errorf("reading the staged manifest of %s: %w; run `berth verify %s`", r.ID(), err, r.Name)
	}
	m, problems := bundle.DecodeManifest(data)
	if m == nil || len(problems) > 0 {
		return fmt.Errorf("the staged manifest of %s does not decode; run `berth verify %s`", r.ID(), r.Name)
	}
	for name := range m.MCPServers {
		pn.servers[name] = true
	}
	for name := range m.NativeTools {
		pn.natives[name] = true
	}
	return nil
}

// migrateRule rewrites one rule of the old form (see MigratePolicy).
func migrateRule(r PolicyRule, plugins map[string]*pluginNames) PolicyMigration {
	m := PolicyMigration{Old: r}
	type target struct {
		plugin string
		server string // "" for native tools
	}
	var targets []target
	var candidates []string
	for _, name := range slices.Sorted(maps.Keys(plugins)) {
		pn := plugins[name]
		hit := false
		for _, srv := range slices.Sorted(maps.Keys(pn.servers)) {
			if globCanMatchPrefix(r.Pattern, name+"-"+srv+"__") {
				targets, hit = append(targets, target{name, srv}), true
			}
		}
		if len(pn.natives) > 0 && globCanMatchPrefix(r.Pattern, name+"__") {
			targets, hit = append(targets, target{name, ""}), true
		}
		if hit {
			candidates = append(candidates, name)
		}
	}
	switch len(candidates) {
	case 0:
		m.Kept = "it matches no tool of a plugin trusted now; remove it with `berth policy unset " + r.Pattern + "`"
		return m
	case 1:
	default:
		var scoped []string
		for _, c := range candidates {
			scoped = append(scoped, "'"+c+"__*'")
		}
		m.Kept = fmt.Sprintf("it could match tools of %s; remove it and set one rule for each plugin you mean, as %s", joinAnd(candidates), strings.Join(scoped, " or "))
		return m
	}
	plugin, pn := candidates[0], plugins[candidates[0]]
	rule := func(pattern string) PolicyRule {
		n := PolicyRule{Plugin: plugin, Pattern: pattern, Action: r.Action}
		if r.Action == ActionAllow {
			n.Signer = pn.signer
		}
		return n
	}
	// Literal up to the tool part: the rule keeps exactly what it matched.
	if len(targets) == 1 {
		t := targets[0]
		if t.server != "" {
			prefix := plugin + "-" + t.server + "__"
			if strings.HasPrefix(r.Pattern, prefix) {
				m.New = []PolicyRule{rule(plugin + "__" + t.server + "__" + r.Pattern[len(prefix):])}
				return m
			}
		} else if prefix := plugin + "__"; strings.HasPrefix(r.Pattern, prefix) {
			for _, e := range slices.Sorted(maps.Keys(pn.natives)) {
				m.New = append(m.New, rule(plugin+"__"+e+"__"+r.Pattern[len(prefix):]))
			}
			return m
		}
	}
	if r.Action != ActionAllow {
		m.New = []PolicyRule{rule(plugin + "__*")}
		return m
	}
	m.Kept = fmt.Sprintf("its wildcards cover which server of %s a tool belongs to, and rewriting that could allow more than it did; remove it and allow what you mean in the new form, as `berth policy set '%s__<server>__*' allow`", plugin, plugin)
	return m
}
