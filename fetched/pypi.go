package fetched

import (
	"context"
	"fmt"

	"github.com/berth-mcp/berth/bundle/runtimefetch"
)

// resolvePyPI is H5's (branch h-pypi), which replaces this file: until
// then a PyPI-fetched server is not staged and fetches when it starts.
func resolvePyPI(ctx context.Context, server string, f *runtimefetch.Fetch, dir string, o *Options) (*Lock, error) {
	return nil, fmt.Errorf("%w: %s (not yet)", ErrNotStaged, f.Ecosystem)
}

// checkPyPI is H5's too: until then a PyPI lock is never recorded.
func checkPyPI(dir string, l *Lock) error {
	return fmt.Errorf("%w: %s (not yet)", ErrNotStaged, l.Ecosystem)
}
