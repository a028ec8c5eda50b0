// Package secrets is berth's secret store: values of the environment
// variables that plugins name as fromEnv sources, kept in the OS keychain
// (macOS Keychain, Windows Credential Manager, the Secret Service on Linux,
// through github.com/zalando/go-keyring) or, where no keychain answers, in
// a file readable only by its owner.
//
// The store has two parts in its directory (store.Paths.Secrets):
//
//	index.json    the names that are stored, where each one is (keychain
//	              or file) and the plugins it is bound to, never a value;
//	              List and Where read only this
//	values.json   the values of the names stored in the file, mode 0600
//
// A secret is bound to plugins: only the servers of a plugin it is bound
// to receive it (For), whatever the variable name other plugins declare.
// A binding names the plugin and the identity of its signer (Binding), so
// a different plugin of the same name (another publisher's, trusted after
// a revoke or with a signer change) does not inherit it. The binding is a
// field of the index's record ("plugins"), so any other kind of credential
// kept in this index later (sign-in tokens) is bound the same way. The
// index of format version 1 had no bindings; Migrate rewrites it, once, as
// version 2, binding each secret to the plugins that name it then.
//
// A value is written before the index names it and the index forgets a
// name before its value is removed, each file replaced atomically under a
// file lock, so a crash at any point leaves the old or the new secret, at
// worst with an unreferenced value that the next Set or Remove of that name
// overwrites or removes. Both files and the directory must belong to the
// user berth runs as and be closed to everyone else; a file another user
// could have written or read is refused, never used.
//
// Nothing here prints; errors name the secret, never its value.
package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// Backend is where one secret's value is kept.
type Backend string

// The backends.
const (
	// Keychain is the operating system's keychain.
	Keychain Backend = "keychain"
	// File is values.json in the store's directory, mode 0600: the fallback
	// where no keychain answers (a headless Linux, CI).
	File Backend = "file"
)

// ParseBackend returns the backend named s ("keychain" or "file").
func ParseBackend(s string) (Backend, error) {
	switch Backend(s) {
	case Keychain, File:
		return Backend(s), nil
	}
	return "", fmt.Errorf("unknown secret store %q: use keychain or file", s)
}

// Errors. ErrNotFound is returned for a name the store does not hold;
// KeychainError is Set failing to store name in the keychain, when the
// keychain was asked for (or refused a value of Size bytes as too big:
// TooBig). Nothing was stored; the File backend would keep it. Err is the
// keychain's error.
type KeychainError struct {
	Name   string
	Size   int
	TooBig bool
	Err    error
}

func (e *KeychainError) Error() string {
	if e.TooBig {
		return fmt.Sprintf("the keychain refuses a value of %d bytes for %s; keep it in the file (the %s backend): %v", e.Size, e.Name, File, e.Err)
	}
	return fmt.Sprintf("storing %s in the keychain: %v; nothing was stored (the %s backend keeps it in a file only you can read)", e.Name, e.Err, File)
}

func (e *KeychainError) Unwrap() error { return e.Err }

// ErrKeychain wraps every failure of the OS keychain.
var (
	ErrNotFound = errors.New("no such secret")
	ErrKeychain = errors.New("the keychain did not answer")
	// ErrNotBound is a secret that the store holds, asked for by a plugin
	// it is not bound to (NotBoundError).
	ErrNotBound = errors.New("the secret is not bound to this plugin")
)

// Binding binds a secret to one plugin: to its servers when the plugin's
// trusted version is signed by Signer.
type Binding struct {
	// Plugin is the plugin's name.
	Plugin string `json:"plugin"`
	// Signer is the identity of the signer the plugin's version was
	// trusted from, as its trust record gives it (store.Record's
	// SignerIdentity: "key <fingerprint>", "identity <issuer> <SAN>" or
	// "unsigned"). Empty means the secret was bound by name before any
	// version of the plugin was trusted: it applies to the plugin whatever
	// its signer until install or enable records the signer.
	Signer string `json:"signer,omitempty"`
}

