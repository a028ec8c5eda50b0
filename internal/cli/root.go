package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

const rootLong = `berth installs plugin bundles for MCP clients safely and exports their tools.

A bundle declares MCP servers and native tools. berth validates it fail-closed,
shows a review of every authority it asks for, verifies its Sigstore signature,
stages an immutable copy and re-checks it for drift at every use.

State lives in $BERTH_HOME (default: your user data directory + /berth).

Exit codes: 0 ok, 1 failure, 2 usage error, 3 invalid bundle, 4 untrusted
(signature or signer policy), 5 drift, 6 approval denied or timed out.

With --json, a command that fails before printing its result prints the
error on stdout too, as {"error": {"message": ..., "rule": ..., "exitCode": N}}
("rule" only when the error breaks a rule of docs/rules.md, or is a catalog's
refusal of docs/marketplace.md such as expired; for a bundle with several
problems it is the first problem's rule, and the message lists them all);
the message is on stderr as well, and the exit code is the same.`

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "berth",
		Short: "Install curated MCP plugins safely, and serve their tools with approval by default",
		Long:  rootLong,
		Example: `  berth validate ./acme-notes && berth review ./acme-notes
  berth trust ./acme-notes && berth enable acme-notes
  berth secret set ACME_NOTES_TOKEN
  berth connect claude-desktop`,
		Version:       versionText(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("berth {{.Version}}\n")
	root.PersistentFlags().BoolVar(&a.noProgress, "no-progress", false, "never draw progress bars (they show only on a terminal, never with --json)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newValidateCmd(a),
		newReviewCmd(a),
		newDigestCmd(a),
		newVersionCmd(a),
		newSignersCmd(a),
		newKeygenCmd(a),
		newSignCmd(a),
		newTrustCmd(a),
		newListCmd(a),
		newVerifyCmd(a),
		newRevokeCmd(a),
		newGCCmd(a),
		newEnableCmd(a),
		newConfirmCmd(a),
		newDisableCmd(a),
		newStatusCmd(a),
		newLoginCmd(a),
		newLogoutCmd(a),
		newToolsCmd(a),
		newCallCmd(a),
		newLogsCmd(a),
		newAcceptCmd(a),
		newPolicyCmd(a),
		newProfileCmd(a),
		newServeCmd(a),
		newApprovalsCmd(a),
		newApproveCmd(a, true),
		newApproveCmd(a, false),
		newConnectCmd(a),
		newTokenCmd(a),
		newDisconnectCmd(a),
		newSecretCmd(a),
		newInitCmd(a),
		newCompletionCmd(a),
		newCatalogCmd(a),
		newPushCmd(a),
		newMarketplaceCmd(a),
		newMirrorCmd(a),
		newSearchCmd(a),
		newShowCmd(a),
		newImportCmd(a),
		newInstallCmd(a),
		newLockCmd(a),
		newSyncCmd(a),
		newOutdatedCmd(a),
		newUpgradeCmd(a),
		newConfigCmd(a),
	)
	groupCommands(root)
	// Unknown commands are usage errors too.
	root.Args = subcommandArgs
	// Commands that only group others take no arguments either.
	for _, c := range root.Commands() {
		if c.HasSubCommands() {
			c.Args = subcommandArgs
		}
	}
	root.RunE = func(cmd *cobra.Command, args []string) error {
		return cmd.Help()
	}
	registerCompletions(a, root)
	return root
}

// subcommandArgs refuses an unknown subcommand of a group (or of berth
// itself) as a usage error, with cobra's suggestions for a mistyped name.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	} else if cmd.HasParent() {
		msg += "; it has " + strings.Join(names, ", ")
	}
	return usagef("%s", msg)
}

// commandGroup is a heading of berth help and the top-level commands
// under it.
type commandGroup struct {
	id, title string
	names     []string
}

// commandGroups lists berth's top-level commands by purpose, in the order
// of a first day with berth, as gh groups its own. Every command is in one
// group (a testscript checks that berth help shows no other heading).
func commandGroups() []commandGroup {
	return []commandGroup{
		{"get", "Find and install plugins from catalogs:", []string{"search", "show", "install", "outdated", "upgrade", "lock", "sync", "marketplace", "mirror"}},
		{"trust", "Review and trust bundles:", []string{"validate", "review", "trust", "list", "verify", "revoke", "signers", "gc"}},
		{"use", "Use plugins in a workspace:", []string{"enable", "disable", "confirm", "status", "tools", "call", "logs", "accept", "policy", "profile", "secret", "login", "logout"}},
		{"serve", "Serve MCP clients:", []string{"connect", "disconnect", "serve", "token", "approvals", "approve", "deny"}},
		{"publish", "Make and publish bundles and catalogs:", []string{"init", "import", "digest", "keygen", "sign", "catalog", "push"}},
		{"settings", "Settings and help:", []string{"config", "completion", "version", "help"}},
	}
}

// groupCommands puts each top-level command of root under its heading of
// commandGroups. The table is the one place that groups them.
func groupCommands(root *cobra.Command) {
	byName := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		byName[c.Name()] = c
	}
	for _, g := range commandGroups() {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, n := range g.names {
			if n == "help" {
				root.SetHelpCommandGroupID(g.id)
				continue
			}
			c := byName[n]
			if c == nil {
				panic("cli: commandGroups names " + n + ", which is not a command of berth")
			}
			c.GroupID = g.id
		}
	}
}
