package marketplace

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/berth-mcp/berth/internal/atomicfile"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/foreign"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/trust"
)

// Kinds of catalog source. A TUF catalog is signed by its curator; the
// other two are read-only and unsigned: berth lists what they say, and
// installs an entry only by the exact digest the operator pins
// (docs/marketplace.md, "Unsigned sources").
const (
	KindTUF               = "tuf"
	KindRegistry          = "mcp-registry"
	KindClaudeMarketplace = "claude-marketplace"
)

// entriesFile holds the entries of an unsigned source in its copy: a JSON
// array of UnsignedPlugin, one entry a line, so the index can point at
// each.
const entriesFile = "entries.json"

// asPlugin is the entry p in the terms Resolve reads.
func asPlugin(p *foreign.UnsignedPlugin) *catalog.Plugin {
	out := &catalog.Plugin{Name: p.Name, Description: p.Description, Tier: catalog.TierCommunity}
	for _, v := range p.Versions {
		out.Versions = append(out.Versions, &catalog.Version{Version: v.Version, Status: v.Status, Reason: v.StatusMessage, Released: v.Released})
	}
	return out
}

// SourceRefusedError is an unsigned source whose answer berth refuses as
// a whole: a page that is not a registry response, pagination that does
// not end, a response over its size cap. Nothing changes. It wraps
// trust.ErrUntrusted (exit 4).
type SourceRefusedError struct {
	Catalog string
	// Location is the request or file concerned.
	Location string
	Detail   string
	// First is true when the source was being added.
	First bool
}

func (e *SourceRefusedError) Error() string {
	kept := "berth kept its cached copy and changed nothing."
	if e.First {
		kept = "Nothing was added."
	}
	return fmt.Sprintf("%v: catalog %s refused at %s: %s\n%s Check the source URL; if it is right, the source is broken or hostile: tell its operator.", trust.ErrUntrusted, e.Catalog, e.Location, e.Detail, kept)
}

func (e *SourceRefusedError) Unwrap() error { return trust.ErrUntrusted }

// unsignedList is what an unsigned source lists, before it is written.
type unsignedList struct {
	plugins  []*foreign.UnsignedPlugin
	problems []*catalog.Problem
	// spool holds a registry listing's server.json documents, which its
	// versions then leave nil (foreign.RegistryItem.TakeServer); nil for
	// a marketplace.json.
	spool *spool
	// tier is the tier the index gives every entry ("" means community);
	// tags the tags of each entry by name (the built-in catalog's).
	tier catalog.Tier
	tags map[string][]string
}

// close removes the list's spool, if any.
func (l *unsignedList) close() { l.spool.close() }

