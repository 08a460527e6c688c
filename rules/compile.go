package rules

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

//go:embed mvp.jq
var jqLibrary string

// DefaultConversionDataLimit bounds the conversion-data annotation (64 KiB),
// well under the 256 KiB Kubernetes allows for all annotations together.
const DefaultConversionDataLimit = 64 << 10

// Direction is forward (fromVersion → toVersion) or reverse.
type Direction int

const (
	// Forward converts from a rule's fromVersion to its toVersion.
	Forward Direction = iota
	// Reverse converts from a rule's toVersion back to its fromVersion.
	Reverse
)

func (d Direction) String() string {
	if d == Reverse {
		return "reverse"
	}
	return "forward"
}

// FnKind says what a value function of a [Step] does to a maybe-value (an
// absent field or a present value).
type FnKind int

const (
	FnIdentity FnKind = iota // leaves the value as it is
	FnAbsent                 // removes the field
	FnConst                  // sets Value
	FnDefault                // sets Value where the field is absent
	FnMap                    // replaces values by Pairs (first match wins)
	FnConvert                // converts to Type
	FnJQ                     // runs Expr on a present value
)

// Fn is one direction of a value transformation.
type Fn struct {
	Kind  FnKind
	Value any       // FnConst, FnDefault
	Pairs [][2]any  // FnMap: from → to
	Type  ValueType // FnConvert
	JQ    *Snippet  // FnJQ
}

// OpKind is the kind of one compiled step.
type OpKind int

const (
	// OpValue applies F to the maybe-value at every candidate path of Path.
	OpValue OpKind = iota
	// OpMove moves every match of Path to Target.
	OpMove
	// OpObject runs F (an FnJQ) on the whole object.
	OpObject
)

// Op is one compiled step of one direction. A transformation compiles to one
// or two ops (rename with a type hint is a move then a conversion).
type Op struct {
	Kind OpKind
	// Key names the step in round-trip data: the transformation index, with
	// a suffix for its second op.
	Key string
	// Index is the transformation's position in the rule, for errors.
	Index int
	// Path is the pattern the step reads; Target where a move writes.
	Path, Target Path
	// PathElems and TargetElems are Path and Target as jq path elements
	// (Path.Elems), computed once for the executors.
	PathElems, TargetElems []any
	// F is what the step does in this direction; R is the other direction's
	// function, used to decide what must be kept for the way back.
	F, R Fn
	// When is the condition source; WhenJQ compiles it.
	When   string
	WhenJQ *Snippet
	// Describe is a one-line summary for comments and errors.
	Describe string
}

// Program converts objects of one resource in one direction. Source is the
// jq program and Code its compiled form; Ops is the same program as steps,
// which a native executor can run without jq. Both must give identical results.
type Program struct {
	Rule      *MigrationRule
	Direction Direction
	// From and To are the group/versions the program converts between.
	From, To schema.GroupVersion
	// RuleID keys the rule's round-trip data.
	RuleID string
	Ops    []Op
	// Limit bounds the conversion-data annotation in bytes.
	Limit int

	renderOnce sync.Once
	source     string
	once       sync.Once
	code       *gojq.Code
	codeErr    error
}

// Source returns the jq program, rendered on first use: the native executor
// runs Ops and never needs it.
func (p *Program) Source() string {
	p.renderOnce.Do(func() { p.source = p.render() })
	return p.source
}

// Code returns the compiled jq program, compiling it on first use when the
// rules were compiled with CompileOptions.Lazy.
func (p *Program) Code() (*gojq.Code, error) {
	p.once.Do(func() { p.code, p.codeErr = compileProgram(p.Source(), p.Direction) })
	return p.code, p.codeErr
}

func compileProgram(src string, dir Direction) (*gojq.Code, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("generated %s program does not parse: %w", dir, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("generated %s program does not compile: %w", dir, err)
	}
	return code, nil
}

// Compiled is a compiled migration rule: its forward and reverse programs.
type Compiled struct {
	Rule             *MigrationRule
	Ref              RuleRef
	Forward, Reverse *Program
}

// Program returns the program of one direction.
func (c *Compiled) Program(d Direction) *Program {
	if d == Reverse {
		return c.Reverse
	}
	return c.Forward
}

// CompileOptions tune compilation; the zero value is the default.
type CompileOptions struct {
	// ConversionDataLimit bounds the conversion-data annotation in bytes;
	// zero means DefaultConversionDataLimit.
	ConversionDataLimit int
	// Lazy defers compiling the jq programs to their first use. Compiling
	// one costs milliseconds (gojq compiles the runtime library each time)
	// and the native executor never needs them; the user expressions inside
	// are compiled either way.
	Lazy bool
}

