package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/fetched"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/review"
)

// pinHelp is the help text of --pin.
const pinHelp = "pin the runtime fetches the source leaves unpinned (npx -y pkg, pkg@latest, uvx pkg, an image by tag) now, against the registries of $BERTH_HOME/fetchers, and record the request and the result in importedFrom.pinned"

// maxFetcherConfig caps a file of $BERTH_HOME/fetchers that berth reads.
const maxFetcherConfig = 1 << 20

// pinner returns the bundle.Options.Pin of --pin: it resolves against the
// registries that $BERTH_HOME/fetchers names (the files the package
// managers read when the server runs, docs/pool.md), and says on stderr
// what it pinned, before anything is trusted.
func (a *app) pinner() (func(context.Context, *runtimefetch.Unpinned) (*runtimefetch.Pin, error), error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	dir := paths.Fetchers()
	if err := fsx.CheckPrivate(dir, true, false); err != nil {
		return nil, fmt.Errorf("berth reads the registries to pin against from %s: %w", dir, err)
	}
	read := func(name string) (string, error) {
		p := filepath.Join(dir, name)
		data, err := fsx.ReadPrivateFile(p, maxFetcherConfig)
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("berth reads the registries to pin against from %s: %w", p, err)
		}
		return string(data), nil
	}
	var c runtimefetch.FetchersConfig
	for name, dst := range map[string]*string{"npmrc": &c.NPMRC, "uv.toml": &c.UVToml, "pip.conf": &c.PipConf} {
		if *dst, err = read(name); err != nil {
			return nil, err
		}
	}
	ro, err := c.Registries()
	if err != nil {
		return nil, fmt.Errorf("%s: %w; fix the file (docs/pool.md shows the forms berth reads)", dir, err)
	}
	// What these files leave unset, the operator's own allowed settings
	// give, as at trust (docs/sandbox.md).
	op, err := fetched.ReadOperator(a.getenv)
	if err == nil {
		err = fetched.FillResolver(ro, op)
	}
	if err != nil {
		return nil, fmt.Errorf("berth reads the registries to pin against: %w", err)
	}
	r, err := runtimefetch.NewResolver(ro)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; fix it in the fetchers' configuration (docs/pool.md)", dir, err)
	}
	return func(ctx context.Context, u *runtimefetch.Unpinned) (*runtimefetch.Pin, error) {
		pin, err := r.Resolve(ctx, u)
		if err != nil {
			return nil, err
		}
		asked := "the source asked for " + u.Requested
		if u.Requested == "" {
			asked = "the source named no version"
		}
		fmt.Fprintf(a.stderr, "pinned %s: %s %s (%s; resolved against %s)\n", review.Printable(u.Tool), review.Printable(u.Name), review.Printable(pin.Resolved), review.Printable(asked), review.Printable(fetched.RedactURL(pin.Registry)))
		return pin, nil
	}, nil
}

// pinOptions sets opts.Pin when --pin was given.
func (a *app) pinOptions(pin bool, opts *bundle.Options) error {
	if !pin {
		return nil
	}
	p, err := a.pinner()
	if err != nil {
		return err
	}
	opts.Pin = p
	return nil
}
