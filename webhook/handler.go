package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine"
)

// Defaults of [HandlerOptions].
const (
	// DefaultMaxRequestBytes bounds a review's body: kube-apiserver sends a
	// LIST's objects in one review, and 1,500 objects of 2 KB (Kubernetes'
	// CRD scalability target) are 3 MB; clients page larger lists (kubectl
	// by 500).
	DefaultMaxRequestBytes = 32 << 20
	// DefaultMaxObjectsPerReview bounds the objects of one review.
	DefaultMaxObjectsPerReview = 5000
	// DefaultReviewTimeout is kube-apiserver's own timeout for a conversion
	// webhook call.
	DefaultReviewTimeout = 30 * time.Second
	// DefaultMaxConcurrentReviews bounds the reviews decoded and converted
	// at once: each holds its body and objects in memory.
	DefaultMaxConcurrentReviews = 8
)

// HandlerOptions configure [NewHandler]; zero values take the defaults.
type HandlerOptions struct {
	// Converter returns the active rules' converter; nil means no rules are
	// loaded yet (503).
	Converter func() *engine.Converter
	// MaxRequestBytes bounds the request body (413 beyond).
	MaxRequestBytes int64
	// MaxObjectsPerReview bounds the objects of one review (a Failure beyond).
	MaxObjectsPerReview int
	// ReviewTimeout bounds one review's conversion.
	ReviewTimeout time.Duration
	// MaxConcurrentReviews bounds the reviews read and converted at once;
	// further ones wait for a slot until their ReviewTimeout (429 then).
	MaxConcurrentReviews int
	// Metrics records reviews; nil records nothing.
	Metrics *Metrics
	// Logger receives one line per failed review; nil discards.
	Logger *slog.Logger
}

type handler struct {
	opts  HandlerOptions
	log   *slog.Logger
	slots chan struct{}
	// conv is the active converter with bad round-trip annotations ignored.
	conv     atomic.Pointer[convPair]
	dataLogs *rate.Limiter
}

// convPair is a rule set's converter and the handler's variant of it.
type convPair struct{ src, tolerant *engine.Converter }

