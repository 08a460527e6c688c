package proxy

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/response"
)

// Defaults of [FairnessOptions] (docs/security.md#availability).
const (
	// DefaultMaxLongRunningPerUser bounds one user's watches, log streams
	// and upgraded connections open at once.
	DefaultMaxLongRunningPerUser = 1000
	// DefaultMaxInFlightPerUser bounds one user's other requests in flight.
	DefaultMaxInFlightPerUser = 100
	// DefaultMaxQueuedPerUser bounds one user's requests waiting for one of
	// its in-flight slots.
	DefaultMaxQueuedPerUser = 50
	// DefaultMaxTrackedUsers bounds the users with requests open at once.
	DefaultMaxTrackedUsers = 10000
	// DefaultFairQueueWait is how long a queued request waits for a slot:
	// kube-apiserver's API Priority and Fairness waits as long (a quarter
	// of its --request-timeout).
	DefaultFairQueueWait = 15 * time.Second
)

// FairnessOptions bounds what one client may hold of the proxy, as
// kube-apiserver's API Priority and Fairness does per flow: past a bound
// the answer is 429 with Retry-After, and a user's requests only ever wait
// behind the same user's. A user is a verified certificate's user name, a
// bearer token (by its HMAC under a key of this process), or, for every
// request without credentials, one anonymous user. Zero fields mean the
// defaults.
type FairnessOptions struct {
	// MaxLongRunningPerUser bounds one user's long-running requests
	// (watches, followed logs, exec/attach/port-forward, proxy) open at
	// once; past it: 429 at once. Zero means [DefaultMaxLongRunningPerUser].
	MaxLongRunningPerUser int
	// MaxInFlightPerUser bounds one user's other requests in flight; past
	// it they queue. Zero means [DefaultMaxInFlightPerUser].
	MaxInFlightPerUser int
	// MaxQueuedPerUser bounds one user's queued requests; past it: 429 at
	// once. Zero means [DefaultMaxQueuedPerUser]; negative means none
	// queue.
	MaxQueuedPerUser int
	// MaxTrackedUsers bounds the users with requests open (in flight,
	// queued or long-running) at once; a request of another user gets 429.
	// A user is forgotten when its last request ends. Zero means
	// [DefaultMaxTrackedUsers].
	MaxTrackedUsers int
	// QueueWait is how long a queued request waits for a slot before it
	// gets 429. Zero means [DefaultFairQueueWait].
	QueueWait time.Duration
}

// defaults fills in the zero fields; calling it again changes nothing.
func (o *FairnessOptions) defaults() {
	if o.MaxLongRunningPerUser <= 0 {
		o.MaxLongRunningPerUser = DefaultMaxLongRunningPerUser
	}
	if o.MaxInFlightPerUser <= 0 {
		o.MaxInFlightPerUser = DefaultMaxInFlightPerUser
	}
	if o.MaxQueuedPerUser == 0 {
		o.MaxQueuedPerUser = DefaultMaxQueuedPerUser
	}
	if o.MaxTrackedUsers <= 0 {
		o.MaxTrackedUsers = DefaultMaxTrackedUsers
	}
	if o.QueueWait <= 0 {
		o.QueueWait = DefaultFairQueueWait
	}
}

// Reasons of a refusal, the "reason" label of
// mvpctl_proxy_fair_share_rejections_total.
const (
	rejectLongRunning = "long-running"  // MaxLongRunningPerUser open
	rejectQueueFull   = "queue-full"    // MaxQueuedPerUser waiting
	rejectQueueWait   = "queue-timeout" // waited QueueWait in the queue
	rejectUsers       = "tracked-users" // MaxTrackedUsers have requests open
)

// fairShare holds every user's share of the proxy. One mutex guards the
// table; a request holds it for a few map operations, never while it waits.
type fairShare struct {
	opts FairnessOptions
	key  []byte // HMAC key of bearer tokens, random per process

	mu    sync.Mutex
	users map[string]*share

	rejections *prometheus.CounterVec
}

