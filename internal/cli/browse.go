package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/pkg/browser"
	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/internal/browse"
	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/sockpeer"
)

// The marketplace page: berth marketplace serve and export.

// site opens the marketplace page over the verified catalogs and the
// trust records (for the "installed" badges).
func (a *app) site() (*browse.Site, error) {
	c, err := a.catalogs()
	if err != nil {
		return nil, err
	}
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	ro, err := a.resolveOptions()
	if err != nil {
		return nil, err
	}
	return browse.New(c, &browse.Options{Resolve: ro, Store: st}), nil
}

func newMarketplaceServeCmd(a *app) *cobra.Command {
	opts := &marketplaceServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--addr ADDR] [--open]",
		Short: "Browse the catalogs in a web browser, served on loopback (read-only)",
		Long: `Serve serves the marketplace page on a loopback address (default
127.0.0.1 and a free port, printed at start) until interrupted: search
and filter the plugins of every catalog you added, read each plugin's
whole disclosure in the words of berth show and berth review, its
versions, README and the install command to copy, and the catalogs'
TUF state. Everything is read from the verified copies, offline; the
page changes nothing (there is no install button) and loads nothing from
any other site. A non-loopback --addr is refused: the page is for this
machine (berth marketplace export writes a copy to host elsewhere).

The page shows which versions you installed and where your catalogs
live, so it is yours alone: the URL printed at start carries a token
(new at each start) that works once: opening it sets a cookie in your
browser (HttpOnly, SameSite=Strict), the token is then void, and every
other request without that cookie is refused.
On Linux the kernel names the user of each connection, and other users'
connections are refused before anything is read.

Only GET and HEAD are answered, only to loopback Host names and origins
(DNS rebinding and other sites' pages are refused), with a
Content-Security-Policy of default-src 'self'. docs/marketplace.md says
what each badge means.`,
		Example: `  berth marketplace serve
  berth marketplace serve --addr 127.0.0.1:8080 --open`,
		Args: exactArgs(0, "no arguments (the address is --addr)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMarketplaceServe(cmd.Context(), a, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", browse.DefaultAddr, "the loopback `ADDR` to listen on (HOST:PORT; port 0 picks a free one)")
	cmd.Flags().BoolVar(&opts.Open, "open", false, "open the page in the system's web browser")
	return cmd
}

// marketplaceServeOptions are the inputs of berth marketplace serve.
type marketplaceServeOptions struct {
	Addr string
	Open bool
}

