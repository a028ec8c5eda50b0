package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/Masterminds/semver/v3"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/strictjson"
	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// File is the name of the lock in a workspace.
const File = "berth.lock"

// FormatVersion is the version of the berth.lock format.
const FormatVersion = 1

// MaxSize is the largest berth.lock berth reads (4 MiB).
const MaxSize = 4 << 20

// Lock is berth.lock, lockVersion 1: a workspace's declared plugins,
// meant to be committed. Field names, nesting and meaning are a contract:
// schemas/lock.schema.json describes exactly these types, and a test
// fails when the two drift. The lock drives installs, so it is read
// strictly: any unknown field or bad value is an error.
type Lock struct {
	LockVersion int `json:"lockVersion"`
	// Catalogs say where each catalog the plugins are resolved from
	// lives, and its root pin, so a teammate can add it (berth sync
	// --add-catalog NAME, or a confirmation on a terminal). A lock
	// written before berth recorded them has none; sync then says what
	// is missing.
	Catalogs []CatalogSource `json:"catalogs,omitempty"`
	Plugins  []Plugin        `json:"plugins"`
}

// CatalogSource is where a catalog lives, as the operator who wrote the
// lock added it: its canonical source (marketplace.Source.String) and the
// sha256 of the root it was pinned with ("sha256:<hex>",
// marketplace.CatalogInfo.RootPin). A lock may come from a stranger's
// repository: berth shows both and adds the catalog only when the
// operator says so, and never replaces a catalog of that name.
type CatalogSource struct {
	Name string `json:"name"`
	// Source is "" for a catalog added from a source a lock does not
	// record (a local directory): only an https:// source is written,
	// since a path names the writer's machine and no teammate's berth
	// adds it; the catalog is then added by hand.
	Source  string `json:"source,omitempty"`
	RootPin string `json:"rootPin"`
}

// Recordable reports whether berth writes source into a lock: only an
// https:// source, the only kind a teammate's sync adds.
func Recordable(source string) bool {
	return (&CatalogSource{Source: source}).CheckAddable() == nil
}

// MaxSourceLen is the longest catalog source a lock may name.
const MaxSourceLen = 2048

// Plugin pins one plugin: the exact bundle and where it was resolved.
type Plugin struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Constraint is what the user asked for (install NAME@CONSTRAINT);
	// "" means any version.
	Constraint string  `json:"constraint,omitempty"`
	Signer     Signer  `json:"signer"`
	Catalog    Catalog `json:"catalog"`
}

// SignerBuiltin is the signer kind of a plugin from berth's built-in
// catalog: nobody signs it; the built-in catalog of the berth binary pins
// its digest.
const SignerBuiltin trust.SignerKind = "builtin"

// SourceBuiltin is Catalog.Source of a plugin from berth's built-in
// catalog (docs/marketplace.md, "The built-in catalog").
const SourceBuiltin = "builtin"

// IsBuiltin reports whether p comes from berth's built-in catalog: sync
// installs it from the built-in catalog of the berth that runs it, and
// only when that catalog holds the same version with the same digest.
func (p *Plugin) IsBuiltin() bool { return p.Catalog.Source == SourceBuiltin }

// MatchesRecord reports whether a trust record is what p locks: the
// locked signer for a catalog plugin; for a built-in one, a record that
// berth's built-in catalog installed (source builtin:NAME, unsigned).
func (p *Plugin) MatchesRecord(r *store.Record) bool {
	if p.IsBuiltin() {
		return IsBuiltinRecord(r)
	}
	return p.Signer.Matches(r.Signer)
}

// IsBuiltinRecord reports whether r was installed from berth's built-in
// catalog.
func IsBuiltinRecord(r *store.Record) bool {
	return r.Catalog == nil && r.Signer == nil && r.Source == "builtin:"+r.Name
}

// Signer is the signer of the locked bundle: a key fingerprint, or a
// certificate identity.
type Signer struct {
	Kind        trust.SignerKind `json:"kind"`
	Fingerprint string           `json:"fingerprint,omitempty"`
	Issuer      string           `json:"issuer,omitempty"`
	SAN         string           `json:"san,omitempty"`
}

// Catalog is the catalog a plugin was resolved from: its name, the key
// IDs of its root role, and the targets version berth had verified. A
// catalog now older than that is a rollback.
//
// A plugin from berth's built-in catalog has instead Name "builtin",
// Source "builtin" and BerthVersion, the berth whose built-in catalog it
// came from (informative: the digest binds it), and no root keys or
// targets version.
type Catalog struct {
	Name           string   `json:"name"`
	Source         string   `json:"source,omitempty"`
	BerthVersion   string   `json:"berthVersion,omitempty"`
	RootKeyIDs     []string `json:"rootKeyIDs,omitempty"`
	TargetsVersion int64    `json:"targetsVersion,omitempty"`
}

