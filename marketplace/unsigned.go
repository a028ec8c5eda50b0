package marketplace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

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
}

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
// and replaces its copy when anything changed.
func (c *Cache) refreshUnsigned(ctx context.Context, st *state) (*RefreshResult, error) {
	dir := filepath.Join(c.dir, st.Name)
	old, err := c.readUnsigned(st)
	if err != nil {
		return nil, err
	}
	list, err := c.fetchUnsigned(ctx, st, old)
	if err != nil {
		return nil, err
	}
	now := c.o.Now().UTC()
	st.CheckedAt = now
	entries, _ := marshalEntries(list.plugins)
	prev, err := os.ReadFile(filepath.Join(dir, st.Current, entriesFile))
	prevProblems, perr := os.ReadFile(filepath.Join(dir, st.Current, problemsFile))
	problems := list.problems
	if problems == nil {
		problems = []*catalog.Problem{}
	}
	changed := err != nil || perr != nil || !bytes.Equal(prev, entries) || !bytes.Equal(prevProblems, textio.MustJSON(problems))
	if changed {
		if err := c.writeUnsignedCopy(dir, st, list); err != nil {
			return nil, err
		}
	}
	if err := writeState(dir, st); err != nil {
		return nil, err
	}
	if changed {
		c.prune(dir, st)
	}
	return &RefreshResult{CatalogInfo: c.info(st), Changed: changed, Problems: list.problems}, nil
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

// marshalEntries writes the entries file, one entry a line, and where
// each entry is in it.
func marshalEntries(ps []*foreign.UnsignedPlugin) ([]byte, []catalog.Span) {
	var b bytes.Buffer
	spans := make([]catalog.Span, 0, len(ps))
	b.WriteString("[\n")
	for i, p := range ps {
		var e bytes.Buffer
		enc := json.NewEncoder(&e)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(p); err != nil {
			panic(err) // plain data
		}
		line := bytes.TrimRight(e.Bytes(), "\n")
		spans = append(spans, catalog.Span{Off: int64(b.Len()), N: int64(len(line))})
		b.Write(line)
		if i < len(ps)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.Bytes(), spans
}

// writeUnsignedCopy writes a new copy of an unsigned source into parent
// and points st at it.
func (c *Cache) writeUnsignedCopy(parent string, st *state, list *unsignedList) error {
	entries, spans := marshalEntries(list.plugins)
	idx := &index{Plugins: make([]indexEntry, 0, len(list.plugins))}
	for i, p := range list.plugins {
		// The index's publisher field holds the source's own name, so a
		// search for "acme/weather" finds io.github.acme/weather.
		e := indexEntry{Off: spans[i].Off, N: spans[i].N, Name: p.Name, Description: p.Description, Tier: catalog.TierCommunity, Publisher: p.SourceName}
		for _, v := range p.Versions {
			e.Versions = append(e.Versions, indexVersion{Version: v.Version, Status: v.Status, Released: v.Released})
		}
		idx.Plugins = append(idx.Plugins, e)
	}
	problems := list.problems
	if problems == nil {
		problems = []*catalog.Problem{}
	}
	now := c.o.Now().UTC()
	gen := fmt.Sprintf("v-u%d-%s", now.Unix(), randomHex(4))
	files := map[string][]byte{entriesFile: entries, indexFile: idx.marshal(), problemsFile: textio.MustJSON(problems)}
	if err := writeCopy(filepath.Join(parent, gen), files); err != nil {
		return err
	}
	st.Previous, st.Current = st.Current, gen
	st.CheckedAt, st.UpdatedAt = now, now
	st.Info = Info{Plugins: len(list.plugins), Problems: len(problems)}
	return nil
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
