package cli

import (
	"github.com/spf13/cobra"
)

func (a *app) completionCommand() *cobra.Command {
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
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(a.stdout, true)
			case "zsh":
				return root.GenZshCompletion(a.stdout)
			case "fish":
				return root.GenFishCompletion(a.stdout, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(a.stdout)
			}
			return usagef("berth completion knows bash, zsh, fish and powershell, not %q", args[0])
		},
	}
}
