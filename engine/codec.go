package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	json "github.com/goccy/go-json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/engine/internal/jsonvalue"
)

// DecodeObject decodes one JSON object, keeping numbers exact as
// json.Number (int64 fields such as metadata.generation must not pass
// through float64): the values encoding/json gives with UseNumber, with far
// fewer allocations (jsonvalue).
func DecodeObject(data []byte) (map[string]any, error) {
	d := decoders.Get().(*jsonvalue.Decoder)
	v, err := d.Decode(data)
	decoders.Put(d)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return obj, nil
}

// decoders keeps Decoders, and with them the strings they have interned,
// from one object to the next.
var decoders = sync.Pool{New: func() any { return new(jsonvalue.Decoder) }}

// EncodeObject encodes a converted object as compact JSON with sorted keys,
// as encoding/json does.
func EncodeObject(obj any) ([]byte, error) {
	e := encoders.Get().(*ObjectEncoder)
	defer encoders.Put(e)
	b, err := e.Encode(obj)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// encoders keeps ObjectEncoders, and with them their buffers, for
// EncodeObject: one allocation of the right size per object instead of a
// buffer grown from nothing.
var encoders = sync.Pool{New: func() any { return NewObjectEncoder() }}

// ObjectEncoder encodes objects as EncodeObject does, appending each to a
// buffer it reuses instead of allocating a copy per object: a LIST or a
// watch encodes thousands. It is not safe for concurrent use.
type ObjectEncoder struct {
	buf []byte
	enc jsonvalue.Encoder
}

// NewObjectEncoder returns an encoder whose output is EncodeObject's.
func NewObjectEncoder() *ObjectEncoder { return &ObjectEncoder{} }

// Encode returns v's encoding, valid until the next call.
func (e *ObjectEncoder) Encode(v any) ([]byte, error) {
	if cap(e.buf) > 4<<20 {
		e.buf = nil // after a large object: give the memory back
	}
	var err error
	e.buf, err = e.enc.Append(e.buf[:0], v)
	if err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Document is one object read from a manifest stream.
type Document struct {
	// Source names where it came from: file and document number.
	Source string
	Object map[string]any
}

// ReadDocuments reads every object of a stream of YAML documents (separated
// by ---) or JSON values. Empty documents are skipped.
func ReadDocuments(name string, r io.Reader) ([]Document, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []Document
	for n := 1; ; n++ {
		raw, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		src := fmt.Sprintf("%s: document %d", name, n)
		objs, err := DecodeDocument(raw)
		var notObject *NotObjectError
		if errors.As(err, &notObject) {
			return nil, fmt.Errorf("%s is %w", src, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		for _, o := range objs {
			docs = append(docs, Document{Source: src, Object: o})
		}
	}
	return docs, nil
}

// DecodeDocument decodes the objects of one YAML document or of one or more
// JSON values, keeping numbers exact; a document of blank lines and
// comments has none. A value that is not an object is a *NotObjectError.
func DecodeDocument(raw []byte) ([]map[string]any, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || isOnlyComments(trimmed) {
		return nil, nil
	}
	js := trimmed
	if trimmed[0] != '{' && trimmed[0] != '[' {
		var err error
		if js, err = yaml.YAMLToJSON(raw); err != nil {
			return nil, err
		}
	}
	return decodeJSONStream(js)
}

// decodeJSONStream decodes one or more concatenated JSON objects.
func decodeJSONStream(js []byte) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var out []map[string]any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case nil:
		case map[string]any:
			out = append(out, v)
		default:
			return nil, &NotObjectError{value: v}
		}
	}
}

// NotObjectError is a document that holds a JSON value other than an
// object; it names the value's JSON type, never a Go type.
type NotObjectError struct{ value any }

func (e *NotObjectError) Error() string {
	what := "a string"
	switch e.value.(type) {
	case []any:
		what = "a list"
	case json.Number, float64:
		what = "a number"
	case bool:
		what = "a boolean"
	}
	return what + ", not an object"
}

func isOnlyComments(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}
