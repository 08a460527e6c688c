package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine/rulesource"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/crd"
)

// fieldManager owns what `mvpctl rules apply` writes (server-side apply).
const fieldManager = "mvpctl"

func newRulesCmd() *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Manage TransformationRules objects in a cluster",
		Long: `Manage TransformationRules objects (transformationrules.mvp.k8s.io) in a
cluster, where proxies started with --rules-from-cluster pick them up.

The objects are cluster-scoped; --namespace is accepted and ignored.`,
	}
	flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newRulesApplyCmd(flags), newRulesGetCmd(flags), newRulesStatusCmd(flags), newRulesWatchCmd(flags), newRulesBuiltinCmd(), newRulesUsageCmd(flags))
	return cmd
}

// clusterConfig is the client configuration of the kubeconfig flags; no
// kubeconfig at all (client-go would fall back to localhost:8080) is a
// usage error.
func clusterConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	if noKubeconfig(flags) {
		return nil, usageErrorf("no cluster: the server could not be found; is the kubeconfig set? (--kubeconfig, KUBECONFIG or ~/.kube/config)")
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, inputError(fmt.Errorf("kubeconfig: %w", err))
	}
	return cfg, nil
}

// noKubeconfig says whether the flags name no server: no kubeconfig with a
// cluster, no --server, and not running in a pod.
func noKubeconfig(flags *genericclioptions.ConfigFlags) bool {
	if flags.APIServer != nil && *flags.APIServer != "" {
		return false
	}
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil || len(raw.Clusters) > 0 {
		return false
	}
	_, err = rest.InClusterConfig()
	return err != nil
}

func rulesClient(flags *genericclioptions.ConfigFlags) (dynamic.NamespaceableResourceInterface, error) {
	cfg, err := clusterConfig(flags)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "mvpctl"
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, inputError(err)
	}
	return c.Resource(crd.GroupVersionResource), nil
}

// clusterError explains the errors users meet most: a server that cannot
// be reached (an input error, exit 2, in one line as kubectl says it), no
// CRD, no access (the cluster's answer, exit 1).
func clusterError(err error) error {
	var ue *url.Error
	switch {
	case errors.As(err, &ue) && utilnet.IsConnectionRefused(err):
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Host
		}
		return usageErrorf("the connection to the server %s was refused; is the kubeconfig's server right?", host)
	case errors.As(err, &ue):
		return usageErrorf("unable to connect to the server: %v", ue.Err)
	case apierrors.IsNotFound(err):
		return failure(fmt.Errorf("%w (is the CustomResourceDefinition %s installed? kubectl apply -k deploy/crd)", err, crd.Name))
	}
	return failure(err)
}

type rulesApplyOptions struct {
	Files          []string
	Rules          []string // more files, as with --rules in other commands
	DryRun         string
	ForceConflicts bool
}

func newRulesApplyCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var opts rulesApplyOptions
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR...",
		Short: "Lint TransformationRules files and apply them to the cluster",
		Long: `Lint TransformationRules files and apply them to the cluster.

Every document is checked as 'mvpctl lint' would; if any fails, nothing is
applied (exit 2). Then each document is applied with server-side apply
(field manager mvpctl) as the TransformationRules object of its name.

--dry-run=client checks the files and prints what would be applied without
reaching the cluster; --dry-run=server has the server validate and admit
each object without storing it, as kubectl apply does.`,
		Example: `  mvpctl rules apply -f rules/
  mvpctl rules apply -f upgrade.yaml --dry-run=server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRulesApply(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), flags, opts)
		},
	}
	cmd.Flags().StringArrayVarP(&opts.Files, "filename", "f", nil, "rules file or directory (repeatable; - for standard input)")
	cmd.Flags().StringArrayVar(&opts.Rules, "rules", nil, "rules file or directory, as -f (repeatable)")
	cmd.Flags().StringVar(&opts.DryRun, "dry-run", "none", `"none", "client" (check and print, without the cluster) or "server" (the server validates and admits but does not store)`)
	cmd.Flags().BoolVar(&opts.ForceConflicts, "force-conflicts", false, "take over fields another manager owns")
	markFilenameFlags(cmd, "filename", "rules")
	registerCompletion(cmd, "dry-run", completeWords("none", "client", "server"))
	return cmd
}

func runRulesApply(ctx context.Context, stdout, stderr io.Writer, flags *genericclioptions.ConfigFlags, opts rulesApplyOptions) error {
	files := append(opts.Files, opts.Rules...)
	if len(files) == 0 {
		return usageErrorf("rules apply: give -f FILE or -f DIR")
	}
	var dryRun []string
	suffix := ""
	switch opts.DryRun {
	case "none", "":
	case "client":
		suffix = " (dry run)"
	case "server":
		dryRun, suffix = []string{metav1.DryRunAll}, " (server dry run)"
	default:
		return usageErrorf(`--dry-run %q: want "none", "client" or "server"`, opts.DryRun)
	}
	rs, err := rules.Load(files...)
	if err != nil {
		return rulesError(stderr, err)
	}
	var client dynamic.NamespaceableResourceInterface
	if opts.DryRun != "client" {
		if client, err = rulesClient(flags); err != nil {
			return err
		}
	}
	for _, d := range rs.Documents {
		u, err := ruleObject(d.Rules)
		if err != nil {
			return failure(err)
		}
		if client != nil {
			_, err = client.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: fieldManager, Force: opts.ForceConflicts, DryRun: dryRun})
			if err != nil {
				return clusterError(fmt.Errorf("%s: %s: %w", d.File, u.GetName(), err))
			}
		}
		fmt.Fprintf(stdout, "%s/%s applied%s\n", crd.Name, u.GetName(), suffix)
	}
	return nil
}

// ruleObject turns a decoded document into the object to apply.
func ruleObject(r *rules.TransformationRules) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}

type rulesGetOptions struct {
	Output string
}

func newRulesGetCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var opts rulesGetOptions
	cmd := &cobra.Command{
		Use:   "get [NAME...]",
		Short: "List TransformationRules objects",
		Example: `  mvpctl rules get
  kubectl mvp rules get upgrade-v1.35-to-v1.36 -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRulesGet(cmd.Context(), cmd.OutOrStdout(), flags, args, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "output format: (empty) for a table, wide, yaml, json or name")
	registerCompletion(cmd, "output", completeWords("wide", "yaml", "json", "name"))
	return cmd
}

