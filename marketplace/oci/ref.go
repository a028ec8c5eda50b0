// Package oci carries berth catalogs and bundles through OCI registries
// (GHCR, Harbor, Artifactory, ECR, Zot, the CNCF distribution registry)
// with oras-go. It only moves bytes: every file it reads is checked
// against its OCI digest here and then, by the caller, against the TUF
// metadata or the catalog entry that names it, so a registry (or a
// mirror of one) can stop serving a catalog but cannot change it.
//
// The layout (media types, annotations, the default tag) is documented in
// docs/marketplace.md, "Catalogs in an OCI registry".
package oci

import (
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
)

// Scheme is the prefix of an OCI location as berth's commands take it.
const Scheme = "oci://"

// DefaultTag is the tag a catalog is pushed to and read from when the
// location names none.
const DefaultTag = "catalog"

// Ref is an OCI location: oci://REGISTRY/REPOSITORY[:TAG] or
// oci://REGISTRY/REPOSITORY@sha256:HEX.
type Ref struct {
	// Registry is the registry's host[:port].
	Registry string
	// Repository is the repository path inside the registry.
	Repository string
	// Tag is the tag, or "" when none was given or Digest is set.
	Tag string
	// Digest is "sha256:<hex>", or "".
	Digest string
}

// IsRef reports whether s is written as an OCI location.
func IsRef(s string) bool {
	return len(s) >= len(Scheme) && strings.EqualFold(s[:len(Scheme)], Scheme)
}

// ParseRef reads an oci:// location. A location with both a tag and a
// digest is read by its digest, as Docker does.
func ParseRef(s string) (*Ref, error) {
	if !IsRef(s) {
		return nil, fmt.Errorf("%q is not an OCI location; write oci://REGISTRY/REPOSITORY[:TAG] or oci://REGISTRY/REPOSITORY@sha256:HEX", s)
	}
	rest := s[len(Scheme):]
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		return nil, fmt.Errorf("the OCI location %q has a query or fragment; write oci://REGISTRY/REPOSITORY[:TAG]", s)
	}
	host, _, _ := strings.Cut(rest, "/")
	if strings.Contains(host, "@") {
		return nil, fmt.Errorf("the OCI location %q carries a user name or password; berth takes registry credentials only from the Docker config file and its credential helpers (docker login, oras login), so remove it", s)
	}
	r, err := registry.ParseReference(rest)
	if err != nil {
		return nil, fmt.Errorf("the OCI location %q is not valid: %v; write oci://REGISTRY/REPOSITORY[:TAG] or oci://REGISTRY/REPOSITORY@sha256:HEX", s, stripErr(err))
	}
	ref := &Ref{Registry: r.Registry, Repository: r.Repository}
	if _, err := r.Digest(); err == nil {
		d := digest.Digest(r.Reference)
		if d.Algorithm() != digest.SHA256 {
			return nil, fmt.Errorf("the OCI location %q names a %s digest; berth reads only sha256 digests", s, d.Algorithm())
		}
		ref.Digest = r.Reference
	} else {
		ref.Tag = r.Reference
	}
	return ref, nil
}

func stripErr(err error) string {
	m := err.Error()
	m = strings.TrimPrefix(m, "invalid reference: ")
	return m
}

// String is the location as berth records and prints it.
func (r *Ref) String() string {
	s := Scheme + r.Registry + "/" + r.Repository
	switch {
	case r.Digest != "":
		s += "@" + r.Digest
	case r.Tag != "":
		s += ":" + r.Tag
	}
	return s
}

// Repo is the location without tag or digest.
func (r *Ref) Repo() string { return Scheme + r.Registry + "/" + r.Repository }

// WithDigest is the same repository at a digest.
func (r *Ref) WithDigest(d string) *Ref {
	return &Ref{Registry: r.Registry, Repository: r.Repository, Digest: d}
}

// tagOr is the ref's tag, or def when it has none.
func (r *Ref) tagOr(def string) string {
	if r.Tag != "" {
		return r.Tag
	}
	return def
}

func (r *Ref) reference(ref string) registry.Reference {
	return registry.Reference{Registry: r.Registry, Repository: r.Repository, Reference: ref}
}
