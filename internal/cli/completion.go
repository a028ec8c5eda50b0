package cli

import (
	"context"

	"github.com/spf13/cobra"
)

func newCompletionCmd(a *app) *cobra.Command {
	opts := &completionOptions{}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Completion prints the script that makes your shell complete berth's
commands, flags and arguments (cobra's generator). Load it in the current
shell, or install it where your shell reads completions at start.`,
		Example: `  source <(berth completion bash)
  berth completion bash > /etc/bash_completion.d/berth
  berth completion zsh > "${fpath[1]}/_berth"
  berth completion fish > ~/.config/fish/completions/berth.fish
  berth completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1, "one shell: bash, zsh, fish or powershell"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Shell, opts.Root = args[0], cmd.Root()
			return runCompletion(cmd.Context(), a, opts)
		},
	}
}

// completionOptions are the inputs of berth completion.
type completionOptions struct {
	// Shell is the positional argument.
	Shell string
	// Root is the command tree to complete.
	Root *cobra.Command
}

func runCompletion(_ context.Context, a *app, opts *completionOptions) error {
	root := opts.Root
	switch opts.Shell {
	case "bash":
		return root.GenBashCompletionV2(a.stdout, true)
	case "zsh":
		return root.GenZshCompletion(a.stdout)
	case "fish":
		return root.GenFishCompletion(a.stdout, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(a.stdout)
	}
	return usagef("berth completion knows bash, zsh, fish and powershell, not %q", opts.Shell)
}
