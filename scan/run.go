package scan

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/mvpctl/mvpctl/manifest"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// ClusterPrefix marks an input that is a kubeconfig context: cluster:NAME
// (cluster: alone is the current context).
const ClusterPrefix = "cluster:"

// Options configure Run. The zero value checks files against the newest
// release known, one directory level deep, with one worker per CPU.
type Options struct {
	// Target is the release objects are checked against; zero means
	// builtin.Newest.
	Target builtin.Release
	// Recursive descends into the subdirectories of directory inputs.
	Recursive bool
	// Stdin is what the input "-" reads; nil reads nothing.
	Stdin io.Reader
	// Workers is how many files are scanned at once; zero means GOMAXPROCS.
	Workers int
}

// Result is the outcome of a scan.
type Result struct {
	// Target is the release the objects were checked against.
	Target builtin.Release
	// Findings are sorted by location.
	Findings []Finding
	// Documents counts the documents read (a List is one; in a cluster, each
	// last-applied annotation is one), Files the files read.
	Documents, Files int
	// Errors are inputs that could not be read or decoded: the scan is
	// incomplete.
	Errors []error
	// Warnings are things the user should know that did not stop the scan:
	// a directory not descended into without Recursive, a resource the
	// credentials may not list.
	Warnings []string
}

// Count returns how many findings have a status.
func (r *Result) Count(s Status) int {
	n := 0
	for _, f := range r.Findings {
		if f.Status == s {
			n++
		}
	}
	return n
}

// InputError is an input that could not be read or decoded.
type InputError struct {
	// Input is the file, "<stdin>", cluster:NAME or Helm release.
	Input string
	// Line is where in Input, if known.
	Line int
	Err  error
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Input, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Input, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// collector gathers what the workers find.
type collector struct {
	mu sync.Mutex
	r  *Result
}

func (c *collector) add(findings []Finding, documents int, errs []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Findings = append(c.r.Findings, findings...)
	c.r.Documents += documents
	c.r.Errors = append(c.r.Errors, errs...)
}

func (c *collector) warn(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Warnings = append(c.r.Warnings, fmt.Sprintf(format, args...))
}

// Run scans every input: files, directories, "-" (Options.Stdin) and
// cluster:CONTEXT. It reads one document at a time and keeps only the
// findings; problems with inputs are in Result.Errors, and the other
// inputs are still scanned.
func Run(ctx context.Context, inputs []string, opts Options) *Result {
	if opts.Target.IsZero() {
		opts.Target = builtin.Newest
	}
	res := &Result{Target: opts.Target}
	c := &collector{r: res}
	chk := newChecker(opts.Target)
	var files []string
	for _, in := range inputs {
		switch {
		case strings.HasPrefix(in, ClusterPrefix):
			scanCluster(ctx, strings.TrimPrefix(in, ClusterPrefix), chk, c)
		case in == "-":
			res.Files++
			scanStdin(opts.Stdin, chk, c)
		default:
			files = append(files, in)
		}
	}
	scanPaths(ctx, files, opts, chk, c)
	sortFindings(res.Findings)
	sort.SliceStable(res.Errors, func(i, j int) bool { return res.Errors[i].Error() < res.Errors[j].Error() })
	return res
}

// scanStdin scans standard input. Nothing at all there is an error: in
// `helm template ... | mvpctl scan -f -` it means the command before failed.
func scanStdin(stdin io.Reader, chk checker, c *collector) {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	findings, documents, errs := scanStream("<stdin>", stdin, chk, Location{File: "<stdin>"})
	if documents == 0 && len(errs) == 0 {
		errs = append(errs, &InputError{Input: "<stdin>", Err: fmt.Errorf("no documents")})
	}
	c.add(findings, documents, errs)
}

// scanPaths scans files and directories with a pool of workers, fed by a
// walk of the directories as it goes.
func scanPaths(ctx context.Context, paths []string, opts Options, chk checker, c *collector) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan string, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for f := range jobs {
				c.add(scanFile(f, chk))
			}
		})
	}
	n := 0
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		n += walk(ctx, p, opts.Recursive, jobs, c)
	}
	close(jobs)
	wg.Wait()
	c.mu.Lock()
	c.r.Files += n
	c.mu.Unlock()
}