// SignerOf returns the lock's form of a signer reference.
func SignerOf(ref *store.SignerRef) Signer {
	if ref.Kind == trust.KindKey {
		return Signer{Kind: trust.KindKey, Fingerprint: ref.Fingerprint}
	}
	return Signer{Kind: trust.KindIdentity, Issuer: ref.Issuer, SAN: ref.SAN}
}

// Matches reports whether a verified signer is the locked one.
func (s Signer) Matches(ref *store.SignerRef) bool { return s.catalogSigner().Matches(ref) }

// catalogSigner is s in the catalog's terms, which name a signer the same
// way.
func (s Signer) catalogSigner() *catalog.Signer {
	return &catalog.Signer{Kind: s.Kind, Fingerprint: s.Fingerprint, Issuer: s.Issuer, SAN: s.SAN}
}

// Pin is what marketplace.Cache.Install takes to install exactly p.
func (p *Plugin) Pin() *marketplace.Pin {
	return &marketplace.Pin{Version: p.Version, Digest: p.Digest, Constraint: p.Constraint, Signer: *p.Signer.catalogSigner()}
}

// ErrInvalid marks a berth.lock that cannot be used.
var ErrInvalid = errors.New("invalid berth.lock")

// Parse decodes and checks a berth.lock strictly: every problem is
// reported, joined, and wraps ErrInvalid.
func Parse(data []byte) (*Lock, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalid, len(data), MaxSize)
	}
	l := &Lock{}
	// Strict, but null stays the zero value (as encoding/json reads it);
	// a key given twice, or twice but for letter case, is refused.
	if ps := strictjson.Decode(data, l, strictjson.Options{FoldCase: true, Nulls: strictjson.NullAnywhere}); len(ps) > 0 {
		if len(ps) == 1 && ps[0].Kind == strictjson.Trailing {
			return nil, fmt.Errorf("%w: data after the JSON object", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: %s; the lock is written by berth: restore it from version control", ErrInvalid, &strictjson.Error{Problems: ps})
	}
	if l.LockVersion != FormatVersion {
		return nil, fmt.Errorf("%w: lockVersion is %d, and this berth reads %d; upgrade berth if the lock is newer", ErrInvalid, l.LockVersion, FormatVersion)
	}
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("plugins[%d]: %s", i, fmt.Sprintf(format, args...)))
	}
	errs = append(errs, checkCatalogs(l)...)
	seen := map[string]bool{}
	for i, p := range l.Plugins {
		if err := store.CheckRef(p.Name, p.Version); err != nil || p.Version == "" {
			bad(i, "name %q and version %q must be a plugin name and a strict semver version", p.Name, p.Version)
		}
		if seen[p.Name] {
			bad(i, "%s is locked twice; keep one entry", p.Name)
		}
		seen[p.Name] = true
		if _, err := store.ParseDigest(p.Digest); err != nil {
			bad(i, "%v", err)
		}
		if p.Constraint != "" {
			if _, err := semver.NewConstraint(p.Constraint); err != nil {
				bad(i, "constraint %q is not a semver constraint", p.Constraint)
			}
		}
		if p.Catalog.Source != "" || p.Signer.Kind == SignerBuiltin {
			for _, e := range checkBuiltinPlugin(&p) {
				bad(i, "%s", e)
			}
			continue
		}
		if p.Catalog.BerthVersion != "" {
			bad(i, "catalog.berthVersion is only for a plugin of berth's built-in catalog (catalog.source %q)", SourceBuiltin)
		}
		switch p.Signer.Kind {
		case trust.KindKey:
			if !textio.IsSHA256(p.Signer.Fingerprint) || p.Signer.Issuer != "" || p.Signer.SAN != "" {
				bad(i, "a key signer has exactly a fingerprint sha256:<64 hex>")
			}
		case trust.KindIdentity:
			if p.Signer.Issuer == "" || p.Signer.SAN == "" || p.Signer.Fingerprint != "" {
				bad(i, "an identity signer has exactly an issuer and a san")
			}
		default:
			bad(i, "signer kind %q: write key or identity", p.Signer.Kind)
		}
		if err := marketplace.CheckName(p.Catalog.Name); err != nil {
			bad(i, "catalog: %v", err)
		}
		if len(p.Catalog.RootKeyIDs) == 0 {
			bad(i, "catalog.rootKeyIDs is empty")
		}
		for _, id := range p.Catalog.RootKeyIDs {
			if len(id) != 64 || !isLowerHex(id) {
				bad(i, "catalog.rootKeyIDs: %q is not a TUF key ID (64 hex digits)", id)
			}
		}
		if p.Catalog.TargetsVersion < 1 {
			bad(i, "catalog.targetsVersion must be 1 or more")
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n  %w", ErrInvalid, errors.Join(errs...))
	}
	if l.Plugins == nil {
		l.Plugins = []Plugin{}
	}
	return l, nil
}

