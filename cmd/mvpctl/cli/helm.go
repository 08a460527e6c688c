package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules/builtin"
	"github.com/mvpctl/mvpctl/scan/helmrelease"
)

func newHelmCmd() *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "helm",
		Short: "Repair Helm releases whose stored manifest uses removed API versions",
	}
	flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newHelmRepairCmd(flags))
	return cmd
}

// helmRepairOptions are the flags of mvpctl helm repair.
type helmRepairOptions struct {
	AllNamespaces bool
	// KubernetesVersion is the release to upgrade for; empty: the
	// cluster's.
	KubernetesVersion   string
	Rules               []string
	Builtin             bool
	Apply               bool   // write; false prints what would change
	BackupDir           string // where the deployed records go before they are replaced; empty: none
	ContinueOnError     bool   // write releases with the objects that converted even when some failed
	RemoveUnconvertible bool   // drop objects that cannot be converted from the manifest
	ProgramTimeout      time.Duration
}

func newHelmRepairCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	opts := helmRepairOptions{Builtin: true}
	cmd := &cobra.Command{
		Use:   "repair [RELEASE] (-n NAMESPACE | --all-namespaces) [--kubernetes-version vX.Y] [--apply]",
		Short: "Convert the removed API versions in Helm releases' stored manifests, so that helm upgrade works again",
		Long: `After a cluster upgrade, helm upgrade fails on a release whose deployed
revision's manifest uses an API version the cluster no longer serves
("unable to build kubernetes objects from current release manifest").
repair converts every object of that manifest (and of its hooks) on a
version --kubernetes-version removes to its replacement, field by field,
with the built-in rules and --rules, as 'mvpctl convert --kubernetes-version'
converts files; the other documents stay byte for byte.

Without --apply it prints what would change, as a diff of each manifest.
With --apply it writes as helm-mapkubeapis does, in the release's storage
(Secrets, or ConfigMaps for releases stored there): the deployed revision
becomes superseded, and a new revision holds the converted manifest,
deployed, described "` + helmrelease.Description + `". Both are encoded and labelled as Helm 3 and
Helm 4 write them. --backup-dir saves each deployed record (the Secret or
ConfigMap) before it is replaced.

Nothing is written if any object fails to convert, unless
--continue-on-error writes each release with the objects that did convert.
An object whose version has no replacement (PodSecurityPolicy) or that no
rule converts is reported; --remove-unconvertible drops it from the
manifest instead, so that Helm no longer manages it (the object in the
cluster is left alone).

Exit status: 0 when every release is repaired (or needs nothing), 1 when an
object failed to convert or a release could not be written, 2 for bad usage,
an unreachable cluster or a release that does not exist.`,
		Example: `  mvpctl helm repair shop -n prod --kubernetes-version v1.36               # what would change
  mvpctl helm repair shop -n prod --kubernetes-version v1.36 --apply --backup-dir backup/
  mvpctl helm repair --all-namespaces --apply`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runHelmRepair(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), flags, name, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.AllNamespaces, "all-namespaces", "A", false, "repair the releases of every namespace")
	f.StringVar(&opts.KubernetesVersion, "kubernetes-version", "", fmt.Sprintf("convert what this Kubernetes release (vMAJOR.MINOR, up to %s) no longer serves (default: the cluster's version)", builtin.Newest))
	f.StringSliceVar(&opts.Rules, "rules", nil, "TransformationRules file or directory (repeatable), added to the built-in rules; a rule here replaces the built-in one for the same resource and versions")
	f.BoolVar(&opts.Builtin, "builtin", true, "use mvpctl's built-in rules for Kubernetes' own API versions; --builtin=false uses only --rules")
	f.BoolVar(&opts.Apply, "apply", false, "write the repaired revisions (default: print what would change)")
	f.StringVar(&opts.BackupDir, "backup-dir", "", "with --apply, write each deployed record (the Secret or ConfigMap, as JSON) to DIR/NAMESPACE/ before replacing it")
	f.BoolVar(&opts.ContinueOnError, "continue-on-error", false, "write each release with the objects that converted even when others failed (the exit status stays 1)")
	f.BoolVar(&opts.RemoveUnconvertible, "remove-unconvertible", false, "drop objects that cannot be converted (no replacement, such as PodSecurityPolicy, or no rule) from the manifest instead of failing")
	f.DurationVar(&opts.ProgramTimeout, "program-timeout", engine.DefaultProgramTimeout, "longest run of one rule's program on one object")
	markFilenameFlags(cmd, "rules", "backup-dir")
	return cmd
}

