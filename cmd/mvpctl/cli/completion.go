package cli

import (
	"github.com/spf13/cobra"
)

func newCompletionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script for mvpctl.

  bash:        source <(mvpctl completion bash)
  zsh:         mvpctl completion zsh > "${fpath[1]}/_mvpctl"
  fish:        mvpctl completion fish > ~/.config/fish/completions/mvpctl.fish
  powershell:  mvpctl completion powershell | Out-String | Invoke-Expression

Installed as the kubectl plugin (the binary, or a link to it, named
kubectl-mvp on the PATH), kubectl's own completion completes 'kubectl mvp'
through an executable named kubectl_complete-mvp on the PATH; mvpctl acts
as that helper when it runs under that name:

  ln -s "$(command -v mvpctl)" ~/bin/kubectl-mvp
  ln -s "$(command -v mvpctl)" ~/bin/kubectl_complete-mvp

Run as kubectl-mvp, this command prints a script for the kubectl-mvp
executable itself, never one that takes over kubectl's completion.`,
		Args:                  cobra.ExactArgs(1),
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return usageErrorf("completion: unknown shell %q: want bash, zsh, fish or powershell", args[0])
		},
	}
}
