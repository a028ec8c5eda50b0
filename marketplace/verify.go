package marketplace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/trustedmetadata"

	"github.com/berth-mcp/berth/marketplace/catalog"
)

// Verification is what LoadVerified found when it checked a verified copy
// again, offline, from the bytes it then read the catalog from.
type Verification struct {
	// Signed is true when every check passed: the copy's root.json is
	// signed by its own root keys (its threshold met) and, at root
	// version 1, is the root the operator pinned; timestamp.json,
	// snapshot.json and targets.json are signed by the keys that root
	// names for them, each matching the version, length and hashes the
	// one above gives; catalog.json has the length and sha256 that the
	// signed targets give. Expiry is judged as of CheckedAt, when berth
	// last ran the TUF update (Stale says whether the copy is past it
	// now). Later root versions were reached by the rotations berth
	// followed at refresh, which are not kept and so not re-checked here.
	Signed bool `json:"signed"`
	// Problem says which check failed; "" when Signed.
	Problem string `json:"problem,omitempty"`
	// CheckedAt is when berth last ran the TUF update of the catalog.
	CheckedAt time.Time `json:"checkedAt"`
	// CatalogSHA256 is the sha256 of the catalog.json that was checked.
	CatalogSHA256 string `json:"catalogSHA256"`
}

// LoadVerified is Load that checks the copy again before it reads the
// catalog: the signatures and links of its metadata and the catalog's
// hash, from the same bytes it parses (Verification says what is
// checked). A copy that fails a check is still returned, with the
// Verification saying what failed, so a caller can show it as
// unverified; the error is for a copy that cannot be read at all.
func (c *Cache) LoadVerified(name string) (*Loaded, *Verification, error) {
	for attempt := 0; ; attempt++ {
		st, err := c.readState(name)
		if err != nil {
			return nil, nil, err
		}
		dir := filepath.Join(c.dir, name, st.Current)
		files := map[string][]byte{}
		for _, f := range []string{"root.json", "timestamp.json", "snapshot.json", "targets.json", catalog.TargetName} {
			if files[f], err = os.ReadFile(filepath.Join(dir, f)); err != nil {
				break
			}
		}
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // replaced while we read; read the new state
		}
		if err != nil {
			return nil, nil, c.damaged(name, err)
		}
		cat, ps, err := catalog.Parse(files[catalog.TargetName])
		if err != nil {
			return nil, nil, c.damaged(name, err)
		}
		sum := sha256.Sum256(files[catalog.TargetName])
		v := &Verification{CheckedAt: st.CheckedAt, CatalogSHA256: "sha256:" + hex.EncodeToString(sum[:])}
		if err := verifyCopy(files, st); err != nil {
			v.Problem = err.Error()
		} else {
			v.Signed = true
		}
		return &Loaded{CatalogInfo: c.info(st), Catalog: cat, Problems: ps}, v, nil
	}
}

// verifyCopy re-runs the TUF checks over a copy's files with go-tuf's
// trusted metadata set, as of the time the copy was last checked.
func verifyCopy(files map[string][]byte, st *state) error {
	tm, err := trustedmetadata.New(files["root.json"])
	if err != nil {
		return fmt.Errorf("root.json: %v", stripTUFPrefix(err.Error()))
	}
	if tm.Root.Signed.Version == 1 {
		sum := sha256.Sum256(files["root.json"])
		if "sha256:"+hex.EncodeToString(sum[:]) != st.RootPin {
			return fmt.Errorf("root.json is not the root pinned at marketplace add (%s)", st.RootPin)
		}
	}
	tm.RefTime = st.CheckedAt
	if _, err := tm.UpdateTimestamp(files["timestamp.json"]); err != nil {
		return fmt.Errorf("timestamp.json: %v", stripTUFPrefix(err.Error()))
	}
	if _, err := tm.UpdateSnapshot(files["snapshot.json"], false); err != nil {
		return fmt.Errorf("snapshot.json: %v", stripTUFPrefix(err.Error()))
	}
	if _, err := tm.UpdateTargets(files["targets.json"]); err != nil {
		return fmt.Errorf("targets.json: %v", stripTUFPrefix(err.Error()))
	}
	ti, ok := tm.Targets[metadata.TARGETS].Signed.Targets[catalog.TargetName]
	if !ok {
		return fmt.Errorf("targets.json lists no %s", catalog.TargetName)
	}
	if err := ti.VerifyLengthHashes(files[catalog.TargetName]); err != nil {
		return fmt.Errorf("%s differs from the length and hashes the signed targets give", catalog.TargetName)
	}
	if tm.Timestamp.Signed.Version != st.Info.TimestampVersion || tm.Snapshot.Signed.Version != st.Info.SnapshotVersion ||
		tm.Targets[metadata.TARGETS].Signed.Version != st.Info.TargetsVersion {
		return fmt.Errorf("the metadata's versions are not those state.json records")
	}
	return nil
}
