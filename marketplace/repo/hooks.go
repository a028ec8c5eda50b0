package repo

import (
	"context"
	"io"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
)

// This file opens a few of the repository's internals to the tests of
// the catalog's clients: marketplace's tests edit the working copy,
// build archives, and tamper with or forge TUF metadata with the
// repository's own keys, to check that a cache refuses each attack. A
// curator's program has no use for them.

// WorkingFile is the curator's working copy of the catalog, in the
// repository's directory.
const WorkingFile = workingFile

// KeyPath is where the key of a TUF role is kept in keyDir.
func KeyPath(keyDir, role string) string { return keyPath(keyDir, role) }

// RoleNames are the TUF roles a repository has a key for.
func RoleNames() []string { return append([]string(nil), roleNames...) }

// Working reads the working copy of the catalog.
func (r *Repository) Working() (*catalog.Catalog, error) { return r.working() }

// PackTarGz writes b as a .tar.gz archive, as Add packs a directory.
func PackTarGz(ctx context.Context, b *bundle.Bundle, w io.Writer) error {
	return packTarGz(ctx, b, w)
}

// JoinProblems is how Add and Sign word the problems of a working copy.
func JoinProblems(ps []*catalog.Problem) string { return joinProblems(ps) }

// CheckServedFile checks a file the catalog serves, as Lint does: "" when
// it is there with that size and sha256.
func CheckServedFile(dir, rel string, size int64, sum string) string {
	return checkServedFile(dir, rel, size, sum)
}

// MetaFile is the snapshot's or timestamp's entry of a metadata file.
func MetaFile(version int64, data []byte) *metadata.MetaFiles { return metaFile(version, data) }

// TargetFile is where a target is served, relative to the repository.
func TargetFile(tf *metadata.TargetFiles) string { return targetFile(tf) }

// Published is what the repository last published.
type Published struct {
	Root    *metadata.Metadata[metadata.RootType]
	Targets *metadata.Metadata[metadata.TargetsType]
}

// Published reads what the repository last published.
func (r *Repository) Published() (*Published, error) {
	p, err := r.load()
	if err != nil {
		return nil, err
	}
	return &Published{Root: p.root, Targets: p.targets}, nil
}

// RoleSigner loads the signer of a TUF role from keyDir, checked against
// root.
func RoleSigner(keyDir, role string, root *metadata.RootType) (signature.Signer, error) {
	k, err := loadKey(keyDir, role, root)
	if err != nil {
		return nil, err
	}
	return k.signer, nil
}
