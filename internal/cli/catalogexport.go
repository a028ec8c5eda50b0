package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/review"
)

func newCatalogExportRegistryCmd(a *app) *cobra.Command {
	opts := &catalogExportOptions{}
	cmd := &cobra.Command{
		Use: "export-registry DIR OUT",
		Example: `  berth catalog export-registry ./catalog ./registry
  berth catalog export-registry ./catalog ./registry --namespace com.acme --force`,
		Short: "Write the catalog as static MCP Registry API files for other clients",
		Long: `Export-registry writes the catalog that DIR publishes (not the working
copy) as the static files of an MCP Registry API, for clients that browse a
registry (VS Code, ToolHive and others that take a registry URL). It first
checks the published version as every catalog command does before signing
(signatures against root.json, timestamp -> snapshot -> targets -> catalog);
a catalog that does not check is refused and nothing is written. No keys are
needed.

OUT gets v0.1/servers and v0/servers (one page with every version, no
nextCursor), and per server .../versions, .../versions/VERSION and
.../versions/latest, each document at OUT/<URL path, decoded>/index.json:
serve OUT with a web server that answers a URL path with the index.json in
its directory, as application/json, ignoring the query string
(docs/marketplace.md shows nginx, Caddy and Apache settings).

Each version is a server.json (schema 2025-12-11) with the package (npm,
pypi, oci) or remote of the bundle's one server, read from the bundle's
archive in DIR (an MCP Bundle added as a .mcpb is an mcpb package at
--base-url plus its path, when --base-url is given), and the berth bundle's URLs and digests under
_meta["dev.berth/bundle"]. Its registry name is NAMESPACE/PLUGIN
(--namespace, default dev.berth.catalog.<catalog name>), or the registry
name a bundle imported from a registry entry carries. A version that cannot
be a registry entry (a bundled program or native tool, several servers, an
archive served elsewhere, a revoked version, ...) is printed with the reason
and listed in OUT/berth-export-skipped.json. The export is written into a
new directory beside OUT and renamed to OUT when whole; an existing OUT is
refused unless it is an earlier export and --force is given.

Other clients see no signature: berth's own clients keep reading the TUF
catalog, which stays the authority for berth.`,
		Args: exactArgs(2, "DIR and OUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.Out = args[0], args[1]
			return runCatalogExportRegistry(cmd.Context(), a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Namespace, "namespace", "", "the reverse-DNS `NAMESPACE` of derived registry names (default dev.berth.catalog.<catalog name>)")
	f.BoolVar(&opts.Force, "force", false, "replace OUT when it holds an earlier export")
	f.StringVar(&opts.BaseURL, "base-url", "", "the https `URL` DIR is served at; with it, an MCP Bundle (.mcpb) in the catalog is exported as an mcpb package")
	a.jsonFlag(cmd, &opts.JSON, repo.ExportResult{})
	return cmd
}

// catalogExportOptions are the inputs of berth catalog export-registry.
type catalogExportOptions struct {
	// Dir and Out are the positional arguments.
	Dir, Out  string
	Namespace string
	BaseURL   string
	Force     bool
	JSON      bool
}

func runCatalogExportRegistry(ctx context.Context, a *app, opts *catalogExportOptions) error {
	res, err := repo.ExportRegistry(ctx, opts.Dir, opts.Out, &repo.ExportOptions{Namespace: opts.Namespace, BaseURL: opts.BaseURL, Force: opts.Force})
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, res)
	}
	versions := 0
	for _, s := range res.Servers {
		versions += len(s.Versions)
		fmt.Fprintf(a.stdout, "%s: %s (latest %s)\n", s.Name, joinVersions(s.Versions), s.Latest)
	}
	for _, s := range res.Skipped {
		fmt.Fprintln(a.stdout, review.Printable("skipped "+s.String()))
	}
	fmt.Fprintf(a.stdout, "Exported catalog %s to %s: %d server(s), %d version(s); %d skipped, listed in %s.\n",
		res.Catalog, opts.Out, len(res.Servers), versions, len(res.Skipped), filepath.Join(opts.Out, repo.ExportSkippedFile))
	fmt.Fprintf(a.stdout, "Serve %s as application/json, each URL path from the index.json in its directory, query ignored; clients take its URL as a registry base.\n", opts.Out)
	return nil
}

func joinVersions(vs []string) string { return strings.Join(vs, ", ") }