// maxPlanned bounds the manifests held at once: every release is
// converted before any is written.
const maxPlanned = 512 << 20

// helmRepair is one release's repair, planned before anything is written.
type helmRepair struct {
	stored *helmrelease.Stored
	conv   *helmrelease.Conversion
}

func runHelmRepair(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, flags *genericclioptions.ConfigFlags, name string, opts helmRepairOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case name == "" && !opts.AllNamespaces:
		return usageErrorf("give a RELEASE, or --all-namespaces for every release")
	case name != "" && opts.AllNamespaces:
		return usageErrorf("give a RELEASE or --all-namespaces, not both")
	case len(opts.Rules) == 0 && !opts.Builtin:
		return usageErrorf("--builtin=false leaves no rules: give --rules FILE or a directory")
	case opts.BackupDir != "" && !opts.Apply:
		return usageErrorf("--backup-dir saves what --apply replaces: give --apply too")
	case opts.ProgramTimeout <= 0:
		return usageErrorf("--program-timeout %s: want a positive duration", opts.ProgramTimeout)
	}
	var release builtin.Release
	if opts.KubernetesVersion != "" {
		var err error
		if release, err = builtin.ParseRelease(opts.KubernetesVersion); err != nil {
			return usageErrorf("--kubernetes-version: %v", err)
		}
	}
	cfg, err := clusterConfig(flags)
	if err != nil {
		return err
	}
	cfg.UserAgent = "mvpctl helm repair"
	namespace := ""
	if !opts.AllNamespaces {
		if namespace, _, err = flags.ToRawKubeConfigLoader().Namespace(); err != nil {
			return inputError(fmt.Errorf("kubeconfig: %w", err))
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return inputError(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return inputError(err)
	}
	if release.IsZero() {
		if release, err = clusterRelease(cs); err != nil {
			return err
		}
	}
	conv, err := loadConverter(stdin, convertOptions{Rules: opts.Rules, Builtin: opts.Builtin},
		engine.Options{Executor: engine.Native, Strict: true, KeepGoing: true, ProgramTimeout: opts.ProgramTimeout})
	if err != nil {
		return rulesError(stderr, err)
	}
	store := &helmrelease.Store{Core: cs, Meta: md}
	releases, err := store.List(ctx, namespace, name)
	if err != nil {
		return clusterError(err)
	}
	if name != "" && len(releases) == 0 {
		return usageErrorf("release %q not found in namespace %q (no Secret or ConfigMap labelled owner=helm,name=%s)", name, namespace, name)
	}
	copts := helmrelease.ConvertOptions{Plan: engine.Plan{Release: release}, Converter: conv, RemoveUnconvertible: opts.RemoveUnconvertible}

	// Plan every release first: nothing is written if any fails.
	var repairs []helmRepair
	failed, unchanged, planned := 0, 0, 0
	for _, rel := range releases {
		if rel.Deployed == 0 {
			if name != "" {
				fmt.Fprintf(stderr, "error: %s: no deployed revision (the last, %d, is %s): helm upgrade does not read its manifest\n", rel, rel.Last, rel.LastStatus)
				failed++
				continue
			}
			fmt.Fprintf(stderr, "warning: %s: no deployed revision (the last, %d, is %s); skipped\n", rel, rel.Last, rel.LastStatus)
			continue
		}
		st, err := store.Get(ctx, rel)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", rel, err)
			failed++
			continue
		}
		if planned += len(st.Record.Manifest()); planned > maxPlanned {
			return failure(fmt.Errorf("the releases to repair hold more than %d MiB of manifests: repair them a namespace or a release at a time", maxPlanned>>20))
		}
		c, err := helmrelease.Convert(ctx, st.Record, copts)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s revision %d: %v\n", rel, rel.Deployed, err)
			failed++
			continue
		}
		if !c.Changed(st.Record) && c.Failed() == 0 {
			unchanged++
			continue
		}
		printHelmChanges(stdout, stderr, st, c)
		if c.Failed() > 0 {
			failed++
		}
		if c.Changed(st.Record) {
			repairs = append(repairs, helmRepair{stored: st, conv: c})
		}
	}
	if !opts.Apply {
		for _, r := range repairs {
			printHelmDiff(stdout, r)
		}
		fmt.Fprintf(stdout, "%d of %d releases to repair for Kubernetes %s, %d need nothing; nothing written (dry run: give --apply to write)\n",
			len(repairs), len(releases), release, unchanged)
		if failed > 0 {
			return &silentError{code: exitFailure}
		}
		return nil
	}
	if failed > 0 && !opts.ContinueOnError {
		fmt.Fprintf(stderr, "error: %d releases have objects that failed to convert; nothing written\n", failed)
		return &silentError{code: exitFailure}
	}
	for _, r := range repairs {
		st := r.stored
		if opts.BackupDir != "" {
			path, err := writeHelmBackup(opts.BackupDir, st)
			if err != nil {
				fmt.Fprintf(stderr, "error: %s: backup: %v; not written\n", st.Release, err)
				failed++
				continue
			}
			fmt.Fprintf(stdout, "%s: revision %d saved in %s\n", st.Release, st.Deployed, path)
		}
		rev, err := store.Write(ctx, st, r.conv.Apply(st.Record))
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", st.Release, err)
			failed++
			continue
		}
		fmt.Fprintf(stdout, "%s: revision %d superseded; revision %d deployed with the converted manifest (%q)\n", st.Release, st.Deployed, rev, helmrelease.Description)
	}
	if failed > 0 {
		return &silentError{code: exitFailure}
	}
	return nil
}

