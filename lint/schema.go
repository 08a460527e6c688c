package lint

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/schemadiff"
)

// specs lists the schemas given, old first.
func (l *linter) specs() []*schemadiff.Spec {
	var out []*schemadiff.Spec
	for _, s := range []*schemadiff.Spec{l.opts.From, l.opts.To} {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// kindSchema finds a rule's kind at one group/version: by resource, or by
// kind when the rule names one. The preferred spec is searched first (the
// old dump for fromVersion), then the other, since one dump often serves
// both versions.
func (l *linter) kindSchema(mr *rules.MigrationRule, group, version string, preferNew bool) *schemadiff.Kind {
	specs := l.specs()
	if preferNew && len(specs) == 2 {
		specs[0], specs[1] = specs[1], specs[0]
	}
	for _, s := range specs {
		var byKind *schemadiff.Kind
		for _, g := range s.GVKs() {
			k := s.Kinds[g]
			if g.Group != group || g.Version != version {
				continue
			}
			if k.Resource == mr.Resource {
				return k
			}
			if byKind == nil && mr.Kind != "" && g.Kind == mr.Kind {
				byKind = k
			}
		}
		if byKind != nil {
			return byKind
		}
	}
	return nil
}

func kindLabel(k *schemadiff.Kind) string { return k.GroupVersion() + " " + k.Kind }

// mount is a subtree of the object as the transformations leave it.
type mount struct {
	at   rules.Path
	node *snode
	// guaranteed says the field is always present (written by set or
	// ensureFieldExistence, or moved from a required field).
	guaranteed bool
}

// working is the schema of the object between two transformations: the
// fromVersion schema with the moves, removals and writes so far applied.
type working struct {
	mounts  []mount // the root first
	deleted []rules.Path
}

// schemaPath turns indexes into wildcards: the schema is the same for every item.
func schemaPath(p rules.Path) rules.Path {
	out := make(rules.Path, len(p))
	for i, st := range p {
		if st.Kind == rules.StepIndex {
			st = rules.Step{Kind: rules.StepWildcard}
		}
		out[i] = st
	}
	return out
}

func hasPrefix(p, pre rules.Path) bool {
	if len(pre) > len(p) {
		return false
	}
	for i := range pre {
		if p[i] != pre[i] {
			return false
		}
	}
	return true
}

// lookup finds the schema of a path in the working object.
func (w *working) lookup(p rules.Path) (n *snode, guaranteed, ok bool) {
	p = schemaPath(p)
	if n, guaranteed, ok = w.lookupDirect(p); ok {
		return n, guaranteed, ok
	}
	return w.below(p)
}

// lookupDirect finds a path in a mounted subtree, ignoring what is written
// below it.
func (w *working) lookupDirect(p rules.Path) (n *snode, guaranteed, ok bool) {
	p = schemaPath(p)
	best := -1
	for i, m := range w.mounts {
		if hasPrefix(p, m.at) && (best < 0 || len(m.at) > len(w.mounts[best].at)) {
			best = i
		}
	}
	if best < 0 {
		return nil, false, false
	}
	m := w.mounts[best]
	for _, d := range w.deleted {
		if hasPrefix(p, d) && len(d) > len(m.at) {
			return nil, false, false
		}
	}
	if len(p) == len(m.at) {
		return m.node, m.guaranteed || len(m.at) == 0, true
	}
	return m.node.lookup(p[len(m.at):])
}

// onlyVia reports whether the object has parent only because
// transformations write below it, all of them at or below child: then
// child is set whenever parent is (a rename of serviceName into
// service.name creates service with its name).
func (w *working) onlyVia(parent, child rules.Path) bool {
	if len(parent) == 0 {
		return false
	}
	if _, _, ok := w.lookupDirect(parent); ok {
		return false
	}
	found := false
	for _, m := range w.mounts {
		if len(m.at) > len(parent) && hasPrefix(m.at, parent) {
			if !hasPrefix(m.at, child) {
				return false
			}
			found = true
		}
	}
	return found
}

// below treats a field as written when transformations write below it: a
// rename into a.b.c creates a.b. Which sources are set together is beyond
// the schema (HPA v2beta1 requires one of two targets only in its
// validation code), so such a parent counts as set.
func (w *working) below(p rules.Path) (n *snode, guaranteed, ok bool) {
	for _, m := range w.mounts {
		if len(m.at) > len(p) && hasPrefix(m.at, p) {
			return writtenBelow, true, true
		}
	}
	return nil, false, false
}

// writtenBelow is the schema of a field that exists because transformations
// write below it: unknown like any value, but, unlike the result of a jq
// expression, its required members are still checked.
var writtenBelow = typedNode(schemadiff.TypeAny, nil)

// drop removes a path and everything mounted below it.
func (w *working) drop(p rules.Path) {
	p = schemaPath(p)
	kept := w.mounts[:0]
	for _, m := range w.mounts {
		if len(m.at) > 0 && hasPrefix(m.at, p) {
			continue
		}
		kept = append(kept, m)
	}
	w.mounts = kept
	w.deleted = append(w.deleted, p)
}

// put places a subtree at a path, replacing what was there.
func (w *working) put(p rules.Path, n *snode, guaranteed bool) {
	w.drop(p)
	p = schemaPath(p)
	w.deleted = w.deleted[:len(w.deleted)-1]
	kept := w.deleted[:0]
	for _, d := range w.deleted {
		if !hasPrefix(d, p) {
			kept = append(kept, d)
		}
	}
	w.deleted = kept
	w.mounts = append(w.mounts, mount{at: p, node: n, guaranteed: guaranteed})
}

// move moves a subtree and what is mounted below it.
func (w *working) move(from, to rules.Path) {
	from, to = schemaPath(from), schemaPath(to)
	n, guaranteed, ok := w.lookup(from)
	var sub []mount
	for _, m := range w.mounts {
		if len(m.at) > len(from) && hasPrefix(m.at, from) {
			sub = append(sub, mount{at: append(append(rules.Path{}, to...), m.at[len(from):]...), node: m.node, guaranteed: m.guaranteed})
		}
	}
	w.drop(from)
	if !ok {
		return
	}
	w.put(to, n, guaranteed)
	w.mounts = append(w.mounts, sub...)
}

// checkSchemas runs the schema checks on every clean rule.
func (l *linter) checkSchemas() {
	if len(l.specs()) == 0 {
		return
	}
	for i := range l.clean {
		l.checkRuleSchema(&l.clean[i])
	}
}

func (l *linter) checkRuleSchema(r *ruleInfo) {
	s := l.newRuleSchema(r)
	for i := range r.ref.Rule.Transformations {
		s.step(i)
	}
	if s.w != nil && s.toRoot != nil {
		l.checkRequired(r, s.w, s.toRoot, nil, s.toLabel, 0)
		l.checkLeftOver(r, s.w, s.toRoot, s.fromLabel, s.toLabel)
	}
}

// ruleSchema follows one migration rule through the schemas of its two
// versions, one transformation at a time.
type ruleSchema struct {
	l  *linter
	r  *ruleInfo
	mr *rules.MigrationRule
	// toRoot is the toVersion schema; nil when no schema given serves it.
	toRoot *snode
	// w is the object as the transformations so far leave it; nil when
	// unknown: no schema serves fromVersion, or a step may have changed
	// the whole object.
	w                  *working
	fromLabel, toLabel string
}

// newRuleSchema finds the schemas of a rule's two versions and reports
// those that no schema given serves.
func (l *linter) newRuleSchema(r *ruleInfo) *ruleSchema {
	mr := r.ref.Rule
	s := &ruleSchema{l: l, r: r, mr: mr}
	fromK := l.kindSchema(mr, mr.APIGroup, mr.FromVersion, false)
	toK := l.kindSchema(mr, mr.TargetGroup(), mr.ToVersion, true)
	var sources []string
	for _, spec := range l.specs() {
		sources = append(sources, spec.Source)
	}
	if fromK == nil {
		l.addRule(IDKindNotInSchema, r, "fromVersion", gvString(mr.APIGroup, mr.FromVersion)+" "+mr.Resource, strings.Join(sources, " or "))
	} else {
		s.w = &working{mounts: []mount{{node: newSNode(fromK.Schema)}}}
		s.fromLabel = kindLabel(fromK)
	}
	if toK == nil {
		l.addRule(IDKindNotInSchema, r, "toVersion", gvString(mr.TargetGroup(), mr.ToVersion)+" "+mr.Resource, strings.Join(sources, " or "))
	} else {
		s.toRoot = newSNode(toK.Schema)
		s.toLabel = kindLabel(toK)
	}
	return s
}

// inTo looks a path up in the toVersion schema.
func (s *ruleSchema) inTo(p rules.Path) (*snode, bool) {
	if s.toRoot == nil {
		return nil, false
	}
	n, _, ok := s.toRoot.lookup(schemaPath(p))
	return n, ok
}

// step checks transformation i against the schemas and applies it to the
// working object. A transformation with structure errors is not checked;
// it is applied when what it changes is known, else the working object
// becomes unknown.
func (s *ruleSchema) step(i int) {
	t := &s.mr.Transformations[i]
	var path, target rules.Path
	if t.Path != "" {
		path, _ = rules.ParsePath(t.Path)
	}
	if t.TargetPath != "" {
		target, _ = rules.ParsePath(t.TargetPath)
	}
	if !s.r.stepKnown(i) {
		if s.r.stepKnown(i, "action", "path", "targetPath", "type", "when") {
			s.apply(t, path, target, nil)
		} else {
			s.w = nil
		}
		return
	}
	cur := s.checkSource(i, t, path)
	dst := s.checkTarget(i, t, path, target)
	s.checkHints(i, t, path, cur, dst)
	s.checkConvertible(i, t, path, target, cur)
	s.apply(t, path, target, dst)
}

// checkSource finds the field a step reads in the working object: its
// schema, or nil when unknown or missing (reported as path-not-in-schema).
func (s *ruleSchema) checkSource(i int, t *rules.Transformation, path rules.Path) *snode {
	facts, _ := t.Action.Facts()
	if s.w == nil || !facts.ReadsPath || t.Path == "" {
		return nil
	}
	if n, _, ok := s.w.lookup(path); ok {
		return n
	}
	if s.l.coveredByTODO(s.r, t.Path) {
		return nil
	}
	suffix := ""
	if _, _, orig := (&working{mounts: s.w.mounts[:1]}).lookup(path); orig {
		suffix = " after the transformations before it"
	} else if _, ok := s.inTo(path); ok {
		suffix = fmt.Sprintf(" (it is a field of %s)", s.toLabel)
	}
	s.l.addRule(IDPathNotInSchema, s.r, tfield(i, "path"), t.Path, s.fromLabel, suffix)
	return nil
}

// checkTarget finds the toVersion field a step creates: its schema, or nil
// when unknown or missing (reported as target-not-in-schema).
func (s *ruleSchema) checkTarget(i int, t *rules.Transformation, path, target rules.Path) *snode {
	fld, text := t.Target()
	if s.toRoot == nil || fld == "" {
		return nil
	}
	p := path
	if fld == "targetPath" {
		p = target
	}
	if n, ok := s.inTo(p); ok {
		return n
	}
	if !s.l.coveredByTODO(s.r, text) {
		s.l.addRule(IDTargetNotInSchema, s.r, tfield(i, fld), text, s.toLabel, "")
	}
	return nil
}

// checkHints checks type hints and values against the schema of the field
// they are about: cur in the working object, dst in toVersion.
func (s *ruleSchema) checkHints(i int, t *rules.Transformation, path rules.Path, cur, dst *snode) {
	switch t.Action {
	case rules.ActionRename:
		s.checkType(i, "type", t.Type, dst, s.toLabel, t.TargetPath)
	case rules.ActionSet:
		s.checkType(i, "type", t.Type, dst, s.toLabel, t.Path)
		s.checkValue(i, "value", t.Value, dst, s.toLabel)
	case rules.ActionEnsureFieldExistence:
		s.checkType(i, "type", t.Type, dst, s.toLabel, t.Path)
		s.checkValue(i, "defaultValue", t.DefaultValue, dst, s.toLabel)
	case rules.ActionConvertType:
		if n, ok := s.inTo(path); ok {
			s.checkType(i, "type", t.Type, n, s.toLabel, t.Path)
		}
		s.checkType(i, "fromType", t.FromType, cur, s.fromLabel, t.Path)
	case rules.ActionModify:
		toN, _ := s.inTo(path)
		s.checkValue(i, "matchValue", t.MatchValue, cur, s.fromLabel)
		s.checkValue(i, "replaceValue", t.ReplaceValue, toN, s.toLabel)
		for j, p := range t.ValueMap {
			s.checkValue(i, fmt.Sprintf("valueMap[%d].from", j), p.From, cur, s.fromLabel)
			s.checkValue(i, fmt.Sprintf("valueMap[%d].to", j), p.To, toN, s.toLabel)
		}
	}
}

func (s *ruleSchema) checkValue(i int, name string, v *rules.Value, n *snode, label string) {
	if v == nil || n == nil {
		return
	}
	if prob := n.valueProblem(v.V); prob != "" {
		s.l.addRule(IDSchemaValue, s.r, tfield(i, name), name, jsonText(v.V), "value of "+s.mr.Transformations[i].Path, label, prob)
	}
}

func (s *ruleSchema) checkType(i int, name string, t rules.ValueType, n *snode, label, path string) {
	if t == "" || n == nil || typeAgrees(t, n.Type) {
		return
	}
	s.l.addRule(IDSchemaType, s.r, tfield(i, name), path, n.Type, label, name, t)
}

// apply changes the working object as the step changes the object; dst is
// the schema of what it writes, if known.
func (s *ruleSchema) apply(t *rules.Transformation, path, target rules.Path, dst *snode) {
	w := s.w
	if w == nil {
		return
	}
	facts, _ := t.Action.Facts()
	switch t.Action {
	case rules.ActionRename:
		w.move(path, target)
		if t.Type != "" {
			if n, g, ok := w.lookup(target); ok {
				w.put(target, typedNode(string(t.Type), n.Enum), g)
			}
		}
	case rules.ActionRemove:
		w.drop(path)
	case rules.ActionNewField, rules.ActionSet, rules.ActionEnsureFieldExistence:
		n := dst
		if n == nil {
			n = anyNode
		}
		w.put(path, n, facts.Write != rules.WriteNone && t.When == "")
	case rules.ActionConvertType:
		if _, g, ok := w.lookup(path); ok {
			w.put(path, typedNode(string(t.Type), nil), g)
		}
	case rules.ActionJQ:
		if t.OnWholeObject() {
			s.w = nil // the whole object may change shape: stop here
			return
		}
		if _, g, ok := w.lookup(path); ok {
			w.put(path, anyNode, g)
		}
	}
}

// checkLeftOver walks the fields the working object still has from
// fromVersion (and below moved fields) and reports the topmost of those
// toVersion does not have. A field missing from a definition both versions
// share (ObjectMeta lost clusterName in v1.25) is a change of the release,
// not of the version, and is not reported, as generate-rules drafts no rule
// for it.
func (l *linter) checkLeftOver(r *ruleInfo, w *working, toRoot *snode, fromLabel, toLabel string) {
	for _, m := range w.mounts {
		if m.node == anyNode {
			continue
		}
		to, _, ok := toRoot.lookup(m.at)
		if !ok {
			continue // reported as target-not-in-schema
		}
		l.walkLeftOver(r, w, m, m.node, to, m.at, fromLabel, toLabel, map[string]bool{}, 0)
	}
}

func (l *linter) walkLeftOver(r *ruleInfo, w *working, m mount, n, to *snode, at rules.Path, fromLabel, toLabel string, stack map[string]bool, depth int) {
	if depth > 12 || n.Type == schemadiff.TypeAny || n.PreserveUnknownFields || to.Type == schemadiff.TypeAny || to.PreserveUnknownFields || n.Ref != "" && stack[n.Ref] {
		return
	}
	if n.Ref != "" {
		stack[n.Ref] = true
		defer delete(stack, n.Ref)
	}
	visit := func(c *snode, p rules.Path, toChild *snode, ok bool) {
		// Stop where another mount or a deletion takes over.
		for _, o := range w.mounts {
			if len(o.at) > len(m.at) && hasPrefix(p, o.at) {
				return
			}
		}
		for _, d := range w.deleted {
			if len(d) > len(m.at) && hasPrefix(p, d) {
				return
			}
		}
		if !ok {
			shared := n.Ref != "" && n.Ref == to.Ref
			if !shared && !l.coveredByTODO(r, p.String()) {
				l.addRule(IDLeftOver, r, "toVersion", fromLabel, p.String(), toLabel)
			}
			return
		}
		l.walkLeftOver(r, w, m, c, toChild, p, fromLabel, toLabel, stack, depth+1)
	}
	switch {
	case n.Type == schemadiff.TypeObject && to.Type == schemadiff.TypeObject:
		for _, key := range slices.Sorted(maps.Keys(n.Properties)) {
			if len(at) == 0 && (key == "apiVersion" || key == "kind" || key == "metadata") {
				continue
			}
			c, _ := n.child(key)
			tc, ok := to.child(key)
			visit(c, append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepKey, Key: key}), tc, ok)
		}
	case (n.Type == schemadiff.TypeArray || n.Type == schemadiff.TypeMap) && n.Type == to.Type:
		visit(n.element(), append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepWildcard}), to.element(), true)
	}
}

