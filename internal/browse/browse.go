// Package browse is berth's marketplace web page: the catalogs, their
// plugins and each plugin's disclosure, read from the verified catalog
// cache and shown in a browser. The page is served on loopback by berth
// marketplace serve (Handler, Listen) or written as a static site by berth
// marketplace export (Export).
//
// The page changes nothing: it only reads the cache (and the trust
// records, for the "installed" badges), loads nothing from any other
// origin, and says what a plugin may do in the words of berth show and
// berth review (marketplace.Showing and review.Lines word both). Every
// badge comes from berth's own checks (docs/marketplace.md, "The
// marketplace page"): "signed" from marketplace.Cache.LoadVerified,
// "matches catalog" from a trust record berth wrote after verifying the
// bundle itself.
//
// The package is internal: its output is HTML for people, whose markup
// and URLs change with the look, and its safety rests on how it is served
// (loopback only, with the Host and Origin checks), which berth's CLI
// decides. A team that hosts the page elsewhere hosts the export.
package browse

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/store"
)

// Options tune a Site. A nil *Options means the defaults.
type Options struct {
	// Resolve tunes which version install would pick (the operator's
	// settings); nil means the defaults.
	Resolve *marketplace.ResolveOptions
	// Store, when set, is read for trust records, to mark the versions
	// that are installed and whether they match the catalog.
	Store *store.Store
	// MaxResults caps the cards of one index page (default 200); the
	// export lists every plugin.
	MaxResults int
}

// Site renders the marketplace pages from a catalog cache. It is safe for
// concurrent use.
type Site struct {
	cache *marketplace.Cache
	o     Options

	// public is set on the copy Export writes without local state: no
	// trust records, no local sources, no times of this machine.
	public bool

	mu   sync.Mutex
	snap *snapshot
}

// New returns the site of the catalogs in cache.
func New(cache *marketplace.Cache, opts *Options) *Site {
	s := &Site{cache: cache}
	if opts != nil {
		s.o = *opts
	}
	if s.o.MaxResults <= 0 {
		s.o.MaxResults = 200
	}
	return s
}

// catalogView is one catalog as the pages show it.
type catalogView struct {
	Info         *marketplace.CatalogInfo
	Verification *marketplace.Verification
	Catalog      *catalog.Catalog
	Problems     []*catalog.Problem
	byName       map[string]*catalog.Plugin
}

// snapshot is every catalog read at one time.
type snapshot struct {
	key      string
	catalogs []*catalogView
	byName   map[string]*catalogView
	// listedIn names the catalogs that list each plugin.
	listedIn map[string][]string
	// records are the trust records by name@version.
	records map[string]*store.Record
	// builtin are the entries of berth's built-in catalog when the
	// cache holds it (berth marketplace list shows it as builtin).
	builtin []builtinEntry
}

// builtinEntry is an entry of the built-in catalog as the index shows
// it: the binary pins its bundle's digest and its npm package's
// integrity, so it is no less verified than a signed catalog's copy, but
// it has no TUF copy for a plugin page; berth show NAME --catalog builtin
// shows its review.
type builtinEntry struct {
	Name, Description, Version, Package string
	Tags                                []string
}

// builtinEntries are the built-in catalog's entries when infos hold the
// built-in catalog (not removed, and not a catalog of the operator's
// that took its name).
func builtinEntries(infos []*marketplace.CatalogInfo) []builtinEntry {
	var out []builtinEntry
	for _, ci := range infos {
		if ci.Name != builtin.Name || ci.Kind != marketplace.KindBuiltin {
			continue
		}
		bc, err := builtin.Load()
		if err != nil {
			return nil
		}
		for _, e := range bc.Plugins {
			out = append(out, builtinEntry{Name: e.Name, Description: e.Description, Version: e.Version, Package: e.Package, Tags: e.Tags})
		}
	}
	return out
}

