package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/fsx"
)

// ToolsMode is how a view of the workspace lists its tools
// (docs/profiles.md).
type ToolsMode string

// Tools modes.
const (
	// ToolsFull lists every tool the view offers.
	ToolsFull ToolsMode = "full"
	// ToolsLazy lists berth's two meta-tools (berth_find_tools and
	// berth_call_tool) and the tools named by Always, instead of every
	// tool.
	ToolsLazy ToolsMode = "lazy"
)

// Profile is a named subset of a workspace's enabled plugins, and of the
// tools within them, with its own tools mode: what one client is offered
// (berth serve --profile NAME, /profiles/NAME/mcp). It only narrows: the
// operator's policy stays per plugin and per tool, and a profile never
// widens it. A plugin a profile names that is not enabled offers
// nothing; it is not an error.
type Profile struct {
	// Plugins names the plugins offered; empty means every plugin enabled
	// in the workspace.
	Plugins []string `json:"plugins,omitempty"`
	// Tools are glob patterns (bundle.MatchGlob) on exported names
	// (<plugin>__<server>__<tool>); empty means every tool of Plugins.
	Tools []string `json:"tools,omitempty"`
	// Mode is full or lazy.
	Mode ToolsMode `json:"mode"`
	// Always are glob patterns on exported names of tools listed directly
	// beside the meta-tools in lazy mode (each must also be offered by
	// Plugins and Tools).
	Always    []string  `json:"always,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Includes reports whether the profile offers the tool exported as name,
// of plugin. A nil profile offers every tool.
func (p *Profile) Includes(plugin, name string) bool {
	if p == nil {
		return true
	}
	if !p.IncludesPlugin(plugin) {
		return false
	}
	if len(p.Tools) == 0 {
		return true
	}
	return matchAny(p.Tools, name)
}

// IncludesPlugin reports whether the profile offers plugin (its prompts
// and resources, and the tools its Tools patterns let through). A nil
// profile offers every plugin.
func (p *Profile) IncludesPlugin(plugin string) bool {
	if p == nil || len(p.Plugins) == 0 {
		return true
	}
	for _, n := range p.Plugins {
		if n == plugin {
			return true
		}
	}
	return false
}

// ListsAlways reports whether a tool exported as name is listed directly
// in lazy mode.
func (p *Profile) ListsAlways(name string) bool {
	return p != nil && matchAny(p.Always, name)
}

func matchAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if bundle.MatchGlob(pat, name) {
			return true
		}
	}
	return false
}

// profileNameRe is the rule for a profile's name: lower-case letters,
// digits and inner hyphens, 1 to 32 characters. It is short enough that
// "berth-NAME" (berth connect --profile) fits every client's limit on a
// server's name (64), and it needs no escaping in a URL path
// (/profiles/NAME/mcp) or a shell.
var profileNameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// CheckProfileName checks a profile's name (rule profile-name).
func CheckProfileName(name string) error {
	if !profileNameRe.MatchString(name) {
		return fmt.Errorf("%q is not a profile name: use 1 to 32 lower-case letters, digits and inner hyphens, as in work or claude-code (profile-name)", name)
	}
	return nil
}

// CheckProfile checks what a profile says on its own (the rules state.json
// and berth profile create share): its name (profile-name), the names of
// its plugins (profile-plugin: plugin names, each once), its tool patterns
// and always patterns (profile-pattern: a name or glob of the policy's
// form that belongs to one plugin, which the profile names when it names
// any), its mode (profile-mode: full or lazy) and always patterns only in
// lazy mode (profile-always). It returns every problem, each saying what
// is wrong; the caller adds where.
func CheckProfile(name string, p *Profile) []string {
	var ps []string
	if err := CheckProfileName(name); err != nil {
		ps = append(ps, err.Error())
	}
	if p == nil {
		return append(ps, "a profile is an object, not null (profile-null)")
	}
	seen := map[string]bool{}
	for _, n := range p.Plugins {
		if !bundle.IsValidName(n) {
			ps = append(ps, fmt.Sprintf("plugins: %q is not a plugin name (lower-case letters, digits and inner hyphens) (profile-plugin)", n))
		} else if seen[n] {
			ps = append(ps, fmt.Sprintf("plugins: %s is named twice (profile-plugin)", n))
		}
		seen[n] = true
	}
	for _, pat := range p.Tools {
		if err := checkProfilePattern(pat, p.Plugins); err != nil {
			ps = append(ps, fmt.Sprintf("tools: %v (profile-pattern)", err))
		}
	}
	switch p.Mode {
	case ToolsFull, ToolsLazy:
	default:
		ps = append(ps, fmt.Sprintf("mode: %q is not a tools mode; use full or lazy (profile-mode)", p.Mode))
	}
	bad, lazy := CheckAlways(p.Always, p.Mode, p.Plugins)
	for _, err := range bad {
		ps = append(ps, fmt.Sprintf("always: %v (profile-pattern)", err))
	}
	if lazy != nil {
		ps = append(ps, fmt.Sprintf("always: %v (profile-always)", lazy))
	}
	return ps
}

// CheckAlways checks always patterns (a profile's, or berth serve
// --always) against the view they apply to: each must be a name or glob
// of one plugin that plugins names (none: any plugin), and they need
// lazy mode (in full mode every tool is listed anyway). bad are the
// patterns' problems; needsLazy is non-nil when mode is not lazy. berth
// profile create (through CheckProfile) and berth serve share it.
func CheckAlways(always []string, mode ToolsMode, plugins []string) (bad []error, needsLazy error) {
	for _, pat := range always {
		if err := checkProfilePattern(pat, plugins); err != nil {
			bad = append(bad, err)
		}
	}
	if len(always) > 0 && mode != ToolsLazy {
		needsLazy = errors.New("tools listed beside the meta-tools need lazy mode; in full mode every tool is listed")
	}
	return bad, needsLazy
}

// EffectiveMode is the tools mode of a view: override (berth serve
// --tools) when set, else the profile's (p may be nil), else full.
func EffectiveMode(override ToolsMode, p *Profile) ToolsMode {
	switch {
	case override != "":
		return override
	case p != nil && p.Mode != "":
		return p.Mode
	}
	return ToolsFull
}

// checkProfilePattern checks one tool or always pattern of a profile
// naming plugins (none: any plugin).
func checkProfilePattern(pat string, plugins []string) error {
	if !policyPatternRe.MatchString(pat) {
		return fmt.Errorf("%q is not a name or glob: use letters, digits, '_', '-' and the wildcards '*' and '?' (at most 128 characters), as in acme-notes__notes__search or 'acme-notes__*'", pat)
	}
	plugin, err := PatternPlugin(pat)
	if err != nil {
		return fmt.Errorf("the pattern %q does not name one plugin: start it with the plugin's name and '__', as in 'acme-notes__*'", pat)
	}
	if len(plugins) > 0 && !slices.Contains(plugins, plugin) {
		return fmt.Errorf("the pattern %q names plugin %s, which the profile does not offer (it offers %s), so it can match no tool", pat, plugin, strings.Join(plugins, ", "))
	}
	return nil
}

// ProfileOf returns the profile name of the workspace ws (an absolute,
// clean path), or nil when there is none.
func (s *State) ProfileOf(ws, name string) *Profile {
	if w := s.Workspaces[ws]; w != nil {
		return w.Profiles[name]
	}
	return nil
}

// ErrProfileExists is returned by SetProfile for a name the workspace
// already has, unless it replaces.
var ErrProfileExists = errors.New("the profile exists")

// ErrNoProfile is returned for a profile the workspace does not have.
var ErrNoProfile = errors.New("no such profile")

// SetProfile creates (or, with replace, replaces) the profile name of
// workspace ws (an absolute, clean path) under the store's lock, bumping
// the generation, so a running berth serve of that profile applies it at
// its next boundary. The profile must pass CheckProfile, and every plugin
// it names, and the plugin of every pattern, must be enabled in ws now
// (berth enable): a profile narrows what is enabled and never enables
// anything. A profile of that name, without replace, wraps
// ErrProfileExists. CreatedAt is set to now. It returns the profile
// replaced, if any.
func (s *Store) SetProfile(ctx context.Context, ws, name string, p *Profile, replace bool) (*Profile, error) {
	if ps := CheckProfile(name, p); len(ps) > 0 {
		return nil, fmt.Errorf("profile %s: %s", name, strings.Join(ps, "; "))
	}
	if !filepath.IsAbs(ws) || filepath.Clean(ws) != ws {
		return nil, fmt.Errorf("the workspace %q is not an absolute, clean path", ws)
	}
	var old *Profile
	_, err := s.Update(ctx, func(st *State) error {
		w := st.Workspaces[ws]
		if w == nil || len(w.Plugins) == 0 {
			return fmt.Errorf("no plugin is enabled in %s, so a profile there would offer nothing; enable one first: berth enable NAME --workspace %s", ws, fsx.ShellQuote(ws))
		}
		need := slices.Clone(p.Plugins)
		for _, pat := range append(slices.Clone(p.Tools), p.Always...) {
			if plugin, err := PatternPlugin(pat); err == nil {
				need = append(need, plugin)
			}
		}
		for _, n := range need {
			if w.Plugins[n] == nil {
				return fmt.Errorf("%s is not enabled in %s: a profile only narrows what is enabled; enable it first (berth enable %s --workspace %s), or leave it out", n, ws, n, fsx.ShellQuote(ws))
			}
		}
		old = w.Profiles[name]
		if old != nil && !replace {
			q := fsx.ShellQuote(ws)
			return fmt.Errorf("%s already has a profile %s: %w; replace it with berth profile create %s --workspace %s --replace, or remove it with berth profile rm %s --workspace %s", ws, name, ErrProfileExists, name, q, name, q)
		}
		q := *p
		q.CreatedAt = time.Now().UTC().Truncate(time.Second)
		if w.Profiles == nil {
			w.Profiles = map[string]*Profile{}
		}
		w.Profiles[name] = &q
		return nil
	})
	if err != nil {
		return nil, err
	}
	return old, nil
}

// RemoveProfile removes the profile name of workspace ws under the
// store's lock, bumping the generation: a running berth serve of that
// profile offers nothing from its next boundary. A workspace left with no
// plugin and no profile is removed from the state. A missing profile
// wraps ErrNoProfile. It returns the profile removed.
func (s *Store) RemoveProfile(ctx context.Context, ws, name string) (*Profile, error) {
	var gone *Profile
	_, err := s.Update(ctx, func(st *State) error {
		w := st.Workspaces[ws]
		if w == nil || w.Profiles[name] == nil {
			return fmt.Errorf("%s has no profile %s: %w; berth profile list --workspace %s shows its profiles", ws, name, ErrNoProfile, fsx.ShellQuote(ws))
		}
		gone = w.Profiles[name]
		delete(w.Profiles, name)
		if len(w.Profiles) == 0 {
			w.Profiles = nil
		}
		if w.Empty() {
			delete(st.Workspaces, ws)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return gone, nil
}

// Empty reports whether a workspace has no enabled plugin and no
// profile, so the state need not keep it.
func (w *Workspace) Empty() bool {
	return len(w.Plugins) == 0 && len(w.Profiles) == 0
}
