package marketplace

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/config"
	"github.com/theupdateframework/go-tuf/v2/metadata/trustedmetadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/updater"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/marketplace/builtin"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
)

// Cache is the operator's verified copy of every catalog they added, in
// one directory ($BERTH_HOME/catalogs):
//
//	.lock                 serializes every change to the cache
//	NAME/state.json       the source, the pinned root, the current copy
//	NAME/v-<id>/          one verified copy: root.json, timestamp.json,
//	                      snapshot.json, targets.json, catalog.json and
//	                      index.json (what search reads)
//
// A refresh writes a new copy beside the current one and then replaces
// state.json, so a reader sees the old copy or the new one, never a mix;
// the copy before the current one is kept for readers still on it. The
// metadata of the current copy is the rollback baseline of the next
// refresh. Readers (search, show) take no lock and never write.
//
// A Cache is safe for concurrent use by goroutines and processes.
type Cache struct {
	dir string
	o   CacheOptions
}

// CacheOptions tune a Cache. A nil *CacheOptions means the defaults.
type CacheOptions struct {
	// Source tunes how sources are reached.
	Source SourceOptions
	// Now is the clock for expiry and staleness; nil means time.Now.
	Now func() time.Time
	// RegistryMaxPages bounds the pages of one MCP Registry listing; 0
	// means DefaultRegistryMaxPages.
	RegistryMaxPages int
	// RegistryMaxBytes bounds what berth keeps of one MCP Registry
	// listing; 0 means foreign.MaxRegistryListing (64 MiB).
	RegistryMaxBytes int64
}

// OpenCache returns the cache in dir; it creates nothing until a change.
func OpenCache(dir string, opts *CacheOptions) *Cache {
	c := &Cache{dir: dir}
	if opts != nil {
		c.o = *opts
	}
	if c.o.Now == nil {
		c.o.Now = time.Now
	}
	return c
}

// state is NAME/state.json.
type state struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Mirror is where every update reads the catalog first (a source as
	// ParseSource reads it); "" for none. Source stays the canonical
	// source, which berth.lock records.
	Mirror string `json:"mirror,omitempty"`
	// Kind is "" for a TUF catalog, KindRegistry or KindClaudeMarketplace
	// for an unsigned source (its copy holds entries.json, no metadata).
	Kind string `json:"kind,omitempty"`
	// RootPin is "sha256:<hex>" of the root the operator pinned at add.
	RootPin string    `json:"rootPin"`
	AddedAt time.Time `json:"addedAt"`
	// Current is the directory of the current verified copy.
	Current string `json:"current"`
	// Previous is the copy before it, kept for readers still on it.
	Previous  string    `json:"previous,omitempty"`
	CheckedAt time.Time `json:"checkedAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Info      Info      `json:"info"`
	// OCIIndex is, for a catalog in an OCI registry, the digest of the
	// index the last update read; install reads bundles through it.
	OCIIndex string `json:"ociIndex,omitempty"`
}

// Info describes the verified copy of a catalog.
type Info struct {
	RootVersion      int64     `json:"rootVersion"`
	RootKeyIDs       []string  `json:"rootKeyIDs"`
	TimestampVersion int64     `json:"timestampVersion"`
	SnapshotVersion  int64     `json:"snapshotVersion"`
	TargetsVersion   int64     `json:"targetsVersion"`
	TimestampExpires time.Time `json:"timestampExpires"`
	SnapshotExpires  time.Time `json:"snapshotExpires"`
	TargetsExpires   time.Time `json:"targetsExpires"`
	RootExpires      time.Time `json:"rootExpires"`
	Plugins          int       `json:"plugins"`
	Problems         int       `json:"problems"`
}

// Expires is when the verified copy stops being fresh: the earliest expiry
// of its metadata.
func (i *Info) Expires() time.Time {
	t := i.TimestampExpires
	for _, x := range []time.Time{i.SnapshotExpires, i.TargetsExpires, i.RootExpires} {
		if x.Before(t) {
			t = x
		}
	}
	return t
}

// CatalogInfo is one catalog of the cache, as List and Refresh report it.
type CatalogInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Mirror is where updates read the catalog first; "" for none.
	Mirror    string    `json:"mirror,omitempty"`
	RootPin   string    `json:"rootPin"`
	AddedAt   time.Time `json:"addedAt"`
	CheckedAt time.Time `json:"checkedAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Info
	// Stale is true when the copy is past its expiry: browse still
	// answers from it, install refuses it. An unsigned source has no
	// expiry and is never stale.
	Stale bool `json:"stale"`
	// Kind is KindTUF, KindRegistry or KindClaudeMarketplace.
	Kind string `json:"kind"`
	// Unsigned is true for a registry or marketplace.json source: nobody
	// signed what it lists, and berth installs its entries only by a
	// digest the operator pins.
	Unsigned bool `json:"unsigned"`
}

