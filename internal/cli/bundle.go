package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/bundle"
)

// limitFlags adds the tree caps to a command that opens bundles.
func limitFlags(cmd *cobra.Command, opts *bundle.Options) {
	f := cmd.Flags()
	f.Int64Var(&opts.Limits.MaxTotalSize, "max-size", bundle.DefaultMaxTotalSize, "largest total size of a bundle's files, in bytes")
	f.IntVar(&opts.Limits.MaxEntries, "max-entries", bundle.DefaultMaxEntries, "most files, directories and symlinks in a bundle")
	f.IntVar(&opts.Limits.MaxPathLen, "max-path", bundle.DefaultMaxPathLen, "longest path in a bundle, in bytes")
}

// checkLimits refuses caps that are not positive.
func checkLimits(opts *bundle.Options) error {
	if opts.Limits.MaxTotalSize <= 0 || opts.Limits.MaxEntries <= 0 || opts.Limits.MaxPathLen <= 0 {
		return usagef("--max-size, --max-entries and --max-path must be positive")
	}
	return nil
}

// openBundle opens and validates a bundle. The caller must Close it.
func openBundle(ctx context.Context, source string, opts *bundle.Options) (*bundle.Bundle, error) {
	if err := checkLimits(opts); err != nil {
		return nil, err
	}
	return bundle.Open(ctx, source, opts)
}
