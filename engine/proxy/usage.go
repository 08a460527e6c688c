package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
	"github.com/mvpctl/mvpctl/engine/proxy/internal/usage"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// DefaultUsageTableSize is the default number of entries of /debug/clients:
// a cluster's old clients, per user, user agent and resource, fit many
// times over, and a full table of the longest names stays small next to
// the proxy's memory limit (BENCHMARKS.md).
const DefaultUsageTableSize = 10000

// ClientUsage is one entry of /debug/clients: the requests one user made
// with one user agent for one old group/version/resource.
type ClientUsage = usage.Entry

// ClientsReport is the body of /debug/clients.
type ClientsReport = usage.Snapshot

// MaxUsageTableSize is the largest --usage-table-size.
const MaxUsageTableSize = usage.MaxSize

// MaxClientsReportBytes bounds the body of /debug/clients: a full table of
// the largest size, every entry at its largest, fits.
const MaxClientsReportBytes = usage.MaxFullReportBytes

// usageReviewTimeout bounds the SelfSubjectReview that names a client.
const usageReviewTimeout = 10 * time.Second

// usageRecorder counts the requests for old versions: all of them in a
// metric without the user, and who made them in a bounded table.
type usageRecorder struct {
	table    *usage.Table // nil when off
	requests *prometheus.CounterVec
	// reviews runs one SelfSubjectReview at a time per set of credentials.
	reviews singleflight.Group
	// unnamed remembers, as long as established credentials are, the
	// credentials no server named (a server without SelfSubjectReviews),
	// so that their requests do not each ask again.
	unnamed *cache.LRUExpireCache
}

func newUsageRecorder(reg prometheus.Registerer, size int) (*usageRecorder, error) {
	u := &usageRecorder{
		table:   usage.New(size),
		unnamed: cache.NewLRUExpireCache(maxEstablished),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "old_version_requests_total",
			Help: "Client requests for an API version the proxy emulated (emulated=\"true\"), or that Kubernetes deprecates or removes in the release of the server that answered, by group, version and resource.",
		}, []string{"group", "version", "resource", "emulated"}),
	}
	for _, c := range []prometheus.Collector{
		u.requests,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "usage_table_evictions_total",
			Help: "Entries of /debug/clients dropped to make room for new ones: a user's least recently seen at its quota of entries, or in a full table (--usage-table-size) one of a user holding the most.",
		}, func() float64 { return float64(u.table.Evicted()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "mvpctl", Subsystem: "proxy", Name: "usage_table_entries",
			Help: "Entries in /debug/clients.",
		}, func() float64 { return float64(u.table.Len()) }),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// Clients is the /debug/clients table: who called old versions, the most
// recently seen first.
func (p *Proxy) Clients() ClientsReport { return p.metrics.usage.table.Snapshot() }

// WriteClients writes r as /debug/clients serves it: indented JSON, one
// entry at a time, within MaxClientsReportBytes for a table of the largest
// size.
func WriteClients(w io.Writer, r ClientsReport) error { return usage.Encode(w, r) }

// ClientsHandler serves /debug/clients as JSON. Serve it next to the
// metrics, with the same access control, not on the proxy's own port.
func (p *Proxy) ClientsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache, private")
		_ = WriteClients(w, p.Clients())
	})
}

// recordUsage counts a client's request for an old version: one the proxy
// emulated, or one the lifecycle table deprecates or removes in the
// Kubernetes release of the backend that answered it. observe calls it
// for requests of clients with credentials only. The table takes it only
// with a user someone vouches for (see userOf), and only when a backend
// answered: not 401 or 403 (a request the user may not make says nothing
// of the clients to find), nor 404 but for a version that no backend
// serves any more (there the 404 is the removal the table exists to show;
// elsewhere it is an object that does not exist). So what the table holds
// is what real clients did.
func (p *Proxy) recordUsage(r *http.Request, rt *route, code int) {
	if rt.info == nil || !rt.info.IsResourceRequest {
		return
	}
	emulated := rt.decision == decisionEmulated
	if !emulated && !deprecatedAt(rt.key, rt.info.Resource, rt.backend) {
		return
	}
	// The resource is known (the lifecycle table or the rules name it);
	// its subresource only as resourceLabels bounds it.
	parent := gvr{rt.key.group, rt.key.version, rt.info.Resource}
	resource := subresourceLabel(parent, rt.info.Subresource, p.anyKnows)
	u := p.metrics.usage
	u.requests.WithLabelValues(rt.key.group, rt.key.version, resource, strconv.FormatBool(emulated)).Inc()
	switch {
	case u.table == nil, rt.decision == decisionProxy, rt.decision == decisionUnavailable,
		code == http.StatusUnauthorized, code == http.StatusForbidden,
		code == http.StatusNotFound && (emulated || p.anyKnows(parent)):
		return
	}
	name := p.userOf(r, rt.id)
	if name == "" || name == user.Anonymous {
		return
	}
	u.table.Record(usage.Request{
		Key:  usage.Key{Group: rt.key.group, Version: rt.key.version, Resource: resource, User: name, UserAgent: r.UserAgent()},
		Verb: rt.info.Verb, Emulated: emulated, At: time.Now(),
	})
}