// share is one user's: its requests in flight, long-running and queued,
// and its slot for the proxy's own requests that it causes (onBehalf).
type share struct {
	inFlight, longRunning int
	queue                 list.List // of chan struct{}, oldest first
	behalf                chan struct{}
}

// onBehalfPerUser bounds one user's requests that the proxy makes with its
// own identity at once (impersonation checks, OpenAPI, CRD reads): the own
// pool's slots for them are few, and no user may hold more than this.
const onBehalfPerUser = 1

type shareKey struct{}

// shareFrom is the share of the user whose request ctx belongs to; nil for
// the proxy's own work.
func shareFrom(ctx context.Context) *share {
	s, _ := ctx.Value(shareKey{}).(*share)
	return s
}

func newFairShare(opts FairnessOptions, reg prometheus.Registerer) (*fairShare, error) {
	opts.defaults()
	f := &fairShare{opts: opts, key: make([]byte, 32), users: map[string]*share{}}
	if _, err := rand.Read(f.key); err != nil {
		return nil, err
	}
	f.rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mvpctl", Subsystem: "proxy", Name: "fair_share_rejections_total",
		Help: "Requests answered 429 because their user held its share of the proxy, by reason: long-running, queue-full, queue-timeout, tracked-users.",
	}, []string{"reason"})
	for _, r := range []string{rejectLongRunning, rejectQueueFull, rejectQueueWait, rejectUsers} {
		f.rejections.WithLabelValues(r)
	}
	users := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "mvpctl", Subsystem: "proxy", Name: "fair_share_users",
		Help: "Users with requests open (in flight, queued or long-running), at most --max-tracked-users.",
	}, func() float64 {
		f.mu.Lock()
		defer f.mu.Unlock()
		return float64(len(f.users))
	})
	for _, c := range []prometheus.Collector{f.rejections, users} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// userKey is who a request counts for: the verified certificate's user, an