// clusterRelease is the cluster's Kubernetes release, what repair upgrades
// for without --kubernetes-version (as helm-mapkubeapis asks the cluster).
func clusterRelease(cs kubernetes.Interface) (builtin.Release, error) {
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return builtin.Release{}, clusterError(err)
	}
	r, err := builtin.ParseRelease(fmt.Sprintf("v%s.%s", v.Major, strings.TrimRight(v.Minor, "+")))
	if err != nil {
		return r, failure(fmt.Errorf("the cluster's version %s: %v; give --kubernetes-version", v.GitVersion, err))
	}
	return r, nil
}

// printHelmChanges says, one line per object, what the repair of a
// release converts, removes or fails on.
func printHelmChanges(stdout, stderr io.Writer, st *helmrelease.Stored, c *helmrelease.Conversion) {
	fmt.Fprintf(stdout, "%s: revision %d (%s %s/%s):\n", st.Release, st.Deployed, st.Driver, st.Namespace, helmrelease.Key(st.Name, st.Deployed))
	for _, ch := range c.Changes {
		obj := ch.Kind + " " + ch.Name
		switch {
		case ch.Err != nil:
			fmt.Fprintf(stderr, "error: %s: %s: %s: %v\n", st.Release, ch.Source, obj, ch.Err)
			if ch.Unconvertible {
				fmt.Fprintf(stderr, "  (--remove-unconvertible drops it from the release; the object in the cluster stays)\n")
			}
		case ch.Removed:
			fmt.Fprintf(stdout, "  %s: %s (%s): removed from the release: no replacement or rule\n", ch.Source, obj, ch.From)
		default:
			fmt.Fprintf(stdout, "  %s: %s: %s -> %s\n", ch.Source, obj, ch.From, ch.To)
		}
	}
}

func printHelmDiff(w io.Writer, r helmRepair) {
	rec, st := r.stored.Record, r.stored
	label := fmt.Sprintf("%s/%s", st.Namespace, helmrelease.Key(st.Name, st.Deployed))
	w.Write(diff.Diff(label+" manifest", []byte(rec.Manifest()), "repaired manifest", []byte(r.conv.Manifest)))
	for i, m := range rec.HookManifests() {
		if r.conv.Hooks[i] != m {
			w.Write(diff.Diff(label+" hook "+rec.HookPath(i), []byte(m), "repaired hook", []byte(r.conv.Hooks[i])))
		}
	}
}

// writeHelmBackup writes the deployed record as it can be restored with
// kubectl replace -f (or create -f after the repair's revisions are
// deleted).
func writeHelmBackup(dir string, st *helmrelease.Stored) (string, error) {
	js, err := json.MarshalIndent(st.Backup(), "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, st.Namespace, helmrelease.Key(st.Name, st.Deployed)+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := writeFileAtomic(path, append(js, '\n'), 0o600); err != nil {
		return "", err
	}
	return path, nil
}
