package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

func newRulesBuiltinCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "builtin",
		Short: "List the built-in rules: Kubernetes' own version changes, embedded in mvpctl",
		Long: `List the TransformationRules built into mvpctl: conversions between the
versions of built-in Kubernetes APIs, checked against Kubernetes' own
conversion code, each with the release that deprecated and the one that
removed its old version. They are the files of rules/builtin, one per API
group.`,
		Example: `  mvpctl rules builtin
  mvpctl rules builtin -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRulesBuiltin(cmd.OutOrStdout(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// builtinRuleJSON is one line of `rules builtin -o json`.
type builtinRuleJSON struct {
	Name         string `json:"name"`
	File         string `json:"file"`
	ID           string `json:"id"`
	Resource     string `json:"resource"`
	Kind         string `json:"kind"`
	From         string `json:"fromApiVersion"`
	To           string `json:"toApiVersion"`
	DeprecatedIn string `json:"deprecatedIn,omitempty"`
	RemovedIn    string `json:"removedIn,omitempty"`
}

func runRulesBuiltin(stdout io.Writer, output string) error {
	if output != "text" && output != "json" {
		return usageErrorf("unknown output format %q: use text or json", output)
	}
	list, err := builtin.Rules()
	if err != nil {
		return failure(err)
	}
	if output == "json" {
		out := make([]builtinRuleJSON, 0, len(list))
		for _, r := range list {
			out = append(out, builtinRuleJSON{Name: r.Name, File: r.File, ID: r.ID, Resource: r.Resource, Kind: r.From.Kind,
				From: r.From.GroupVersion().String(), To: r.To.GroupVersion().String(),
				DeprecatedIn: r.Deprecated.String(), RemovedIn: r.Removed.String()})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tFROM\tTO\tDEPRECATED\tREMOVED\tFILE")
	for _, r := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.From.Kind, r.From.GroupVersion(), r.To.GroupVersion(), orDash(r.Deprecated.String()), orDash(r.Removed.String()), r.File)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
