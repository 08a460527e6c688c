package webhook

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
)

// Reason is why a review failed: the failures counter's label, a fixed set.
type Reason string

// The reasons of failed reviews.
const (
	ReasonMalformed      Reason = "malformed"        // not a ConversionReview, or an object without apiVersion, kind or metadata
	ReasonTooLarge       Reason = "too-large"        // the body is over --max-request-bytes
	ReasonTooManyObjects Reason = "too-many-objects" // more objects than --max-objects-per-review
	ReasonOtherKind      Reason = "other-kind"       // an object of another kind or group than the review's
	ReasonNoPath         Reason = "no-path"          // no rules lead to the desired version
	ReasonConversion     Reason = "conversion"       // a rule's step failed
	ReasonTimeout        Reason = "timeout"          // a program or the review ran out of time
	ReasonContract       Reason = "contract"         // a conversion broke the contract (metadata, apiVersion, kind)
	ReasonNotReady       Reason = "not-ready"        // no rules loaded yet
	ReasonOverloaded     Reason = "overloaded"       // no conversion slot freed in time
)

var allReasons = []Reason{ReasonMalformed, ReasonTooLarge, ReasonTooManyObjects, ReasonOtherKind,
	ReasonNoPath, ReasonConversion, ReasonTimeout, ReasonContract, ReasonNotReady, ReasonOverloaded}

// otherLabel stands for any CRD or version the rules do not cover, so that
// a client cannot grow the metrics by naming new ones.
const otherLabel = "other"

// Metrics are the webhook's Prometheus metrics.
type Metrics struct {
	duration *prometheus.HistogramVec
	objects  *prometheus.HistogramVec
	failures *prometheus.CounterVec
}

// NewMetrics registers the webhook's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mvpctl_webhook_review_duration_seconds",
			Help:    "Time to answer a ConversionReview, from its body read to its response written, by CRD and version pair.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"crd", "from", "to"}),
		objects: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mvpctl_webhook_review_objects",
			Help:    "Objects per ConversionReview, by CRD and version pair.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8),
		}, []string{"crd", "from", "to"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mvpctl_webhook_review_failures_total",
			Help: "ConversionReviews answered with a Failure result or a 4xx/5xx, by reason.",
		}, []string{"reason"}),
	}
	for _, r := range allReasons {
		m.failures.WithLabelValues(string(r))
	}
	for _, c := range []prometheus.Collector{m.duration, m.objects, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// reviewLabels are a review's crd, from and to labels: the CRD
// (resource.group) and versions when the rules cover them, else "other".
func reviewLabels(conv *engine.Converter, rev *Review) (crd, from, to string) {
	crd, from, to = otherLabel, otherLabel, otherLabel
	if conv == nil || rev == nil || len(rev.Objects) == 0 {
		return
	}
	obj, _ := rev.Objects[0].(map[string]any)
	gvk, err := objectGVK(obj)
	if err != nil {
		return
	}
	_, resource, _ := conv.Path(gvk, rev.Desired)
	versions := conv.Versions()[resource]
	covered := func(gv schema.GroupVersion) bool { return slices.Contains(versions, gv) }
	if !covered(gvk.GroupVersion()) && !covered(rev.Desired) {
		return
	}
	crd = resource + "." + gvk.Group
	if covered(gvk.GroupVersion()) {
		from = gvk.Version
	}
	if covered(rev.Desired) {
		to = rev.Desired.Version
	}
	return
}
