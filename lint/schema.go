package lint

import (
	"fmt"

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
var writtenBelow = &snode{typ: typAny}

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
	mr := r.ref.Rule
	fromK := l.kindSchema(mr, mr.APIGroup, mr.FromVersion, false)
	toK := l.kindSchema(mr, mr.TargetGroup(), mr.ToVersion, true)
	sources := ""
	for i, s := range l.specs() {
		if i > 0 {
			sources += " or "
		}
		sources += s.Source
	}
	if fromK == nil {
		l.addRule(IDKindNotInSchema, r, "fromVersion", gvString(mr.APIGroup, mr.FromVersion)+" "+mr.Resource, sources)
	}
	if toK == nil {
		l.addRule(IDKindNotInSchema, r, "toVersion", gvString(mr.TargetGroup(), mr.ToVersion)+" "+mr.Resource, sources)
	}
	var toRoot *snode
	if toK != nil {
		toRoot = newSNode(toK.Schema)
	}
	var w *working
	if fromK != nil {
		w = &working{mounts: []mount{{node: newSNode(fromK.Schema)}}}
	}
	// inTo looks a path up in the toVersion schema.
	inTo := func(p rules.Path) (*snode, bool) {
		if toRoot == nil {
			return nil, false
		}
		n, _, ok := toRoot.lookup(schemaPath(p))
		return n, ok
	}
	checkValue := func(i int, name string, v *rules.Value, n *snode, label string) {
		if v == nil || n == nil {
			return
		}
		if prob := n.valueProblem(v.V); prob != "" {
			l.addRule(IDSchemaValue, r, tfield(i, name), name, jsonText(v.V), "value of "+mr.Transformations[i].Path, label, prob)
		}
	}
	checkType := func(i int, name string, t rules.ValueType, n *snode, label, path string) {
		if t == "" || n == nil || typeAgrees(t, n.typ) {
			return
		}
		l.addRule(IDSchemaType, r, tfield(i, name), path, n.typ, label, name, t)
	}
	fromLabel, toLabel := "", ""
	if fromK != nil {
		fromLabel = kindLabel(fromK)
	}
	if toK != nil {
		toLabel = kindLabel(toK)
	}
	for i, t := range mr.Transformations {
		var path, target rules.Path
		if t.Path != "" {
			path, _ = rules.ParsePath(t.Path)
		}
		if t.TargetPath != "" {
			target, _ = rules.ParsePath(t.TargetPath)
		}
		// cur is the field in the working object; nil when unknown.
		var cur *snode
		readsPath := t.Path != "" && t.Action != rules.ActionSet && t.Action != rules.ActionEnsureFieldExistence && t.Action != rules.ActionNewField
		if w != nil && readsPath {
			n, _, ok := w.lookup(path)
			if ok {
				cur = n
			} else if !l.coveredByTODO(r, t.Path) {
				suffix := ""
				if _, _, orig := (&working{mounts: w.mounts[:1]}).lookup(path); orig {
					suffix = " after the transformations before it"
				} else if _, ok := inTo(path); ok {
					suffix = fmt.Sprintf(" (it is a field of %s)", toLabel)
				}
				l.addRule(IDPathNotInSchema, r, tfield(i, "path"), t.Path, fromLabel, suffix)
			}
		}
		writes := t.Path
		writesField := "path"
		if t.Action == rules.ActionRename {
			writes, writesField = t.TargetPath, "targetPath"
		}
		var dst *snode
		writesTarget := t.Action == rules.ActionRename || t.Action == rules.ActionSet || t.Action == rules.ActionEnsureFieldExistence || t.Action == rules.ActionNewField
		if toRoot != nil && writesTarget {
			p := path
			if t.Action == rules.ActionRename {
				p = target
			}
			if n, ok := inTo(p); ok {
				dst = n
			} else if !l.coveredByTODO(r, writes) {
				l.addRule(IDTargetNotInSchema, r, tfield(i, writesField), writes, toLabel, "")
			}
		}
		switch t.Action {
		case rules.ActionRename:
			checkType(i, "type", t.Type, dst, toLabel, t.TargetPath)
		case rules.ActionSet:
			checkType(i, "type", t.Type, dst, toLabel, t.Path)
			checkValue(i, "value", t.Value, dst, toLabel)
		case rules.ActionEnsureFieldExistence:
			checkType(i, "type", t.Type, dst, toLabel, t.Path)
			checkValue(i, "defaultValue", t.DefaultValue, dst, toLabel)
		case rules.ActionConvertType:
			if n, ok := inTo(path); ok {
				checkType(i, "type", t.Type, n, toLabel, t.Path)
			}
			checkType(i, "fromType", t.FromType, cur, fromLabel, t.Path)
		case rules.ActionModify:
			toN, _ := inTo(path)
			checkValue(i, "matchValue", t.MatchValue, cur, fromLabel)
			checkValue(i, "replaceValue", t.ReplaceValue, toN, toLabel)
			for j, p := range t.ValueMap {
				checkValue(i, fmt.Sprintf("valueMap[%d].from", j), p.From, cur, fromLabel)
				checkValue(i, fmt.Sprintf("valueMap[%d].to", j), p.To, toN, toLabel)
			}
		}
		if w == nil {
			continue
		}
		// Apply the step to the working schema.
		switch t.Action {
		case rules.ActionRename:
			w.move(path, target)
			if t.Type != "" {
				if n, g, ok := w.lookup(target); ok {
					w.put(target, &snode{typ: string(t.Type), enum: n.enum}, g)
				}
			}
		case rules.ActionRemove:
			w.drop(path)
		case rules.ActionNewField, rules.ActionSet, rules.ActionEnsureFieldExistence:
			n := dst
			if n == nil {
				n = anyNode
			}
			w.put(path, n, t.Action != rules.ActionNewField && t.When == "")
		case rules.ActionConvertType:
			if _, g, ok := w.lookup(path); ok {
				w.put(path, &snode{typ: string(t.Type)}, g)
			}
		case rules.ActionJQ:
			if t.Path == "" {
				w = nil // the whole object may change shape: stop here
				continue
			}
			if _, g, ok := w.lookup(path); ok {
				w.put(path, anyNode, g)
			}
		}
	}
	if w != nil && toRoot != nil {
		l.checkRequired(r, w, toRoot, nil, toLabel, 0)
		l.checkLeftOver(r, w, toRoot, fromLabel, toLabel)
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
	if depth > 12 || n.typ == typAny || n.preserve || to.typ == typAny || to.preserve || n.ref != "" && stack[n.ref] {
		return
	}
	if n.ref != "" {
		stack[n.ref] = true
		defer delete(stack, n.ref)
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
			shared := n.ref != "" && n.ref == to.ref
			if !shared && !l.coveredByTODO(r, p.String()) {
				l.addRule(IDLeftOver, r, "toVersion", fromLabel, p.String(), toLabel)
			}
			return
		}
		l.walkLeftOver(r, w, m, c, toChild, p, fromLabel, toLabel, stack, depth+1)
	}
	switch {
	case n.typ == typObject && to.typ == typObject:
		for _, key := range sortedKeys(n.props) {
			if len(at) == 0 && (key == "apiVersion" || key == "kind" || key == "metadata") {
				continue
			}
			c, _ := n.child(key)
			tc, ok := to.child(key)
			visit(c, append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepKey, Key: key}), tc, ok)
		}
	case (n.typ == typArray || n.typ == typMap) && n.typ == to.typ:
		visit(n.element(), append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepWildcard}), to.element(), true)
	}
}

