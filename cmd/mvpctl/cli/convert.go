package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
	"github.com/mvpctl/mvpctl/scan"
)

type convertOptions struct {
	Files         []string // manifests: files, directories or - for stdin
	Recursive     bool     // read the subdirectories of directories too
	Rules         []string // rules files or directories
	Builtin       bool     // use the built-in rules (rules/builtin), which Rules override
	OutputVersion string   // group/version to convert to
	// KubernetesVersion is the release to convert for (vMAJOR.MINOR):
	// objects on versions it removes go to their replacements. Empty: use
	// OutputVersion.
	KubernetesVersion string
	IncludeDeprecated bool // with KubernetesVersion, also convert versions it deprecates
	// WebhookSideEffects decides, with KubernetesVersion, the sideEffects of
	// converted webhooks that v1 does not allow; empty: report them.
	WebhookSideEffects string
	Output             string        // yaml, json, name or a template (jsonpath=...)
	ContinueOnError    bool          // write every object even if some failed
	AllowUnconverted   bool          // objects no rule converts are a warning, not a failure
	Quiet              bool          // no per-object warnings
	Engine             string        // native or jq
	ProgramTimeout     time.Duration // longest run of one rule's program on one object
	InPlace            bool          // rewrite the input files instead of writing to standard output
	// FollowSymlinks lets InPlace rewrite the target of a symbolic link
	// that lies in the tree given; false refuses every link.
	FollowSymlinks bool
	// RoundTripData keeps the conversion-data annotation in converted
	// objects; it applies only when roundTripDataSet, otherwise the mode
	// decides (see roundTrip).
	RoundTripData    bool
	roundTripDataSet bool // --round-trip-data was given
	outputSet        bool // -o was given
}

// roundTrip says whether converted objects keep the round-trip annotation:
// as --round-trip-data says, or by default with --output-version (objects
// converted between versions may be converted back) but not with
// --kubernetes-version (a one-way upgrade of manifests).
func (o convertOptions) roundTrip() bool {
	if o.roundTripDataSet {
		return o.RoundTripData
	}
	return o.KubernetesVersion == ""
}