// oldVersions are the group/version/resources that the lifecycle table
// deprecates or removes in some release.
var oldVersions = sync.OnceValue(func() map[gvr]builtin.Lifecycle {
	out := map[gvr]builtin.Lifecycle{}
	for _, l := range builtin.Lifecycles() {
		if l.Resource != "" && (!l.Deprecated.IsZero() || !l.Removed.IsZero()) {
			out[gvr{l.Group, l.Version, l.Resource}] = l
		}
	}
	return out
})

// deprecatedAt says whether the lifecycle table deprecates or removes the
// group/version of k's resource (its subresources included) in the
// Kubernetes release of b.
func deprecatedAt(k gvr, resource string, b *backend) bool {
	l, ok := oldVersions()[gvr{k.group, k.version, resource}]
	if !ok || b == nil {
		return false
	}
	v := b.snapshot().version
	if v == nil {
		return false
	}
	rel := builtin.Release{Major: int(v.Major()), Minor: int(v.Minor())}
	return l.Deprecated.AtOrAfter(rel) || l.Removed.AtOrAfter(rel)
}

// userOf is the user a request ran as, as far as someone vouches for it:
// the user of a verified client certificate, or the one it was authorized
// to impersonate; for a client's own credentials, the user a backend names
// in a SelfSubjectReview sent with them, remembered with the established
// credentials. "" when nobody does (no credentials, a backend that says no
// or has no SelfSubjectReviews: Kubernetes before 1.28).
func (p *Proxy) userOf(r *http.Request, id *identity) string {
	switch {
	case id == nil:
		return ""
	case id.proxy:
		return id.header.Get(authenticationv1.ImpersonateUserHeader)
	case len(id.header) == 0:
		return ""
	}
	key := id.key(selfSubjectReviewPath)
	if v, ok := p.established.Get(key); ok {
		name, _ := v.(string)
		return name
	}
	u := p.metrics.usage
	if _, ok := u.unnamed.Get(key); ok {
		return ""
	}
	if stopping := p.stopping(); stopping != nil && stopping.Err() != nil {
		return "" // the backends are going away with the proxy
	}
	v, _, _ := u.reviews.Do(string(key[:]), func() (any, error) {
		// The client may be gone (a watch it closed): its credentials are
		// still good for the review.
		ctx, cancel := context.WithTimeout(context.WithValue(context.WithoutCancel(r.Context()), identityKey{}, id), usageReviewTimeout)
		defer cancel()
		b := p.selfSubjectReview(r.WithContext(ctx))
		if b.Code >= 200 && b.Code < 300 || b.Code == http.StatusForbidden {
			name := reviewedUser(b)
			p.established.Add(key, name, establishedTTL)
			return name, nil
		}
		u.unnamed.Add(key, struct{}{}, establishedTTL)
		return "", nil
	})
	name, _ := v.(string)
	return name
}

// selfSubjectReview sends a SelfSubjectReview with the identity in r's
// context through the proxy, as an inner request that is not counted, and
// returns the answer.
func (p *Proxy) selfSubjectReview(r *http.Request) *response.Buffered {
	probe := r.Clone(context.WithValue(r.Context(), innerKey{}, (*route)(nil)))
	probe.Method = http.MethodPost
	probe.URL.Path, probe.URL.RawPath, probe.URL.RawQuery = selfSubjectReviewPath, "", ""
	probe.RequestURI = selfSubjectReviewPath
	// The identity comes from the context; of the client's headers only
	// its User-Agent goes along.
	probe.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	if ua, ok := r.Header["User-Agent"]; ok {
		probe.Header["User-Agent"] = ua
	}
	probe.Body, probe.ContentLength = io.NopCloser(strings.NewReader(selfSubjectReviewBody)), int64(len(selfSubjectReviewBody))
	probe.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(selfSubjectReviewBody)), nil }
	b := response.NewBuffered()
	p.ServeHTTP(b, probe)
	return b
}

// maxReviewBytes bounds the SelfSubjectReview answer read for a user name.
const maxReviewBytes = 1 << 20

// reviewedUser is the user name in a successful SelfSubjectReview answer,
// "" in any other.
func reviewedUser(b *response.Buffered) string {
	if b.Code < 200 || b.Code >= 300 || b.Body.Len() > maxReviewBytes {
		return ""
	}
	var review authenticationv1.SelfSubjectReview
	if err := json.Unmarshal(b.Body.Bytes(), &review); err != nil {
		return ""
	}
	return review.Status.UserInfo.Username
}