func runMarketplaceServe(ctx context.Context, a *app, opts *marketplaceServeOptions) error {
	site, err := a.site()
	if err != nil {
		return err
	}
	ln, err := browse.Listen(opts.Addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
	ln, who := a.guardMarketplacePeers(ln)
	token := browse.NewToken()
	url := "http://" + ln.Addr().String() + "/?" + browse.TokenParam + "=" + token
	srv := &http.Server{Handler: site.HandlerWithToken(token), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	fmt.Fprintf(a.stdout, "Serving the marketplace page at %s (read-only; Ctrl-C stops it).\n", url)
	fmt.Fprintf(a.stdout, "Open that URL: its token, new at each start, lets your browser in (it sets a cookie); %s.\n", who)
	if opts.Open {
		// The URL's token is a secret: the browser's command line gets a
		// stand-in other users cannot use (privateOpen).
		err := errors.New("no private place for the page's address")
		if paths, perr := a.paths(); perr == nil {
			var target string
			var done func()
			if target, done, err = privateOpen(paths.Root, url); err == nil {
				defer done()
				browser.Stdout, browser.Stderr = io.Discard, io.Discard
				err = browser.OpenURL(target)
			}
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "berth: warning: could not open a browser (%v); open %s yourself\n", err, url)
		}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(a.stdout, "Stopped.")
	return nil
}

// guardMarketplacePeers makes ln refuse the connections of other users
// where the system names them, and returns what the start message says
// about who else can reach the page.
func (a *app) guardMarketplacePeers(ln net.Listener) (net.Listener, string) {
	l, err := sockpeer.Guard(ln, func(r sockpeer.Refusal) {
		if r.Err != nil {
			fmt.Fprintf(a.stderr, "berth: refused a connection to the marketplace page whose user could not be identified (%v)\n", r.Err)
			return
		}
		fmt.Fprintf(a.stderr, "berth: refused a connection to the marketplace page from another user (%s)\n", fsx.UserName(r.UID))
	})
	if err == nil {
		return l, "other users of this machine are refused (the kernel names the user of each connection)"
	}
	if !errors.Is(err, sockpeer.ErrUnsupported) {
		fmt.Fprintf(a.stderr, "berth: warning: cannot tell other users' connections apart (%v); the token alone keeps them out\n", err)
	}
	return ln, "on this system the token alone keeps other users out"
}

func newMarketplaceExportCmd(a *app) *cobra.Command {
	opts := &marketplaceExportOptions{}
	cmd := &cobra.Command{
		Use:   "export DIR",
		Short: "Write the marketplace page as a static site (plain files)",
		Long: `Export writes the pages of berth marketplace serve into DIR as plain
files, for a team to host its catalog's page on any static web server or
to open from file://: the index (search and filters run in the page over
an embedded index, with berth search's ranking), a page per plugin and
per version, the catalogs page, the style sheet, script and icons. Links
are relative. DIR must be new, empty, or an earlier export (replaced
whole). The pages carry a Content-Security-Policy of default-src 'self'
in a <meta> element; a host should also send frame-ancestors 'none',
X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer as
headers.

The export is meant for hosting, so it carries no state of this machine:
no "trusted" badges (which versions you trust, and when), no catalog
source that is a local directory or loopback address, no time you added
a catalog. --with-local-state puts them in, as berth marketplace serve
shows them, for a copy you keep to yourself.`,
		Example: `  berth marketplace export ./site
  berth marketplace export ./site --json
  berth marketplace export ~/my-marketplace --with-local-state
  python3 -m http.server -d ./site   # or open ./site/index.html`,
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			return runMarketplaceExport(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, exportJSON{})
	cmd.Flags().BoolVar(&opts.WithLocalState, "with-local-state", false, "also write this machine's state (trusted versions and when, local catalog sources, when catalogs were added): for a copy you keep, not one you host")
	return cmd
}

// marketplaceExportOptions are the inputs of berth marketplace export.
type marketplaceExportOptions struct {
	// Dir is the positional argument.
	Dir  string
	JSON bool
	// WithLocalState puts the trust records and local sources in.
	WithLocalState bool
}

func runMarketplaceExport(ctx context.Context, a *app, opts *marketplaceExportOptions) error {
	site, err := a.site()
	if err != nil {
		return err
	}
	res, err := site.Export(ctx, opts.Dir, &browse.ExportOptions{WithLocalState: opts.WithLocalState})
	if err != nil {
		return err
	}
	index := filepath.Join(res.Dir, "index.html")
	if opts.JSON {
		return writeJSON(a.stdout, exportJSON{Dir: res.Dir, Index: index, Pages: res.Pages, Plugins: res.Plugins, Catalogs: res.Catalogs})
	}
	fmt.Fprintf(a.stdout, "Wrote %d page(s) (%d plugin(s) from %d catalog(s)) to %s; open %s.\n", res.Pages, res.Plugins, res.Catalogs, res.Dir, index)
	if opts.WithLocalState {
		fmt.Fprintln(a.stdout, "The pages show this machine's trusted versions and local catalog sources (--with-local-state): keep them to yourself.")
	}
	return nil
}

// exportJSON is what marketplace export --json prints.
type exportJSON struct {
	// Dir is the directory the site was written to.
	Dir string `json:"dir"`
	// Index is the site's start page, DIR/index.html.
	Index string `json:"index"`
	// Pages is how many HTML pages were written.
	Pages int `json:"pages"`
	// Plugins is how many plugins the pages list.
	Plugins int `json:"plugins"`
	// Catalogs is how many catalogs they come from.
	Catalogs int `json:"catalogs"`
}