// load reads the catalogs, reusing what it read before when no copy
// changed. The infos (and so staleness) are always fresh.
func (s *Site) load() (*snapshot, error) {
	all, err := s.cache.List()
	if err != nil {
		return nil, err
	}
	// The page shows the signed (TUF) catalogs, and the built-in one's
	// entries on the index: an unsigned source (an MCP Registry, a
	// marketplace.json) has no verified copy to show, and its entries are
	// browsed with berth search and berth show, which mark them unsigned.
	infos := all[:0]
	for _, ci := range all {
		if !ci.Unsigned {
			infos = append(infos, ci)
		}
	}
	var key strings.Builder
	for _, ci := range infos {
		fmt.Fprintf(&key, "%s/%d/%d/%d/%d/%d/%d;", ci.Name, ci.RootVersion, ci.TimestampVersion, ci.SnapshotVersion, ci.TargetsVersion, ci.UpdatedAt.UnixNano(), ci.CheckedAt.UnixNano())
	}
	records, err := s.records()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	base := s.snap
	if base == nil || base.key != key.String() {
		base = &snapshot{key: key.String(), listedIn: map[string][]string{}}
		for _, ci := range infos {
			l, v, err := s.cache.LoadVerified(ci.Name)
			if err != nil {
				s.mu.Unlock()
				return nil, err
			}
			cv := &catalogView{Info: l.CatalogInfo, Verification: v, Catalog: l.Catalog, Problems: l.Problems, byName: map[string]*catalog.Plugin{}}
			for _, p := range l.Catalog.Plugins {
				cv.byName[p.Name] = p
				base.listedIn[p.Name] = append(base.listedIn[p.Name], ci.Name)
			}
			base.catalogs = append(base.catalogs, cv)
		}
		s.snap = base
	}
	s.mu.Unlock()
	// The catalogs read before are shared, read-only; the infos are new.
	out := &snapshot{key: base.key, byName: map[string]*catalogView{}, listedIn: base.listedIn, records: records, builtin: builtinEntries(all)}
	for i, cv := range base.catalogs {
		c := *cv
		if i < len(infos) && infos[i].Name == c.Info.Name {
			c.Info = infos[i]
		}
		out.catalogs = append(out.catalogs, &c)
		out.byName[c.Info.Name] = &c
	}
	return out, nil
}

func (s *Site) records() (map[string]*store.Record, error) {
	out := map[string]*store.Record{}
	if s.o.Store == nil {
		return out, nil
	}
	rs, err := s.o.Store.Records()
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out[r.ID()] = r
	}
	return out, nil
}

// installed is what berth's own trust record says of one version: it is
// trusted (staged) on this machine. Whether a workspace enables it is not
// the page's to say (berth list says).
type installed struct {
	Version string
	// Matches is true when the record's digest is the catalog's and its
	// signer is one the catalog allows.
	Matches bool
	// Status is the catalog's status of the version (active,
	// deprecated, yanked, revoked) and Reason the curator's reason.
	Status, Reason string
	// Why says what differs when it does not match.
	Why       string
	Signer    string
	TrustedAt time.Time
}

// installedOf lists the versions of p that have a trust record.
func (snap *snapshot) installedOf(p *catalog.Plugin) []installed {
	var out []installed
	for _, v := range p.Versions {
		r := snap.records[p.Name+"@"+v.Version]
		if r == nil {
			continue
		}
		in := installed{Version: v.Version, TrustedAt: r.TrustedAt, Status: string(v.Status), Reason: v.Reason}
		if r.Signer != nil {
			in.Signer = r.Signer.String()
		}
		switch {
		case r.Digest != v.Digest:
			in.Why = fmt.Sprintf("the installed bundle has digest %s, the catalog lists %s", r.Digest, v.Digest)
		case r.Signer == nil:
			in.Why = "it was installed unsigned"
		default:
			allowed := false
			for _, sg := range p.Signers {
				allowed = allowed || sg.Matches(r.Signer)
			}
			if allowed {
				in.Matches = true
			} else {
				in.Why = "it is signed by " + r.Signer.String() + ", whom the catalog does not allow"
			}
		}
		out = append(out, in)
	}
	slices.Reverse(out) // highest first, as the catalog sorts versions lowest first
	return out
}

// Revoked says the catalog revoked the trusted version: it is not to be
// used, whatever its digest.
func (in *installed) Revoked() bool { return in.Status == string(catalog.StatusRevoked) }

// Badge is the version's badge text and class (ok, warn, bad).
func (in *installed) Badge() (string, string) {
	switch {
	case in.Revoked():
		return "trusted " + in.Version + " · REVOKED by the catalog", "bad"
	case !in.Matches:
		return "trusted " + in.Version + " · differs from catalog", "bad"
	case in.Status == string(catalog.StatusYanked):
		return "trusted " + in.Version + " · yanked by the catalog", "warn"
	case in.Status == string(catalog.StatusDeprecated):
		return "trusted " + in.Version + " · deprecated", "warn"
	}
	return "trusted " + in.Version + " · matches catalog", "ok"
}

// BadgeText and BadgeClass are Badge's parts, for the templates.
func (in *installed) BadgeText() string  { t, _ := in.Badge(); return t }
func (in *installed) BadgeClass() string { _, c := in.Badge(); return c }
