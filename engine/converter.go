package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
)

// Executor selects how compiled programs run.
type Executor int

const (
	// Native runs the programs' steps directly on Go values (the default).
	Native Executor = iota
	// JQ runs the generated jq source with gojq: the reference semantics.
	JQ
)

// ResourceResolver maps an object's kind to its plural resource name, e.g.
// from discovery. It returns false when it does not know the kind.
type ResourceResolver func(gvk schema.GroupVersionKind) (resource string, ok bool)

// Options configure a Converter; the zero value converts natively and
// guesses resources from kinds.
type Options struct {
	// Executor chooses native steps (zero) or the jq programs.
	Executor Executor
	// Resolver maps kinds to resources; nil guesses them with apimachinery's
	// meta.UnsafeGuessKindToResource (Ingress → ingresses).
	Resolver ResourceResolver
	// Warn receives a message for each object that no rule matched; nil drops them.
	// Strict mode never warns.
	Warn func(msg string)
	// ProgramTimeout bounds each run of a program (one rule, one direction,
	// one object), so that a rule that loops fails with a
	// *ProgramTimeoutError instead of holding a CPU. Zero means
	// DefaultProgramTimeout; negative means no bound.
	ProgramTimeout time.Duration
	// InvalidConversionData, when set, makes the converter ignore a
	// round-trip annotation that is malformed, larger than the rules' limit
	// or does not fit the object: the object is converted as if it had
	// none and the function is told why. Nil fails the conversion with a
	// *ConversionDataError instead (what mvpctl convert reports).
	InvalidConversionData func(*ConversionDataError)
	// Strict makes Convert fail with an *UnconvertedError on an object that
	// the target concerns (its group, or a group the rules connect its
	// resource to) but that no rule converts there, and leave objects the
	// target does not concern untouched without a warning. Off, both are
	// left unchanged with a warning: the proxy converts only what a rule
	// leads to. A CLI that must not ship an old version sets it.
	Strict bool
	// KeepGoing makes Convert leave what it fails on as it was: a failed
	// object is not modified, and a failed list item stays as it was while
	// the others convert, Convert returning the list with an *ItemsError.
	KeepGoing bool
}

// DefaultProgramTimeout is the default [Options.ProgramTimeout]: far above
// what any real rule takes on any real object, well below a client's
// request timeout.
const DefaultProgramTimeout = 2 * time.Second

// ProgramTimeoutError is a program run that did not finish in time; the
// ConversionError around it names the object, the rule and the direction.
type ProgramTimeoutError struct {
	RuleID    string
	Direction rules.Direction
	Timeout   time.Duration
}

func (e *ProgramTimeoutError) Error() string {
	return fmt.Sprintf("the program did not finish within %s (a rule that loops?)", e.Timeout)
}

// Converter converts objects between API versions along compiled rules. It
// is safe for concurrent use.
type Converter struct {
	opts  Options
	rules []*rules.Compiled
	// edges maps a resource's group/version to the programs leaving it.
	edges map[nodeKey][]*rules.Program
	// kinds maps a kind named on a rule to its resource.
	kinds map[string]string
	// resources lists the group/resources any rule mentions, in either
	// version's group.
	resources map[schema.GroupResource]bool
	// paths caches Path's answers, which depend on the options' Resolver.
	paths *pathCache
}

// pathCache holds Path's answers: every object of a list or a watch asks
// for the same few. It is bounded, as kinds and versions come from
// objects, which are anyone's to write: past maxCachedPaths entries new
// answers are computed and not kept.
type pathCache struct {
	m sync.Map // pathKey → pathAnswer
	n atomic.Int64
}

const maxCachedPaths = 1024

type pathKey struct {
	gvk schema.GroupVersionKind
	to  schema.GroupVersion
}

type pathAnswer struct {
	progs    []*rules.Program
	resource string
	err      error
}

type nodeKey struct {
	resource string
	gv       schema.GroupVersion
}