// fetchRules gets the named objects, or all of them, by name.
func fetchRules(ctx context.Context, flags *genericclioptions.ConfigFlags, names []string) ([]unstructured.Unstructured, error) {
	client, err := rulesClient(flags)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, clusterError(err)
		}
		items := list.Items
		sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
		return items, nil
	}
	var out []unstructured.Unstructured
	for _, n := range names {
		u, err := client.Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return nil, clusterError(err)
		}
		out = append(out, *u)
	}
	return out, nil
}

func runRulesGet(ctx context.Context, stdout io.Writer, flags *genericclioptions.ConfigFlags, names []string, opts rulesGetOptions) error {
	switch opts.Output {
	case "", "wide", "yaml", "json", "name":
	default:
		return usageErrorf("--output %q: want wide, yaml, json or name", opts.Output)
	}
	items, err := fetchRules(ctx, flags, names)
	if err != nil {
		return err
	}
	switch opts.Output {
	case "yaml", "json":
		var v any = map[string]any{"apiVersion": "v1", "kind": "List", "items": itemsAny(items)}
		if len(names) == 1 {
			v = items[0].Object
		}
		var data []byte
		if opts.Output == "json" {
			data, err = json.MarshalIndent(v, "", "    ")
			data = append(data, '\n')
		} else {
			data, err = yaml.Marshal(v)
		}
		if err != nil {
			return failure(err)
		}
		_, err = stdout.Write(data)
		return err
	case "name":
		for _, u := range items {
			fmt.Fprintf(stdout, "%s/%s\n", crd.Name, u.GetName())
		}
		return nil
	}
	if len(items) == 0 {
		fmt.Fprintln(stdout, "No TransformationRules found.")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 3, ' ', 0)
	header := "NAME\tRULES\tROUTES\tREADY\tAGE"
	if opts.Output == "wide" {
		header += "\tGENERATION\tOBSERVED\tREASON"
	}
	fmt.Fprintln(tw, header)
	for _, u := range items {
		st, ready := ruleStatus(&u)
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", u.GetName(), count(st.MigrationRules, st.ObservedGeneration), count(st.RoutingRules, st.ObservedGeneration), condStatus(ready), age(u.GetCreationTimestamp()))
		if opts.Output == "wide" {
			reason := ""
			if ready != nil {
				reason = ready.Reason
			}
			line += fmt.Sprintf("\t%d\t%d\t%s", u.GetGeneration(), st.ObservedGeneration, reason)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func itemsAny(items []unstructured.Unstructured) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i].Object
	}
	return out
}

func count(n int32, observed int64) string {
	if observed == 0 {
		return "<none>"
	}
	return fmt.Sprint(n)
}

func condStatus(c *metav1.Condition) string {
	if c == nil {
		return "<none>"
	}
	return string(c.Status)
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// ruleStatus decodes an object's status and finds its Ready condition.
func ruleStatus(u *unstructured.Unstructured) (rules.TransformationRulesStatus, *metav1.Condition) {
	var st rules.TransformationRulesStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}
	return st, meta.FindStatusCondition(st.Conditions, rules.ConditionReady)
}

type rulesStatusOptions struct {
	Wait time.Duration
}

func newRulesStatusCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var opts rulesStatusOptions
	cmd := &cobra.Command{
		Use:   "status [NAME...]",
		Short: "Show whether the proxies serve each TransformationRules object's current generation",
		Long: `Show whether the proxies serve each TransformationRules object's current
generation: its Ready condition and, when a generation was rejected, every
problem by field path.

Exit status 0 when every object's current generation is Ready, 1 when one
is not (rejected, or not yet observed by a proxy). --wait waits up to the
given time for every object to become Ready.`,
		Example: `  mvpctl rules apply -f upgrade.yaml && mvpctl rules status upgrade-v1.35-to-v1.36 --wait 30s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRulesStatus(cmd.Context(), cmd.OutOrStdout(), flags, args, opts)
		},
	}
	cmd.Flags().DurationVar(&opts.Wait, "wait", 0, "wait this long for every object to be Ready")
	return cmd
}

func runRulesStatus(ctx context.Context, stdout io.Writer, flags *genericclioptions.ConfigFlags, names []string, opts rulesStatusOptions) error {
	deadline := time.Now().Add(opts.Wait)
	for {
		items, err := fetchRules(ctx, flags, names)
		if err != nil {
			return err
		}
		notReady := 0
		for i := range items {
			if !currentReady(&items[i]) {
				notReady++
			}
		}
		if notReady == 0 || !time.Now().Before(deadline) {
			printRulesStatus(stdout, items)
			if notReady > 0 {
				return &silentError{code: exitFailure}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return failure(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// currentReady says whether the object's current generation is Ready.
func currentReady(u *unstructured.Unstructured) bool {
	st, c := ruleStatus(u)
	return st.ObservedGeneration == u.GetGeneration() && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == u.GetGeneration()
}

func printRulesStatus(w io.Writer, items []unstructured.Unstructured) {
	if len(items) == 0 {
		fmt.Fprintln(w, "No TransformationRules found.")
		return
	}
	for _, u := range items {
		st, c := ruleStatus(&u)
		state := "NotObserved"
		switch {
		case st.ObservedGeneration != u.GetGeneration():
			state = fmt.Sprintf("NotObserved (generation %d, observed %d)", u.GetGeneration(), st.ObservedGeneration)
		case c != nil && c.Status == metav1.ConditionTrue:
			state = "Ready"
		case c != nil:
			state = "NotReady: " + c.Reason
		}
		fmt.Fprintf(w, "%s: %s\n", u.GetName(), state)
		if c != nil && c.Message != "" {
			for _, part := range strings.Split(c.Message, "; ") {
				fmt.Fprintf(w, "    %s\n", part)
			}
		}
	}
}

type rulesWatchOptions struct {
	Files       []string
	FromCluster bool
	Host        string
}

func newRulesWatchCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var opts rulesWatchOptions
	cmd := &cobra.Command{
		Use:   "watch [--rules FILE|DIR]... [--rules-from-cluster]",
		Short: "Load rules as mvpctl proxy does and print each set that becomes active",
		Long: `Load rules from files (watched) and/or TransformationRules objects in the
cluster exactly as mvpctl proxy does, and print one JSON line on standard
output for each rule set that becomes active: its revision, the time, its
documents and rules. Rejections are logged on standard error; with
--rules-from-cluster, this command also writes the objects' status and
Events, like a proxy.

Use it to check what a proxy would serve, or as a lightweight status
writer where no proxy watches the cluster yet.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runRulesWatch(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), flags, opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Files, "rules", nil, "rules file or directory to watch (repeatable)")
	markFilenameFlags(cmd, "rules")
	cmd.Flags().BoolVar(&opts.FromCluster, "rules-from-cluster", false, "watch TransformationRules objects in the cluster")
	cmd.Flags().StringVar(&opts.Host, "host", "", "host named in Events (e.g. the pod name)")
	return cmd
}

// watchLine is what rules watch prints for each active set.
type watchLine struct {
	Revision       uint64    `json:"revision"`
	Time           time.Time `json:"time"`
	Documents      []string  `json:"documents"`
	MigrationRules []string  `json:"migrationRules"`
	RoutingRules   int       `json:"routingRules"`
}

func runRulesWatch(ctx context.Context, stdout, stderr io.Writer, flags *genericclioptions.ConfigFlags, opts rulesWatchOptions) error {
	if len(opts.Files) == 0 && !opts.FromCluster {
		return usageErrorf("rules watch: give --rules FILE, --rules-from-cluster, or both")
	}
	sopts := rulesource.Options{
		Files:     opts.Files,
		Component: "mvpctl-rules-watch",
		Host:      opts.Host,
		Logger:    slog.New(slog.NewJSONHandler(stderr, nil)),
	}
	var cluster *rest.Config
	if opts.FromCluster {
		var err error
		if cluster, err = clusterConfig(flags); err != nil {
			return err
		}
	}
	src, err := startRuleSource(ctx, stderr, sopts, cluster)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	src.Subscribe(func(set *rulesource.Set) {
		line := watchLine{Revision: set.Revision, Time: set.Loaded.UTC(), RoutingRules: len(set.RoutingRules), Documents: []string{}, MigrationRules: []string{}}
		for _, d := range set.Rules.Documents {
			line.Documents = append(line.Documents, d.File)
		}
		for _, c := range set.Converter.Rules() {
			line.MigrationRules = append(line.MigrationRules, c.Rule.ID())
		}
		mu.Lock()
		enc.Encode(line)
		mu.Unlock()
	})
	<-src.Done()
	return nil
}
