package cli

import (
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
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

// registerCompletion completes a flag's values; flag names are constants, so
// a failure is a bug.
func registerCompletion(cmd *cobra.Command, flag string, f cobra.CompletionFunc) {
	if err := cmd.RegisterFlagCompletionFunc(flag, f); err != nil {
		panic(err)
	}
}

// completeWords offers fixed values; a value ending in = (jsonpath=) takes
// its argument without a space.
func completeWords(words ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace)
}

// markFilenameFlags completes flags that take rules or manifest files (and
// directories) with YAML and JSON files.
func markFilenameFlags(cmd *cobra.Command, flags ...string) {
	for _, f := range flags {
		if err := cmd.MarkFlagFilename(f, "yaml", "yml", "json"); err != nil {
			panic(err)
		}
	}
}

// completeRulesFiles completes positional rules files and directories.
func completeRulesFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
}

// ruleVersions lists the group/versions that the migration rules of files
// (and the built-in rules, with withBuiltin) lead from and to, for
// completing --output-version; rules that do not load give none.
func ruleVersions(paths []string, withBuiltin bool) []string {
	var refs []rules.RuleRef
	if rs := loadForCompletion(paths); rs != nil {
		refs = rs.MigrationRules()
	}
	if bs, err := builtin.Load(); withBuiltin && err == nil {
		refs = append(refs, bs.MigrationRules()...)
	}
	seen := map[string]bool{}
	for _, ref := range refs {
		r := ref.Rule
		seen[schema.GroupVersion{Group: r.APIGroup, Version: r.FromVersion}.String()] = true
		seen[schema.GroupVersion{Group: r.TargetGroup(), Version: r.ToVersion}.String()] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// ruleIDs lists the IDs of the migration rules of files, for completing
// --rule.
func ruleIDs(paths []string) []string {
	rs := loadForCompletion(paths)
	if rs == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, ref := range rs.MigrationRules() {
		seen[ref.Rule.ID()] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// loadForCompletion loads rules for completing flag values. cobra parses
// the flags twice while completing, so a repeatable flag holds each path
// twice.
func loadForCompletion(paths []string) *rules.RuleSet {
	if len(paths) == 0 {
		return nil
	}
	seen := map[string]bool{}
	unique := paths[:0:0]
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			unique = append(unique, p)
		}
	}
	rs, err := rules.Load(unique...)
	if err != nil {
		return nil
	}
	return rs
}
