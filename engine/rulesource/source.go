package rulesource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// Set is one validated and compiled rule set. It is immutable: keep the Set
// that [Source.Current] returned for the whole of a request.
type Set struct {
	// Rules is every document of the set: files first, in path order, then
	// cluster objects by name, then the built-in documents they leave in
	// force (Options.Builtin).
	Rules *rules.RuleSet
	// Converter runs the set's migration rules.
	Converter *engine.Converter
	// RoutingRules are the set's apiRoutingRules, in document order.
	RoutingRules []rules.RoutingRule
	// Revision counts the sets a Source has activated, from 1.
	Revision uint64
	// Loaded is when the set became active.
	Loaded time.Time
}

// Options configure a [Source]. At least one of Files and Cluster must be set.
type Options struct {
	// Files are rules files and directories (*.yaml, *.yml, *.json, entries
	// whose names start with a dot left out, as in a ConfigMap volume). They
	// are watched; empty means no files.
	Files []string
	// Cluster is the client for TransformationRules objects; nil means no
	// cluster source.
	Cluster dynamic.Interface
	// Builtin adds the built-in rules (rules/builtin) under the files and
	// objects: a migration rule of theirs for the same resource that
	// converts from the same version, or between the same two versions,
	// replaces the built-in one. False means none.
	Builtin bool
	// Events records Loaded and Rejected events about objects; nil means
	// none (the status is still written).
	Events corev1client.EventsGetter
	// Component names the writer in Events and as the status field manager.
	// Empty means "mvpctl-proxy".
	Component string
	// Host is the Event source's host, e.g. the pod name; empty means none.
	Host string
	// Converter configures the converters built from each set.
	Converter engine.Options
	// Compile configures compilation.
	Compile rules.CompileOptions
	// PollInterval is how often files are read again in case a change
	// notification was lost (network file systems, some volume types). Zero
	// means 10s; negative turns polling off.
	PollInterval time.Duration
	// Debounce is how long file changes settle before a reload, so that an
	// editor's write-rename-chmod sequence reloads once. Zero means 50ms.
	Debounce time.Duration
	// Resync re-lists cluster objects this often. Zero means never (the watch
	// is enough).
	Resync time.Duration
	// Logger receives one line per reload and per rejection, and at debug
	// level one per read of unchanged files. Nil discards.
	Logger *slog.Logger
}

// Source keeps the active [Set]. Create one with [Start].
type Source struct {
	opts Options
	log  *slog.Logger
	cur  atomic.Pointer[Set]

	trigger chan struct{}
	done    chan struct{}

	// notify serializes activations and subscriptions, so that every
	// subscriber sees the sets in order, one call at a time.
	notify sync.Mutex
	subs   []func(*Set)

	mu       sync.Mutex
	lastErr  error
	revision uint64

	files   *fileState
	cluster *clusterState
	builtin []*rules.Document // Options.Builtin's documents
}

// Start loads the rules, starts watching them and returns once the first set
// is active. Unreadable, invalid or conflicting files are an error (a
// [rules.ErrorList] for problems in the rules), as is a cluster without the
// TransformationRules resource; cluster objects that fail are rejected one by
// one and do not stop the start. Watching ends with ctx.
func Start(ctx context.Context, opts Options) (*Source, error) {
	if len(opts.Files) == 0 && opts.Cluster == nil && !opts.Builtin {
		return nil, errors.New("rulesource: no rules files, no cluster and no built-in rules")
	}
	if opts.Component == "" {
		opts.Component = "mvpctl-proxy"
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 10 * time.Second
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 50 * time.Millisecond
	}
	// Everything started here (watches, the informer) ends with ctx, or at
	// once when Start fails.
	ctx, cancel := context.WithCancel(ctx)
	started := false
	defer func() {
		if !started {
			cancel()
		}
	}()
	s := &Source{
		opts:    opts,
		log:     opts.Logger,
		trigger: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	if opts.Builtin {
		rs, err := builtin.Load()
		if err != nil {
			return nil, err
		}
		s.builtin = rs.Documents
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var fileDocs []*rules.Document
	if len(opts.Files) > 0 {
		fs, err := newFileState(opts.Files)
		if err != nil {
			return nil, err
		}
		srcs, _, err := fs.read()
		if err != nil {
			fs.close()
			return nil, err
		}
		rs, err := rules.ParseAll(srcs...)
		if err != nil {
			fs.close()
			return nil, err
		}
		fileDocs = rs.Documents
		fs.docs = fileDocs
		s.files = fs
	}
	if opts.Cluster != nil {
		cs, err := startCluster(ctx, s)
		if err != nil {
			s.files.close()
			return nil, err
		}
		s.cluster = cs
	}
	// The first set: the files (which must be good) and every good object.
	set, err := s.build(fileDocs, nil)
	if err != nil {
		s.files.close()
		return nil, err
	}
	s.activate(set, "start")
	if s.cluster != nil {
		s.cluster.reconcile(ctx)
	}
	started = true
	go func() {
		defer cancel()
		s.loop(ctx)
	}()
	return s, nil
}

// Current returns the active set.
func (s *Source) Current() *Set { return s.cur.Load() }

// Subscribe calls f with the active set now and with every set that
// replaces it, one call at a time, from the goroutine that reloads (keep f
// short). The proxy uses it to take new routing rules.
func (s *Source) Subscribe(f func(*Set)) {
	s.notify.Lock()
	defer s.notify.Unlock()
	s.subs = append(s.subs, f)
	f(s.cur.Load())
}

// LastError is the error of the latest rejected change of the files, or nil
// when the latest change was accepted. Rejected cluster objects report in
// their status instead.
func (s *Source) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Done is closed when the Source has stopped watching (ctx ended).
func (s *Source) Done() <-chan struct{} { return s.done }

// poke asks for a reload without blocking; reloads coalesce.
func (s *Source) poke() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

func (s *Source) loop(ctx context.Context) {
	defer close(s.done)
	defer s.files.close()
	var poll <-chan time.Time
	if s.files != nil && s.opts.PollInterval > 0 {
		t := time.NewTicker(s.opts.PollInterval)
		defer t.Stop()
		poll = t.C
	}
	var fileEvents <-chan struct{}
	if s.files != nil {
		fileEvents = s.files.changed
	}
	var settle *time.Timer
	var settled <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-fileEvents:
			if settle == nil {
				settle = time.NewTimer(s.opts.Debounce)
			} else {
				settle.Reset(s.opts.Debounce)
			}
			settled = settle.C
		case <-settled:
			settled = nil
			s.reloadFiles(ctx)
		case <-poll:
			s.reloadFiles(ctx)
		case <-s.trigger:
			s.cluster.reconcile(ctx)
		}
	}
}