// NewHandler serves ConversionReviews (POST, JSON) at any path.
func NewHandler(opts HandlerOptions) http.Handler {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxObjectsPerReview <= 0 {
		opts.MaxObjectsPerReview = DefaultMaxObjectsPerReview
	}
	if opts.ReviewTimeout <= 0 {
		opts.ReviewTimeout = DefaultReviewTimeout
	}
	if opts.MaxConcurrentReviews <= 0 {
		opts.MaxConcurrentReviews = DefaultMaxConcurrentReviews
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &handler{opts: opts, log: log, slots: make(chan struct{}, opts.MaxConcurrentReviews), dataLogs: rate.NewLimiter(1, 10)}
}

// converter is the active rules' converter, ignoring a bad round-trip
// annotation (logged): anyone who may write an object may write one, and
// it must cost that object its round trip, not make it unreadable in
// other versions, nor fail a LIST around it (as in the proxy).
func (h *handler) converter() *engine.Converter {
	if h.opts.Converter == nil {
		return nil
	}
	src := h.opts.Converter()
	if src == nil {
		return nil
	}
	if p := h.conv.Load(); p != nil && p.src == src {
		return p.tolerant
	}
	o := src.Options()
	o.InvalidConversionData = h.dataIgnored
	p := &convPair{src: src, tolerant: src.WithOptions(o)}
	h.conv.Store(p)
	return p.tolerant
}

// maxReasonBytes bounds a logged reason: it may quote the annotation.
const maxReasonBytes = 512

func (h *handler) dataIgnored(bad *engine.ConversionDataError) {
	if !h.dataLogs.Allow() {
		return
	}
	reason := bad.Err.Error()
	if len(reason) > maxReasonBytes {
		reason = strings.ToValidUTF8(reason[:maxReasonBytes], "") + "..."
	}
	h.log.Warn("ignoring an object's round-trip annotation; it is converted as if it had none",
		"kind", bad.GVK.Kind, "version", bad.GVK.Version, "namespace", bad.Namespace, "name", bad.Name, "reason", reason)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "a ConversionReview is POSTed")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.ReviewTimeout)
	defer cancel()
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-ctx.Done():
		h.failed(ReasonOverloaded, nil, "no conversion slot freed in time")
		writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "too many reviews at once; try again")
		return
	}
	if deadline, ok := ctx.Deadline(); ok {
		// A slow body would hold the slot: it has the review's time.
		_ = http.NewResponseController(w).SetReadDeadline(deadline)
	}
	start := time.Now()
	body, err := readBody(w, r, h.opts.MaxRequestBytes)
	if err != nil {
		h.readError(w, err)
		return
	}
	rev, err := DecodeReview(body)
	body = nil
	if err != nil {
		var re *RequestError
		errors.As(err, &re)
		h.failed(re.Reason, nil, err.Error())
		writeStatus(w, re.Code, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	h.review(ctx, w, rev, start)
}

// review converts a decoded review and writes its response.
func (h *handler) review(ctx context.Context, w http.ResponseWriter, rev *Review, start time.Time) {
	conv := h.converter()
	crd, from, to := reviewLabels(conv, rev)
	var objs []any
	err := error(&FailureError{Reason: ReasonNotReady, Index: -1, Err: errors.New("no rules are loaded yet")})
	if conv != nil {
		objs, err = Convert(ctx, conv, rev, ConvertOptions{MaxObjects: h.opts.MaxObjectsPerReview})
	}
	if err != nil {
		var fe *FailureError
		reason := ReasonConversion
		if errors.As(err, &fe) {
			reason = fe.Reason
		}
		h.failed(reason, rev, err.Error())
	}
	enc := encoders.Get().(*engine.ObjectEncoder)
	defer encoders.Put(enc)
	data, encErr := encodeResponse(enc, rev, objs, err)
	if encErr != nil {
		h.failed(ReasonMalformed, rev, encErr.Error())
		data, _ = encodeResponse(enc, rev, nil, fmt.Errorf("encoding the response: %w", encErr))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
	if m := h.opts.Metrics; m != nil {
		m.duration.WithLabelValues(crd, from, to).Observe(time.Since(start).Seconds())
		m.objects.WithLabelValues(crd, from, to).Observe(float64(len(rev.Objects)))
	}
}

// readError answers a body that could not be read: too large, or cut off.
func (h *handler) readError(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		msg := fmt.Sprintf("the request body is over %d bytes (--max-request-bytes)", tooLarge.Limit)
		h.failed(ReasonTooLarge, nil, msg)
		writeStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, msg)
		return
	}
	h.failed(ReasonMalformed, nil, err.Error())
	writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "reading the request body: "+err.Error())
}

// failed logs and counts a failed review.
func (h *handler) failed(reason Reason, rev *Review, msg string) {
	if h.opts.Metrics != nil {
		h.opts.Metrics.failures.WithLabelValues(string(reason)).Inc()
	}
	attrs := []any{"reason", string(reason), "error", msg}
	if rev != nil {
		attrs = append(attrs, "uid", rev.UID, "desiredAPIVersion", rev.Desired.String(), "objects", len(rev.Objects))
	}
	h.log.Warn("conversion review failed", attrs...)
}

// encoders keep their buffers from one review to the next: a LIST's
// response is megabytes.
var encoders = sync.Pool{New: func() any { return engine.NewObjectEncoder() }}

// readBody reads a body of at most max bytes, in one allocation when its
// length is known.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, max)
	if r.ContentLength <= 0 || r.ContentLength > max {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+1))
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

// encodeResponse is the review's response, valid until enc's next use: the
// converted objects and Success, or no objects and a Failure whose
// message is err's.
func encodeResponse(enc *engine.ObjectEncoder, rev *Review, objs []any, err error) ([]byte, error) {
	resp := map[string]any{"uid": rev.UID}
	if err != nil {
		resp["convertedObjects"] = []any{}
		resp["result"] = map[string]any{"status": metav1.StatusFailure, "message": err.Error()}
	} else {
		resp["convertedObjects"] = objs
		resp["result"] = map[string]any{"status": metav1.StatusSuccess}
	}
	return enc.Encode(map[string]any{"apiVersion": rev.APIVersion, "kind": reviewKind, "response": resp})
}

// writeStatus answers a request that is no review with a metav1.Status.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}
