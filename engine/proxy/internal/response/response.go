// Package response holds what the proxy and its version emulation both do
// with HTTP answers: write a metav1.Status (the error format every
// Kubernetes client understands), keep the answer to a request the proxy
// sends through itself, and read a kube-apiserver's answer whole within a
// bound.
package response

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteStatus answers with a metav1.Status JSON body. retryAfter > 0 sets
// Retry-After, which makes client-go retry the request by itself.
func WriteStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string, retryAfter int) {
	body := StatusBody(code, reason, message, retryAfter)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// StatusBody is the metav1.Status JSON of [WriteStatus], newline-terminated
// as the apiserver writes it.
func StatusBody(code int, reason metav1.StatusReason, message string, retryAfter int) []byte {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     int32(code),
	}
	if retryAfter > 0 {
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
	}
	body, _ := json.Marshal(st)
	return append(body, '\n')
}

// Buffered is an http.ResponseWriter that keeps the answer in memory: the
// answer to a request the proxy sends through itself (an emulation's reads
// and writes, the probes that check a client's credentials).
type Buffered struct {
	header http.Header
	// Code is the status code written; 0 when nothing was written.
	Code int
	Body bytes.Buffer
}

// NewBuffered returns an empty Buffered.
func NewBuffered() *Buffered { return &Buffered{header: http.Header{}} }

func (b *Buffered) Header() http.Header { return b.header }

func (b *Buffered) WriteHeader(code int) {
	if b.Code == 0 {
		b.Code = code
	}
}

func (b *Buffered) Write(p []byte) (int, error) {
	if b.Code == 0 {
		b.Code = http.StatusOK
	}
	return b.Body.Write(p)
}

// Flush does nothing: the answer is complete when the handler returns.
func (b *Buffered) Flush() {}

// CopyTo answers w with the kept answer: its code, its body and the
// headers a client may need of it (Content-Type, Audit-Id, Warning,
// Retry-After, Cache-Control).
func (b *Buffered) CopyTo(w http.ResponseWriter) {
	for _, k := range []string{"Content-Type", "Audit-Id", "Warning", "Retry-After", "Cache-Control"} {
		if v, ok := b.header[k]; ok {
			w.Header()[k] = v
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(b.Body.Len()))
	w.WriteHeader(b.Code)
	_, _ = w.Write(b.Body.Bytes())
}

// ObjectTooLargeError is a backend's object or document larger than the
// proxy reads whole.
type ObjectTooLargeError struct{ Limit int64 }

func (e *ObjectTooLargeError) Error() string {
	return fmt.Sprintf("the kube-apiserver's answer is larger than the limit of %d bytes the proxy reads whole (--max-object-bytes)", e.Limit)
}

// ReadObject reads an object or document whole, failing with an
// [ObjectTooLargeError] rather than truncating one larger than limit.
func ReadObject(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &ObjectTooLargeError{Limit: limit}
	}
	return data, nil
}