// checkRequired walks the toVersion schema below the fields the working
// object has and reports required fields forward may leave unset.
func (l *linter) checkRequired(r *ruleInfo, w *working, n *snode, at rules.Path, label string, depth int) {
	if depth > 12 || n.Type == schemadiff.TypeAny {
		return
	}
	switch n.Type {
	case schemadiff.TypeArray, schemadiff.TypeMap:
		if _, _, ok := w.lookup(append(at, rules.Step{Kind: rules.StepWildcard})); ok {
			l.checkRequired(r, w, n.element(), append(at, rules.Step{Kind: rules.StepWildcard}), label, depth+1)
		}
		return
	case schemadiff.TypeObject:
	default:
		return
	}
	for _, key := range slices.Sorted(maps.Keys(n.Properties)) {
		p := append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepKey, Key: key})
		if len(at) == 0 && (key == "apiVersion" || key == "kind" || key == "metadata") {
			continue
		}
		wn, guaranteed, ok := w.lookup(p)
		if n.Required[key] && !guaranteed && !w.onlyVia(at, p) && !l.coveredByTODO(r, p.String()) {
			when := "leaves unset when the source object lacks it"
			if !ok {
				when = "never writes: no transformation writes it and " + r.ref.Rule.FromVersion + " has no such field"
			}
			l.addRule(IDRequiredUnset, r, "toVersion", label, p.String(), when)
		}
		if ok && wn != nil && wn != anyNode {
			c, _ := n.child(key)
			l.checkRequired(r, w, c, p, label, depth+1)
		}
	}
}

// typeAgrees reports whether a type hint fits a schema type.
func typeAgrees(t rules.ValueType, schemaType string) bool {
	switch {
	case schemaType == schemadiff.TypeAny || string(t) == schemaType:
		return true
	case t == rules.TypeInteger && (schemaType == "number" || schemaType == string(rules.TypeIntOrString)):
		return true
	case t == rules.TypeString && schemaType == string(rules.TypeIntOrString):
		return true
	}
	return false
}
