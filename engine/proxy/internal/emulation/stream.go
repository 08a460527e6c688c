package emulation

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/internal/jsonvalue"
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
		err := convert(src, pw)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the backend's body ended early: not a clean end
		}
		pw.CloseWithError(err)
	}()
	return &pipeBody{pr: pr, src: src}
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *pipeBody) Close() error {
	b.pr.Close()
	return b.src.Close()
}

// listHeadBytes is how much of a converted list is held before the
// response's headers leave: a list that fails within it (most lists, and
// the start of any) is answered with a 500 Status naming the object and
// the rule, as kube-apiserver answers a LIST whose conversion webhook
// fails; one that fails later is aborted.
const listHeadBytes = 256 << 10

// startList converts a list as the client reads it (streamList), having
// first converted up to listHeadBytes of it, so that an early failure is
// a Status rather than a broken stream.
func (em *emulation) startList(resp *http.Response) error {
	ctx := resp.Request.Context()
	body := newPipeBody(resp.Body, func(src io.Reader, dst io.Writer) error { return em.streamList(ctx, src, dst) })
	// A clean end of the pipe reads as io.EOF, which ReadAll takes for the
	// end; newPipeBody turns a backend's early EOF into an error.
	head, err := io.ReadAll(io.LimitReader(body, listHeadBytes+1))
	switch {
	case err == nil && len(head) > listHeadBytes:
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), body), body}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return nil
	case err == nil:
		// The whole list, converted.
		body.Close()
	default:
		body.Close()
		st := conversionFailed(err)
		if !errors.As(err, new(*engine.ConversionError)) && !errors.As(err, new(*engine.UnconvertedError)) {
			st = &statusError{http.StatusBadGateway, metav1.StatusReasonInternalError, "version emulation: the kube-apiserver's list could not be read: " + boundMessage(err.Error())}
		}
		head = response.StatusBody(st.code, st.reason, st.message, 0)
		resp.StatusCode, resp.Status = st.code, strconv.Itoa(st.code)+" "+http.StatusText(st.code)
	}
	resp.Body = io.NopCloser(bytes.NewReader(head))
	resp.ContentLength = int64(len(head))
	resp.Header.Set("Content-Length", strconv.Itoa(len(head)))
	return nil
}