// HMAC of the bearer token (no credential is kept as a map key), or
// "anonymous".
func (f *fairShare) userKey(certUser string, h http.Header) string {
	if certUser != "" {
		return "user:" + certUser
	}
	cred := h.Values("Authorization")
	if len(cred) == 0 {
		// A bearer token offered as a WebSocket subprotocol.
		for _, v := range h.Values("Sec-Websocket-Protocol") {
			for _, proto := range strings.Split(v, ",") {
				if proto = strings.TrimSpace(proto); strings.HasPrefix(proto, webSocketBearerPrefix) {
					cred = append(cred, proto)
				}
			}
		}
	}
	if len(cred) == 0 {
		return "anonymous"
	}
	m := hmac.New(sha256.New, f.key)
	for _, c := range cred {
		m.Write([]byte(c))
		m.Write([]byte{0})
	}
	return "token:" + base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// requestUser is who a client's request counts for: the user of its
// verified certificate when certificates become impersonation, else its
// bearer token, else anonymous.
func (p *Proxy) requestUser(r *http.Request) string {
	if cert := p.verifiedClientCert(r); cert != nil && cert.Subject.CommonName != "" {
		return p.fair.userKey(cert.Subject.CommonName, nil)
	}
	return p.fair.userKey("", r.Header)
}

// tooManyError is a request refused for its user's share.
type tooManyError struct {
	reason string
	msg    string
}

func (e *tooManyError) Error() string { return e.msg }

// acquire takes a slot of user's share for one request, waiting in the
// user's queue when its in-flight slots are taken. release gives it back
// and hands it to the user's oldest queued request.
func (f *fairShare) acquire(ctx context.Context, user string, longRunning bool) (s *share, release func(), err error) {
	f.mu.Lock()
	s, ok := f.users[user]
	if !ok {
		if len(f.users) >= f.opts.MaxTrackedUsers {
			f.mu.Unlock()
			return nil, nil, f.reject(rejectUsers, fmt.Sprintf("too many users have requests open at once (%d, --max-tracked-users)", f.opts.MaxTrackedUsers))
		}
		s = &share{behalf: make(chan struct{}, onBehalfPerUser)}
		f.users[user] = s
	}
	if longRunning {
		if s.longRunning >= f.opts.MaxLongRunningPerUser {
			f.forgetLocked(user, s)
			f.mu.Unlock()
			return nil, nil, f.reject(rejectLongRunning, fmt.Sprintf("the user has %d long-running requests (watches, streams) open, its limit (--max-long-running-requests-per-user)", f.opts.MaxLongRunningPerUser))
		}
		s.longRunning++
		f.mu.Unlock()
		return s, func() {
			f.mu.Lock()
			s.longRunning--
			f.forgetLocked(user, s)
			f.mu.Unlock()
		}, nil
	}
	release = func() { f.releaseShort(user, s) }
	if s.inFlight < f.opts.MaxInFlightPerUser {
		s.inFlight++
		f.mu.Unlock()
		return s, release, nil
	}
	if s.queue.Len() >= max(f.opts.MaxQueuedPerUser, 0) {
		f.mu.Unlock()
		return nil, nil, f.reject(rejectQueueFull, fmt.Sprintf("the user has %d requests in flight and %d queued, its limits (--max-requests-in-flight-per-user, --max-queued-requests-per-user)", f.opts.MaxInFlightPerUser, max(f.opts.MaxQueuedPerUser, 0)))
	}
	ready := make(chan struct{})
	e := s.queue.PushBack(ready)
	f.mu.Unlock()

	t := time.NewTimer(f.opts.QueueWait)
	defer t.Stop()
	select {
	case <-ready:
		return s, release, nil
	case <-t.C:
		err = f.reject(rejectQueueWait, fmt.Sprintf("the request waited %s for one of the user's %d in-flight slots (--max-requests-in-flight-per-user)", f.opts.QueueWait, f.opts.MaxInFlightPerUser))
	case <-ctx.Done():
		err = ctx.Err()
	}
	f.mu.Lock()
	select {
	case <-ready:
		// Handed a slot while giving up: pass it on.
		f.mu.Unlock()
		release()
	default:
		s.queue.Remove(e)
		f.forgetLocked(user, s)
		f.mu.Unlock()
	}
	return nil, nil, err
}

// releaseShort ends a request in flight: its slot goes to the user's
// oldest queued request, or back to the share.
func (f *fairShare) releaseShort(user string, s *share) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := s.queue.Front(); e != nil {
		s.queue.Remove(e)
		close(e.Value.(chan struct{}))
		return
	}
	s.inFlight--
	f.forgetLocked(user, s)
}

// forgetLocked drops a share without requests: the table holds only users
// with requests open.
func (f *fairShare) forgetLocked(user string, s *share) {
	if s.inFlight == 0 && s.longRunning == 0 && s.queue.Len() == 0 {
		delete(f.users, user)
	}
}

func (f *fairShare) reject(reason, msg string) error {
	f.rejections.WithLabelValues(reason).Inc()
	return &tooManyError{reason: reason, msg: msg}
}

// admit takes the request's share of its user, as kube-apiserver's
// max-in-flight and priority-and-fairness filters do, and reports false
// when it has answered (429 with Retry-After, as kube-apiserver's
// TooManyRequests). The requests the proxy sends through itself for a
// client's request (emulation, access checks) are not counted again. The
// request it returns carries the share, for onBehalf.
func (p *Proxy) admit(w http.ResponseWriter, r *http.Request, rt *route) (*http.Request, bool) {
	if isInner(r) {
		return r, true
	}
	s, release, err := p.fair.acquire(r.Context(), p.requestUser(r), rt.longRunning)
	if err != nil {
		if tm, ok := err.(*tooManyError); ok {
			response.WriteStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
				"Too many requests, please try again later: "+tm.msg, p.opts.RetryAfterSeconds)
			return r, false
		}
		// The client went away while queued; nobody reads the answer.
		w.WriteHeader(499)
		return r, false
	}
	rt.release = release
	return r.WithContext(context.WithValue(r.Context(), shareKey{}, s)), true
}
