package rulesource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/crd"
)

// Reasons of the Ready condition and of Events.
const (
	// ReasonLoaded: the generation is in use.
	ReasonLoaded = "Loaded"
	// ReasonInvalid: the generation does not parse or validate on its own.
	ReasonInvalid = "Invalid"
	// ReasonConflict: the generation is valid alone but not together with
	// the files or other objects (a rule for the same resource and versions).
	ReasonConflict = "Conflict"
	// ReasonCompileFailed: the generation validates but does not compile.
	ReasonCompileFailed = "CompileFailed"
	// ReasonRejected is the Event reason of a rejected generation.
	ReasonRejected = "Rejected"
)

// statusRetry is how soon a failed status write is tried again.
const statusRetry = 2 * time.Second

// maxMessage bounds a condition message (metav1.Condition allows 32768).
const maxMessage = 32 << 10

// objState is what a Source knows about one TransformationRules object.
type objState struct {
	uid types.UID
	// good is the document of the last accepted generation, goodGen that
	// generation; nil and 0 when none was ever accepted.
	good    *rules.Document
	goodGen int64
	// judged is the generation last accepted or rejected, with the verdict.
	judged  int64
	ready   bool
	reason  string
	message string
	// statusDone says the status of judged has been written.
	statusDone bool
	// revision is the Source's revision when judged: a conflict is judged
	// again once the set it conflicted with has changed.
	revision uint64
}

// objectDoc replaces one object's document in a candidate set; a nil doc
// leaves the object out.
type objectDoc struct {
	name string
	doc  *rules.Document
}

type clusterState struct {
	s        *Source
	client   dynamic.NamespaceableResourceInterface
	informer cache.SharedIndexInformer
	recorder record.EventRecorder
	objs     map[string]*objState
}

func startCluster(ctx context.Context, s *Source) (*clusterState, error) {
	gvr := crd.GroupVersionResource
	client := s.opts.Cluster.Resource(gvr)
	// Fail clearly, before any informer retries forever, when the resource
	// is missing or not readable.
	if _, err := client.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the cluster does not serve %s: apply the CustomResourceDefinition %s (deploy/crd) first", gvr.GroupResource(), crd.Name)
		}
		return nil, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
	}
	cs := &clusterState{s: s, client: client, objs: map[string]*objState{}}
	if s.opts.Events != nil {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: s.opts.Events.Events("")})
		cs.recorder = b.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: s.opts.Component, Host: s.opts.Host})
	}
	cs.informer = dynamicinformer.NewFilteredDynamicInformer(s.opts.Cluster, gvr, "", s.opts.Resync, cache.Indexers{}, nil).Informer()
	poke := func(any) { s.poke() }
	if _, err := cs.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, _ any) { s.poke() },
		DeleteFunc: poke,
	}); err != nil {
		return nil, err
	}
	go cs.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), cs.informer.HasSynced) {
		return nil, fmt.Errorf("watching %s: %w", gvr.GroupResource(), context.Cause(ctx))
	}
	return cs, nil
}