// streamList converts a list (or a Table) as it is read: the envelope's
// members are copied (apiVersion rewritten), each element of items (or of
// a Table's rows) is read whole, decoded, converted and written before the
// next is read. Each is bounded by MaxObjectBytes. A conversion error
// mid-way breaks the response: a client must never take a partly converted
// list for a whole one.
func (em *emulation) streamList(ctx context.Context, src io.Reader, dst io.Writer) error {
	bw := bufio.NewWriterSize(dst, 32<<10)
	r := newValueReader(src, em.maxObjectBytes())
	if err := r.expect('{'); err != nil {
		return err
	}
	bw.WriteByte('{')
	if c, err := r.peek(); err != nil {
		return err
	} else if c == '}' {
		r.br.ReadByte()
	} else if err := em.streamMembers(ctx, r, bw); err != nil {
		return err
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// streamMembers copies the members of a list's envelope up to its closing
// brace.
func (em *emulation) streamMembers(ctx context.Context, r *valueReader, bw *bufio.Writer) error {
	for n := 0; ; n++ {
		key, err := r.key()
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		kb, _ := json.Marshal(key)
		bw.Write(kb)
		bw.WriteByte(':')
		switch key {
		case "items", "rows":
			err = em.streamArray(ctx, r, bw, key)
		case "apiVersion":
			err = em.streamAPIVersion(r, bw)
		default:
			err = copyValue(r, bw, key)
		}
		if err != nil {
			return err
		}
		if more, err := r.next('}'); err != nil || !more {
			return err
		}
	}
}

func (em *emulation) streamAPIVersion(r *valueReader, bw *bufio.Writer) error {
	raw, err := r.value()
	if err != nil {
		return err
	}
	var av string
	if err := json.Unmarshal(raw, &av); err != nil {
		return fmt.Errorf("apiVersion: %w", err)
	}
	if av == em.t.served.String() {
		av = em.t.requested.String()
	}
	b, _ := json.Marshal(av)
	_, err = bw.Write(b)
	return err
}

// copyValue copies a member of the envelope as it is, once it is known to
// be valid JSON.
func copyValue(r *valueReader, bw *bufio.Writer, key string) error {
	raw, err := r.value()
	if err != nil {
		return err
	}
	if !json.Valid(raw) {
		return fmt.Errorf("%s is not valid JSON", key)
	}
	_, err = bw.Write(raw)
	return err
}

func (em *emulation) streamArray(ctx context.Context, r *valueReader, bw *bufio.Writer, key string) error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	if c != '[' {
		raw, err := r.value()
		if err != nil {
			return err
		}
		if string(raw) != "null" {
			return fmt.Errorf("%s is not an array", key)
		}
		_, err = bw.WriteString("null")
		return err
	}
	r.br.ReadByte()
	bw.WriteByte('[')
	cd := em.newCodec(key == "rows")
	if c, err := r.peek(); err != nil {
		return err
	} else if c == ']' {
		r.br.ReadByte()
		return bw.WriteByte(']')
	}
	for i := 0; ; i++ {
		raw, err := r.value()
		if errors.Is(err, errValueTooLarge) {
			return fmt.Errorf("%s[%d] is larger than %d bytes", key, i, r.limit)
		}
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		b, err := em.convertItem(ctx, cd, raw, key)
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(b)
		more, err := r.next(']')
		if err != nil {
			return err
		}
		if !more {
			return bw.WriteByte(']')
		}
	}
}

// convertItem converts one element of a list's items or a Table's rows; the
// encoding is valid until c's next.
func (em *emulation) convertItem(ctx context.Context, c *codec, raw []byte, key string) ([]byte, error) {
	obj, err := c.decode(raw)
	if err != nil {
		return nil, err
	}
	if key == "rows" {
		err = em.convertRow(ctx, obj)
	} else {
		obj, err = em.toClient(ctx, obj)
	}
	if err != nil {
		return nil, err
	}
	return c.encode(obj)
}

// codec decodes and encodes the objects of one list or watch. Unless the
// conversion reads or writes them, it keeps each object's managedFields as
// the kube-apiserver wrote them (jsonvalue.Raw): they are often the largest
// part of an object, Kubernetes does not convert them between versions
// either, and decoding and encoding them was a large part of the cost of
// an emulated list or watch.
type codec struct {
	dec  jsonvalue.Decoder
	enc  jsonvalue.Encoder
	keep []string // the path kept as it is, if any
	buf  []byte
}

// Where an object keeps its managedFields, and where a watch event or a
// Table row keeps its object's.
var (
	managedFields        = []string{"metadata", "managedFields"}
	wrappedManagedFields = []string{"object", "metadata", "managedFields"}
)

// newCodec returns a codec for the objects of em's resource; wrapped says
// the values it decodes hold the object as their member "object" (watch
// events, Table rows), rather than being the objects (list items).
func (em *emulation) newCodec(wrapped bool) *codec {
	c := &codec{}
	if em.rules.conv.Untouched(em.t.served.WithKind(em.t.kind), em.t.requested, managedFields...) {
		c.keep = managedFields
		if wrapped {
			c.keep = wrappedManagedFields
		}
	}
	return c
}

// encode returns v's encoding, valid until c's next.
func (c *codec) encode(v any) ([]byte, error) {
	if cap(c.buf) > 4<<20 {
		c.buf = nil // after a large object: give the memory back
	}
	var err error
	c.buf, err = c.enc.Append(c.buf[:0], v)
	return c.buf, err
}

// decode decodes one JSON object (an item, a row, a watch event), keeping
// its object's managedFields if c keeps them.
func (c *codec) decode(line []byte) (map[string]any, error) {
	v, err := c.dec.DecodeKeeping(line, c.keep)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return obj, nil
}

// watchBatchBytes bounds the converted events held before they are written:
// events the backend sent together leave together, as in pass-through,
// rather than one write (and one flush to the client) per event.
const watchBatchBytes = 64 << 10

// watchBody converts a JSON watch stream event by event as the client
// reads it: ADDED, MODIFIED, DELETED and BOOKMARK carry an object of the
// served version; an ERROR event's Status passes through. Each read returns
// the converted events the backend had sent by then (at least one, waiting
// for it), so events the backend sent together leave together and a
// client sees each event without waiting for the next; no goroutine stands
// between the backend and the client. A conversion failure ends the stream
// with an ERROR event (a 500 Status naming the rule), after which the
// client watches again; a broken upstream stream ends cleanly after the
// last whole event.
type watchBody struct {
	em     *emulation
	ctx    context.Context
	src    io.Closer
	events *lineReader
	c      *codec
	out    []byte // converted events not yet read
	off    int    // how much of out was read
	done   bool   // nothing follows out
}

func (em *emulation) newWatchBody(ctx context.Context, src io.ReadCloser) *watchBody {
	return &watchBody{em: em, ctx: ctx, src: src, events: newLineReader(src, em.maxObjectBytes()), c: em.newCodec(true)}
}

func (b *watchBody) Read(p []byte) (int, error) {
	for b.off == len(b.out) {
		if b.done {
			return 0, io.EOF
		}
		b.out, b.off = b.out[:0], 0
		if cap(b.out) > 4*watchBatchBytes {
			b.out = nil // after a large event: give the memory back
		}
		b.fill()
	}
	n := copy(p, b.out[b.off:])
	b.off += n
	return n, nil
}

func (b *watchBody) Close() error { return b.src.Close() }

// fill converts the next event, waiting for it, and those after it that
// have already arrived, up to watchBatchBytes.
func (b *watchBody) fill() {
	for {
		line, whole, err := b.events.next()
		if errors.Is(err, errLineTooLong) {
			b.fail(fmt.Errorf("the kube-apiserver sent a watch event larger than %d bytes", b.events.limit))
			return
		}
		if len(bytes.TrimSpace(line)) > 0 {
			ev, derr := b.c.decode(line)
			switch {
			case derr != nil && !whole:
				// The stream broke in the middle of an event: drop it.
			case derr != nil:
				b.fail(fmt.Errorf("the kube-apiserver sent an invalid watch event: %w", derr))
				return
			default:
				if b.out, derr = b.em.appendEvent(b.ctx, b.c, b.out, ev); derr != nil {
					b.fail(derr)
					return
				}
			}
		}
		if err != nil {
			// The end of the stream, or a broken one: it ends cleanly.
			b.done = true
			return
		}
		if len(b.out) >= watchBatchBytes || len(b.out) > 0 && !b.events.buffered() {
			return
		}
	}
}

// fail ends the stream with an ERROR event.
func (b *watchBody) fail(err error) {
	b.out = appendWatchError(b.out, err)
	b.done = true
}

// appendEvent converts a watch event's object and appends the event, as
// {"type", "object"} in the apiserver's order, to out.
func (em *emulation) appendEvent(ctx context.Context, c *codec, out []byte, ev map[string]any) ([]byte, error) {
	if t, _ := ev["type"].(string); t != "ERROR" {
		if obj, ok := ev["object"].(map[string]any); ok {
			conv, err := em.toClient(ctx, obj)
			if err != nil {
				return out, err
			}
			ev["object"] = conv
		}
	}
	typ, err := c.encode(ev["type"])
	if err != nil {
		return out, err
	}
	start := len(out)
	out = append(append(append(out, `{"type":`...), typ...), `,"object":`...)
	obj, err := c.encode(ev["object"])
	if err != nil {
		return out[:start], err
	}
	return append(append(out, obj...), "}\n"...), nil
}

// maxObjectBytes bounds one watch event, as one object read whole.
func (em *emulation) maxObjectBytes() int {
	if n := em.rules.e.opts.MaxObjectBytes; n > 0 && n < math.MaxInt32 {
		return int(n)
	}
	return defaultMaxEventBytes
}

// defaultMaxEventBytes bounds a watch event when the emulator has no
// MaxObjectBytes (tests); the proxy always sets one.
const defaultMaxEventBytes = 64 << 20

// errLineTooLong is a line over the lineReader's limit.
var errLineTooLong = errors.New("line too long")

// lineReader reads newline-delimited frames (JSON watch events) with a
// bound on each.
type lineReader struct {
	br    *bufio.Reader
	limit int
	long  []byte // a line longer than br's buffer, being assembled
}

func newLineReader(src io.Reader, limit int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(src, 32<<10), limit: limit}
}

