package scan

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mvpctl/mvpctl/manifest"
)

// MaxDocument bounds one YAML or JSON document (a List of many objects is
// one document). A larger one is an input error; the stream goes on with the
// next document.
const MaxDocument = manifest.MaxDocument

// maxAliasDepth bounds how many aliases resolve to a value.
const maxAliasDepth = 16

// document is one document of a stream: its bytes, the line it starts on,
// and the template it was rendered from (Helm's "# Source: PATH" comment).
type document struct {
	data   []byte
	line   int
	source string
}

// splitter cuts a stream into documents at "---" lines, counting lines, as
// k8s.io/apimachinery's YAMLReader does (a separator line may carry a
// comment, nothing else).
type splitter struct {
	r    *bufio.Reader
	line int // lines read so far
	max  int
	eof  bool
	buf  []byte // the current document, reused
	long []byte // a line longer than the reader's buffer, reused
}

// readers recycles the 64 KiB read buffers: a tree of small files would
// otherwise allocate one per file.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func newSplitter(r io.Reader, max int) *splitter {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return &splitter{r: br, max: max}
}

// release returns the read buffer; the splitter must not be used after.
func (s *splitter) release() {
	s.r.Reset(nil)
	readers.Put(s.r)
	s.r = nil
}

// tooLargeError is a document over the size bound.
type tooLargeError struct{ line, max int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("line %d: document larger than %d MiB", e.line, e.max>>20)
}

// next returns the next document, whose data is valid until the next call;
// io.EOF after the last one. A document over the bound is skipped whole and
// reported as a *tooLargeError.
func (s *splitter) next() (document, error) {
	var doc document
	s.buf = s.buf[:0]
	tooLarge := false
	header := true // only blank and comment lines so far
	for !s.eof {
		line, err := s.readLine()
		if err == io.EOF {
			s.eof = true
			if len(line) == 0 {
				break
			}
		} else if err != nil {
			return document{}, err
		}
		s.line++
		if isSeparator(line) {
			if len(s.buf) > 0 || tooLarge {
				break
			}
			doc, header = document{}, true // a leading --- or an empty document
			continue
		}
		if doc.line == 0 {
			doc.line = s.line
		}
		if header {
			t := bytes.TrimSpace(line)
			if src, ok := bytes.CutPrefix(t, []byte("# Source: ")); ok && doc.source == "" {
				doc.source = string(src)
			}
			header = len(t) == 0 || t[0] == '#'
		}
		if tooLarge || len(s.buf)+len(line) > s.max {
			tooLarge = true
			s.buf = s.buf[:0]
			continue
		}
		s.buf = append(s.buf, line...)
	}
	if tooLarge {
		return document{}, &tooLargeError{line: doc.line, max: s.max}
	}
	if len(s.buf) == 0 {
		return document{}, io.EOF
	}
	doc.data = s.buf
	return doc, nil
}

// readLine returns one line with its newline, valid until the next call,
// however long; a line longer than the document bound comes back cut at the
// bound (the document is then over the bound anyway).
func (s *splitter) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	s.long = append(s.long[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = s.r.ReadSlice('\n')
		if len(s.long) <= s.max {
			s.long = append(s.long, line...)
		}
	}
	return s.long, err
}

// isSeparator matches "---" alone on a line or followed by a comment.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// object is what a scan needs of one Kubernetes object, and the line it
// starts on.
type object struct {
	apiVersion, kind, namespace, name string
	line                              int
	node                              *yaml.Node // the object, for the checks that read more than its type
}

// decodeObjects decodes one document and returns its objects: the document
// itself, or the items of a List. Documents that are not Kubernetes objects
// (no apiVersion or kind: values files, Chart.yaml; scalars and sequences)
// give none. Lines are absolute: the document's first line is doc.line.
func decodeObjects(doc document) ([]object, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc.data, &root); err != nil {
		return nil, positioned(err, doc.line)
	}
	n := &root
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		n = n.Content[0]
	}
	o, ok := objectOf(n, doc.line-1)
	if !ok {
		return nil, nil
	}
	items := value(n, "items")
	if items == nil || items.Kind != yaml.SequenceNode || !isList(o.kind) {
		return []object{o}, nil
	}
	var out []object
	for _, item := range items.Content {
		if it, ok := objectOf(typeFromList(resolve(item), o), doc.line-1); ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// typeFromList gives an item of a typed list (DeploymentList) that has
// neither apiVersion nor kind, as the API writes them, the list's
// apiVersion and item kind: the rule apimachinery's unstructured list
// decoding follows (UnstructuredJSONScheme). Other items are returned as
// they are; so is every item of a List, whose items have kinds of their own.
func typeFromList(item *yaml.Node, list object) *yaml.Node {
	kind := strings.TrimSuffix(list.kind, "List")
	if item == nil || item.Kind != yaml.MappingNode || kind == "" || value(item, "apiVersion") != nil || value(item, "kind") != nil {
		return item
	}
	typed := *item
	typed.Content = append([]*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "apiVersion"}, {Kind: yaml.ScalarNode, Value: list.apiVersion},
		{Kind: yaml.ScalarNode, Value: "kind"}, {Kind: yaml.ScalarNode, Value: kind},
	}, item.Content...)
	return &typed
}

// isList says whether a kind is a list: List (kubectl get) or a typed list
// (PodList, from the API).
func isList(kind string) bool { return strings.HasSuffix(kind, "List") }

func objectOf(n *yaml.Node, offset int) (object, bool) {
	if n == nil || n.Kind != yaml.MappingNode {
		return object{}, false
	}
	o := object{apiVersion: scalar(value(n, "apiVersion")), kind: scalar(value(n, "kind")), line: n.Line + offset, node: n}
	if o.apiVersion == "" || o.kind == "" {
		return object{}, false
	}
	if meta := value(n, "metadata"); meta != nil && meta.Kind == yaml.MappingNode {
		o.name = scalar(value(meta, "name"))
		if o.name == "" {
			o.name = scalar(value(meta, "generateName"))
		}
		o.namespace = scalar(value(meta, "namespace"))
	}
	return o, true
}

// value returns the value of the first key of a mapping, aliases resolved.
func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := resolve(m.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			return resolve(m.Content[i+1])
		}
	}
	return nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxAliasDepth {
			return nil
		}
		n = n.Alias
	}
	return n
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// syntaxError is a YAML syntax error in a document.
type syntaxError struct {
	line int // absolute; zero if unknown
	msg  string
}

func (e *syntaxError) Error() string { return e.msg }

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// positioned positions a yaml.v3 error ("yaml: line N: msg", N counted from
// the document's first line, start) in the stream.
func positioned(err error, start int) error {
	msg := err.Error()
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return &syntaxError{line: start, msg: msg}
	}
	n, _ := strconv.Atoi(m[1])
	return &syntaxError{line: n + start - 1, msg: "yaml: " + msg[len(m[0]):]}
}
