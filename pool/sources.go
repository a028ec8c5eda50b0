package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Where a fromEnv source's value came from (SourceStatus.From).
const (
	FromEnvironment = "environment" // the environment berth runs in
	FromStore       = "store"       // Options.Secrets: berth's secret store
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
	ctx     context.Context
	plugin  string
	signer  string
	env     func(string) (string, bool)
	secrets func(context.Context, string, string, string) (string, bool, error)
	seen    []SourceStatus
}

// sources resolves for a server of plugin, whose enabled version is
// signed by signer (store.Record's SignerIdentity).
func (p *Pool) sources(ctx context.Context, plugin, signer string) *sources {
	return &sources{ctx: ctx, plugin: plugin, signer: signer, env: p.lookupEnv, secrets: p.opts.Secrets}
}

// lookup resolves name, used for what.
func (r *sources) lookup(name, what string) (string, bool) {
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

// missing is the error of a server whose sources are not all set: it
// names every missing one, both places berth looks, and the fix.
func (r *sources) missing(id string) error {
	var names, errs, unbound []string
	for _, s := range r.seen {
		if s.Set {
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
		if !s.Set && !s.NotBound {
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