// addUnsigned adds an unsigned source of kind under name; fetch lists it.
func (c *Cache) addUnsigned(ctx context.Context, name, kind, source string) (*RefreshResult, error) {
	unlock, err := c.lockNew(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st := &state{Name: name, Source: source, Kind: kind, AddedAt: c.o.Now().UTC()}
	list, err := c.fetchUnsigned(ctx, st, nil)
	if err != nil {
		var se *SourceRefusedError
		if errors.As(err, &se) {
			se.First = true
		}
		return nil, err
	}
	defer list.close()
	tmp, err := os.MkdirTemp(c.dir, ".add-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := c.writeUnsignedCopy(tmp, st, list); err != nil {
		return nil, err
	}
	if err := c.commitAdd(tmp, name, st); err != nil {
		return nil, err
	}
	return &RefreshResult{CatalogInfo: c.info(st), Changed: true, Problems: list.problems}, nil
}

// refreshUnsigned lists an unsigned source again (under the cache lock)
// and replaces its copy when anything changed. The new copy is written
// whole into a directory of its own, and state.json points at it only
// then: a crash leaves the old copy or the new one.
func (c *Cache) refreshUnsigned(ctx context.Context, st *state) (*RefreshResult, error) {
	dir := filepath.Join(c.dir, st.Name)
	var old []*foreign.UnsignedPlugin
	var err error
	if st.Kind == KindClaudeMarketplace {
		// Only a marketplace.json needs the old entries (when berth first
		// listed each version); a registry listing is not read into memory.
		old, err = c.readUnsigned(st)
	} else {
		_, err = os.Stat(filepath.Join(c.dir, st.Name, st.Current, entriesFile))
		err = c.damagedIf(st.Name, err)
	}
	if err != nil {
		return nil, err
	}
	list, err := c.fetchUnsigned(ctx, st, old)
	if err != nil {
		return nil, err
	}
	defer list.close()
	now := c.o.Now().UTC()
	st.CheckedAt = now
	gen, err := c.writeUnsignedGen(dir, list, now)
	if err != nil {
		return nil, err
	}
	changed := !sameContent(filepath.Join(dir, st.Current, entriesFile), filepath.Join(dir, gen, entriesFile)) ||
		!sameContent(filepath.Join(dir, st.Current, problemsFile), filepath.Join(dir, gen, problemsFile))
	if changed {
		st.pointAt(gen, list, now)
	} else {
		os.RemoveAll(filepath.Join(dir, gen))
	}
	if err := writeState(dir, st); err != nil {
		return nil, err
	}
	if changed {
		c.prune(dir, st)
	}
	return &RefreshResult{CatalogInfo: c.info(st), Changed: changed, Problems: list.problems}, nil
}

// sameContent reports whether the files a and b can both be read and
// hold the same bytes.
func sameContent(a, b string) bool {
	sum := func(p string) ([]byte, bool) {
		f, err := os.Open(p)
		if err != nil {
			return nil, false
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return nil, false
		}
		return h.Sum(nil), true
	}
	x, ok1 := sum(a)
	y, ok2 := sum(b)
	return ok1 && ok2 && bytes.Equal(x, y)
}

// fetchUnsigned lists the source of st; old is the cached list (nil at
// add), which keeps the time berth first listed a marketplace.json
// version.
func (c *Cache) fetchUnsigned(ctx context.Context, st *state, old []*foreign.UnsignedPlugin) (*unsignedList, error) {
	var list *unsignedList
	var err error
	switch st.Kind {
	case KindRegistry:
		list, err = c.fetchRegistry(ctx, st.Name, st.Source)
	case KindBuiltin:
		list, err = builtinList()
	case KindClaudeMarketplace:
		list, err = c.readClaudeMarketplace(ctx, st.Name, st.Source)
		if err == nil {
			seen := map[string]time.Time{}
			for _, p := range old {
				for _, v := range p.Versions {
					seen[p.Name+"@"+v.Version] = v.Released
				}
			}
			now := c.o.Now().UTC().Truncate(time.Second)
			for _, p := range list.plugins {
				for _, v := range p.Versions {
					if t, ok := seen[p.Name+"@"+v.Version]; ok {
						v.Released = t
					} else {
						v.Released = now
					}
				}
			}
		}
	default:
		return nil, c.damaged(st.Name, fmt.Errorf("unknown source kind %q", st.Kind))
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(list.plugins, func(i, j int) bool { return list.plugins[i].Name < list.plugins[j].Name })
	return list, nil
}

// writeEntries writes the entries file path (which must not exist), one
// entry a line, as it goes: an entry's server.json documents are read
// back from the list's spool one entry at a time. It returns where each
// entry is in the file.
func writeEntries(path string, list *unsignedList) (_ []catalog.Span, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing %s: %w", path, cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if err := f.Chmod(0o600); err != nil { // the umask may have cleared bits
		return nil, fmt.Errorf("setting the mode of %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	var off int64
	put := func(b []byte) {
		n, _ := w.Write(b) // a write error stays in w, and Flush returns it
		off += int64(n)
	}
	ps := list.plugins
	spans := make([]catalog.Span, 0, len(ps))
	put([]byte("[\n"))
	for i, p := range ps {
		line, err := entryLine(p, list.spool)
		if err != nil {
			return nil, err
		}
		spans = append(spans, catalog.Span{Off: off, N: int64(len(line))})
		put(line)
		if i < len(ps)-1 {
			put([]byte{','})
		}
		put([]byte{'\n'})
	}
	put([]byte("]\n"))
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("syncing %s: %w", path, err)
	}
	return spans, nil
}

// entryLine is the JSON of one entry, its server.json documents read
// back from sp (and dropped again after).
func entryLine(p *foreign.UnsignedPlugin, sp *spool) ([]byte, error) {
	var taken []*foreign.UnsignedVersion
	for _, v := range p.Versions {
		if v.ServerJSON != nil || sp == nil {
			continue
		}
		data, err := sp.server(v)
		if err != nil {
			return nil, err
		}
		v.ServerJSON = data
		taken = append(taken, v)
	}
	var e bytes.Buffer
	enc := json.NewEncoder(&e)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		panic(err) // plain data
	}
	for _, v := range taken {
		v.ServerJSON = nil
	}
	return bytes.TrimRight(e.Bytes(), "\n"), nil
}

// writeUnsignedCopy writes a new copy of an unsigned source into parent
// and points st at it.
func (c *Cache) writeUnsignedCopy(parent string, st *state, list *unsignedList) error {
	now := c.o.Now().UTC()
	gen, err := c.writeUnsignedGen(parent, list, now)
	if err != nil {
		return err
	}
	st.pointAt(gen, list, now)
	return nil
}

// pointAt makes the copy gen, written from list at now, st's current one.
func (st *state) pointAt(gen string, list *unsignedList, now time.Time) {
	st.Previous, st.Current = st.Current, gen
	st.CheckedAt, st.UpdatedAt = now, now
	st.Info = Info{Plugins: len(list.plugins), Problems: len(list.problems)}
}

// writeUnsignedGen writes list as a new copy, a directory of parent whose
// name it returns; a copy it could not complete is removed.
func (c *Cache) writeUnsignedGen(parent string, list *unsignedList, now time.Time) (_ string, err error) {
	gen := fmt.Sprintf("v-u%d-%s", now.Unix(), randomHex(4))
	dir := filepath.Join(parent, gen)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	spans, err := writeEntries(filepath.Join(dir, entriesFile), list)
	if err != nil {
		return "", err
	}
	idx := &index{Plugins: make([]indexEntry, 0, len(list.plugins))}
	for i, p := range list.plugins {
		// The index's publisher field holds the source's own name, so a
		// search for "acme/weather" finds io.github.acme/weather.
		tier := catalog.TierCommunity
		if list.tier != "" {
			tier = list.tier
		}
		e := indexEntry{Off: spans[i].Off, N: spans[i].N, Name: p.Name, Description: p.Description, Tier: tier, Tags: list.tags[p.Name], Publisher: p.SourceName}
		for _, v := range p.Versions {
			e.Versions = append(e.Versions, indexVersion{Version: v.Version, Status: v.Status, Released: v.Released})
		}
		idx.Plugins = append(idx.Plugins, e)
	}
	problems := list.problems
	if problems == nil {
		problems = []*catalog.Problem{}
	}
	for name, data := range map[string][]byte{indexFile: idx.marshal(), problemsFile: textio.MustJSON(problems)} {
		if err := atomicfile.WriteNew(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", err
		}
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return "", err
	}
	return gen, atomicfile.SyncDir(parent)
}

// readUnsigned reads every cached entry of an unsigned source.
func (c *Cache) readUnsigned(st *state) ([]*foreign.UnsignedPlugin, error) {
	data, err := os.ReadFile(filepath.Join(c.dir, st.Name, st.Current, entriesFile))
	if err != nil {
		return nil, c.damaged(st.Name, err)
	}
	var out []*foreign.UnsignedPlugin
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, c.damaged(st.Name, err)
	}
	return out, nil
}