// NewConverter prepares compiled rules for conversion.
func NewConverter(compiled []*rules.Compiled, opts Options) *Converter {
	c := &Converter{opts: opts, rules: compiled, edges: map[nodeKey][]*rules.Program{}, kinds: map[string]string{}, resources: map[schema.GroupResource]bool{}, paths: &pathCache{}}
	for _, r := range compiled {
		res := r.Rule.Resource
		c.resources[schema.GroupResource{Group: r.Rule.APIGroup, Resource: res}] = true
		c.resources[schema.GroupResource{Group: r.Rule.TargetGroup(), Resource: res}] = true
		if r.Rule.Kind != "" {
			c.kinds[r.Rule.Kind] = res
		}
		c.edges[nodeKey{res, r.Forward.From}] = append(c.edges[nodeKey{res, r.Forward.From}], r.Forward)
		c.edges[nodeKey{res, r.Reverse.From}] = append(c.edges[nodeKey{res, r.Reverse.From}], r.Reverse)
	}
	return c
}

// Load reads, validates and compiles rules files into a Converter.
func Load(opts Options, paths ...string) (*Converter, error) {
	rs, err := rules.Load(paths...)
	if err != nil {
		return nil, err
	}
	compiled, err := rules.Compile(rs, rules.CompileOptions{Lazy: opts.Executor != JQ})
	if err != nil {
		return nil, err
	}
	return NewConverter(compiled, opts), nil
}

// Rules returns the compiled rules.
func (c *Converter) Rules() []*rules.Compiled { return c.rules }

// Options returns the converter's options.
func (c *Converter) Options() Options { return c.opts }

// WithOptions returns a converter of the same compiled rules with other
// options, e.g. for a caller that handles bad round-trip data itself.
func (c *Converter) WithOptions(opts Options) *Converter {
	out := *c
	out.opts = opts
	out.paths = &pathCache{}
	return &out
}

// ConversionError is a failed conversion: which object, which rule, which
// direction, and the step's error.
type ConversionError struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	RuleID    string
	Direction rules.Direction
	Err       error
}

func (e *ConversionError) Error() string {
	obj := objectRef(e.Namespace, e.Name)
	return fmt.Sprintf("converting %s %s (%s) %s by rule %s: %v", e.GVK.Kind, obj, e.GVK.GroupVersion(), e.Direction, e.RuleID, e.Err)
}

func (e *ConversionError) Unwrap() error { return e.Err }

// NoPathError says that no rules lead from an object's version to the
// requested one ([Converter.Path]): rules exist for its resource but none
// reach To, or (NoRules) no rule mentions the resource in From's group.
type NoPathError struct {
	Resource string
	From, To schema.GroupVersion
	// NoRules says that no rule mentions the resource at all.
	NoRules bool
}

func (e *NoPathError) Error() string {
	return fmt.Sprintf("no rules convert %s from %s to %s", e.Resource, e.From, e.To)
}

// UnconvertedError is an object that has to change to reach the target
// group/version but that no rule converts (Options.Strict).
type UnconvertedError struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	Resource  string
	To        schema.GroupVersion
	// Err is the *NoPathError when rules exist for the resource but none
	// leads to To; nil when no rule mentions the resource.
	Err error
}

func (e *UnconvertedError) Error() string {
	obj := objectRef(e.Namespace, e.Name)
	gr := schema.GroupResource{Group: e.GVK.Group, Resource: e.Resource}
	return fmt.Sprintf("%s %s (%s): no rule converts %s from %s to %s", e.GVK.Kind, obj, e.GVK.GroupVersion(), gr, e.GVK.GroupVersion(), e.To)
}

func (e *UnconvertedError) Unwrap() error { return e.Err }

// ItemsError lists the items of a list that failed to convert
// (Options.KeepGoing); the others were converted.
type ItemsError struct {
	Items []ItemError
}

// ItemError is one failed item of a list.
type ItemError struct {
	Index int
	Err   error
}

func (e *ItemsError) Error() string {
	msgs := make([]string, len(e.Items))
	for i, it := range e.Items {
		msgs[i] = fmt.Sprintf("items[%d]: %v", it.Index, it.Err)
	}
	return strings.Join(msgs, "; ")
}

