package lint

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/itchyny/gojq"

	"github.com/mvpctl/mvpctl/rules"
)

// checkCompile compiles the forward and reverse programs of every clean
// rule without broken transformations. Compiling a program costs milliseconds (gojq compiles the whole
// runtime library each time), so rules whose programs differ only in JSON
// literals (paths, values, the rule ID) and in jq expressions that are safe
// to splice (see spliced) are compiled once: the others compile exactly when
// their representative does.
// With round trips to run, every rule is compiled, since each needs its own
// programs.
//
// The compilations run in the background; the returned function waits for
// them and records their findings.
func (l *linter) checkCompile() (wait func()) {
	all := l.opts.Samples > 0 || len(l.opts.Examples) > 0
	var jobs []*compileJob
	byShape := map[string]*compileJob{}
	for i := range l.clean {
		r := &l.clean[i]
		if !r.intact() {
			continue // the structure errors say why it does not compile
		}
		if all {
			jobs = append(jobs, &compileJob{rep: r, members: []*ruleInfo{r}})
			continue
		}
		k := shape(r.ref.Rule)
		if j, ok := byShape[k]; ok {
			j.members = append(j.members, r)
			continue
		}
		j := &compileJob{rep: r, members: []*ruleInfo{r}}
		byShape[k] = j
		jobs = append(jobs, j)
	}
	var wg sync.WaitGroup
	next := make(chan *compileJob)
	for range min(runtime.GOMAXPROCS(0), max(len(jobs), 1)) {
		wg.Go(func() {
			for j := range next {
				j.comp, j.err = compileOne(j.rep)
			}
		})
	}
	go func() {
		for _, j := range jobs {
			next <- j
		}
		close(next)
	}()
	return func() {
		wg.Wait()
		l.recordCompiled(jobs, all)
	}
}

// recordCompiled reports the rules that did not compile and keeps the
// programs of those that did, for the round trips.
func (l *linter) recordCompiled(jobs []*compileJob, all bool) {
	for _, j := range jobs {
		for _, m := range j.members {
			if j.err != nil {
				l.addRule(IDProgramCompile, m, "", m.ref.Rule.ID(), j.err)
				continue
			}
			if all {
				m.compiled = j.comp
			}
		}
	}
}

// compileJob compiles one rule for every rule of its shape.
type compileJob struct {
	rep     *ruleInfo
	members []*ruleInfo
	err     error
	comp    *rules.Compiled
}

// compileOne compiles a single rule of a document with rules.Compile.
func compileOne(r *ruleInfo) (*rules.Compiled, error) {
	doc := *r.ref.Doc
	tr := *doc.Rules
	tr.Spec.APIMigrationRules = doc.Rules.Spec.APIMigrationRules[r.index : r.index+1 : r.index+1]
	tr.Spec.APIRoutingRules = nil
	doc.Rules = &tr
	out, err := rules.Compile(&rules.RuleSet{Documents: []*rules.Document{&doc}}, rules.CompileOptions{})
	if err != nil {
		var el rules.ErrorList
		if errors.As(err, &el) && len(el) > 0 {
			return nil, errors.New(el[0].Field.Detail)
		}
		return nil, err
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("compiled %d rules, want 1", len(out))
	}
	return out[0], nil
}

// shape is what a rule's generated programs look like with every JSON
// literal left out, and every jq expression that is safe to splice.
func shape(r *rules.MigrationRule) string {
	var b strings.Builder
	for _, t := range r.Transformations {
		fmt.Fprintf(&b, "%s|%t|%t|%t|%t|%d|%t|%t\x00%s\x00%s\x00%s\x00",
			t.Action, t.Type != "", t.FromType != "", t.Path == "", t.MatchValue != nil, len(t.ValueMap),
			t.DefaultValue != nil, t.Value != nil, spliced(t.Forward), spliced(t.Reverse), spliced(t.When))
	}
	return b.String()
}

// spliced stands for a jq expression in a shape. The compiler writes an
// expression between "(\n" or "name(\n" and "\n)". An expression that
// compiles alone (validation checked it) and also parses as "(\n" + expr +
// "\n)" is a complete query there, whatever the surroundings, since jq's
// grammar is context-free; and it resolves to the same builtins in the
// program, whose runtime library only adds mvp_* names. Such expressions
// are interchangeable; any other is kept verbatim, so it is compiled in
// its own program.
func spliced(expr string) string {
	if expr == "" {
		return ""
	}
	if _, err := gojq.Parse("(\n" + expr + "\n)"); err == nil {
		return "<jq>"
	}
	return expr
}