// documents lists the accepted documents by object name, with override.
func (cs *clusterState) documents(override *objectDoc) []*rules.Document {
	names := make([]string, 0, len(cs.objs)+1)
	for n := range cs.objs {
		names = append(names, n)
	}
	if override != nil && cs.objs[override.name] == nil {
		names = append(names, override.name)
	}
	sort.Strings(names)
	var docs []*rules.Document
	for _, n := range names {
		d := (*rules.Document)(nil)
		if st := cs.objs[n]; st != nil {
			d = st.good
		}
		if override != nil && override.name == n {
			d = override.doc
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs
}

// reconcile judges every object whose generation has not been judged,
// activating each accepted one, and writes the statuses still to write.
func (cs *clusterState) reconcile(ctx context.Context) {
	if cs == nil {
		return
	}
	s := cs.s
	var items []*unstructured.Unstructured
	for _, o := range cs.informer.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			items = append(items, u)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	present := map[string]bool{}
	for _, u := range items {
		present[u.GetName()] = true
	}
	removed := false
	for name, st := range cs.objs {
		if !present[name] {
			delete(cs.objs, name)
			removed = removed || st.good != nil
		}
	}
	if removed {
		// Fewer documents cannot fail validation or compilation.
		if set, err := s.build(s.fileDocs(), nil); err == nil {
			s.activate(set, "object deleted")
		} else {
			s.log.Error("rules set without a deleted object failed", "error", err.Error())
		}
	}
	for _, u := range items {
		name := u.GetName()
		st := cs.objs[name]
		if st == nil || st.uid != u.GetUID() {
			if st != nil && st.good != nil {
				// Recreated under the same name: the old object's rules go.
				st.good = nil
				if set, err := s.build(s.fileDocs(), nil); err == nil {
					s.activate(set, "object recreated")
				}
			}
			st = &objState{uid: u.GetUID()}
			cs.objs[name] = st
		}
		gen := u.GetGeneration()
		if gen != st.judged || (!st.ready && st.reason == ReasonConflict && st.revision != s.rev()) {
			cs.judge(u, st, gen)
		}
		if !st.statusDone {
			if st.statusDone = cs.writeStatus(ctx, u, st); !st.statusDone {
				time.AfterFunc(statusRetry, s.poke)
			}
		}
	}
}

// judge accepts or rejects one generation of an object.
func (cs *clusterState) judge(u *unstructured.Unstructured, st *objState, gen int64) {
	s := cs.s
	name := u.GetName()
	st.revision = s.rev()
	doc, err := parseObject(u)
	reason := ReasonInvalid
	var set *Set
	if err == nil {
		set, reason, err = cs.candidate(name, doc)
	}
	if err != nil {
		msg := rejectionMessage(name, gen, st.goodGen, err)
		if gen == st.judged && !st.ready && st.reason == reason && st.message == msg {
			return // judged again after a change elsewhere: still the same verdict
		}
		st.judged, st.statusDone = gen, false
		st.ready, st.reason, st.message = false, reason, msg
		s.log.Warn("TransformationRules rejected", "name", name, "generation", gen, "reason", reason, "error", err.Error())
		if cs.recorder != nil {
			cs.recorder.Event(u, corev1.EventTypeWarning, ReasonRejected, st.message)
		}
		return
	}
	st.judged, st.statusDone = gen, false
	st.good, st.goodGen = doc, gen
	st.ready, st.reason = true, ReasonLoaded
	st.message = fmt.Sprintf("generation %d is in use: %d migration rules, %d routing rules", gen,
		len(doc.Rules.Spec.APIMigrationRules), len(doc.Rules.Spec.APIRoutingRules))
	s.activate(set, "object "+name)
	if cs.recorder != nil {
		cs.recorder.Event(u, corev1.EventTypeNormal, ReasonLoaded, st.message)
	}
}

// candidate builds the set with doc as the object's document.
func (cs *clusterState) candidate(name string, doc *rules.Document) (*Set, string, error) {
	s := cs.s
	rs := &rules.RuleSet{Documents: append(append([]*rules.Document(nil), s.fileDocs()...), cs.documents(&objectDoc{name: name, doc: doc})...)}
	if errs := rs.Validate(); len(errs) > 0 {
		return nil, ReasonConflict, errs
	}
	set, err := s.build(s.fileDocs(), &objectDoc{name: name, doc: doc})
	if err != nil {
		return nil, ReasonCompileFailed, err
	}
	return set, "", nil
}

// SourceName is the name under which an object's document is parsed and
// reported.
func SourceName(object string) string { return crd.Plural + "/" + object }

// parseObject decodes an object as a rules document, as strictly as a file:
// the fields a file may carry (metadata name, labels and annotations; spec)
// and nothing the server adds.
func parseObject(u *unstructured.Unstructured) (*rules.Document, error) {
	meta := map[string]any{"name": u.GetName()}
	if l := u.GetLabels(); len(l) > 0 {
		meta["labels"] = l
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		meta["annotations"] = a
	}
	doc := map[string]any{
		"apiVersion": u.GetAPIVersion(),
		"kind":       u.GetKind(),
		"metadata":   meta,
		"spec":       u.Object["spec"],
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	rs, err := rules.ParseAll(rules.Source{Name: SourceName(u.GetName()), Data: data})
	if err != nil {
		return nil, err
	}
	if len(rs.Documents) != 1 {
		return nil, errors.New("not one TransformationRules document")
	}
	return rs.Documents[0], nil
}

// rejectionMessage names every problem by field path: positions in the
// document the proxy serialized would mean nothing to the user. A problem
// in a rules file or another object (a conflict) names that too.
func rejectionMessage(name string, gen, goodGen int64, err error) string {
	var b strings.Builder
	if goodGen > 0 {
		fmt.Fprintf(&b, "generation %d rejected, generation %d stays in use: ", gen, goodGen)
	} else {
		fmt.Fprintf(&b, "generation %d rejected: ", gen)
	}
	var el rules.ErrorList
	if errors.As(err, &el) {
		for i, e := range el {
			if i > 0 {
				b.WriteString("; ")
			}
			switch {
			case e.Pos.File == SourceName(name) || e.Pos.File == "":
			case strings.HasPrefix(e.Pos.File, crd.Plural+"/"):
				b.WriteString(e.Pos.File + ": ")
			default:
				b.WriteString(e.Pos.String() + ": ")
			}
			b.WriteString(e.Field.Error())
		}
	} else {
		b.WriteString(err.Error())
	}
	msg := b.String()
	if len(msg) > maxMessage {
		msg = msg[:maxMessage-3] + "..."
	}
	return msg
}

// desiredStatus is the status that says what became of st.judged.
func desiredStatus(u *unstructured.Unstructured, st *objState) (rules.TransformationRulesStatus, error) {
	var cur rules.TransformationRulesStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cur); err != nil {
			return cur, err
		}
	}
	next := cur
	next.Conditions = append([]metav1.Condition(nil), cur.Conditions...)
	next.ObservedGeneration = st.judged
	mig, _, _ := unstructured.NestedSlice(u.Object, "spec", "apiMigrationRules")
	route, _, _ := unstructured.NestedSlice(u.Object, "spec", "apiRoutingRules")
	next.MigrationRules, next.RoutingRules = int32(len(mig)), int32(len(route))
	cond := metav1.Condition{Type: rules.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: st.judged, Reason: st.reason, Message: st.message}
	if st.ready {
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&next.Conditions, cond)
	return next, nil
}

// writeStatus writes the object's status unless it already says the same,
// retrying on conflicts while the generation is unchanged. It reports
// whether the status is written (or no longer needs to be).
func (cs *clusterState) writeStatus(ctx context.Context, u *unstructured.Unstructured, st *objState) bool {
	obj := u
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if obj.GetGeneration() != st.judged {
			return nil // a newer generation will be judged and written
		}
		next, err := desiredStatus(obj, st)
		if err != nil {
			return err
		}
		var cur rules.TransformationRulesStatus
		if raw, ok := obj.Object["status"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cur)
		}
		if equality.Semantic.DeepEqual(cur, next) {
			return nil
		}
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
		if err != nil {
			return err
		}
		w := obj.DeepCopy()
		w.Object["status"] = raw
		_, err = cs.client.UpdateStatus(ctx, w, metav1.UpdateOptions{FieldManager: cs.s.opts.Component})
		if apierrors.IsConflict(err) {
			if latest, gerr := cs.client.Get(ctx, obj.GetName(), metav1.GetOptions{}); gerr == nil {
				obj = latest
			}
		}
		return err
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return true
		}
		cs.s.log.Error("writing TransformationRules status", "name", u.GetName(), "error", err.Error())
		return false
	}
	return true
}
