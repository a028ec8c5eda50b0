package store

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
)

// Fingerprint is what a stat says about a staged file: a change in any
// field forces a full re-hash.
type Fingerprint struct {
	Size    int64  `json:"size"`
	Mode    uint32 `json:"mode"`
	ModTime int64  `json:"mtime"`
	Ctime   int64  `json:"ctime,omitempty"`
	Ino     uint64 `json:"ino,omitempty"`
	Dev     uint64 `json:"dev,omitempty"`
}

func fingerprintOf(fi fs.FileInfo) Fingerprint {
	f := Fingerprint{Size: fi.Size(), Mode: uint32(fi.Mode()), ModTime: fi.ModTime().UnixNano()}
	sysFingerprint(fi, &f)
	return f
}

// snapshotMeta sits beside a snapshot: the listing it was staged with and
// the stat fingerprint of every entry under the root.
type snapshotMeta struct {
	Digest  string                 `json:"digest"`
	Listing string                 `json:"listing"`
	Files   map[string]Fingerprint `json:"files"`
}

// fingerprints lstats every entry under root (not root itself).
func fingerprints(ctx context.Context, root string) (map[string]Fingerprint, error) {
	out := map[string]Fingerprint{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = fingerprintOf(fi)
		return nil
	})
	return out, err
}

func (s *Store) readMeta(d Digest) (*snapshotMeta, error) {
	digest := d.String()
	m := &snapshotMeta{}
	ok, err := readJSON(s.paths.SnapshotMeta(d), m)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the staged snapshot of %s has no metadata (%s); re-trust the bundle", digest, s.paths.SnapshotMeta(d))
	}
	if bundle.DigestOf([]byte(m.Listing)) != digest || m.Digest != digest {
		return nil, fmt.Errorf("the metadata of the staged snapshot %s is damaged (its listing does not hash to the digest); run `berth gc` and re-trust the bundle", digest)
	}
	return m, nil
}

// Listing returns the canonical listing a snapshot was staged with.
func (s *Store) Listing(digest Digest) (*bundle.Listing, error) {
	m, err := s.readMeta(digest)
	if err != nil {
		return nil, err
	}
	return bundle.ParseListing([]byte(m.Listing))
}

// makeReadOnly sets files to 0444 (0555 with an exec bit) and directories
// to 0555, deepest first, root included.
func makeReadOnly(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			mode := os.FileMode(0o444)
			if fi.Mode().Perm()&0o111 != 0 {
				mode = 0o555
			}
			return os.Chmod(p, mode)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return err
		}
	}
	return nil
}