func (c *Cache) info(st *state) *CatalogInfo {
	ci := &CatalogInfo{Name: st.Name, Source: st.Source, Mirror: st.Mirror, RootPin: st.RootPin, AddedAt: st.AddedAt, CheckedAt: st.CheckedAt, UpdatedAt: st.UpdatedAt, Info: st.Info}
	ci.Kind, ci.Unsigned = st.kind(), st.Kind != ""
	ci.Stale = !ci.Unsigned && c.o.Now().After(st.Info.Expires())
	return ci
}

// RootPin is how the operator pins a catalog's root of trust: the root
// file itself, or the sha256 of the catalog's 1.root.json. berth never
// trusts a root on first use without one.
type RootPin struct {
	// Root is the content of a root.json the operator got from the curator.
	Root []byte
	// SHA256 is the hex sha256 of the catalog's 1.root.json.
	SHA256 string
}

// ErrCatalogExists and ErrNoCatalog are returned by Add and by the
// commands that name a catalog.
var (
	ErrCatalogExists = errors.New("catalog exists")
	ErrNoCatalog     = errors.New("no such catalog")
)

// CheckName checks a catalog name given on a command line.
func CheckName(name string) error {
	if !bundle.IsValidName(name) {
		return fmt.Errorf("%q is not a catalog name: lower-case letters, digits and '-', up to 64 characters", name)
	}
	return nil
}

// Add adds the catalog name served at src, with its root pinned by pin,
// and runs a full TUF update; nothing is kept unless it verifies. The
// result has Changed true, New the verified catalog (Old nil) and
// Problems the entries it skipped.
func (c *Cache) Add(ctx context.Context, name string, src *Source, pin RootPin) (*RefreshResult, error) {
	return c.AddMirrored(ctx, name, src, nil, pin)
}