// checkBuiltinPlugin checks a plugin of berth's built-in catalog: catalog
// name and source builtin, a printable berthVersion, signer kind builtin
// and nothing else.
func checkBuiltinPlugin(p *Plugin) []string {
	var errs []string
	if p.Catalog.Source != SourceBuiltin {
		errs = append(errs, fmt.Sprintf("catalog.source %q: the only source a lock names is %q (berth's built-in catalog); a catalog's source is in the catalogs section", p.Catalog.Source, SourceBuiltin))
	}
	if p.Catalog.Name != SourceBuiltin {
		errs = append(errs, fmt.Sprintf("a plugin of berth's built-in catalog has catalog.name %q, not %q", SourceBuiltin, p.Catalog.Name))
	}
	if p.Signer != (Signer{Kind: SignerBuiltin}) {
		errs = append(errs, fmt.Sprintf("a plugin of berth's built-in catalog has exactly the signer {\"kind\": %q}", SignerBuiltin))
	}
	if len(p.Catalog.RootKeyIDs) > 0 || p.Catalog.TargetsVersion != 0 {
		errs = append(errs, "a plugin of berth's built-in catalog has no catalog.rootKeyIDs or catalog.targetsVersion")
	}
	if v := p.Catalog.BerthVersion; v == "" || len(v) > 64 || strings.IndexFunc(v, func(r rune) bool { return r <= 0x20 || r >= 0x7f }) >= 0 {
		errs = append(errs, fmt.Sprintf("catalog.berthVersion %q must be the berth version whose built-in catalog it came from (printable, at most 64 bytes)", v))
	}
	return errs
}

// checkCatalogs checks the catalogs section: each a catalog name given
// once, a printable source of bounded length (or none), a root pin
// sha256:<64 lower hex>, and named by some plugin.
func checkCatalogs(l *Lock) []error {
	var errs []error
	used := usedCatalogs(l)
	seen := map[string]bool{}
	for i, c := range l.Catalogs {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("catalogs[%d]: %s", i, fmt.Sprintf(format, args...)))
		}
		if err := marketplace.CheckName(c.Name); err != nil {
			bad("%v", err)
		}
		if seen[c.Name] {
			bad("catalog %q is listed twice; keep one entry", c.Name)
		}
		seen[c.Name] = true
		if !used[c.Name] {
			bad("no plugin is resolved from catalog %q; remove the entry", c.Name)
		}
		switch {
		case len(c.Source) > MaxSourceLen:
			bad("source is %d bytes, over the limit of %d", len(c.Source), MaxSourceLen)
		case strings.IndexFunc(c.Source, func(r rune) bool { return r < 0x20 || r == 0x7f || !unicode.IsPrint(r) }) >= 0 || !utf8.ValidString(c.Source):
			bad("source %q has a control or unprintable character", c.Source)
		}
		if !strings.HasPrefix(c.RootPin, "sha256:") || len(c.RootPin) != 71 || !isLowerHex(c.RootPin[7:]) {
			bad("rootPin %q is not sha256:<64 lower-case hex digits>", c.RootPin)
		}
	}
	return errs
}

// Catalog returns where the lock says catalog name lives, or nil (a lock
// written before berth recorded it).
func (l *Lock) Catalog(name string) *CatalogSource {
	for i := range l.Catalogs {
		if l.Catalogs[i].Name == name {
			return &l.Catalogs[i]
		}
	}
	return nil
}

// SetCatalog adds or replaces the entry of c.Name.
func (l *Lock) SetCatalog(c CatalogSource) {
	if old := l.Catalog(c.Name); old != nil {
		*old = c
		return
	}
	l.Catalogs = append(l.Catalogs, c)
}