// Path returns the programs that convert objects of a kind from one
// group/version to another, shortest first, and the kind's resource; no
// programs when from == to. When no rules lead there the error is a
// *NoPathError. The programs' slice is shared: callers must not modify it.
func (c *Converter) Path(gvk schema.GroupVersionKind, to schema.GroupVersion) (progs []*rules.Program, resource string, err error) {
	if c.paths == nil {
		return c.path(gvk, to)
	}
	key := pathKey{gvk, to}
	if a, ok := c.paths.m.Load(key); ok {
		a := a.(pathAnswer)
		return a.progs, a.resource, a.err
	}
	progs, resource, err = c.path(gvk, to)
	if c.paths.n.Load() < maxCachedPaths {
		if _, loaded := c.paths.m.LoadOrStore(key, pathAnswer{progs, resource, err}); !loaded {
			c.paths.n.Add(1)
		}
	}
	return progs, resource, err
}

func (c *Converter) path(gvk schema.GroupVersionKind, to schema.GroupVersion) (progs []*rules.Program, resource string, err error) {
	from := gvk.GroupVersion()
	resource, known := c.resourceFor(gvk)
	if !known {
		return nil, resource, &NoPathError{Resource: resource, From: from, To: to, NoRules: true}
	}
	if from == to {
		return nil, resource, nil
	}
	// Breadth-first search over the versions the rules connect.
	type hop struct {
		prev *hop
		prog *rules.Program
		at   schema.GroupVersion
	}
	seen := map[schema.GroupVersion]bool{from: true}
	queue := []*hop{{at: from}}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		for _, p := range c.edges[nodeKey{resource, h.at}] {
			if seen[p.To] {
				continue
			}
			next := &hop{prev: h, prog: p, at: p.To}
			if p.To == to {
				for x := next; x.prog != nil; x = x.prev {
					progs = append(progs, x.prog)
				}
				for i, j := 0, len(progs)-1; i < j; i, j = i+1, j-1 {
					progs[i], progs[j] = progs[j], progs[i]
				}
				return progs, resource, nil
			}
			seen[p.To] = true
			queue = append(queue, next)
		}
	}
	return nil, resource, &NoPathError{Resource: resource, From: from, To: to}
}

// resourceFor finds the resource of a kind (named on a rule, resolved, or
// guessed) and whether a rule converts it in the kind's group.
func (c *Converter) resourceFor(gvk schema.GroupVersionKind) (string, bool) {
	res, ok := c.kinds[gvk.Kind]
	if !ok && c.opts.Resolver != nil {
		res, ok = c.opts.Resolver(gvk)
	}
	if !ok {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		res = plural.Resource
	}
	return res, c.resources[schema.GroupResource{Group: gvk.Group, Resource: res}]
}

// Convert converts one object, a list (every item) or a watch event
// ({"type": ..., "object": ...}) to the target group/version. Objects that
// no rule mentions come back untouched (with a warning; Options.Strict
// decides otherwise); objects already at the target are untouched. obj is
// modified in place (except with Options.KeepGoing): the caller must own it.
func (c *Converter) Convert(ctx context.Context, obj map[string]any, to schema.GroupVersion) (map[string]any, error) {
	switch {
	case isWatchEvent(obj):
		if t, _ := obj["type"].(string); t == "ERROR" {
			return obj, nil
		}
		inner, ok := obj["object"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("watch event has no object")
		}
		out, err := c.Convert(ctx, inner, to)
		if err != nil {
			return nil, err
		}
		obj["object"] = out
		return obj, nil
	case isList(obj):
		return c.convertList(ctx, obj, to)
	}
	gvk, err := objectGVK(obj)
	if err != nil {
		return nil, err
	}
	progs, resource, err := c.Path(gvk, to)
	var noPath *NoPathError
	noRules := errors.As(err, &noPath) && noPath.NoRules
	if c.opts.Strict {
		if gvk.GroupVersion() == to || !c.concerns(gvk.Group, resource, to) {
			return obj, nil
		}
		if err != nil {
			if noRules {
				err = nil // UnconvertedError.Err: no rule mentions the resource
			}
			ns, name := objectNamespaceName(obj)
			return nil, &UnconvertedError{GVK: gvk, Namespace: ns, Name: name, Resource: resource, To: to, Err: err}
		}
	}
	if noRules {
		if gvk.GroupVersion() != to && c.opts.Warn != nil {
			c.opts.Warn(fmt.Sprintf("%s %s: no rule converts resource %q (%s); left unchanged", gvk.Kind, objectName(obj), resource, gvk.GroupVersion()))
		}
		return obj, nil
	}
	if err != nil {
		return nil, err
	}
	return c.convertObject(ctx, obj, gvk, resource, progs)
}

