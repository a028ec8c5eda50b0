package pool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/berth-mcp/berth/store"
)

// EnableResult reports what Enable did.
type EnableResult struct {
	Record    *store.Record
	Workspace string
	// Already is true when this version was enabled there before; nothing
	// changed then.
	Already bool
	// Replaced is the version that was enabled before, if another one.
	Replaced string
	// SkippedRevoked are the higher versions that Enable without a
	// version passed over because a catalog revoked them, highest first.
	SkippedRevoked []*store.Revocation
}

// Enable attaches a trusted plugin's staged snapshot to a workspace: the
// given version, or without one the highest trusted version (semver
// order) that no catalog revoked. Enabling another version replaces the enabled one, and its tool
// surface is pinned afresh at the next start. It bumps the state
// generation. An unknown or untrusted plugin is an error wrapping
// store.ErrNotTrusted.
func Enable(ctx context.Context, st *store.Store, workspace, name, version string) (*EnableResult, error) {
	ws, err := Workspace(workspace)
	if err != nil {
		return nil, err
	}
	recs, err := st.Find(name, version)
	if err != nil {
		return nil, err
	}
	rec := recs[len(recs)-1]
	res := &EnableResult{Record: rec, Workspace: ws}
	if version == "" {
		for i := len(recs) - 1; i > 0; i-- {
			rv, err := st.Revoked(recs[i].Name, recs[i].Version, recs[i].Digest)
			if err != nil {
				return nil, err
			}
			if rv == nil {
				break
			}
			res.SkippedRevoked = append(res.SkippedRevoked, rv)
			rec = recs[i-1]
		}
		res.Record = rec
	}
	_, err = st.Update(ctx, func(state *store.State) error {
		// The record may have been revoked since Find.
		if _, err := os.Stat(st.Paths().Record(rec.Name, rec.Version)); errors.Is(err, fs.ErrNotExist) {
			return store.NotTrustedf("%s was revoked meanwhile; berth list shows what is trusted", rec.ID())
		}
		d, err := store.ParseDigest(rec.Digest)
		if err != nil {
			return err
		}
		if err := st.CheckNotRevoked(rec.Name, rec.Version, rec.Digest); err != nil {
			return err
		}
		if _, err := os.Stat(st.Paths().Snapshot(d)); err != nil {
			return fmt.Errorf("the staged snapshot of %s is missing (%v); re-trust the bundle", rec.ID(), err)
		}
		w := state.Workspace(ws)
		if en := w.Plugins[name]; en != nil {
			if en.Version == rec.Version && en.Digest == rec.Digest {
				res.Already = true
				return store.ErrNoChange
			}
			res.Replaced = en.Version
		}
		w.Plugins[name] = &store.Enablement{Version: rec.Version, Digest: rec.Digest, EnabledAt: time.Now().UTC()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Disable detaches a plugin from a workspace and bumps the state
// generation; running pools stop its servers and cancel its calls at their
// next boundary (within their poll interval). It returns the enablement
// that was removed.
func Disable(ctx context.Context, st *store.Store, workspace, name string) (*store.Enablement, error) {
	if err := store.CheckRef(name, ""); err != nil {
		return nil, err
	}
	ws, err := Workspace(workspace)
	if err != nil {
		return nil, err
	}
	var gone *store.Enablement
	_, err = st.Update(ctx, func(state *store.State) error {
		w := state.Workspaces[ws]
		if w == nil || w.Plugins[name] == nil {
			return fmt.Errorf("%s is not enabled in %s; `berth list` shows where each plugin is enabled", name, ws)
		}
		gone = w.Plugins[name]
		delete(w.Plugins, name)
		// Its profiles stay: one naming the plugin offers nothing of
		// it until it is enabled again.
		if w.Empty() {
			delete(state.Workspaces, ws)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return gone, nil
}