// AddMirrored is Add with a mirror: every update, this first one too,
// reads the catalog from mirror first and from src only when the mirror
// cannot be reached (a NetworkError). What the mirror serves is verified
// as what src serves is, against the same pinned root: a refusal of it is
// a refusal. src stays the catalog's canonical source. A nil mirror is
// Add.
func (c *Cache) AddMirrored(ctx context.Context, name string, src, mirror *Source, pin RootPin) (*RefreshResult, error) {
	if (pin.Root == nil) == (pin.SHA256 == "") {
		panic("marketplace: RootPin needs exactly one of Root and SHA256")
	}
	unlock, err := c.lockNew(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	root := pin.Root
	if root == nil {
		want := strings.ToLower(strings.TrimPrefix(pin.SHA256, "sha256:"))
		if !textio.IsSHA256("sha256:" + want) {
			return nil, fmt.Errorf("the pinned sha256 %q is not 64 hex digits; berth catalog init printed the sha256 of 1.root.json", pin.SHA256)
		}
		var err error
		if root, err = c.readFirstRoot(ctx, name, src, mirror, want); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(root)
	tmp, err := os.MkdirTemp(c.dir, ".add-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	st := &state{Name: name, Source: src.String(), RootPin: "sha256:" + hex.EncodeToString(sum[:]), AddedAt: c.o.Now().UTC()}
	if mirror != nil {
		st.Mirror = mirror.String()
	}
	out, err := c.update(ctx, st, src, tmp, nil, root)
	if err != nil {
		return nil, err
	}
	if err := c.commitAdd(tmp, name, st); err != nil {
		return nil, err
	}
	return &RefreshResult{CatalogInfo: c.info(st), Changed: true, New: out.catalog, Problems: out.problems, MirrorFailure: out.mirrorFailure}, nil
}

// readFirstRoot reads 1.root.json, from the mirror first when there is
// one, and checks it against the pinned sha256 want.
func (c *Cache) readFirstRoot(ctx context.Context, name string, src, mirror *Source, want string) ([]byte, error) {
	read := func(s *Source) ([]byte, error) {
		rctx, cancel := c.requestContext(ctx)
		defer cancel()
		data, err := readAll(rctx, s.opener(&c.o.Source), "1.root.json", 512000, func(n int64) error {
			return &VerifyError{Catalog: name, Kind: KindMalformed, File: "1.root.json", Detail: fmt.Sprintf("it is larger than %d bytes", n)}
		})
		if err != nil {
			return nil, classify(name, "1.root.json", err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, &VerifyError{Catalog: name, Kind: KindRootPin, File: "1.root.json", Detail: fmt.Sprintf("the source's 1.root.json has sha256 %s, but you pinned %s", got, want)}
		}
		return data, nil
	}
	if mirror != nil {
		data, err := read(mirror)
		if err == nil || !errors.Is(err, ErrNetwork) || ctx.Err() != nil {
			return data, fromMirror(err, mirror.String())
		}
	}
	return read(src)
}

// RefreshResult is what a refresh found.
type RefreshResult struct {
	*CatalogInfo
	// Changed is true when the verified metadata changed.
	Changed bool `json:"changed"`
	// Old and New are the catalog before and after (equal when nothing
	// changed); a caller compares them for revocations.
	Old, New *catalog.Catalog `json:"-"`
	// Problems are the entries of the new catalog that were skipped.
	Problems []*catalog.Problem `json:"problems,omitempty"`
	// SummaryChanges are the published versions whose review summary of
	// what they may do this refresh found changed.
	SummaryChanges []SummaryChange `json:"summaryChanges,omitempty"`
	// MirrorFailure, for a catalog with a mirror, is why the mirror could
	// not be reached, when the update read the canonical source instead;
	// "" when the mirror answered (or there is none).
	MirrorFailure string `json:"mirrorFailure,omitempty"`
}

// Refresh runs a full TUF update of the catalog name against its source:
// root rotations, timestamp, snapshot, targets and the catalog target,
// with every check (rollback, freeze, mix-and-match, signatures,
// lengths and hashes) against the last verified copy. When nothing
// changed, it downloads only the timestamp (and probes for a next root).
// A refusal is a *VerifyError (exit 4); an unreachable source a
// NetworkError-wrapping error (exit 1). Either way the cached copy stays.
func (c *Cache) Refresh(ctx context.Context, name string) (*RefreshResult, error) {
	return c.refresh(ctx, name, false)
}

// refresh is Refresh; sourceOnly reads the catalog's source, not its
// mirror.
func (c *Cache) refresh(ctx context.Context, name string, sourceOnly bool) (*RefreshResult, error) {
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := c.readState(name)
	if err != nil {
		return nil, err
	}
	if st.Kind != "" {
		return c.refreshUnsigned(ctx, st)
	}
	src, err := recordedSource(st.Source, st.Mirror != "")
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	base := filepath.Join(c.dir, name, st.Current)
	root, err := os.ReadFile(filepath.Join(base, "root.json"))
	if err != nil {
		return nil, c.damaged(name, err)
	}
	dir := filepath.Join(c.dir, name)
	bl := &baseline{dir: base}
	mirror := st.Mirror
	if sourceOnly {
		st.Mirror = ""
	}
	out, err := c.update(ctx, st, src, dir, bl, root)
	st.Mirror = mirror
	if err != nil {
		return nil, err
	}
	if err := writeState(dir, st); err != nil {
		return nil, err
	}
	if out.changed {
		c.prune(dir, st)
	}
	res := &RefreshResult{CatalogInfo: c.info(st), Changed: out.changed, Old: bl.catalog, New: out.catalog, Problems: out.problems, MirrorFailure: out.mirrorFailure}
	if out.changed {
		res.SummaryChanges = summaryChangesOf(bl.catalog, out.catalog)
	}
	return res, nil
}

// baseline is the last verified copy a refresh starts from; catalog is
// read only when something changed.
type baseline struct {
	dir     string
	catalog *catalog.Catalog
}

type updateOutcome struct {
	changed  bool
	catalog  *catalog.Catalog
	problems []*catalog.Problem
	// mirrorFailure is why the mirror could not be reached, when the
	// update read the canonical source instead.
	mirrorFailure string
}

// update runs the TUF client workflow with go-tuf's Updater and, when the
// verified metadata changed, writes a new copy into parent and points st
// at it (st is written by the caller).
func (c *Cache) update(ctx context.Context, st *state, src *Source, parent string, base *baseline, trustedRoot []byte) (*updateOutcome, error) {
	out, err := c.updateMirrored(ctx, st, src, parent, base, trustedRoot)
	var ve *VerifyError
	if base == nil && errors.As(err, &ve) {
		ve.First = true
	}
	return out, err
}

// updateMirrored runs the update against st's mirror first, when it has
// one, and against src only when the mirror cannot be reached: a mirror
// can stop serving a catalog, never change what it says.
func (c *Cache) updateMirrored(ctx context.Context, st *state, src *Source, parent string, base *baseline, trustedRoot []byte) (*updateOutcome, error) {
	if st.Mirror == "" {
		return c.update1(ctx, st, src, parent, base, trustedRoot)
	}
	m, err := recordedSource(st.Mirror, true)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: its mirror: %w", st.Name, err)
	}
	out, err := c.update1(ctx, st, m, parent, base, trustedRoot)
	if err == nil || !errors.Is(err, ErrNetwork) || ctx.Err() != nil {
		return out, fromMirror(err, st.Mirror)
	}
	out, cerr := c.update1(ctx, st, src, parent, base, trustedRoot)
	if cerr != nil {
		return nil, fmt.Errorf("%w\n(its mirror %s could not be reached either: %v)", cerr, st.Mirror, err)
	}
	out.mirrorFailure = err.Error()
	return out, nil
}

// fromMirror marks err as what the mirror at loc served.
func fromMirror(err error, loc string) error {
	if err == nil {
		return nil
	}
	var ve *VerifyError
	if errors.As(err, &ve) {
		ve.Mirror = loc
		return err
	}
	return fmt.Errorf("%w (read from the catalog's mirror %s)", err, loc)
}

func (c *Cache) update1(ctx context.Context, st *state, src *Source, parent string, base *baseline, trustedRoot []byte) (*updateOutcome, error) {
	now := c.o.Now()
	up, f, localDir, err := c.tufRefresh(ctx, st, src, parent, base, trustedRoot, now)
	if err != nil {
		return nil, err
	}
	trusted := up.GetTrustedMetadataSet()
	st.CheckedAt = now.UTC()
	ociCat := src.ociCatalog()
	if ociCat != nil {
		st.OCIIndex = ociCat.IndexDigest()
	}
	if base != nil && st.Info.RootVersion == trusted.Root.Signed.Version && st.Info.TimestampVersion == trusted.Timestamp.Signed.Version &&
		st.Info.SnapshotVersion == trusted.Snapshot.Signed.Version && st.Info.TargetsVersion == trusted.Targets[metadata.TARGETS].Signed.Version {
		// Nothing new was verified: the copy stays as it is.
		return &updateOutcome{}, nil
	}
	catData, err := fetchCatalog(st, up, f, base, localDir)
	if err != nil {
		return nil, err
	}
	cat, problems, spans, err := c.parseCatalog(st, base, catData)
	if err != nil {
		return nil, err
	}
	info := infoOf(&trusted, len(cat.Plugins), len(problems))
	out := &updateOutcome{catalog: cat, problems: problems}
	files, err := keptFiles(f, base, trustedRoot, &info)
	if err != nil {
		return nil, err
	}
	files[catalog.TargetName] = catData
	files[indexFile] = buildIndex(cat, spans).marshal()
	if problems == nil {
		problems = []*catalog.Problem{}
	}
	files[problemsFile] = textio.MustJSON(problems)
	if ociCat != nil {
		files[ociIndexFile], files[ociMetadataFile] = ociCat.Manifests()
	}
	gen := fmt.Sprintf("v-%d-%s", info.TimestampVersion, randomHex(4))
	if err := writeCopy(filepath.Join(parent, gen), files); err != nil {
		return nil, err
	}
	st.Previous, st.Current = st.Current, gen
	st.UpdatedAt = now.UTC()
	st.Info = info
	out.changed = true
	return out, nil
}

// tufRefresh runs go-tuf's Updater from the baseline (or the pinned root
// when there is none) through timestamp, snapshot and targets, at the
// time now. localDir is where the baseline's metadata is read.
func (c *Cache) tufRefresh(ctx context.Context, st *state, src *Source, parent string, base *baseline, trustedRoot []byte, now time.Time) (up *updater.Updater, f *tufFetcher, localDir string, err error) {
	f = &tufFetcher{ctx: ctx, o: src.opener(&c.o.Source), got: map[string][]byte{}, timeout: c.o.Source.RequestTimeout}
	cfg, err := config.New("catalog:/", trustedRoot)
	if err != nil {
		return nil, nil, "", err
	}
	localDir = filepath.Join(parent, ".none")
	if base != nil {
		localDir = base.dir
		src.ociBaseline(base.dir)
	}
	cfg.LocalMetadataDir = localDir
	cfg.LocalTargetsDir = localDir
	cfg.DisableLocalCache = true // berth writes the copy itself, atomically
	cfg.Fetcher = f
	cfg.TargetsMaxLength = 5 << 20
	up, err = updater.New(cfg)
	if err != nil {
		if base == nil {
			return nil, nil, "", &VerifyError{Catalog: st.Name, Kind: KindRootPin, File: "root.json", Detail: "the pinned root is not a valid, self-signed TUF root (" + stripTUFPrefix(err.Error()) + ")", Err: err}
		}
		return nil, nil, "", c.damaged(st.Name, err)
	}
	up.UnsafeSetRefTime(now.UTC())
	if err := up.Refresh(); err != nil {
		return nil, nil, "", classify(st.Name, f.last, err)
	}
	return up, f, localDir, nil
}

// fetchCatalog returns catalog.json as the verified targets describe it:
// the baseline's copy when it still matches, else downloaded (length and
// hashes checked by go-tuf).
func fetchCatalog(st *state, up *updater.Updater, f *tufFetcher, base *baseline, localDir string) ([]byte, error) {
	ti, err := up.GetTargetInfo(catalog.TargetName)
	if err != nil {
		return nil, &VerifyError{Catalog: st.Name, Kind: KindMalformed, File: "targets.json", Detail: "the signed targets list no " + catalog.TargetName + "; this is not a berth catalog", Err: err}
	}
	if ti.Length > catalog.MaxSize {
		return nil, &VerifyError{Catalog: st.Name, Kind: KindMalformed, File: catalog.TargetName, Detail: fmt.Sprintf("the catalog is %d bytes, over the limit of %d", ti.Length, catalog.MaxSize)}
	}
	if base != nil {
		if local, err := os.ReadFile(filepath.Join(base.dir, catalog.TargetName)); err == nil && ti.VerifyLengthHashes(local) == nil {
			return local, nil
		}
	}
	f.last = "targets/" + catalog.TargetName
	_, data, err := up.DownloadTarget(ti, filepath.Join(localDir, ".target"), "catalog:/targets/")
	if err != nil {
		return nil, classify(st.Name, f.last, err)
	}
	return data, nil
}

// parseCatalog parses the verified catalog.json leniently and, against
// the baseline's catalog (read into base), checks that no published
// version changed.
func (c *Cache) parseCatalog(st *state, base *baseline, catData []byte) (*catalog.Catalog, []*catalog.Problem, []catalog.Span, error) {
	cat, problems, spans, err := catalog.ParseIndexed(catData)
	if err != nil {
		return nil, nil, nil, &VerifyError{Catalog: st.Name, Kind: KindMalformed, File: catalog.TargetName, Detail: err.Error(), Err: err}
	}
	if base != nil {
		old, err := c.readCatalog(base.dir)
		if err != nil {
			return nil, nil, nil, c.damaged(st.Name, err)
		}
		base.catalog = old
		if err := checkImmutable(st.Name, old, cat); err != nil {
			return nil, nil, nil, err
		}
	}
	return cat, problems, spans, nil
}

// infoOf is what the state records of a verified update.
func infoOf(trusted *trustedmetadata.TrustedMetadata, plugins, problems int) Info {
	info := Info{
		RootVersion:      trusted.Root.Signed.Version,
		RootKeyIDs:       append([]string(nil), trusted.Root.Signed.Roles[metadata.ROOT].KeyIDs...),
		TimestampVersion: trusted.Timestamp.Signed.Version,
		SnapshotVersion:  trusted.Snapshot.Signed.Version,
		TargetsVersion:   trusted.Targets[metadata.TARGETS].Signed.Version,
		TimestampExpires: trusted.Timestamp.Signed.Expires,
		SnapshotExpires:  trusted.Snapshot.Signed.Expires,
		TargetsExpires:   trusted.Targets[metadata.TARGETS].Signed.Expires,
		RootExpires:      trusted.Root.Signed.Expires,
		Plugins:          plugins,
		Problems:         problems,
	}
	sort.Strings(info.RootKeyIDs)
	return info
}

// keptFiles collects the exact bytes of every trusted role for the new
// copy: the downloaded file when the update took a new one, the
// baseline's (or the pinned root) otherwise.
func keptFiles(f *tufFetcher, base *baseline, trustedRoot []byte, info *Info) (map[string][]byte, error) {
	files := map[string][]byte{}
	pick := func(role, fetched string, version int64) error {
		data, ok := f.got[fetched]
		if !ok || versionOf(data) != version {
			if base == nil && role == metadata.ROOT {
				data = trustedRoot
			} else if base != nil {
				var err error
				if data, err = os.ReadFile(filepath.Join(base.dir, role+".json")); err != nil {
					return err
				}
			}
		}
		if versionOf(data) != version {
			return fmt.Errorf("internal error: no %s.json of version %d to keep", role, version)
		}
		files[role+".json"] = data
		return nil
	}
	for _, x := range []struct {
		role, fetched string
		version       int64
	}{
		{metadata.ROOT, fmt.Sprintf("%d.root.json", info.RootVersion), info.RootVersion},
		{metadata.TIMESTAMP, "timestamp.json", info.TimestampVersion},
		{metadata.SNAPSHOT, fmt.Sprintf("%d.snapshot.json", info.SnapshotVersion), info.SnapshotVersion},
		{metadata.TARGETS, fmt.Sprintf("%d.targets.json", info.TargetsVersion), info.TargetsVersion},
	} {
		if err := pick(x.role, x.fetched, x.version); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// versionOf reads the signed version of a metadata file; -1 when it has none.
func versionOf(data []byte) int64 {
	var m struct {
		Signed struct {
			Version int64 `json:"version"`
		} `json:"signed"`
	}
	if json.Unmarshal(data, &m) != nil {
		return -1
	}
	return m.Signed.Version
}

// checkImmutable refuses a catalog that gives a version it listed before a
// different digest.
func checkImmutable(name string, old, cat *catalog.Catalog) error {
	for _, np := range cat.Plugins {
		op := old.Plugin(np.Name)
		if op == nil {
			continue
		}
		for _, nv := range np.Versions {
			if ov := op.Version(nv.Version); ov != nil && ov.Digest != nv.Digest {
				return &VerifyError{Catalog: name, Kind: KindVersionChanged, File: catalog.TargetName,
					Detail: fmt.Sprintf("%s %s was published with digest %s and is now listed with %s", np.Name, nv.Version, ov.Digest, nv.Digest)}
			}
		}
	}
	return nil
}

// SummaryChange is a published version whose review summary of what it
// may do (its files, servers and native tools, which install checks
// against the bundle, and the tools its curator lists) a catalog
// changed: a published version never changes, so berth reports it.
// Install and upgrade compare with the bundle itself and the tool list
// recorded at install, never with the summary alone.
type SummaryChange struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Differences are "path: it was published with X, and is now listed
	// with Y" lines.
	Differences []string `json:"differences"`
}

func (s SummaryChange) String() string {
	return fmt.Sprintf("the catalog changed what it says %s@%s (%s), a version it had published, may do:\n  %s\na published version never changes: berth compares installs and upgrades with the bundle itself (and the tool list recorded at install), never with this summary; tell the curator",
		s.Plugin, s.Version, s.Digest, strings.Join(s.Differences, "\n  "))
}

// summaryChangesOf lists the versions old listed whose review summary
// cat changes.
func summaryChangesOf(old, cat *catalog.Catalog) []SummaryChange {
	if old == nil || cat == nil {
		return nil
	}
	var out []SummaryChange
	for _, np := range cat.Plugins {
		op := old.Plugin(np.Name)
		if op == nil {
			continue
		}
		for _, nv := range np.Versions {
			ov := op.Version(nv.Version)
			if ov == nil || ov.Digest != nv.Digest {
				continue
			}
			if diffs := summaryChanges(&ov.Summary, &nv.Summary); len(diffs) > 0 {
				out = append(out, SummaryChange{Plugin: np.Name, Version: nv.Version, Digest: nv.Digest, Differences: diffs})
			}
		}
	}
	return out
}

// writeCopy writes a verified copy into a new directory, every file
// synced, the directory last.
func writeCopy(dir string, files map[string][]byte) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		if err := atomicfile.WriteNew(filepath.Join(dir, name), data, 0o600); err != nil {
			os.RemoveAll(dir)
			return err
		}
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		os.RemoveAll(dir)
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(dir))
}

// writeState writes st as the state.json of the catalog directory dir.
func writeState(dir string, st *state) error {
	return writePrivate(filepath.Join(dir, "state.json"), textio.MustJSON(st))
}

// commitAdd writes st into tmp, a new catalog's directory made in c.dir,
// and renames it into place as the catalog name: a crash leaves the
// catalog absent or whole.
func (c *Cache) commitAdd(tmp, name string, st *state) error {
	if err := writeState(tmp, st); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, name)); err != nil {
		return err
	}
	atomicfile.SyncDir(c.dir)
	return nil
}