// convertObject runs the programs of a path on one object, first checking
// its round-trip annotation: an annotation that does not pass is an error,
// or with Options.InvalidConversionData ignored; so is one that makes the
// conversion fail where the object without it converts.
func (c *Converter) convertObject(ctx context.Context, obj map[string]any, gvk schema.GroupVersionKind, resource string, progs []*rules.Program) (map[string]any, error) {
	if len(progs) == 0 {
		return obj, nil // already at the target
	}
	if c.opts.KeepGoing {
		obj = rules.DeepCopyJSON(obj).(map[string]any) // a failure leaves the caller's object as it was
	}
	raw, hasData := conversionData(obj)
	var data map[string]any
	if hasData {
		var err error
		if data, err = checkConversionData(raw, progs); err != nil {
			if err := c.invalidData(obj, gvk, resource, progs[0], err); err != nil {
				return nil, err
			}
			dropConversionData(obj)
			hasData = false
		}
	}
	var orig map[string]any
	if hasData && c.opts.InvalidConversionData != nil {
		orig = snapshot(obj, progs)
	}
	out, err := c.runPath(ctx, obj, data, gvk, progs)
	if err == nil || orig == nil || ctx.Err() != nil || errors.As(err, new(*ProgramTimeoutError)) {
		return out, err
	}
	dropConversionData(orig)
	out, err2 := c.runPath(ctx, orig, nil, gvk, progs)
	if err2 != nil {
		return nil, err2
	}
	_ = c.invalidData(orig, gvk, resource, progs[0], fmt.Errorf("does not fit the object: %w", err))
	return out, nil
}

// invalidData reports a round-trip annotation that cannot be used: to
// Options.InvalidConversionData (nil: ignore it) or as the error.
func (c *Converter) invalidData(obj map[string]any, gvk schema.GroupVersionKind, resource string, first *rules.Program, err error) error {
	ns, name := objectNamespaceName(obj)
	m, _ := obj["metadata"].(map[string]any)
	rv, _ := m["resourceVersion"].(string)
	e := &ConversionDataError{GVK: gvk, Resource: resource, Namespace: ns, Name: name, ResourceVersion: rv,
		RuleID: first.RuleID, Direction: first.Direction, Err: err}
	if c.opts.InvalidConversionData == nil {
		return e
	}
	c.opts.InvalidConversionData(e)
	return nil
}

// runPath runs the programs one after the other. data is obj's round-trip
// annotation already decoded, for the first program; nil: none or not yet.
func (c *Converter) runPath(ctx context.Context, obj, data map[string]any, gvk schema.GroupVersionKind, progs []*rules.Program) (map[string]any, error) {
	ns, name := objectNamespaceName(obj)
	var err error
	for i, p := range progs {
		if i > 0 {
			data = nil // the previous program rewrote the annotation
		}
		if obj, err = c.run(ctx, p, obj, data); err != nil {
			return nil, &ConversionError{GVK: gvk, Namespace: ns, Name: name, RuleID: p.RuleID, Direction: p.Direction, Err: err}
		}
	}
	return obj, nil
}

