package cli

import (
	"github.com/spf13/cobra"
)

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "berth",
		Short: "Install curated MCP plugins safely, and serve their tools with approval by default",
		Long: `berth installs plugin bundles for MCP clients safely and exports their tools.

A bundle declares MCP servers and native tools. berth validates it fail-closed,
shows a review of every authority it asks for, verifies its Sigstore signature,
stages an immutable copy and re-checks it for drift at every use.

State lives in $BERTH_HOME (default: your user data directory + /berth).

Exit codes: 0 ok, 1 failure, 2 usage error, 3 invalid bundle, 4 untrusted
(signature or signer policy), 5 drift, 6 approval denied or timed out.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		a.validateCommand(),
		a.reviewCommand(),
		a.digestCommand(),
		a.versionCommand(),
		a.signersCommand(),
		a.keygenCommand(),
		a.signCommand(),
		a.trustCommand(),
		a.listCommand(),
		a.verifyCommand(),
		a.revokeCommand(),
		a.gcCommand(),
		a.enableCommand(),
		a.disableCommand(),
		a.statusCommand(),
		a.toolsCommand(),
		a.callCommand(),
		a.logsCommand(),
		a.acceptCommand(),
		a.policyCommand(),
		a.serveCommand(),
		a.approvalsCommand(),
		a.approveCommand(true),
		a.approveCommand(false),
		a.connectCommand(),
		a.disconnectCommand(),
		a.catalogCommand(),
		a.marketplaceCommand(),
		a.searchCommand(),
		a.showCommand(),
		a.installCommand(),
		a.lockCommand(),
		a.syncCommand(),
		a.outdatedCommand(),
		a.upgradeCommand(),
		a.configCommand(),
	)
	// Unknown commands are usage errors too.
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q", args[0])
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, args []string) error {
		return cmd.Help()
	}
	return root
}