// buffered reports whether a whole line is already read: next returns it
// without waiting for src.
func (l *lineReader) buffered() bool {
	b, _ := l.br.Peek(l.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// next returns the next line and whether it ended with a newline; the line
// is valid until the next call. At the end of src it returns what is left
// with src's error.
func (l *lineReader) next() (line []byte, whole bool, err error) {
	l.long = l.long[:0]
	if cap(l.long) > 1<<20 {
		l.long = nil // after a large line: give the memory back
	}
	for {
		frag, err := l.br.ReadSlice('\n')
		if err == nil && len(l.long) == 0 {
			return frag, true, nil
		}
		if len(l.long)+len(frag) > l.limit {
			l.long = nil // give the memory back
			return nil, false, errLineTooLong
		}
		l.long = append(l.long, frag...)
		switch {
		case err == nil:
			return l.long, true, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return l.long, false, err
		}
	}
}

// appendWatchError appends an ERROR event whose Status is a 500 saying
// err.
func appendWatchError(out []byte, err error) []byte {
	st := response.StatusBody(http.StatusInternalServerError, metav1.StatusReasonInternalError, "version emulation: "+boundMessage(err.Error()), 0)
	out = append(out, `{"type":"ERROR","object":`...)
	out = append(out, st[:len(st)-1]...)
	return append(out, "}\n"...)
}