// convertList converts every item of a list; with KeepGoing, failed items
// stay as they were and the others convert.
func (c *Converter) convertList(ctx context.Context, obj map[string]any, to schema.GroupVersion) (map[string]any, error) {
	items, _ := obj["items"].([]any)
	var failed []ItemError
	typed := listItemGVK(obj)
	var untyped []int // items that took their apiVersion and kind from the list
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			err := fmt.Errorf("not an object (%s)", rules.TypeName(it))
			if !c.opts.KeepGoing {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			failed = append(failed, ItemError{Index: i, Err: err})
			continue
		}
		if withType, ok := typeFromList(m, typed); ok {
			m = withType
			untyped = append(untyped, i)
		}
		out, err := c.Convert(ctx, m, to)
		if err != nil {
			if !c.opts.KeepGoing {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			failed = append(failed, ItemError{Index: i, Err: err})
			continue
		}
		items[i] = out
	}
	if failed != nil {
		return obj, &ItemsError{Items: failed}
	}
	if gv, err := schema.ParseGroupVersion(stringField(obj, "apiVersion")); err == nil && gv.Group != "" || stringField(obj, "kind") != "List" {
		// A typed list (IngressList) moves with its items; a v1 List stays.
		if _, _, err := c.Path(listItemGVK(obj), to); err == nil {
			obj["apiVersion"] = to.String()
		}
	}
	dropListType(obj, items, untyped)
	return obj, nil
}

// typeFromList returns a shallow copy of a typed list's item that has
// neither apiVersion nor kind (as the API writes the items of a PodList),
// with the list's apiVersion and item kind: the rule apimachinery's
// unstructured list decoding follows (UnstructuredJSONScheme). ok is false
// for any other item, or a list of no kind (List).
func typeFromList(item map[string]any, typed schema.GroupVersionKind) (map[string]any, bool) {
	if typed.Kind == "" || stringField(item, "apiVersion") != "" || stringField(item, "kind") != "" {
		return nil, false
	}
	if _, has := item["apiVersion"]; has {
		return nil, false
	}
	if _, has := item["kind"]; has {
		return nil, false
	}
	out := make(map[string]any, len(item)+2)
	for k, v := range item {
		out[k] = v
	}
	out["apiVersion"], out["kind"] = typed.GroupVersion().String(), typed.Kind
	return out, true
}

// dropListType removes again the apiVersion and kind that the listed items
// took from their list, where they still say what the list says: the
// items stay as the list had them.
func dropListType(list map[string]any, items []any, untyped []int) {
	typed := listItemGVK(list)
	for _, i := range untyped {
		m, ok := items[i].(map[string]any)
		if ok && stringField(m, "apiVersion") == typed.GroupVersion().String() && stringField(m, "kind") == typed.Kind {
			delete(m, "apiVersion")
			delete(m, "kind")
		}
	}
}

// concerns says whether converting to the target may have to change an
// object of a group and resource: it is in the target's group, or rules
// for its resource exist in both groups (extensions → networking.k8s.io).
func (c *Converter) concerns(group, resource string, to schema.GroupVersion) bool {
	if group == to.Group {
		return true
	}
	return c.resources[schema.GroupResource{Group: group, Resource: resource}] &&
		c.resources[schema.GroupResource{Group: to.Group, Resource: resource}]
}

// run executes one program with the configured executor, within
// Options.ProgramTimeout.
func (c *Converter) run(ctx context.Context, p *rules.Program, obj, data map[string]any) (map[string]any, error) {
	timeout := c.opts.ProgramTimeout
	if timeout == 0 {
		timeout = DefaultProgramTimeout
	}
	if timeout < 0 {
		return c.exec(ctx, p, obj, data)
	}
	runCtx := &deadlineCtx{Context: ctx, deadline: time.Now().Add(timeout)}
	defer runCtx.release()
	out, err := c.exec(runCtx, p, obj, data)
	if err != nil && ctx.Err() == nil && runCtx.Err() != nil {
		// The run's own deadline, not the caller's: say which rule.
		return nil, &ProgramTimeoutError{RuleID: p.RuleID, Direction: p.Direction, Timeout: timeout}
	}
	return out, err
}

// deadlineCtx is a program run's context: its parent's with a deadline.
// Native steps only ask Err between steps, which reads the clock; a timer
// (what Done needs) is started only if something waits on Done: gojq, when
// the run evaluates a jq expression. Most runs of native steps evaluate
// none, and a timer per object costs more than the steps. It belongs to one
// goroutine, as a program run does.
type deadlineCtx struct {
	context.Context
	deadline time.Time
	timer    context.Context // with the deadline, once Done was asked
	stop     context.CancelFunc
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} {
	if c.timer == nil {
		c.timer, c.stop = context.WithDeadline(c.Context, c.deadline)
	}
	return c.timer.Done()
}