// usedCatalogs are the names of the catalogs l's plugins are resolved
// from; the built-in catalog is not one (it lives in berth).
func usedCatalogs(l *Lock) map[string]bool {
	used := map[string]bool{}
	for i := range l.Plugins {
		if !l.Plugins[i].IsBuiltin() {
			used[l.Plugins[i].Catalog.Name] = true
		}
	}
	return used
}

// PruneCatalogs removes the catalog entries no plugin is resolved from.
func (l *Lock) PruneCatalogs() {
	used := usedCatalogs(l)
	l.Catalogs = slices.DeleteFunc(l.Catalogs, func(c CatalogSource) bool { return !used[c.Name] })
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Plugin returns the locked entry of name.
func (l *Lock) Plugin(name string) (Plugin, bool) {
	for _, p := range l.Plugins {
		if p.Name == name {
			return p, true
		}
	}
	return Plugin{}, false
}

// Set adds or replaces the entry of p.Name.
func (l *Lock) Set(p Plugin) {
	for i := range l.Plugins {
		if l.Plugins[i].Name == p.Name {
			l.Plugins[i] = p
			return
		}
	}
	l.Plugins = append(l.Plugins, p)
}

// Marshal returns the lock as indented JSON, plugins sorted by name and
// key IDs sorted, so a lock diffs well in version control.
func (l *Lock) Marshal() []byte {
	c := Lock{LockVersion: FormatVersion, Plugins: append([]Plugin{}, l.Plugins...), Catalogs: append([]CatalogSource(nil), l.Catalogs...)}
	sort.Slice(c.Plugins, func(i, j int) bool { return c.Plugins[i].Name < c.Plugins[j].Name })
	sort.Slice(c.Catalogs, func(i, j int) bool { return c.Catalogs[i].Name < c.Catalogs[j].Name })
	for i := range c.Plugins {
		c.Plugins[i].Catalog.RootKeyIDs = slices.Sorted(slices.Values(c.Plugins[i].Catalog.RootKeyIDs))
	}
	return textio.MustJSON(c)
}

// Read reads DIR/berth.lock of a workspace. A missing lock returns
// (nil, nil). A lock that is not a regular file (a FIFO, which would block
// the read forever, or a device) is refused at once with the special-file
// rule (*fsx.NotRegularError).
func Read(workspace string) (*Lock, error) {
	p := filepath.Join(workspace, File)
	f, err := fsx.OpenRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := fsx.ReadAll(f, p, MaxSize)
	if err != nil {
		return nil, err
	}
	l, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return l, nil
}

// Write writes DIR/berth.lock atomically (mode 0644: it is committed).
// A lock that Parse would refuse is not written.
func Write(workspace string, l *Lock) error {
	data := l.Marshal()
	if _, err := Parse(data); err != nil {
		return fmt.Errorf("refusing to write %s: %w", filepath.Join(workspace, File), err)
	}
	return atomicfile.WriteFile(filepath.Join(workspace, File), data, 0o644)
}

func signerString(s Signer) string { return s.catalogSigner().String() }

// Entry is the lock's entry for a trust record made by Install.
func Entry(rec *store.Record) (Plugin, error) {
	if IsBuiltinRecord(rec) {
		return builtinEntry(rec)
	}
	if rec.Catalog == nil && rec.Unsigned {
		return Plugin{}, fmt.Errorf("%s was trusted unsigned (from %q: an unsigned catalog's entry, or trusted by hand with --allow-unsigned), not installed from a signed catalog or berth's built-in catalog, so berth.lock cannot pin who vouches for it; install it from a signed catalog (berth install %s --catalog NAME), or disable it (berth disable %s)", rec.ID(), rec.Source, rec.Name, rec.Name)
	}
	if rec.Catalog == nil {
		return Plugin{}, fmt.Errorf("%s was trusted by hand (berth trust), not installed from a catalog, so berth.lock cannot pin where it comes from; install it with berth install %s, or disable it", rec.ID(), rec.Name)
	}
	if rec.Signer == nil {
		return Plugin{}, fmt.Errorf("%s is trusted unsigned, and berth.lock pins a signer", rec.ID())
	}
	return Plugin{
		Name:       rec.Name,
		Version:    rec.Version,
		Digest:     rec.Digest,
		Constraint: rec.Catalog.Constraint,
		Signer:     SignerOf(rec.Signer),
		Catalog:    Catalog{Name: rec.Catalog.Name, RootKeyIDs: append([]string(nil), rec.Catalog.RootKeyIDs...), TargetsVersion: rec.Catalog.TargetsVersion},
	}, nil
}
