package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

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
}

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
	return &handler{opts: opts, log: log, slots: make(chan struct{}, opts.MaxConcurrentReviews)}
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxRequestBytes))
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
	var conv *engine.Converter
	if h.opts.Converter != nil {
		conv = h.opts.Converter()
	}
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
	data, encErr := encodeResponse(rev, objs, err)
	if encErr != nil {
		h.failed(ReasonMalformed, rev, encErr.Error())
		data, _ = encodeResponse(rev, nil, fmt.Errorf("encoding the response: %w", encErr))
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

// encodeResponse is the review's response: the converted objects and
// Success, or no objects and a Failure whose message is err's.
func encodeResponse(rev *Review, objs []any, err error) ([]byte, error) {
	resp := map[string]any{"uid": rev.UID}
	if err != nil {
		resp["convertedObjects"] = []any{}
		resp["result"] = map[string]any{"status": metav1.StatusFailure, "message": err.Error()}
	} else {
		resp["convertedObjects"] = objs
		resp["result"] = map[string]any{"status": metav1.StatusSuccess}
	}
	return engine.EncodeObject(map[string]any{"apiVersion": rev.APIVersion, "kind": reviewKind, "response": resp})
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