// msgFilesUnchanged is logged at debug level for every read of the files
// that found them as they were.
const msgFilesUnchanged = "rules files unchanged"

// reloadFiles reads the files again and, if they changed, activates them
// with the cluster's accepted objects, or keeps the previous files' rules.
func (s *Source) reloadFiles(ctx context.Context) {
	srcs, changed, err := s.files.read()
	if err == nil && !changed {
		s.log.Debug(msgFilesUnchanged, "files", s.opts.Files)
		return
	}
	var rs *rules.RuleSet
	if err == nil {
		rs, err = rules.ParseAll(srcs...)
	}
	var set *Set
	if err == nil {
		set, err = s.build(rs.Documents, nil)
	}
	if err != nil {
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		s.log.Error("rules files rejected; the previous rules stay active", "files", s.opts.Files, "error", err.Error())
		return
	}
	s.files.docs = rs.Documents
	s.mu.Lock()
	s.lastErr = nil
	s.mu.Unlock()
	s.activate(set, "files")
	// Objects rejected for a conflict with the old files may fit now.
	s.cluster.reconcile(ctx)
}

// rev is the revision of the active set.
func (s *Source) rev() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revision
}

// build validates and compiles files plus the cluster's accepted objects,
// with override replacing (or, when its document is nil, removing) one
// object's document.
func (s *Source) build(fileDocs []*rules.Document, override *objectDoc) (*Set, error) {
	rs := &rules.RuleSet{Documents: append([]*rules.Document(nil), fileDocs...)}
	if s.cluster != nil {
		rs.Documents = append(rs.Documents, s.cluster.documents(override)...)
	}
	rs.Documents = append(rs.Documents, builtin.InForce(s.builtin, rs.Documents)...)
	if len(rs.Documents) == 0 {
		return &Set{Rules: rs, Converter: engine.NewConverter(nil, s.opts.Converter)}, nil
	}
	if errs := rs.Validate(); len(errs) > 0 {
		return nil, errs
	}
	compiled, err := rules.Compile(rs, s.opts.Compile)
	if err != nil {
		return nil, err
	}
	return &Set{Rules: rs, Converter: engine.NewConverter(compiled, s.opts.Converter), RoutingRules: rs.RoutingRules()}, nil
}

// activate makes set the active one and tells the subscribers.
func (s *Source) activate(set *Set, why string) {
	s.notify.Lock()
	defer s.notify.Unlock()
	s.mu.Lock()
	s.revision++
	set.Revision = s.revision
	set.Loaded = time.Now()
	s.cur.Store(set)
	s.mu.Unlock()
	s.log.Info("rules active", "revision", set.Revision, "cause", why, "documents", len(set.Rules.Documents),
		"migrationRules", len(set.Converter.Rules()), "routingRules", len(set.RoutingRules))
	for _, f := range s.subs {
		f(set)
	}
}

// fileDocs is the active files' documents (nil without files).
func (s *Source) fileDocs() []*rules.Document {
	if s.files == nil {
		return nil
	}
	return s.files.docs
}

func (s *Source) String() string {
	return fmt.Sprintf("rulesource(files=%v cluster=%t)", s.opts.Files, s.opts.Cluster != nil)
}