func newConvertCmd() *cobra.Command {
	var opts convertOptions
	cmd := &cobra.Command{
		Use:   "convert -f FILE (--output-version GROUP/VERSION | --kubernetes-version vX.Y) [--rules RULES] [FILE...]",
		Short: "Convert manifests between API versions with TransformationRules",
		Long: `Convert manifests between API versions with TransformationRules, like
kubectl convert, for built-in kinds and custom resources alike, or upgrade
them for a Kubernetes release in one step.

mvpctl's built-in rules (Kubernetes' own version changes, listed by
'mvpctl rules builtin') are used unless --builtin=false. --rules adds
rules files; a rule there replaces the built-in rule for the same resource
between the same two versions.

Input is YAML (several documents separated by ---) or JSON, including List
kinds. With --output-version, objects of its group (or of a group the rules
connect to it, such as extensions to networking.k8s.io) are converted to
it. With --kubernetes-version, every object on an API version that release
no longer serves (--include-deprecated: or deprecates) is converted to the
version Kubernetes names as its replacement, as 'mvpctl scan' reports them.
Other objects are written untouched: a YAML document that needs no change
comes out byte for byte as it went in, comments included. An object that
has to change but that no rule converts (or whose removed version has no
replacement, such as PodSecurityPolicy) is a failure, unless
--allow-unconverted writes it unchanged with a warning.

With --kubernetes-version, converted objects are also made valid for the
target's validation where v1 refuses what v1beta1 allowed and the change is
mechanical and loses nothing, with a warning per object and change: a CRD
version without a schema gets {type: object,
x-kubernetes-preserve-unknown-fields: true}; preserveUnknownFields: true
becomes false with x-kubernetes-preserve-unknown-fields on every object of
the schema; a schema object with properties but no type gets type object;
a webhook without admissionReviewVersions gets [v1beta1], v1beta1's default.
What needs a decision fails the object with the field and the choices: a
webhook's sideEffects Unknown or Some (v1beta1's default was Unknown),
which --set-webhook-side-effects decides (docs/convert.md).

Output is written only when every object converted; --continue-on-error
writes every object, converted or unchanged, and names each failure on
standard error. Either way the exit status is 1 when an object failed.

--in-place rewrites each file that has a converted document instead of
writing to standard output: the file's other documents stay byte for byte
and in order, files without a converted document are not touched, and each
file is replaced at once (a temporary file in its directory, with its mode,
renamed over it; all are written before any is replaced), so no file is
ever half-written. A converted document keeps the comments above it; it
loses the comments inside it, its key order (keys come out sorted), quoting
and flow or block style, anchors and aliases (written out in full) and blank
lines, as any YAML that is decoded and encoded again; a JSON document is
written with 4-space indentation.

Every file is checked before any is written, and one refused leaves every
file as it was (exit 2): a symbolic link is refused unless
--follow-symlinks is given, and even then one whose target lies outside
the -f directory (or the directory of the -f file) is refused; -R does not
descend into linked directories (a -f directory given as a link is read). A file with other hard links is refused,
since the new file would leave them with the old content, and so is
another user's file in a sticky directory (only root or its owner may
replace it). The new file
keeps the old one's permission bits but not setuid, setgid or sticky, and,
when run as root, its owner and group; another user cannot give a file
away, so the rewritten file is theirs (a warning says so) and keeps the
group if they are in it.

Where the new version cannot hold something of the old one (a field it
lacks, or the absence of a field the conversion defaulted), a converted
object carries it in the annotation ` + rules.ConversionDataAnnotation + `, so that
converting it back gives the object as it was. --round-trip-data says
whether converted objects keep that annotation. By default they do with
--output-version and do not with --kubernetes-version, whose upgrade is one
way (as kubectl convert writes none).

Arguments are inputs too, as if each were given with -f (pre-commit passes
the files it checks that way).`,
		Example: `  mvpctl convert -f manifests/ --kubernetes-version v1.36
  mvpctl convert -f ingress.yaml --output-version networking.k8s.io/v1
  kubectl get ingress -o yaml | mvpctl convert -f - --rules rules.yaml --output-version networking.k8s.io/v1beta1
  mvpctl convert -f manifests/ --rules rules/ --output-version apps/v1 -o name
  mvpctl convert -R -f chart/templates --kubernetes-version v1.36 --in-place`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Arguments are inputs as -f gives them: pre-commit and
			// xargs pass file names that way.
			opts.Files = append(opts.Files, args...)
			opts.outputSet = cmd.Flags().Changed("output")
			opts.roundTripDataSet = cmd.Flags().Changed("round-trip-data")
			return runConvert(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&opts.Files, "filename", "f", nil, "manifest file, directory or - for standard input (repeatable)")
	f.BoolVarP(&opts.Recursive, "recursive", "R", false, "read the subdirectories of -f directories too (a Helm chart's templates/)")
	f.StringSliceVar(&opts.Rules, "rules", nil, "TransformationRules file or directory (repeatable), added to the built-in rules; a rule here replaces the built-in one for the same resource and versions")
	f.BoolVar(&opts.Builtin, "builtin", true, "use mvpctl's built-in rules for Kubernetes' own API versions (see 'mvpctl rules builtin'); --builtin=false uses only --rules")
	f.StringVar(&opts.OutputVersion, "output-version", "", "group/version to convert to, e.g. networking.k8s.io/v1 or v1")
	f.StringVar(&opts.KubernetesVersion, "kubernetes-version", "", fmt.Sprintf("convert every object on an API version this Kubernetes release (vMAJOR.MINOR, up to %s) no longer serves to its replacement, instead of --output-version", builtin.Newest))
	f.BoolVar(&opts.IncludeDeprecated, "include-deprecated", false, "with --kubernetes-version, also convert objects on versions that release deprecates")
	f.StringVar(&opts.WebhookSideEffects, strings.TrimPrefix(scan.SideEffectsFlag, "--"), "", "with --kubernetes-version, the sideEffects ("+strings.Join(scan.SideEffectsChoices, " or ")+") of converted admission webhooks whose v1beta1 value (Unknown, Some or unset) v1 does not allow; unset, such objects fail and are reported")
	f.StringVarP(&opts.Output, "output", "o", "yaml", "output format: "+outputFormatsHelp)
	f.BoolVar(&opts.ContinueOnError, "continue-on-error", false, "write every object, converted or unchanged, even when some failed (the exit status stays 1)")
	f.BoolVar(&opts.AllowUnconverted, "allow-unconverted", false, "write objects that have to change but that no rule converts (or that have no replacement) unchanged, with a warning, instead of failing")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "no per-object warnings")
	f.StringVar(&opts.Engine, "engine", "native", "executor: native (fast) or jq (the generated jq programs)")
	f.DurationVar(&opts.ProgramTimeout, "program-timeout", engine.DefaultProgramTimeout, "longest run of one rule's program on one object (a rule that loops fails)")
	f.BoolVar(&opts.InPlace, "in-place", false, "rewrite the files that have converted documents, keeping their other documents byte for byte, instead of writing to standard output")
	f.BoolVar(&opts.FollowSymlinks, "follow-symlinks", false, "with --in-place, rewrite the target of a symbolic link when it lies inside the -f file's directory or -f directory (without it a link is refused)")
	f.BoolVar(&opts.RoundTripData, "round-trip-data", false, "keep the "+rules.ConversionDataAnnotation+" annotation, with which converting an object back gives it as it was (default: true with --output-version, false with --kubernetes-version)")
	markFilenameFlags(cmd, "filename", "rules")
	registerCompletion(cmd, "output", completeWords(objectOutputFormats()...))
	registerCompletion(cmd, "engine", completeWords("native", "jq"))
	registerCompletion(cmd, "output-version", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return ruleVersions(opts.Rules, opts.Builtin), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func runConvert(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, opts convertOptions) error {
	if err := checkConvertInputs(opts); err != nil {
		return err
	}
	plan, err := newConvertPlan(opts)
	if err != nil {
		return err
	}
	printer, err := newObjectPrinter(opts.Output)
	if err != nil {
		return err
	}
	exec, err := parseEngine(opts.Engine)
	if err != nil {
		return err
	}
	conv, err := loadConverter(stdin, opts, engine.Options{Executor: exec, Strict: true, KeepGoing: true, ProgramTimeout: opts.ProgramTimeout})
	if err != nil {
		return rulesError(stderr, err)
	}
	inputs, err := readInputs(stdin, opts.Files, opts.Recursive, opts.InPlace)
	if err != nil {
		return inputError(err)
	}
	total := objectCount(inputs)
	if total == 0 {
		return usageErrorf("no objects passed to convert (in %s)", strings.Join(opts.Files, ", "))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	r := convertReport{stderr: stderr, opts: opts, conv: conv, plan: plan}
	for _, in := range inputs {
		for _, d := range in.docs {
			r.convertDoc(ctx, in, d)
		}
	}
	if r.failed > 0 && !opts.ContinueOnError {
		fmt.Fprintf(stderr, "error: %d of %d documents failed to convert; nothing written\n", r.failed, total)
		return &silentError{code: exitFailure}
	}
	if opts.InPlace {
		// rewriteInputs says itself whether a file was refused (exit 2) or
		// failed (exit 1).
		if err := rewriteInputs(stdout, stderr, inputs, inPlaceOptions{FollowSymlinks: opts.FollowSymlinks}); err != nil {
			return err
		}
	} else if err := writeOutput(stdout, inputs, opts.Output, printer); err != nil {
		return failure(err)
	}
	if r.failed > 0 {
		where := "written unchanged"
		if opts.InPlace {
			where = "left unchanged in the files"
		}
		fmt.Fprintf(stderr, "error: %d of %d documents failed to convert; %s\n", r.failed, total, where)
		return &silentError{code: exitFailure}
	}
	return nil
}

// checkConvertInputs checks the flags that say what to read and where to
// write.
func checkConvertInputs(opts convertOptions) error {
	stdinFile := slices.Contains(opts.Files, "-")
	switch {
	case len(opts.Files) == 0:
		return usageErrorf("no input: give -f FILE, a directory or - for standard input")
	case len(opts.Rules) == 0 && !opts.Builtin:
		return usageErrorf("--builtin=false leaves no rules: give --rules FILE or a directory")
	case stdinFile && slices.Contains(opts.Rules, "-"):
		return usageErrorf("-f - and --rules - both read standard input: give one of them as a file")
	case opts.InPlace && stdinFile:
		return usageErrorf("--in-place rewrites files: it cannot take -f - (standard input)")
	case opts.FollowSymlinks && !opts.InPlace:
		return usageErrorf("--follow-symlinks says what --in-place may rewrite: give --in-place too")
	case opts.InPlace && opts.outputSet:
		return usageErrorf("--in-place writes each file in its own syntax: leave out -o")
	case opts.ProgramTimeout <= 0:
		return usageErrorf("--program-timeout %s: want a positive duration", opts.ProgramTimeout)
	case opts.WebhookSideEffects != "" && !slices.Contains(scan.SideEffectsChoices, opts.WebhookSideEffects):
		return usageErrorf("%s %q: want %s", scan.SideEffectsFlag, opts.WebhookSideEffects, strings.Join(scan.SideEffectsChoices, " or "))
	case opts.WebhookSideEffects != "" && opts.KubernetesVersion == "":
		return usageErrorf("%s applies with --kubernetes-version", scan.SideEffectsFlag)
	}
	return nil
}

// writeOutput prints the documents: as YAML, those that need no change as
// they were read; in the other formats, every object.
func writeOutput(stdout io.Writer, inputs []*convertInput, format string, printer objectPrinter) error {
	var buf bytes.Buffer
	var err error
	if format == "yaml" {
		err = writeDocsYAML(&buf, inputs)
	} else {
		err = printer(&buf, outObjects(inputs))
	}
	if err != nil {
		return err
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}

// convertReport converts documents and reports, one line each, the objects
// that did not convert.
type convertReport struct {
	stderr io.Writer
	opts   convertOptions
	conv   *engine.Converter
	plan   convertPlan
	// failed counts the objects that failed (a List with a failed item is
	// one).
	failed int
}

// convertDoc converts the objects of a document into d.out, leaving those
// that need no change or fail as they were, and says in d.changed whether
// any changed.
func (r *convertReport) convertDoc(ctx context.Context, in *convertInput, d *convertDoc) {
	d.out = make([]map[string]any, len(d.objs))
	for i, obj := range d.objs {
		orig := rules.DeepCopyJSON(obj).(map[string]any) // the converter changes a List's items in place
		d.out[i] = r.convert(ctx, d.source(in), orig, obj)
		if !r.opts.roundTrip() {
			stripConverted(d.out[i], orig)
		}
		d.changed = d.changed || !reflect.DeepEqual(d.out[i], orig)
	}
}

// stripConverted removes the round-trip annotation from out, the
// conversion of orig, or from those items of a List that conversion
// changed: objects written as they were keep what they had.
func stripConverted(out, orig map[string]any) {
	if reflect.DeepEqual(out, orig) {
		return
	}
	items, isList := out["items"].([]any)
	origItems, _ := orig["items"].([]any)
	if !isList || len(items) != len(origItems) {
		engine.StripConversionData(out)
		return
	}
	for i, it := range items {
		m, ok := it.(map[string]any)
		o, _ := origItems[i].(map[string]any)
		if ok {
			stripConverted(m, o)
		}
	}
}

// convert returns an object converted, or with what failed as it was (the
// converter leaves what it fails on unchanged); orig is obj before.
func (r *convertReport) convert(ctx context.Context, source string, orig, obj map[string]any) map[string]any {
	out, err := r.plan.Convert(ctx, r.conv, obj)
	if err == nil && r.opts.KubernetesVersion != "" {
		err = r.meetTarget(source, out, orig)
	}
	if err == nil {
		return out
	}
	failed := false
	var items *engine.ItemsError
	if errors.As(err, &items) {
		for _, it := range items.Items {
			failed = r.report(fmt.Sprintf("%s: items[%d]", source, it.Index), it.Err) || failed
		}
	} else {
		failed = r.report(source, err)
		out = orig
	}
	if failed {
		r.failed++
	}
	return out
}

// meetTarget makes out, the conversion of orig for --kubernetes-version,
// valid for the target's validation where that is mechanical or decided by
// a flag (scan.MeetTarget), with a warning per fix; fields that need a
// decision fail the object. The items of a List are checked one by one.
func (r *convertReport) meetTarget(source string, out, orig map[string]any) error {
	if items, ok := out["items"].([]any); ok {
		origItems, _ := orig["items"].([]any)
		var errs []error
		for i, it := range items {
			m, ok := it.(map[string]any)
			var o map[string]any
			if i < len(origItems) {
				o, _ = origItems[i].(map[string]any)
			}
			if ok && o != nil && !reflect.DeepEqual(m, o) {
				if err := r.meetTarget(fmt.Sprintf("%s: items[%d]", source, i), m, o); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return errors.Join(errs...)
	}
	if reflect.DeepEqual(out, orig) {
		return nil // not converted: as the user wrote it
	}
	fixes, undecided := scan.MeetTarget(out, orig, scan.Decisions{WebhookSideEffects: r.opts.WebhookSideEffects})
	what := fmt.Sprintf("%v %v", out["kind"], objectName(out))
	if len(undecided) == 0 {
		for _, f := range fixes {
			if !r.opts.Quiet {
				fmt.Fprintf(r.stderr, "warning: %s: %s: %s\n", source, what, f)
			}
		}
		return nil
	}
	msgs := make([]string, len(undecided))
	for i, u := range undecided {
		msgs[i] = u.String()
	}
	return fmt.Errorf("%s: Kubernetes %s refuses %s", what, r.opts.KubernetesVersion, strings.Join(msgs, "; "))
}

// objectName is namespace/name, or name.
func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

// report prints one object's error, or a warning for an unconverted object
// that --allow-unconverted allows; it says whether the object failed.
func (r *convertReport) report(source string, err error) bool {
	var unconverted *engine.UnconvertedError
	var noReplacement *engine.NoReplacementError
	if r.opts.AllowUnconverted && (errors.As(err, &unconverted) || errors.As(err, &noReplacement)) {
		if !r.opts.Quiet {
			fmt.Fprintf(r.stderr, "warning: %s: %v; left unchanged\n", source, err)
		}
		return false
	}
	fmt.Fprintf(r.stderr, "error: %s: %v\n", source, err)
	return true
}

// loadConverter compiles the rules files of --rules together with the
// built-in rules (unless --builtin=false), the files' rules replacing the
// built-in ones for the same resource and versions.
func loadConverter(stdin io.Reader, opts convertOptions, eo engine.Options) (*engine.Converter, error) {
	var rs *rules.RuleSet
	if len(opts.Rules) > 0 {
		sources, err := rules.ReadSources(stdin, opts.Rules...)
		if err != nil {
			return nil, err
		}
		if rs, err = rules.ParseAll(sources...); err != nil {
			return nil, err
		}
	}
	if opts.Builtin {
		var err error
		if rs, err = builtin.With(rs); err != nil {
			return nil, err
		}
	}
	compiled, err := rules.Compile(rs, rules.CompileOptions{Lazy: eo.Executor != engine.JQ})
	if err != nil {
		return nil, err
	}
	return engine.NewConverter(compiled, eo), nil
}

func parseEngine(s string) (engine.Executor, error) {
	switch s {
	case "native", "":
		return engine.Native, nil
	case "jq":
		return engine.JQ, nil
	}
	return 0, usageErrorf("--engine %q: want native or jq", s)
}
