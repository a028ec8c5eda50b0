package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/store"
)

// Where a fromEnv source's value came from (SourceStatus.From).
const (
	FromEnvironment = "environment" // the environment berth runs in
	FromStore       = "store"       // Options.Secrets: berth's secret store
	FromConfirmed   = "confirmed"   // a value the operator confirmed (config.json)
)

// SourceStatus says, for one fromEnv source of a server, whether it was
// set when the server last started and where from; never its value.
type SourceStatus struct {
	// Name is the variable the manifest names (fromEnv, bearerFromEnv).
	Name string `json:"name"`
	// For is what it is used for: the environment key of a stdio server
	// (TOKEN), "the header NAME" or "the bearer token" of a remote.
	For string `json:"for"`
	Set bool   `json:"set"`
	// From is FromEnvironment or FromStore when Set.
	From string `json:"from,omitempty"`
	// Error is why the store could not answer, when it could not, or why
	// it did not give the value to this plugin (NotBound).
	Error string `json:"error,omitempty"`
	// NotBound reports that the secret store holds the variable, but not
	// for this server's plugin.
	NotBound bool `json:"notBound,omitempty"`
	// Bind is the command that binds it to the plugin, when NotBound.
	Bind string `json:"bind,omitempty"`
	// Confirm is set for a value the operator confirms (an importedFrom
	// input with confirm): it is read only from the values confirmed for
	// the plugin and its signer (and, when unsigned, its source), never
	// from the environment or the secret store.
	Confirm bool `json:"confirm,omitempty"`
	// Empty is set for an optional value confirmed as empty: the server
	// gets no such variable.
	Empty bool `json:"empty,omitempty"`
	// ConfirmCommand is the command that confirms it, when it is not.
	ConfirmCommand string `json:"confirmCommand,omitempty"`
}

// NotBound is implemented by the error of Options.Secrets for a secret
// the store holds but not for the plugin that asks: BindCommand is the
// command that lets the plugin use it.
type NotBound interface {
	error
	BindCommand() string
}

// sources resolves the fromEnv sources of one server start: the host
// environment first, then Options.Secrets. It records what it resolved,
// never a value.
type sources struct {
	ctx    context.Context
	plugin string
	signer string
	// source is the enabled version's store.Record.ConfirmSource: a
	// confirmed value of an unsigned version is bound to its source too.
	source  string
	env     func(string) (string, bool)
	secrets func(context.Context, string, string, string) (string, bool, error)
	// confirm are the plugin's inputs the operator confirms, by name;
	// config reads the confirmed values (once per start).
	confirm map[string]bundle.ImportInput
	config  func() (*store.Config, error)
	cfg     *store.Config
	cfgErr  error
	seen    []SourceStatus
	// unconfirmed explains each confirm source that is not confirmed.
	unconfirmed []string
}

// sources resolves for a server of pl, whose enabled version is signed by
// pl.signer (store.Record's SignerIdentity).
func (p *Pool) sources(ctx context.Context, pl *plugin) *sources {
	return &sources{ctx: ctx, plugin: pl.name, signer: pl.signer, source: pl.confirmSource, env: p.lookupEnv, secrets: p.opts.Secrets, confirm: pl.confirm, config: p.store.Config}
}

// confirmInputs are m's inputs the operator confirms, by fromEnv name.
func confirmInputs(m *bundle.Manifest) map[string]bundle.ImportInput {
	ins := m.ConfirmInputs()
	if len(ins) == 0 {
		return nil
	}
	out := map[string]bundle.ImportInput{}
	for _, in := range ins {
		out[in.FromEnv] = in
	}
	return out
}

// ConfirmCommand is the command that confirms the input name of plugin.
func ConfirmCommand(plugin, name string) string {
	return "berth confirm " + plugin + " " + name
}

// lookup resolves name, used for what.
func (r *sources) lookup(name, what string) (string, bool) {
	if in, ok := r.confirm[name]; ok {
		return r.confirmed(in, what)
	}
	st := SourceStatus{Name: name, For: what}
	v, ok := r.env(name)
	if ok {
		st.Set, st.From = true, FromEnvironment
	} else if r.secrets != nil {
		var err error
		v, ok, err = r.secrets(r.ctx, r.plugin, r.signer, name)
		var nb NotBound
		switch {
		case errors.As(err, &nb):
			st.Error, st.NotBound, st.Bind = nb.Error(), true, nb.BindCommand()
			v, ok = "", false
		case err != nil:
			st.Error = err.Error()
			ok = false
		case ok:
			st.Set, st.From = true, FromStore
		}
	}
	r.seen = append(r.seen, st)
	return v, ok
}

