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

Installed as the kubectl plugin kubectl-mvp, kubectl completes its
arguments through an executable named kubectl_complete-mvp on the PATH:

  printf '#!/bin/sh\nkubectl mvp __complete "$@"\n' > kubectl_complete-mvp
  chmod +x kubectl_complete-mvp`,
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