// checkRequired walks the toVersion schema below the fields the working
// object has and reports required fields forward may leave unset.
func (l *linter) checkRequired(r *ruleInfo, w *working, n *snode, at rules.Path, label string, depth int) {
	if depth > 12 || n.typ == typAny {
		return
	}
	switch n.typ {
	case typArray, typMap:
		if _, _, ok := w.lookup(append(at, rules.Step{Kind: rules.StepWildcard})); ok {
			l.checkRequired(r, w, n.element(), append(at, rules.Step{Kind: rules.StepWildcard}), label, depth+1)
		}
		return
	case typObject:
	default:
		return
	}
	for _, key := range sortedKeys(n.props) {
		p := append(append(rules.Path{}, at...), rules.Step{Kind: rules.StepKey, Key: key})
		if len(at) == 0 && (key == "apiVersion" || key == "kind" || key == "metadata") {
			continue
		}
		wn, guaranteed, ok := w.lookup(p)
		if n.required[key] && !guaranteed && !w.onlyVia(at, p) && !l.coveredByTODO(r, p.String()) {
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
	case schemaType == typAny || string(t) == schemaType:
		return true
	case t == rules.TypeInteger && (schemaType == "number" || schemaType == string(rules.TypeIntOrString)):
		return true
	case t == rules.TypeString && schemaType == string(rules.TypeIntOrString):
		return true
	}
	return false
}