// damagedIf is c.damaged(name, err) when err is not nil.
func (c *Cache) damagedIf(name string, err error) error {
	if err == nil {
		return nil
	}
	return c.damaged(name, err)
}

// ErrUnsignedSource is returned by the calls that need a signed (TUF)
// catalog when given an unsigned source, and the other way round.
var ErrUnsignedSource = errors.New("an unsigned catalog source")

// Kind returns the kind of catalog name: KindTUF, KindRegistry or
// KindClaudeMarketplace.
func (c *Cache) Kind(name string) (string, error) {
	st, err := c.readState(name)
	if err != nil {
		return "", err
	}
	return st.kind(), nil
}

func (st *state) kind() string {
	if st.Kind == "" {
		return KindTUF
	}
	return st.Kind
}

// UnsignedEntry returns the entry name of the unsigned source catalog,
// reading only that entry. It never touches the network or writes.
func (c *Cache) UnsignedEntry(catName, name string) (*foreign.UnsignedPlugin, *CatalogInfo, error) {
	for attempt := 0; ; attempt++ {
		st, idx, err := c.readIndex(catName)
		if err != nil {
			return nil, nil, err
		}
		if st.Kind == "" {
			return nil, nil, fmt.Errorf("%w: catalog %s is a signed TUF catalog, not an unsigned source", ErrUnsignedSource, catName)
		}
		var e *indexEntry
		for i := range idx.Plugins {
			if idx.Plugins[i].Name == name {
				e = &idx.Plugins[i]
			}
		}
		if e == nil {
			return nil, nil, fmt.Errorf("%w: catalog %s does not list %s (berth search %s looks for it everywhere)", ErrNoPlugin, catName, name, name)
		}
		f, err := os.Open(filepath.Join(c.dir, catName, st.Current, entriesFile))
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, nil, c.damaged(catName, err)
		}
		raw := make([]byte, e.N)
		_, err = f.ReadAt(raw, e.Off)
		f.Close()
		if err != nil {
			return nil, nil, c.damaged(catName, err)
		}
		p := &foreign.UnsignedPlugin{}
		if err := json.Unmarshal(raw, p); err != nil || p.Name != name || len(p.Versions) == 0 {
			return nil, nil, c.damaged(catName, fmt.Errorf("the index does not point at the entry of %s", name))
		}
		return p, c.info(st), nil
	}
}