func (c *deadlineCtx) Err() error {
	if c.timer != nil {
		return c.timer.Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *deadlineCtx) release() {
	if c.stop != nil {
		c.stop()
	}
}

func (c *Converter) exec(ctx context.Context, p *rules.Program, obj, data map[string]any) (map[string]any, error) {
	if c.opts.Executor == JQ {
		return RunJQ(ctx, p, obj)
	}
	return runNative(ctx, p, obj, data)
}

// RunJQ runs a program's jq source with gojq.
func RunJQ(ctx context.Context, p *rules.Program, obj map[string]any) (map[string]any, error) {
	code, err := p.Code()
	if err != nil {
		return nil, err
	}
	iter := code.RunWithContext(ctx, obj)
	v, ok := iter.Next()
	if !ok {
		return nil, fmt.Errorf("program gave no result")
	}
	if err, isErr := v.(error); isErr {
		return nil, stepErrorFromJQ(p, err)
	}
	if _, more := iter.Next(); more {
		return nil, fmt.Errorf("program gave more than one result")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("program gave %s, want an object", rules.TypeName(v))
	}
	// The result may share values with the program's constants: copy it so
	// that callers own what they get.
	return rules.DeepCopyJSON(m).(map[string]any), nil
}

// stepErrorFromJQ decodes the {mvp_error, step, path} value that mvp_fail
// raises into the same StepError the native executor returns.
func stepErrorFromJQ(p *rules.Program, err error) error {
	var ve interface{ Value() any }
	if !errors.As(err, &ve) {
		return err
	}
	m, ok := ve.Value().(map[string]any)
	if !ok {
		return jqError(err)
	}
	key, _ := m["step"].(string)
	path, _ := m["path"].(string)
	msg := fmt.Sprint(m["mvp_error"])
	if s, ok := m["mvp_error"].(string); ok {
		msg = s
	}
	for i := range p.Ops {
		if p.Ops[i].Key == key {
			return &StepError{Op: &p.Ops[i], Path: path, Err: errors.New(msg)}
		}
	}
	return errors.New(msg)
}

func isWatchEvent(obj map[string]any) bool {
	if len(obj) != 2 {
		return false
	}
	_, hasType := obj["type"].(string)
	_, hasObject := obj["object"]
	return hasType && hasObject
}

func isList(obj map[string]any) bool {
	_, hasItems := obj["items"].([]any)
	kind := stringField(obj, "kind")
	return hasItems && strings.HasSuffix(kind, "List")
}

// listItemGVK is the kind of a typed list's items (IngressList → Ingress).
func listItemGVK(obj map[string]any) schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(stringField(obj, "apiVersion"))
	return gv.WithKind(strings.TrimSuffix(stringField(obj, "kind"), "List"))
}

func objectGVK(obj map[string]any) (schema.GroupVersionKind, error) {
	av, kind := stringField(obj, "apiVersion"), stringField(obj, "kind")
	if av == "" || kind == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("object %s has no apiVersion or kind", objectName(obj))
	}
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("object %s: %w", objectName(obj), err)
	}
	return gv.WithKind(kind), nil
}

func stringField(obj map[string]any, k string) string {
	s, _ := obj[k].(string)
	return s
}

// objectRef names an object in an error: namespace/name, or <unnamed>.
func objectRef(namespace, name string) string {
	ref := name
	if namespace != "" {
		ref = namespace + "/" + name
	}
	if ref == "" {
		return "<unnamed>"
	}
	return ref
}

func objectNamespaceName(obj map[string]any) (string, string) {
	m, _ := obj["metadata"].(map[string]any)
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	return ns, name
}

func objectName(obj map[string]any) string {
	ns, name := objectNamespaceName(obj)
	if name == "" {
		return "<unnamed>"
	}
	if ns != "" {
		return ns + "/" + name
	}
	return name
}

// Versions lists, per resource, the group/versions the rules connect; for
// discovery and diagnostics.
func (c *Converter) Versions() map[string][]schema.GroupVersion {
	out := map[string][]schema.GroupVersion{}
	for k := range c.edges {
		out[k.resource] = append(out[k.resource], k.gv)
	}
	for _, gvs := range out {
		sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	}
	return out
}