// walk sends a file, or the manifest files of a directory, to jobs and
// returns how many it sent (manifest.Walk: hidden entries skipped, a
// directory without -R read one level deep).
func walk(ctx context.Context, root string, recursive bool, jobs chan<- string, c *collector) int {
	n := 0
	skipped, err := manifest.Walk(root, manifest.WalkOptions{Recursive: recursive}, func(p string, err error) error {
		if err != nil {
			c.add(nil, 0, []error{&InputError{Input: p, Err: unwrapPathError(err)}})
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		jobs <- p
		n++
		return nil
	})
	if err != nil && ctx.Err() == nil {
		c.add(nil, 0, []error{&InputError{Input: root, Err: unwrapPathError(err)}})
	}
	if skipped > 0 && n > 0 {
		c.warn("%s: %d subdirectories not scanned (use -R)", root, skipped)
	}
	return n
}

// unwrapPathError drops the operation and path of an *fs.PathError, which
// InputError already names.
func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

func scanFile(name string, chk checker) ([]Finding, int, []error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, []error{&InputError{Input: name, Err: unwrapPathError(err)}}
	}
	defer f.Close()
	return scanStream(name, f, chk, Location{File: name})
}

// scanStream checks every object of a stream of documents. at is the
// location of the stream: its File names the input, and each finding gets
// the line of its object (or, for a Helm manifest, the template it came
// from). Documents that cannot hold a flagged object are not decoded.
func scanStream(name string, r io.Reader, chk checker, at Location) (findings []Finding, documents int, errs []error) {
	sp := newSplitter(r, MaxDocument)
	defer sp.release()
	for {
		doc, err := sp.next()
		if err == io.EOF {
			return findings, documents, errs
		}
		if tl, ok := err.(*tooLargeError); ok {
			errs = append(errs, &InputError{Input: name, Line: tl.line, Err: fmt.Errorf("document larger than %d MiB", tl.max>>20)})
			continue
		}
		if err != nil {
			return findings, documents, append(errs, &InputError{Input: name, Err: err})
		}
		if isBlankOrComments(doc.data) {
			continue
		}
		documents++
		if !decodeAll && !chk.mayFlag(doc.data) {
			continue
		}
		objs, err := decodeObjects(doc)
		if err != nil {
			line := 0
			if se, ok := err.(*syntaxError); ok {
				line = se.line
			}
			errs = append(errs, &InputError{Input: name, Line: line, Err: err})
			continue
		}
		for _, o := range objs {
			f, ok := chk.check(o.apiVersion, o.kind)
			if !ok {
				continue
			}
			f.Location = at
			if at.HelmRelease != "" {
				f.File = doc.source
			} else {
				f.Line = o.line
			}
			f.Namespace, f.Name = o.namespace, o.name
			f.NeedsDecision = o.decisions()
			findings = append(findings, f)
		}
	}
}

// decisions returns what converting the object needs the user to decide,
// for the kinds where the target refuses what the old version allowed.
func (o object) decisions() []Undecided {
	if o.kind != "ValidatingWebhookConfiguration" && o.kind != "MutatingWebhookConfiguration" || o.node == nil {
		return nil
	}
	var m map[string]any
	if err := o.node.Decode(&m); err != nil {
		return nil
	}
	return WebhookDecisions(m)
}

// decodeAll turns off the mayFlag test, for the benchmark that measures
// what it saves.
var decodeAll = false

// isBlankOrComments says whether a document holds nothing but blank lines
// and comments.
func isBlankOrComments(b []byte) bool {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}