// confirmed resolves a source the operator confirms: only from the values
// confirmed for this plugin, signed by this signer, for the value its
// publisher offers now. A hostile environment or workspace cannot supply
// it, and a bundle update that changes the offer asks again.
func (r *sources) confirmed(in bundle.ImportInput, what string) (string, bool) {
	st := SourceStatus{Name: in.FromEnv, For: what, Confirm: true}
	if r.cfg == nil && r.cfgErr == nil {
		r.cfg, r.cfgErr = r.config()
	}
	defer func() { r.seen = append(r.seen, st) }()
	if r.cfgErr != nil {
		st.Error = r.cfgErr.Error()
		r.unconfirmed = append(r.unconfirmed, fmt.Sprintf("%s (for %s): berth cannot read its config: %v", in.FromEnv, what, r.cfgErr))
		return "", false
	}
	if cv, ok := r.cfg.Confirmation(r.plugin, r.signer, r.source, in.FromEnv, in.Default); ok {
		st.Set, st.From, st.Empty = true, FromConfirmed, cv.Value == ""
		return cv.Value, cv.Value != ""
	}
	st.ConfirmCommand = ConfirmCommand(r.plugin, in.FromEnv)
	why := "you have not confirmed it"
	if in.Default != "" {
		why += fmt.Sprintf(" (its publisher offers %q)", in.Default)
	}
	for _, old := range r.cfg.ConfirmationsOf(r.plugin, in.FromEnv) {
		switch {
		case old.Signer != r.signer:
			why = "you confirmed it for a version signed by another signer, not for this one"
		case old.Source != r.source:
			why = fmt.Sprintf("you confirmed it for the plugin of this name from %s, and this version comes from %s, another source, so berth asks again", old.Source, r.source)
		case old.Offered != in.Default:
			why = fmt.Sprintf("you confirmed it when its publisher offered %q, and this version offers %q, so berth asks again", old.Offered, in.Default)
		}
	}
	r.unconfirmed = append(r.unconfirmed, fmt.Sprintf("%s (for %s): %s; confirm it with `%s`", in.FromEnv, what, why, st.ConfirmCommand))
	return "", false
}

// missing is the error of a server whose sources are not all set: it
// names every missing one, both places berth looks, and the fix.
func (r *sources) missing(id string) error {
	err := r.missingFromEnv(id)
	if len(r.unconfirmed) == 0 {
		return err
	}
	msg := fmt.Sprintf("server %s of plugin %s needs the value of %s; its value comes only from what you confirm (kept in berth's config, never read from the environment)", id, r.plugin, strings.Join(r.unconfirmed, ", and "))
	if err != nil {
		msg += "; and " + err.Error()
	}
	return permanent("%s", msg)
}

// missingFromEnv is missing for the sources of the environment and the
// secret store.
func (r *sources) missingFromEnv(id string) error {
	var names, errs, unbound []string
	for _, s := range r.seen {
		if s.Set || s.Confirm {
			continue
		}
		if s.NotBound {
			unbound = append(unbound, fmt.Sprintf("%s (for %s): %s", s.Name, s.For, s.Error))
			continue
		}
		names = append(names, fmt.Sprintf("%s (for %s)", s.Name, s.For))
		if s.Error != "" {
			errs = append(errs, s.Error)
		}
	}
	if len(names) == 0 && len(unbound) == 0 {
		return nil
	}
	// A secret the store holds for other plugins only: say so, and how to
	// bind it, never that it is not stored.
	notBound := ""
	if len(unbound) > 0 {
		notBound = fmt.Sprintf("server %s of plugin %s needs the variable %s; or set it in berth's environment, or disable the plugin", id, r.plugin, strings.Join(unbound, ", and "))
		if len(names) == 0 {
			return permanent("%s", notBound)
		}
		notBound = "; and " + notBound
	}
	first := r.seen[0].Name
	for _, s := range r.seen {
		if !s.Set && !s.NotBound && !s.Confirm {
			first = s.Name
			break
		}
	}
	if r.secrets == nil {
		return permanent("server %s needs the environment variable %s, which is not set where berth runs; set it there (its value reaches only this server, never argv or logs), or disable the plugin%s", id, strings.Join(names, " and "), notBound)
	}
	msg := fmt.Sprintf("server %s needs the variable %s, which is set neither in the environment berth runs in nor in berth's secret store; store it with `berth secret set %s` (its value then reaches only this server, never argv, logs or a client's config file), or set it in berth's environment, or disable the plugin", id, strings.Join(names, " and "), first)
	if len(errs) > 0 {
		msg += " (the secret store: " + strings.Join(errs, "; ") + ")"
	}
	return permanent("%s", msg+notBound)
}