func writePrivate(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o600)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// prune removes copies that are neither current nor previous, and
// leftovers of interrupted adds.
func (c *Cache) prune(dir string, st *state) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "v-") && n != st.Current && n != st.Previous {
			os.RemoveAll(filepath.Join(dir, n))
		}
	}
}

// Remove deletes the catalog name and its verified copy.
func (c *Cache) Remove(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	dir := filepath.Join(c.dir, name)
	if _, err := os.Lstat(filepath.Join(dir, "state.json")); err != nil {
		return fmt.Errorf("%w: there is no catalog %s (berth marketplace list shows them)", ErrNoCatalog, name)
	}
	if name == builtin.Name {
		// Removed by the operator, it stays removed: berth does not put
		// the built-in catalog back by itself, and a catalog they add
		// under the name is theirs.
		if err := c.markBuiltinRemoved(); err != nil {
			return err
		}
	}
	gone := filepath.Join(c.dir, ".removed-"+name+"-"+randomHex(4))
	if err := os.Rename(dir, gone); err != nil {
		return err
	}
	atomicfile.SyncDir(c.dir)
	return os.RemoveAll(gone)
}

// Names lists the catalogs, sorted.
func (c *Cache) Names() ([]string, error) {
	entries, err := os.ReadDir(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && bundle.IsValidName(e.Name()) {
			if _, err := os.Lstat(filepath.Join(c.dir, e.Name(), "state.json")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// List describes every catalog, from the cache only.
func (c *Cache) List() ([]*CatalogInfo, error) {
	names, err := c.Names()
	if err != nil {
		return nil, err
	}
	out := []*CatalogInfo{}
	for _, n := range names {
		st, err := c.readState(n)
		if err != nil {
			return nil, err
		}
		out = append(out, c.info(st))
	}
	return out, nil
}

// NoCatalogError is a catalog Name that the cache does not hold; Add
// adds it, with its root pinned. It is ErrNoCatalog (errors.Is).
type NoCatalogError struct {
	Name string
}

func (e *NoCatalogError) Error() string {
	return fmt.Sprintf("%v: there is no catalog %s; add it (Cache.Add, with its root pinned)", ErrNoCatalog, e.Name)
}

func (e *NoCatalogError) Unwrap() error { return ErrNoCatalog }

func (c *Cache) readState(name string) (*state, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(c.dir, name, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NoCatalogError{Name: name}
	}
	if err != nil {
		return nil, err
	}
	st := &state{}
	if err := json.Unmarshal(data, st); err != nil || st.Current == "" || strings.ContainsAny(st.Current, `/\`) || st.Name != name {
		return nil, c.damaged(name, fmt.Errorf("state.json does not decode"))
	}
	return st, nil
}

func (c *Cache) damaged(name string, err error) error {
	return fmt.Errorf("the cached copy of catalog %s in %s is damaged (%v); remove it and add it again (berth marketplace remove %s, then berth marketplace add)", name, filepath.Join(c.dir, name), err, name)
}

func (c *Cache) readCatalog(dir string) (*catalog.Catalog, error) {
	data, err := os.ReadFile(filepath.Join(dir, catalog.TargetName))
	if err != nil {
		return nil, err
	}
	cat, _, err := catalog.Parse(data)
	return cat, err
}

// lockNew checks that name is a catalog name not taken yet and takes the
// cache's lock to add it.
func (c *Cache) lockNew(ctx context.Context, name string) (func(), error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(c.dir, name)); err == nil {
		unlock()
		return nil, fmt.Errorf("%w: a catalog named %s is added already; remove it first (berth marketplace remove %s) or pick another name", ErrCatalogExists, name, name)
	}
	return unlock, nil
}

func (c *Cache) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	p := filepath.Join(c.dir, ".lock")
	unlock, err := fsx.Lock(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("waiting for the catalog cache lock %s: %w", p, err)
	}
	// Under the lock, what an interrupted add or remove left is garbage.
	if entries, err := os.ReadDir(c.dir); err == nil {
		for _, e := range entries {
			if n := e.Name(); strings.HasPrefix(n, ".add-") || strings.HasPrefix(n, ".removed-") {
				os.RemoveAll(filepath.Join(c.dir, n))
			}
		}
	}
	return unlock, nil
}

func (c *Cache) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.o.Source.RequestTimeout
	if d <= 0 {
		d = 60 * time.Second
	}
	return context.WithTimeout(ctx, d)
}

// Loaded is the verified copy of one catalog, read from the cache with no
// network.
type Loaded struct {
	*CatalogInfo
	Catalog  *catalog.Catalog
	Problems []*catalog.Problem
}

// Load reads the verified copy of catalog name: the whole catalog (show
// and install use it). It never touches the network or writes.
func (c *Cache) Load(name string) (*Loaded, error) {
	for attempt := 0; ; attempt++ {
		st, err := c.readState(name)
		if err != nil {
			return nil, err
		}
		if st.Kind != "" {
			return nil, fmt.Errorf("%w: catalog %s is an unsigned %s source, which has no signed catalog to load", ErrUnsignedSource, name, st.Kind)
		}
		data, err := os.ReadFile(filepath.Join(c.dir, name, st.Current, catalog.TargetName))
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // replaced by two refreshes while we read; read again
		}
		if err != nil {
			return nil, c.damaged(name, err)
		}
		cat, ps, err := catalog.Parse(data)
		if err != nil {
			return nil, c.damaged(name, err)
		}
		return &Loaded{CatalogInfo: c.info(st), Catalog: cat, Problems: ps}, nil
	}
}

// tufFetcher is go-tuf's Fetcher over a source: it maps go-tuf's URLs
// (catalog:/<name>) to the source, bounds every read by the length go-tuf
// gives, reports a missing file as HTTP 404 (which ends the root probe),
// remembers the bytes of every file it fetched (berth keeps exactly those
// bytes) and the name of the last one (to say which file a refusal is
// about).
type tufFetcher struct {
	ctx     context.Context
	o       opener
	timeout time.Duration
	got     map[string][]byte
	last    string
}

func (f *tufFetcher) DownloadFile(u string, maxLength int64, _ time.Duration) ([]byte, error) {
	name, ok := strings.CutPrefix(u, "catalog:/")
	if !ok {
		return nil, fmt.Errorf("internal error: unexpected URL %q", u)
	}
	f.last = name
	d := f.timeout
	if d <= 0 {
		d = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(f.ctx, d)
	defer cancel()
	rc, err := f.o.open(ctx, name)
	var nf *errNotFound
	if errors.As(err, &nf) {
		return nil, &metadata.ErrDownloadHTTP{StatusCode: 404, URL: name}
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var b bytes.Buffer
	n, err := io.Copy(&b, io.LimitReader(rc, maxLength+1))
	if err != nil {
		return nil, err
	}
	if n > maxLength {
		return nil, &metadata.ErrDownloadLengthMismatch{Msg: fmt.Sprintf("%s is longer than the %d bytes it may have", name, maxLength)}
	}
	f.got[name] = b.Bytes()
	return b.Bytes(), nil
}