// Describe names the plugin and its signer for a sentence.
func (b Binding) Describe() string {
	if b.Signer == "" {
		return b.Plugin
	}
	return b.Plugin + " " + SignedBy(b.Signer)
}

// SignedBy says who vouches for a plugin, for a sentence: "signed by key
// SHA256:…", or "trusted unsigned".
func SignedBy(signer string) string {
	if signer == "unsigned" {
		return "trusted unsigned"
	}
	return "signed by " + signer
}

// NotBoundError is For asked for a secret the store holds on behalf of a
// plugin it is not bound to. It names the plugins the secret is bound to
// and the command that binds it; never a value. When the secret is bound
// to a plugin of the same name signed by someone else (HeldFor), the
// message says so: the plugin that asks is not the one it was bound to.
type NotBoundError struct {
	Name, Plugin string
	// Signer is the signer identity of the plugin that asks.
	Signer  string
	BoundTo []string
	// HeldFor are the signers of the plugin of that name that the secret
	// is bound to, none of them Signer.
	HeldFor []string
}

func (e *NotBoundError) Error() string {
	if len(e.HeldFor) > 0 {
		held := make([]string, len(e.HeldFor))
		for i, s := range e.HeldFor {
			held[i] = SignedBy(s)
		}
		return fmt.Sprintf("berth's secret store holds %s for the plugin %s %s, but this %s is %s, another publisher's plugin of the same name, so it does not receive it; if it may use it: `%s`", e.Name, e.Plugin, strings.Join(held, " or "), e.Plugin, SignedBy(e.Signer), BindCommand(e.Name, e.Plugin))
	}
	held := "no plugin"
	if len(e.BoundTo) > 0 {
		held = strings.Join(e.BoundTo, ", ")
	}
	return fmt.Sprintf("berth's secret store holds %s, but for %s, not for plugin %s; let %s use it with `%s`", e.Name, held, e.Plugin, e.Plugin, BindCommand(e.Name, e.Plugin))
}

func (e *NotBoundError) Unwrap() error { return ErrNotBound }

// BindCommand is the command that binds the secret to the plugin.
func (e *NotBoundError) BindCommand() string { return BindCommand(e.Name, e.Plugin) }

// BindCommand is the command that binds the stored secret name to plugin.
func BindCommand(name, plugin string) string {
	return "berth secret bind " + name + " --plugin " + plugin
}

// MaxValueSize is the largest value the store keeps. Keychains keep far
// less on some platforms (macOS: about 3000 bytes with the names); they
// then refuse it, and --store file keeps it.
const MaxValueSize = 64 << 10

// DefaultTimeout bounds every call to the keychain: a Secret Service that
// waits for a prompt nobody can answer must not hang berth.
const DefaultTimeout = 10 * time.Second

var nameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckName reports whether name can name a secret: it must be a name an
// environment variable can have, as fromEnv sources are.
func CheckName(name string) error {
	if len(name) > 256 || !nameRe.MatchString(name) {
		return fmt.Errorf("%q is not a secret name: use the name of the environment variable it stands for, matching [A-Za-z_][A-Za-z0-9_]* (for example ACME_TOKEN)", name)
	}
	return nil
}

