package cli

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
)

func newVersionCmd(a *app) *cobra.Command {
	opts := &versionOptions{}
	cmd := &cobra.Command{
		Use: "version",
		Example: `  berth version
  berth version --json`,
		Short: "Print berth's version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(cmd.Context(), a, opts)
		},
	}
	a.jsonFlag(cmd, &opts.JSON, versionJSON{})
	return cmd
}

// versionOptions are the inputs of berth version.
type versionOptions struct {
	JSON bool
}

func runVersion(_ context.Context, a *app, opts *versionOptions) error {
	if opts.JSON {
		return writeJSON(a.stdout, versionJSON{Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Version: bundle.BerthVersion})
	}
	_, err := fmt.Fprintf(a.stdout, "berth %s\n", versionText())
	return err
}

// versionJSON is what version --json prints.
type versionJSON struct {
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Version  string `json:"version"`
}

// release is the version stamp of a release build (make release sets it
// with -ldflags -X; scripts/release); "" in any other build.
var release string

// versionText is berth's version as berth version and berth --version
// print it: "0.1.0 (go1.26.8, linux/amd64)", with ", release 0.1.0" in a
// release build.
func versionText() string {
	rel := ""
	if release != "" {
		rel = ", release " + release
	}
	return fmt.Sprintf("%s (%s, %s/%s%s)", bundle.BerthVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH, rel)
}
