package oci

import (
	"errors"
	"fmt"
	"github.com/berth-mcp/berth/trust"
	"net/http"
	"strings"

	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// ErrNotFound is wrapped by errors for a manifest, blob, tag or file the
// registry or the catalog does not have.
var ErrNotFound = errors.New("not found")

// ErrIntegrity is wrapped by errors for content that does not match its
// digest or the layout (a tampered blob, a manifest of another type).
var ErrIntegrity = errors.New("integrity")

// ErrAuth is wrapped by errors for a registry that refused the request
// for want of credentials (HTTP 401 or 403).
var ErrAuth = errors.New("registry credentials")

// Error is a failed request to a registry: what berth asked for, where,
// and why.
type Error struct {
	// Ref is the repository.
	Ref *Ref
	// What is the thing asked for ("the tag catalog", "timestamp.json").
	What string
	// Kind is ErrNotFound, ErrIntegrity, ErrAuth, or nil for a network
	// or server failure.
	Kind error
	Err  error
}

func (e *Error) Error() string {
	repo := e.Ref.Repo()
	switch e.Kind {
	case ErrNotFound:
		return fmt.Sprintf("%s: %s is not there (%v)", repo, e.What, e.Err)
	case ErrAuth:
		return fmt.Sprintf("%s: the registry refused %s for want of credentials (%v); log in with docker login %s (or oras login), which berth reads from the Docker config file and its credential helpers, or check that the account may read the repository", repo, e.What, e.Err, e.Ref.Registry)
	case ErrIntegrity:
		return fmt.Sprintf("%s: %s does not match its digest (%v); the registry or a proxy altered it, so berth refuses it", repo, e.What, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", repo, e.What, e.Err)
}

// Unwrap gives the kind and the cause; content that does not match its
// digest is also trust.ErrUntrusted (a refusal, exit 4), wherever berth
// meets it.
func (e *Error) Unwrap() []error {
	switch e.Kind {
	case nil:
		return []error{e.Err}
	case ErrIntegrity:
		return []error{e.Kind, trust.ErrUntrusted, e.Err}
	}
	return []error{e.Kind, e.Err}
}

func classifyErr(err error) error {
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, ErrIntegrity):
		return ErrIntegrity
	case errors.Is(err, ErrNotFound), errors.Is(err, errdef.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, ErrAuth), errors.Is(err, auth.ErrBasicCredentialNotFound):
		return ErrAuth
	case errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return ErrAuth
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData), errors.Is(err, errdef.ErrSizeExceedsLimit):
		return ErrIntegrity
	case orasMismatch(err):
		return ErrIntegrity
	}
	return nil
}

// orasMismatch reports whether err is oras-go's refusal of an answer that
// is not the content asked for: its Content-Length, Content-Type or
// Docker-Content-Digest differs from the descriptor. oras-go checks these
// before berth reads a byte and says so only in words; a registry that
// serves a payload of another length is caught there, and that is an
// altered file (a refusal), not a network failure.
func orasMismatch(err error) bool {
	m := err.Error()
	for _, s := range []string{": mismatch Content-Length", ": mismatch response Content-Type", "digest mismatch in Docker-Content-Digest"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func pushError(ref *Ref, what string, err error) error {
	return &Error{Ref: ref, What: what, Kind: classifyErr(err), Err: err}
}