// Options tune a Store. A nil *Options means the defaults.
type Options struct {
	// Timeout bounds each keychain call; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Store is a secret store in one directory. It is safe for concurrent use
// by goroutines and processes: changes take a file lock.
type Store struct {
	dir     string
	service string
	timeout time.Duration
}

// Open returns the store in dir (an absolute path; created on the first
// Set). Its keychain entries are under the service "berth:" + dir, so
// two state roots never share a secret.
func Open(dir string, opts *Options) *Store {
	if !filepath.IsAbs(dir) {
		panic(fmt.Sprintf("secrets: Open needs an absolute directory, got %q", dir))
	}
	s := &Store{dir: dir, service: "berth:" + dir, timeout: DefaultTimeout}
	if opts != nil && opts.Timeout > 0 {
		s.timeout = opts.Timeout
	}
	return s
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// ValuesFile is the file that holds the values of the File backend.
func (s *Store) ValuesFile() string { return filepath.Join(s.dir, "values.json") }

func (s *Store) indexFile() string { return filepath.Join(s.dir, "index.json") }

// Entry is one stored secret, as the index records it: never its value.
type Entry struct {
	Name    string    `json:"name"`
	Backend Backend   `json:"store"`
	Updated time.Time `json:"updated"`
	// Plugins are the plugins the secret is bound to, sorted: only their
	// servers receive it, when their versions are signed as bindings say.
	Plugins []string `json:"plugins"`
	// Bindings are the plugins it is bound to, each with the signer it is
	// bound for, sorted by plugin and signer.
	Bindings []Binding `json:"bindings"`
}

// Binds reports whether the secret is bound to plugin whose trusted
// version is signed by signer.
func (e *Entry) Binds(plugin, signer string) bool {
	return slices.ContainsFunc(e.Bindings, func(b Binding) bool {
		return b.Plugin == plugin && (b.Signer == "" || b.Signer == signer)
	})
}

// SignersOf are the signers of plugin that the secret is bound to ("" for
// a binding made before the plugin was trusted).
func (e *Entry) SignersOf(plugin string) []string {
	var out []string
	for _, b := range e.Bindings {
		if b.Plugin == plugin {
			out = append(out, b.Signer)
		}
	}
	return out
}

func entryOf(name string, r indexRec) Entry {
	e := Entry{Name: name, Backend: r.Backend, Updated: r.Updated, Plugins: []string{}, Bindings: []Binding{}}
	for _, b := range r.Plugins {
		if !slices.Contains(e.Plugins, b.Plugin) {
			e.Plugins = append(e.Plugins, b.Plugin)
		}
		e.Bindings = append(e.Bindings, b)
	}
	return e
}

type indexFile struct {
	Version int                 `json:"version"`
	Secrets map[string]indexRec `json:"secrets"`
}

type indexRec struct {
	Backend Backend   `json:"store"`
	Updated time.Time `json:"updated"`
	// Plugins are the bindings of the secret (format version 2).
	Plugins []Binding `json:"plugins,omitempty"`
}

type valuesFile struct {
	Version int               `json:"version"`
	Values  map[string]string `json:"values"`
}

// formatVersion is the version of values.json, and of an index.json
// without bindings; indexVersion is the index with bindings.
const (
	formatVersion = 1
	indexVersion  = 2
)

// List returns the stored secrets sorted by name. It reads only the
// index.
func (s *Store) List() ([]Entry, error) {
	idx, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, n := range slices.Sorted(maps.Keys(idx.Secrets)) {
		out = append(out, entryOf(n, idx.Secrets[n]))
	}
	return out, nil
}

// Lookup returns the record of name, reading only the index: never a
// value. ok is false when the store does not hold name.
func (s *Store) Lookup(name string) (e Entry, ok bool, err error) {
	idx, err := s.readIndex()
	if err != nil {
		return Entry{}, false, err
	}
	r, ok := idx.Secrets[name]
	if !ok {
		return Entry{}, false, nil
	}
	return entryOf(name, r), true, nil
}

// For returns the value of name for a server of plugin whose trusted
// version is signed by signer (store.Record's SignerIdentity): ok is false
// when the store does not hold name, and the error wraps ErrNotBound (a
// *NotBoundError) when it holds name but not for plugin, or for a plugin
// of that name signed by someone else.
func (s *Store) For(ctx context.Context, plugin, signer, name string) (value string, ok bool, err error) {
	e, ok, err := s.Lookup(name)
	if err != nil || !ok {
		return "", false, err
	}
	if !e.Binds(plugin, signer) {
		return "", false, &NotBoundError{Name: name, Plugin: plugin, Signer: signer, BoundTo: e.Plugins, HeldFor: e.SignersOf(plugin)}
	}
	v, _, err := s.Get(ctx, name)
	if err != nil {
		return "", false, err
	}
	return v, true, nil
}

// Where reports where name is stored, reading only the index: never a
// value. ok is false when the store does not hold name.
func (s *Store) Where(name string) (b Backend, ok bool, err error) {
	idx, err := s.readIndex()
	if err != nil {
		return "", false, err
	}
	r, ok := idx.Secrets[name]
	return r.Backend, ok, nil
}

// Get returns the value of name and where it is kept. A name the store
// does not hold is an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (string, Backend, error) {
	idx, err := s.readIndex()
	if err != nil {
		return "", "", err
	}
	r, ok := idx.Secrets[name]
	if !ok {
		return "", "", fmt.Errorf("%s: %w in berth's secret store", name, ErrNotFound)
	}
	switch r.Backend {
	case Keychain:
		v, err := s.keychain(ctx, func() (string, error) { return keyring.Get(s.service, name) })
		if errors.Is(err, keyring.ErrNotFound) {
			return "", r.Backend, fmt.Errorf("%s is recorded in the keychain, but the keychain no longer has it (removed outside berth?): %w; store it again with `berth secret set %s`", name, ErrNotFound, name)
		}
		if err != nil {
			return "", r.Backend, fmt.Errorf("reading %s from the keychain: %w", name, err)
		}
		return v, r.Backend, nil
	case File:
		vals, err := s.readValues()
		if err != nil {
			return "", r.Backend, err
		}
		v, ok := vals.Values[name]
		if !ok {
			return "", r.Backend, fmt.Errorf("%s is recorded in %s, but that file does not hold it: %w; store it again with `berth secret set %s`", name, s.ValuesFile(), ErrNotFound, name)
		}
		return v, r.Backend, nil
	}
	return "", "", fmt.Errorf("%s: the index names the unknown store %q; run `berth secret set %s` again", name, r.Backend, name)
}

// SetResult says where Set put a value.
type SetResult struct {
	Backend Backend
	// Fallback, when set, is why the keychain was not used: Set was asked
	// for no backend in particular, no keychain answered, and the value
	// went to the file.
	Fallback error
	// Replaced reports that the name was stored before (perhaps in the
	// other backend, which no longer holds it).
	Replaced bool
}

// Set stores value under name in backend b, or with b empty in the
// keychain, falling back to the file when no keychain answers (the
// result says so), bound to bindings (and to no other: a name stored
// before loses its old bindings). The value must be non-empty, at most
// MaxValueSize bytes and hold no NUL byte.
func (s *Store) Set(ctx context.Context, name, value string, b Backend, bindings ...Binding) (*SetResult, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	bound, err := checkBindings(bindings)
	if err != nil {
		return nil, err
	}
	switch {
	case value == "":
		return nil, fmt.Errorf("the value of %s is empty; nothing was stored", name)
	case len(value) > MaxValueSize:
		return nil, fmt.Errorf("the value of %s is %d bytes, more than the %d berth stores; nothing was stored", name, len(value), MaxValueSize)
	case strings.IndexByte(value, 0) >= 0:
		return nil, fmt.Errorf("the value of %s holds a NUL byte, which no environment variable can; nothing was stored", name)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	idx, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	res := &SetResult{Backend: b}
	old, had := idx.Secrets[name]
	res.Replaced = had
	if b == "" || b == Keychain {
		_, err := s.keychain(ctx, func() (string, error) { return "", keyring.Set(s.service, name, value) })
		switch {
		case err == nil:
			res.Backend = Keychain
		case b == Keychain:
			if errors.Is(err, keyring.ErrSetDataTooBig) {
				return nil, &KeychainError{Name: name, Size: len(value), TooBig: true, Err: err}
			}
			return nil, &KeychainError{Name: name, Err: err}
		default:
			if errors.Is(err, keyring.ErrSetDataTooBig) {
				return nil, &KeychainError{Name: name, Size: len(value), TooBig: true, Err: err}
			}
			res.Backend, res.Fallback = File, err
		}
	}
	if res.Backend == File {
		vals, err := s.readValues()
		if err != nil {
			return nil, err
		}
		vals.Values[name] = value
		if err := s.writeJSON(s.ValuesFile(), vals); err != nil {
			return nil, err
		}
	}
	idx.Secrets[name] = indexRec{Backend: res.Backend, Updated: time.Now().UTC().Truncate(time.Second), Plugins: bound}
	if err := s.writeJSON(s.indexFile(), idx); err != nil {
		return nil, err
	}
	// The other backend may still hold an older value of name.
	if had && old.Backend != res.Backend {
		if err := s.removeValue(ctx, name, old.Backend); err != nil {
			return res, fmt.Errorf("%s is stored in the %s now, but its old value in the %s could not be removed: %w", name, res.Backend, old.Backend, err)
		}
	}
	return res, nil
}

// pluginRe is a plugin's name (bundle.IsValidName).
var pluginRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// maxSigner bounds a signer identity (an issuer and a SAN are URLs).
const maxSigner = 4096

// checkBindings returns bindings sorted by plugin and signer without
// repeats, or nil for none, or the error naming one that is not a
// plugin's name or whose signer berth would not write. A binding without
// a signer is dropped when the plugin is bound with one too.
func checkBindings(bindings []Binding) ([]Binding, error) {
	for _, b := range bindings {
		if !pluginRe.MatchString(b.Plugin) {
			return nil, fmt.Errorf("%q is not a plugin name (lower-case letters, digits and '-'); `berth list` shows the trusted plugins", b.Plugin)
		}
		if len(b.Signer) > maxSigner || strings.ContainsFunc(b.Signer, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, fmt.Errorf("the signer of %s is not one berth records (a control character, or longer than %d bytes)", b.Plugin, maxSigner)
		}
	}
	out := slices.Clone(bindings)
	slices.SortFunc(out, compareBindings)
	out = slices.Compact(out)
	out = slices.DeleteFunc(out, func(b Binding) bool {
		return b.Signer == "" && slices.ContainsFunc(out, func(o Binding) bool { return o.Plugin == b.Plugin && o.Signer != "" })
	})
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func compareBindings(a, b Binding) int {
	if c := strings.Compare(a.Plugin, b.Plugin); c != 0 {
		return c
	}
	return strings.Compare(a.Signer, b.Signer)
}

// Bind binds the stored secret name to bindings as well, or with unbind
// set, no longer to them (a binding without a signer unbinds the plugin
// whatever its signer), and returns the record. A name the store does not
// hold is an error wrapping ErrNotFound.
func (s *Store) Bind(ctx context.Context, name string, unbind bool, bindings ...Binding) (Entry, error) {
	if err := CheckName(name); err != nil {
		return Entry{}, err
	}
	ps, err := checkBindings(bindings)
	if err != nil {
		return Entry{}, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer unlock()
	idx, err := s.readIndex()
	if err != nil {
		return Entry{}, err
	}
	r, ok := idx.Secrets[name]
	if !ok {
		return Entry{}, fmt.Errorf("%s: %w in berth's secret store (berth secret list shows what is; store it with `berth secret set %s --plugin PLUGIN`)", name, ErrNotFound, name)
	}
	if unbind {
		r.Plugins = slices.DeleteFunc(slices.Clone(r.Plugins), func(b Binding) bool {
			return slices.ContainsFunc(ps, func(u Binding) bool { return u.Plugin == b.Plugin && (u.Signer == "" || u.Signer == b.Signer) })
		})
	} else {
		r.Plugins = append(slices.Clone(r.Plugins), ps...)
	}
	r.Plugins, _ = checkBindings(r.Plugins)
	idx.Secrets[name] = r
	if err := s.writeJSON(s.indexFile(), idx); err != nil {
		return Entry{}, err
	}
	return entryOf(name, r), nil
}

// Pin records signer as the signer of plugin in every binding made
// before the plugin was trusted (a binding without a signer), so that the
// binding no longer applies to a plugin of that name signed by someone
// else. It returns the secrets it changed.
func (s *Store) Pin(ctx context.Context, plugin, signer string) ([]string, error) {
	return s.rebind(ctx, func(b Binding) (Binding, bool) {
		if b.Plugin == plugin && b.Signer == "" {
			return Binding{Plugin: plugin, Signer: signer}, true
		}
		return b, true
	})
}

// Forget drops every binding of plugin: called when its last trust record
// is removed, so that no later plugin of that name inherits them. It
// returns the secrets it changed.
func (s *Store) Forget(ctx context.Context, plugin string) ([]string, error) {
	return s.rebind(ctx, func(b Binding) (Binding, bool) { return b, b.Plugin != plugin })
}

// rebind maps every binding of every secret through f (false drops it)
// and returns the secrets whose bindings changed. A missing store is left
// missing.
func (s *Store) rebind(ctx context.Context, f func(Binding) (Binding, bool)) ([]string, error) {
	if v, err := s.indexFileVersion(); err != nil || v == 0 {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	idx, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, n := range slices.Sorted(maps.Keys(idx.Secrets)) {
		r := idx.Secrets[n]
		var next []Binding
		for _, b := range r.Plugins {
			if b, ok := f(b); ok {
				next = append(next, b)
			}
		}
		next, err := checkBindings(next)
		if err != nil {
			return nil, err
		}
		if slices.Equal(next, r.Plugins) {
			continue
		}
		r.Plugins = next
		idx.Secrets[n] = r
		changed = append(changed, n)
	}
	if len(changed) == 0 {
		return nil, nil
	}
	if err := s.writeJSON(s.indexFile(), idx); err != nil {
		return nil, err
	}
	return changed, nil
}

// Migrate binds the secrets of an index of format version 1 (which had no
// bindings) to the plugins that name them, as namers says (called only
// then, under the store's lock): each to the signer of the plugin's
// trusted versions that name it. It rewrites the index as version 2, in
// one atomic replacement: the next run finds version 2 and does nothing.
// It returns the secrets it bound, or nil when there was nothing to do.
// Until it runs, a secret of a version 1 index is bound to no plugin.
func (s *Store) Migrate(ctx context.Context, namers func() (map[string][]Binding, error)) ([]Entry, error) {
	if v, err := s.indexFileVersion(); err != nil || v != formatVersion {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	v, err := s.indexFileVersion()
	if err != nil || v != formatVersion {
		return nil, err // another berth migrated it meanwhile
	}
	idx, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	named, err := namers()
	if err != nil {
		return nil, fmt.Errorf("binding the stored secrets to the plugins that name them: %w", err)
	}
	out := []Entry{}
	for _, n := range slices.Sorted(maps.Keys(idx.Secrets)) {
		r := idx.Secrets[n]
		r.Plugins, err = checkBindings(named[n])
		if err != nil {
			return nil, err
		}
		idx.Secrets[n] = r
		out = append(out, entryOf(n, r))
	}
	if err := s.writeJSON(s.indexFile(), idx); err != nil {
		return nil, err
	}
	return out, nil
}

// indexFileVersion is the format version of index.json: 0 when there is
// none (nothing to migrate).
func (s *Store) indexFileVersion() (int, error) {
	idx := &indexFile{}
	if err := s.readJSON(s.indexFile(), idx, formatVersion, indexVersion); err != nil {
		return 0, err
	}
	return idx.Version, nil
}

// Remove removes name from the store and returns where it was. A name the
// store does not hold is an error wrapping ErrNotFound.
func (s *Store) Remove(ctx context.Context, name string) (Backend, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	idx, err := s.readIndex()
	if err != nil {
		return "", err
	}
	r, ok := idx.Secrets[name]
	if !ok {
		return "", fmt.Errorf("%s: %w in berth's secret store (berth secret list shows what is)", name, ErrNotFound)
	}
	delete(idx.Secrets, name)
	if err := s.writeJSON(s.indexFile(), idx); err != nil {
		return "", err
	}
	if err := s.removeValue(ctx, name, r.Backend); err != nil {
		return r.Backend, fmt.Errorf("%s is no longer used, but its value could not be removed from the %s: %w", name, r.Backend, err)
	}
	return r.Backend, nil
}

// removeValue removes name's value from backend b; a value already gone
// is not an error.
func (s *Store) removeValue(ctx context.Context, name string, b Backend) error {
	switch b {
	case Keychain:
		_, err := s.keychain(ctx, func() (string, error) { return "", keyring.Delete(s.service, name) })
		if errors.Is(err, keyring.ErrNotFound) {
			return nil
		}
		return err
	case File:
		vals, err := s.readValues()
		if err != nil {
			return err
		}
		if _, ok := vals.Values[name]; !ok {
			return nil
		}
		delete(vals.Values, name)
		return s.writeJSON(s.ValuesFile(), vals)
	}
	return nil
}

// keychain runs one keychain call, bounded by the store's timeout and ctx.
// Every failure wraps ErrKeychain; keyring.ErrNotFound and
// keyring.ErrSetDataTooBig stay visible to errors.Is.
func (s *Store) keychain(ctx context.Context, f func() (string, error)) (string, error) {
	type result struct {
		v   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err == nil || errors.Is(r.err, keyring.ErrNotFound) {
			return r.v, r.err
		}
		return "", fmt.Errorf("%w: %w", ErrKeychain, r.err)
	case <-t.C:
		return "", fmt.Errorf("%w within %s", ErrKeychain, s.timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// lock takes the store's file lock, making the directory first.
func (s *Store) lock(ctx context.Context) (func(), error) {
	if err := s.ensureDir(); err != nil {
		return nil, err
	}
	unlock, err := fsx.Lock(ctx, filepath.Join(s.dir, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("waiting for the lock of the secret store %s: %w", s.dir, err)
	}
	return unlock, nil
}

// ensureDir makes the directory 0700, or checks the one that is there.
func (s *Store) ensureDir() error {
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating the secret store %s: %w", s.dir, err)
	}
	return s.checkPrivate(s.dir, true)
}

// checkPrivate refuses a file or directory that is not the user's own, or
// that others may read or write. A symbolic link is refused too: another
// user could point it anywhere.
func (s *Store) checkPrivate(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link; berth keeps secrets only in its own files: remove it and store the secrets again", path)
	case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular %s; move it aside and store the secrets again", path, map[bool]string{true: "directory", false: "file"}[dir])
	}
	if owner, me, ok := fsx.Owner(fi); ok && owner != me {
		return fmt.Errorf("%s belongs to another user, so it may hold values they chose or can read; berth does not use it: remove it and store the secrets again", path)
	}
	if fsx.PrivateModes && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o, so other users may read or change it; berth does not use it: run chmod %s %s, and consider the secrets in it exposed", path, fi.Mode().Perm(), map[bool]string{true: "700", false: "600"}[dir], path)
	}
	return nil
}

// readIndex reads index.json; a missing store is an empty one. An index
// of version 1 (no bindings) reads as one of version 2 whose secrets are
// bound to no plugin; writing it writes version 2.
func (s *Store) readIndex() (*indexFile, error) {
	idx := &indexFile{Version: indexVersion, Secrets: map[string]indexRec{}}
	if err := s.readJSON(s.indexFile(), idx, formatVersion, indexVersion); err != nil {
		return nil, err
	}
	if idx.Secrets == nil {
		idx.Secrets = map[string]indexRec{}
	}
	for n, r := range idx.Secrets {
		if CheckName(n) != nil || (r.Backend != Keychain && r.Backend != File) {
			return nil, fmt.Errorf("%s names %q in the store %q, which berth does not write; remove the entry or the file and store the secrets again", s.indexFile(), n, r.Backend)
		}
		ps, err := checkBindings(r.Plugins)
		if err != nil || !slices.Equal(ps, r.Plugins) || (idx.Version == formatVersion && r.Plugins != nil) {
			return nil, fmt.Errorf("%s binds %s to plugins in a way berth does not write; remove the entry or the file and store the secret again", s.indexFile(), n)
		}
	}
	idx.Version = indexVersion
	return idx, nil
}

func (s *Store) readValues() (*valuesFile, error) {
	v := &valuesFile{Version: formatVersion, Values: map[string]string{}}
	if err := s.readJSON(s.ValuesFile(), v, formatVersion); err != nil {
		return nil, err
	}
	if v.Values == nil {
		v.Values = map[string]string{}
	}
	return v, nil
}

// maxFileSize bounds what berth reads of its own files.
const maxFileSize = 16 << 20

// readJSON decodes a file of the store strictly; a missing file (or
// store) leaves v as it is. The directory and the file must be private,
// and its format version one of versions.
func (s *Store) readJSON(path string, v any, versions ...int) error {
	if _, err := os.Lstat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := s.checkPrivate(s.dir, true); err != nil {
		return err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := s.checkPrivate(path, false); err != nil {
		return err
	}
	data, err := fsx.ReadFile(path, maxFileSize)
	if tl := (*fsx.TooLargeError)(nil); errors.As(err, &tl) {
		return fmt.Errorf("%s is larger than %d MiB; berth does not write such a file: move it aside", path, maxFileSize>>20)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if ps := strictjson.Decode(data, v, strictjson.Options{FoldCase: true}); len(ps) > 0 {
		for _, p := range ps {
			if p.Kind == strictjson.DuplicateKey || p.Kind == strictjson.FoldedKey {
				// A key is a secret's name or a field, never a value.
				return fmt.Errorf("%s is damaged: %s, and berth never writes a key twice; move it aside and store the secrets again", path, p)
			}
		}
		// Other problems may quote the input: never a value.
		return fmt.Errorf("%s is damaged (not the JSON berth writes); move it aside and store the secrets again", path)
	}
	var version struct {
		Version int `json:"version"`
	}
	_ = json.Unmarshal(data, &version)
	if !slices.Contains(versions, version.Version) {
		return fmt.Errorf("%s has format version %d; this berth reads version %d: use the berth that wrote it", path, version.Version, versions[len(versions)-1])
	}
	return nil
}

// writeJSON replaces a file of the store atomically, mode 0600.
func (s *Store) writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.ReplaceFile(path, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.dir)
}

// Update is a read-modify-write of one name under the store's lock, for
// credentials that change as they are used (sign-in tokens, whose refresh
// token the server rotates): f gets the value stored now (had false when
// there is none) and returns the new value, or remove to forget the name,
// or keep (value "" and remove false) to leave it as it is. Two processes
// updating at once run one after the other, each seeing the other's
// result, so a rotated value is never lost. A new value goes to backend b
// as with Set (b empty: the keychain, else the file), bound to bindings.
func (s *Store) Update(ctx context.Context, name string, b Backend, bindings []Binding, f func(old string, had bool) (value string, remove bool, err error)) error {
	if err := CheckName(name); err != nil {
		return err
	}
	bound, err := checkBindings(bindings)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, _, err := s.Get(ctx, name)
	had := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	value, remove, err := f(old, had)
	if err != nil {
		return err
	}
	idx, err := s.readIndex()
	if err != nil {
		return err
	}
	rec, inIndex := idx.Secrets[name]
	if remove {
		if !inIndex {
			return nil
		}
		delete(idx.Secrets, name)
		if err := s.writeJSON(s.indexFile(), idx); err != nil {
			return err
		}
		return s.removeValue(ctx, name, rec.Backend)
	}
	if value == "" {
		return nil
	}
	if len(value) > MaxValueSize || strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("the new value of %s is larger than %d bytes or holds a NUL byte; nothing was stored", name, MaxValueSize)
	}
	nb := b
	if b == "" || b == Keychain {
		_, err := s.keychain(ctx, func() (string, error) { return "", keyring.Set(s.service, name, value) })
		switch {
		case err == nil:
			nb = Keychain
		case b == Keychain:
			return &KeychainError{Name: name, Size: len(value), TooBig: errors.Is(err, keyring.ErrSetDataTooBig), Err: err}
		default:
			nb = File
		}
	}
	if nb == File {
		vals, err := s.readValues()
		if err != nil {
			return err
		}
		vals.Values[name] = value
		if err := s.writeJSON(s.ValuesFile(), vals); err != nil {
			return err
		}
	}
	idx.Secrets[name] = indexRec{Backend: nb, Updated: time.Now().UTC().Truncate(time.Second), Plugins: bound}
	if err := s.writeJSON(s.indexFile(), idx); err != nil {
		return err
	}
	if inIndex && rec.Backend != nb {
		return s.removeValue(ctx, name, rec.Backend)
	}
	return nil
}
