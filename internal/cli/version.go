package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
)

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print berth's version",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return writeJSON(a.stdout, versionJSON{Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Version: bundle.BerthVersion})
			}
			_, err := fmt.Fprintf(a.stdout, "berth %s (%s, %s/%s)\n", bundle.BerthVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"version", "go", "platform"}`)
	return cmd
}

// versionJSON is what version --json prints.
type versionJSON struct {
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Version  string `json:"version"`
}
