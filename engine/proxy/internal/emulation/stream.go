package emulation

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	gojson "github.com/goccy/go-json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// pipeBody is a response body produced by a goroutine that converts the
// backend's body as the client reads: nothing is held but the item or event
// being converted.
type pipeBody struct {
	pr  *io.PipeReader
	src io.Closer
}

func newPipeBody(src io.ReadCloser, convert func(src io.Reader, dst io.Writer) error) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		// nil closes the pipe with io.EOF; an error reaches the reader, and
		// the reverse proxy aborts the response rather than end it cleanly.
		pw.CloseWithError(convert(src, pw))
	}()
	return &pipeBody{pr: pr, src: src}
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *pipeBody) Close() error {
	b.pr.Close()
	return b.src.Close()
}

// streamList converts a list (or a Table) as it is read: the envelope's
// fields are copied (apiVersion rewritten), each element of items (or of a
// Table's rows) is decoded, converted and written before the next is read.
// A conversion error mid-way breaks the response: a client must never take
// a partly converted list for a whole one.
func (em *emulation) streamList(ctx context.Context, src io.Reader, dst io.Writer) error {
	bw := bufio.NewWriterSize(dst, 32<<10)
	dec := gojson.NewDecoder(src)
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	bw.WriteByte('{')
	for n := 0; dec.More(); n++ {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if n > 0 {
			bw.WriteByte(',')
		}
		kb, _ := json.Marshal(key)
		bw.Write(kb)
		bw.WriteByte(':')
		switch key {
		case "items", "rows":
			if err := em.streamArray(ctx, dec, bw, key); err != nil {
				return err
			}
		case "apiVersion":
			var av string
			if err := dec.Decode(&av); err != nil {
				return err
			}
			if av == em.t.served.String() {
				av = em.t.requested.String()
			}
			b, _ := json.Marshal(av)
			bw.Write(b)
		default:
			var raw gojson.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			bw.Write(raw)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	bw.WriteByte('}')
	bw.WriteByte('\n')
	return bw.Flush()
}

func (em *emulation) streamArray(ctx context.Context, dec *gojson.Decoder, bw *bufio.Writer, key string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		bw.WriteString("null")
		return nil
	}
	if d, ok := tok.(gojson.Delim); !ok || d != '[' {
		return fmt.Errorf("%s is not an array", key)
	}
	bw.WriteByte('[')
	for i := 0; dec.More(); i++ {
		// One pass: the item decodes straight into a map, numbers exact.
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		if obj == nil {
			return fmt.Errorf("%s[%d] is not an object", key, i)
		}
		var err error
		if key == "rows" {
			err = em.convertRow(ctx, obj)
		} else {
			obj, err = em.toClient(ctx, obj)
		}
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		b, err := engine.EncodeObject(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(b)
	}
	if err := expectDelim(dec, ']'); err != nil {
		return err
	}
	bw.WriteByte(']')
	return nil
}

func expectDelim(dec *gojson.Decoder, want gojson.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(gojson.Delim); !ok || d != want {
		return fmt.Errorf("expected %q in the JSON body, found %v", want, tok)
	}
	return nil
}

// streamWatch converts a JSON watch stream event by event: ADDED, MODIFIED,
// DELETED and BOOKMARK carry an object of the served version; an ERROR
// event's Status passes through. A conversion failure ends the stream with
// an ERROR event (a 500 Status naming the rule), after which the client
// watches again; a broken upstream stream ends cleanly.
func (em *emulation) streamWatch(ctx context.Context, src io.Reader, dst io.Writer) error {
	dec := json.NewDecoder(src)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil // the end of the stream, or a broken one: it ends cleanly
		}
		ev, err := engine.DecodeObject(raw)
		if err != nil {
			return writeWatchError(dst, fmt.Errorf("the kube-apiserver sent an invalid watch event: %w", err))
		}
		if t, _ := ev["type"].(string); t != "ERROR" {
			if obj, ok := ev["object"].(map[string]any); ok {
				out, err := em.toClient(ctx, obj)
				if err != nil {
					return writeWatchError(dst, err)
				}
				ev["object"] = out
			}
		}
		// {"type", "object"} in the apiserver's order, not sorted.
		typ, err := engine.EncodeObject(ev["type"])
		if err != nil {
			return writeWatchError(dst, err)
		}
		obj, err := engine.EncodeObject(ev["object"])
		if err != nil {
			return writeWatchError(dst, err)
		}
		line := make([]byte, 0, len(typ)+len(obj)+22)
		line = append(append(append(append(append(line, `{"type":`...), typ...), `,"object":`...), obj...), "}\n"...)
		if _, err := dst.Write(line); err != nil {
			return err
		}
	}
}

func writeWatchError(dst io.Writer, err error) error {
	st := response.StatusBody(http.StatusInternalServerError, metav1.StatusReasonInternalError, "version emulation: "+err.Error(), 0)
	ev := append([]byte(`{"type":"ERROR","object":`), st[:len(st)-1]...)
	ev = append(ev, "}\n"...)
	_, werr := dst.Write(ev)
	return werr
}
