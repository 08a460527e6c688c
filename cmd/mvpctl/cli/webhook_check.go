package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/webhook"
)

type webhookCheckOptions struct {
	Files []string // CRDs and objects
	Rules []string
	CRD   string // a live CRD's name
	Kube  *genericclioptions.ConfigFlags
}

func newWebhookCheckCmd() *cobra.Command {
	var opts webhookCheckOptions
	cmd := &cobra.Command{
		Use:   "check --rules RULES (-f CRD.yaml [-f OBJECTS.yaml]... | --crd NAME)",
		Short: "Prove that rules convert a CRD's objects between all its versions, losslessly",
		Long: `Prove, before wiring the webhook, what it would do for a CRD: that the rules
lead from each of its versions (served or stored) to every other, and that a
sample object and each given object of its kind converts to every version and
back exactly, within the conversion webhook contract (the desired apiVersion,
the same kind, metadata changed in labels and annotations only).

Offline, -f names CRD files and object files (objects keep their metadata).
With --crd, the CRD and every object stored for it are read from the cluster
(listed in the storage version, a page at a time).

Exit status: 0 when nothing was found, 1 when something was, 2 on bad usage or
unreadable input.`,
		Example: `  mvpctl webhook check --rules rules.yaml -f crd.yaml -f examples/
  mvpctl webhook check --rules rules.yaml --crd widgets.example.com --kubeconfig admin.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWebhookCheck(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&opts.Files, "filename", "f", nil, "file of CRDs (apiextensions.k8s.io/v1) and objects to check (repeatable)")
	f.StringArrayVar(&opts.Rules, "rules", nil, "TransformationRules file or directory (repeatable)")
	f.StringVar(&opts.CRD, "crd", "", "check this CRD of the cluster and its stored objects")
	markFilenameFlags(cmd, "rules", "filename")
	opts.Kube = &genericclioptions.ConfigFlags{KubeConfig: ptr.To(""), Context: ptr.To("")}
	opts.Kube.AddFlags(f)
	return cmd
}

func runWebhookCheck(ctx context.Context, stdout, stderr io.Writer, opts webhookCheckOptions) error {
	switch {
	case len(opts.Rules) == 0:
		return usageErrorf("webhook check: give --rules FILE|DIR")
	case len(opts.Files) == 0 && opts.CRD == "":
		return usageErrorf("webhook check: give -f CRD.yaml or --crd NAME")
	}
	conv, err := engine.Load(engine.Options{Strict: true}, opts.Rules...)
	if err != nil {
		return rulesError(stderr, err)
	}
	in, err := webhook.ReadCheckFiles(opts.Files)
	if err != nil {
		return inputError(err)
	}
	if opts.CRD != "" {
		cfg, err := clusterConfig(opts.Kube)
		if err != nil {
			return err
		}
		live, err := webhook.ReadLiveCheck(ctx, cfg, opts.CRD)
		if err != nil {
			return inputError(fmt.Errorf("--crd %s: %w", opts.CRD, err))
		}
		in.CRDs, in.Objects = append(in.CRDs, live.CRDs...), append(in.Objects, live.Objects...)
	}
	if len(in.CRDs) == 0 {
		return usageErrorf("webhook check: no CustomResourceDefinition in %v", opts.Files)
	}
	res := webhook.Check(ctx, conv, in)
	for _, f := range res.Findings {
		fmt.Fprintln(stdout, f)
	}
	fmt.Fprintf(stdout, "%d CRDs, %d objects checked: %d findings\n", res.CRDs, res.Objects, len(res.Findings))
	if len(res.Findings) > 0 {
		return &silentError{code: exitFailure}
	}
	return nil
}