// Compile turns every migration rule of a validated set into forward and
// reverse programs. Errors name the rule's position.
func Compile(rs *RuleSet, opts CompileOptions) ([]*Compiled, error) {
	limit := opts.ConversionDataLimit
	if limit <= 0 {
		limit = DefaultConversionDataLimit
	}
	var out []*Compiled
	var errs ErrorList
	for _, ref := range rs.MigrationRules() {
		c, err := compileRule(ref, limit, opts.Lazy)
		if err != nil {
			errs = append(errs, ref.Doc.errorAt(ref.Doc.Pos(ref.Field.String()), fieldInternal(ref.Field.String(), err)))
			continue
		}
		out = append(out, c)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func compileRule(ref RuleRef, limit int, lazy bool) (*Compiled, error) {
	r := ref.Rule
	from := schema.GroupVersion{Group: r.APIGroup, Version: r.FromVersion}
	to := schema.GroupVersion{Group: r.TargetGroup(), Version: r.ToVersion}
	var fwd []Op
	for i := range r.Transformations {
		ops, err := lowerTransformation(&r.Transformations[i], i)
		if err != nil {
			return nil, fmt.Errorf("transformations[%d]: %w", i, err)
		}
		fwd = append(fwd, ops...)
	}
	for i := range fwd {
		fwd[i].PathElems, fwd[i].TargetElems = fwd[i].Path.Elems(), fwd[i].Target.Elems()
	}
	rev := make([]Op, len(fwd))
	for i, op := range fwd {
		inv := op
		inv.F, inv.R = op.R, op.F
		if op.Kind == OpMove {
			inv.Path, inv.Target = op.Target, op.Path
			inv.PathElems, inv.TargetElems = op.TargetElems, op.PathElems
		}
		rev[len(fwd)-1-i] = inv
	}
	c := &Compiled{Rule: r, Ref: ref}
	var err error
	if c.Forward, err = newProgram(r, Forward, from, to, fwd, limit, lazy); err != nil {
		return nil, err
	}
	if c.Reverse, err = newProgram(r, Reverse, to, from, rev, limit, lazy); err != nil {
		return nil, err
	}
	return c, nil
}

// lowerTransformation maps an action to its forward op(s); the reverse ops
// are the same with F and R (and, for moves, the paths) swapped.
func lowerTransformation(t *Transformation, i int) ([]Op, error) {
	key := strconv.Itoa(i)
	op := Op{Kind: OpValue, Key: key, Index: i, When: t.When, Describe: describe1(t)}
	var err error
	if t.Path != "" {
		if op.Path, err = ParsePath(t.Path); err != nil {
			return nil, err
		}
	}
	if t.When != "" {
		op.WhenJQ = NewSnippet(t.When)
	}
	identity := Fn{Kind: FnIdentity}
	absent := Fn{Kind: FnAbsent}
	switch t.Action {
	case ActionRename:
		op.Kind = OpMove
		if op.Target, err = ParsePath(t.TargetPath); err != nil {
			return nil, err
		}
		op.F, op.R = identity, identity
		if t.Type == "" {
			return []Op{op}, nil
		}
		conv := Op{Kind: OpValue, Key: key + "t", Index: i, Path: op.Target, When: t.When, WhenJQ: op.WhenJQ,
			F: Fn{Kind: FnConvert, Type: t.Type}, R: identity, Describe: fmt.Sprintf("convert %s, renamed from %s, to %s", t.TargetPath, t.Path, t.Type)}
		return []Op{op, conv}, nil
	case ActionModify:
		var pairs [][2]any
		if t.MatchValue != nil {
			pairs = append(pairs, [2]any{t.MatchValue.V, t.ReplaceValue.V})
		}
		for _, p := range t.ValueMap {
			pairs = append(pairs, [2]any{p.From.V, p.To.V})
		}
		inv := make([][2]any, len(pairs))
		for j, p := range pairs {
			inv[j] = [2]any{p[1], p[0]}
		}
		op.F, op.R = Fn{Kind: FnMap, Pairs: pairs}, Fn{Kind: FnMap, Pairs: inv}
	case ActionEnsureFieldExistence:
		op.F, op.R = Fn{Kind: FnDefault, Value: t.DefaultValue.V}, identity
	case ActionRemove:
		op.F, op.R = absent, identity
	case ActionNewField:
		op.F, op.R = identity, absent
	case ActionSet:
		op.F, op.R = Fn{Kind: FnConst, Value: t.Value.V}, absent
	case ActionConvertType:
		op.F, op.R = Fn{Kind: FnConvert, Type: t.Type}, identity
		if t.FromType != "" {
			op.R = Fn{Kind: FnConvert, Type: t.FromType}
		}
	case ActionJQ:
		op.F, op.R = jqFn(t.Forward), jqFn(t.Reverse)
		if t.Path == "" {
			op.Kind = OpObject
		}
	default:
		return nil, fmt.Errorf("unsupported action %q", t.Action)
	}
	return []Op{op}, nil
}

func jqFn(src string) Fn { return Fn{Kind: FnJQ, JQ: NewSnippet(src)} }

func describe1(t *Transformation) string {
	switch t.Action {
	case ActionRename:
		s := fmt.Sprintf("rename %s -> %s", t.Path, t.TargetPath)
		if t.Type != "" {
			s += fmt.Sprintf(" (type %s)", t.Type)
		}
		return s
	case ActionJQ:
		if t.Path == "" {
			return "jq on the whole object"
		}
		return "jq on " + t.Path
	}
	return fmt.Sprintf("%s %s", t.Action, t.Path)
}

func newProgram(r *MigrationRule, dir Direction, from, to schema.GroupVersion, ops []Op, limit int, lazy bool) (*Program, error) {
	p := &Program{Rule: r, Direction: dir, From: from, To: to, RuleID: r.ID(), Ops: ops, Limit: limit}
	if !lazy {
		if _, err := p.Code(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// render writes the jq source of the program: the runtime library, then one
// pipeline stage per op. User expressions are followed by an empty line: a
// jq comment ending in a backslash continues onto the next line, which must
// not be the program's own closing parenthesis.
func (p *Program) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# mvpctl %s program of rule %s\n# %s -> %s\n", p.Direction, p.RuleID, p.From, p.To)
	b.WriteString(jqLibrary)
	fmt.Fprintf(&b, "\n# --- %s ---\nmvp_begin(%s)\n", p.Direction, jqString(p.RuleID))
	for _, op := range p.Ops {
		fmt.Fprintf(&b, "# [%d] %s\n| ", op.Index, op.Describe)
		step := op.jq()
		if op.When != "" {
			step = fmt.Sprintf("if mvp_when(\n%s\n\n) then %s else . end", op.When, step)
		}
		b.WriteString(step)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "| mvp_end(%s; %s; %d)\n", jqString(p.RuleID), jqString(p.To.String()), p.Limit)
	return b.String()
}

func (op *Op) jq() string {
	key := jqString(op.Key)
	switch op.Kind {
	case OpMove:
		return fmt.Sprintf("mvp_move(%s; %s; %s)", key, op.Path.jqSteps(), op.Target.jqSteps())
	case OpObject:
		return fmt.Sprintf("mvp_object(%s; (\n%s\n\n); (\n%s\n\n))", key, op.F.JQ.Src, op.R.JQ.Src)
	}
	step := "mvp_step"
	if op.CreatesParents() {
		step = "mvp_set"
	}
	return fmt.Sprintf("%s(%s; %s; %s; %s)", step, key, op.Path.jqSteps(), op.F.jq(), op.R.jq())
}

// CreatesParents reports whether the step is a set (in either direction),
// whose field may lie under missing objects: writing it creates the missing
// objects after the path's last wildcard or index, and removing it removes
// the objects that leaves empty (mvp_set in rules/mvp.jq). Other value steps
// change fields only under parents that exist.
func (op *Op) CreatesParents() bool {
	return op.Kind == OpValue && (op.F.Kind == FnConst || op.R.Kind == FnConst)
}

// jq renders a value function as a jq filter on a maybe-value.
func (f Fn) jq() string {
	switch f.Kind {
	case FnAbsent:
		return "[]"
	case FnConst:
		return "[" + jqValue(f.Value) + "]"
	case FnDefault:
		return "if . == [] then [" + jqValue(f.Value) + "] else . end"
	case FnMap:
		var b strings.Builder
		b.WriteString("map(")
		for i, p := range f.Pairs {
			if i > 0 {
				b.WriteString(" el")
			}
			fmt.Fprintf(&b, "if . == %s then %s", jqValue(p[0]), jqValue(p[1]))
		}
		b.WriteString(" else . end)")
		return b.String()
	case FnConvert:
		return "map(mvp_convert(" + jqString(string(f.Type)) + "))"
	case FnJQ:
		return "map(mvp_one(\n" + f.JQ.Src + "\n\n))"
	}
	return "."
}

func jqString(s string) string { return jqValue(s) }

// jqValue renders a JSON value as a jq literal; JSON is valid jq. HTML
// escaping stays off so that the program reads as written (-> not \u003e).
func jqValue(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
