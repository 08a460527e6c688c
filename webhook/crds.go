package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/engine/rulesource"
)

// Event reasons about CRDs.
const (
	// ReasonWired: spec.conversion now points at the webhook.
	ReasonWired = "ConversionWired"
	// ReasonRefused: the rules cannot convert between all the CRD's
	// versions, or the self-test failed; the CRD was left as it was.
	ReasonRefused = "ConversionRefused"
)

// maxCABundle is how many of the webhook's CAs a caBundle keeps: its own
// first, then those of other replicas (or before a rotation) that have not
// expired.
const maxCABundle = 4

// ManageOptions configure the wiring of CRDs to the webhook (--manage-crds).
type ManageOptions struct {
	// URL points the CRDs at the webhook by URL; empty means by the Service.
	URL string
	// ServiceName and ServiceNamespace are the webhook's Service (port 443,
	// path /convert).
	ServiceName, ServiceNamespace string
	// CABundle returns the CAs that verify the webhook, read at every
	// pass; Run sets it from the certificate directory or the serving
	// certificate file's last certificate. Nil means the system's roots
	// verify it (no caBundle is written).
	CABundle func() []byte
	// CAChanged receives a token when CABundle changes; nil means never.
	CAChanged <-chan struct{}
	// CRDs reads and updates CRDs; Run sets it from its Cluster.
	CRDs apiextensionsclient.CustomResourceDefinitionInterface
	// Events records why a CRD was wired or refused; nil means none.
	Events corev1client.EventsGetter
	// Resync is how often every covered CRD is checked again besides on
	// every rules change; zero means a minute.
	Resync time.Duration
}

// manager wires the CRDs the rules cover, each only after a self-test.
type manager struct {
	opts    ManageOptions
	log     *slog.Logger
	client  *http.Client // reaches the webhook's own endpoint
	testURL string
	// refused remembers each CRD's last refusal, so that an Event goes
	// with a change only.
	refused map[string]string
}

func (m ManageOptions) run(ctx context.Context, rules *rulesource.Source, srv *Server, log *slog.Logger) error {
	if m.Resync <= 0 {
		m.Resync = time.Minute
	}
	mgr, err := newManager(m, srv, log)
	if err != nil {
		return err
	}
	defer mgr.client.CloseIdleConnections()
	poke := make(chan struct{}, 1)
	rules.Subscribe(func(*rulesource.Set) {
		select {
		case poke <- struct{}{}:
		default:
		}
	})
	tick := time.NewTicker(m.Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-poke:
		case <-tick.C:
		case <-m.CAChanged:
		}
		if set := rules.Current(); set != nil {
			mgr.reconcileAll(ctx, set.Converter)
		}
	}
}

// newManager prepares the self-test client: to the server's own port on
// loopback, verifying the name the apiserver will verify.
func newManager(opts ManageOptions, srv *Server, log *slog.Logger) (*manager, error) {
	addr := *srv.Addr().(*net.TCPAddr)
	if addr.IP.IsUnspecified() {
		addr.IP = net.IPv4(127, 0, 0, 1)
	}
	serverName := opts.ServiceName + "." + opts.ServiceNamespace + ".svc"
	if opts.URL != "" {
		u, err := url.Parse(opts.URL)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" {
			return nil, fmt.Errorf("webhook URL %q: want https://HOST[:PORT]/PATH", opts.URL)
		}
		serverName = u.Hostname()
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName,
		// Verified in VerifyConnection, with the CA bundle of the moment.
		InsecureSkipVerify: true,
		VerifyConnection:   func(cs tls.ConnectionState) error { return verifyPeer(cs, serverName, opts.caBundle()) },
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{
		TLSClientConfig: tlsConfig,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr.String())
		},
	}
	return &manager{opts: opts, log: log, refused: map[string]string{},
		client:  &http.Client{Transport: transport, Timeout: DefaultReviewTimeout},
		testURL: "https://" + net.JoinHostPort(serverName, fmt.Sprint(addr.Port)) + "/convert"}, nil
}

func (m ManageOptions) caBundle() []byte {
	if m.CABundle == nil {
		return nil
	}
	return m.CABundle()
}

// verifyPeer verifies a server's certificate chain for name with the
// roots of bundle (empty: the system's), as crypto/tls would.
func verifyPeer(cs tls.ConnectionState, name string, bundle []byte) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the webhook showed no certificate")
	}
	opts := x509.VerifyOptions{DNSName: name, Intermediates: x509.NewCertPool()}
	if len(bundle) > 0 {
		opts.Roots = x509.NewCertPool()
		if !opts.Roots.AppendCertsFromPEM(bundle) {
			return errors.New("the CA bundle holds no certificate")
		}
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}

// reconcileAll checks every CRD the rules cover: resource.group of each
// resource and group the rules name (a CRD's name is its plural and
// group, so no list of all CRDs is needed, nor the right to read them).
func (m *manager) reconcileAll(ctx context.Context, conv *engine.Converter) {
	for _, name := range coveredCRDs(conv) {
		if ctx.Err() != nil {
			return
		}
		m.reconcile(ctx, conv, name)
	}
}

// coveredCRDs are the names of the CRDs the rules may cover.
func coveredCRDs(conv *engine.Converter) []string {
	var names []string
	for resource, gvs := range conv.Versions() {
		for _, gv := range gvs {
			if name := resource + "." + gv.Group; gv.Group != "" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

func (m *manager) reconcile(ctx context.Context, conv *engine.Converter, name string) {
	crd, err := m.opts.CRDs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		m.log.Debug("no CRD of that name; the rules' resource is not a CRD here", "crd", name)
		return
	}
	if err != nil {
		m.log.Error("reading the CRD failed", "crd", name, "error", err.Error())
		return
	}
	versions := CRDVersions(crd)
	if len(versions) < 2 {
		return // nothing to convert
	}
	if err := m.selfTest(ctx, conv, crd, versions); err != nil {
		m.refuse(ctx, crd, err)
		return
	}
	delete(m.refused, name)
	changed, err := m.wire(ctx, name)
	if err != nil {
		m.log.Error("writing spec.conversion failed", "crd", name, "error", err.Error())
		return
	}
	if changed {
		m.log.Info("CRD conversion served by the webhook", "crd", name, "versions", versions)
		m.event(ctx, crd, corev1.EventTypeNormal, ReasonWired, fmt.Sprintf("spec.conversion points at mvpctl webhook after a self-test of versions %v", versions))
	}
}

// CRDVersions are the versions a CRD's objects may be read or stored in:
// the served ones and the storage one.
func CRDVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var vs []string
	for _, v := range crd.Spec.Versions {
		if v.Served || v.Storage {
			vs = append(vs, v.Name)
		}
	}
	return vs
}

// refuse leaves the CRD as it was and says why, with an Event when the
// reason is new.
func (m *manager) refuse(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, err error) {
	msg := "not wired to the webhook: " + err.Error()
	m.log.Warn("CRD refused; its conversion is left as it was", "crd", crd.Name, "reason", err.Error())
	if m.refused[crd.Name] == msg {
		return
	}
	m.refused[crd.Name] = msg
	m.event(ctx, crd, corev1.EventTypeWarning, ReasonRefused, msg)
}

// wire writes spec.conversion, unless it is already what it should be.
func (m *manager) wire(ctx context.Context, name string) (changed bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := m.opts.CRDs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := m.conversion(crd.Spec.Conversion)
		if equality.Semantic.DeepEqual(crd.Spec.Conversion, want) {
			changed = false
			return nil
		}
		crd.Spec.Conversion = want
		_, err = m.opts.CRDs.Update(ctx, crd, metav1.UpdateOptions{FieldManager: "mvpctl-webhook"})
		changed = err == nil
		return err
	})
	return changed, err
}

// conversion is the spec.conversion that points at the webhook, keeping
// the other CAs of ours that cur's caBundle holds.
func (m *manager) conversion(cur *apiextensionsv1.CustomResourceConversion) *apiextensionsv1.CustomResourceConversion {
	cc := &apiextensionsv1.WebhookClientConfig{}
	if m.opts.URL != "" {
		cc.URL = ptr.To(m.opts.URL)
	} else {
		cc.Service = &apiextensionsv1.ServiceReference{Name: m.opts.ServiceName, Namespace: m.opts.ServiceNamespace,
			Path: ptr.To("/convert"), Port: ptr.To[int32](443)}
	}
	var old []byte
	if cur != nil && cur.Webhook != nil && cur.Webhook.ClientConfig != nil {
		old = cur.Webhook.ClientConfig.CABundle
	}
	if ours := m.opts.caBundle(); len(ours) > 0 {
		cc.CABundle = mergeCABundle(old, ours, time.Now())
	}
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: []string{"v1", "v1beta1"}},
	}
}

// mergeCABundle is ours, then the CAs of old that the webhook made (those
// of other replicas, or from before a rotation) and that have not expired,
// at most maxCABundle in all: every replica's serving certificate verifies.
func mergeCABundle(old, ours []byte, now time.Time) []byte {
	out := bytes.Clone(ours)
	n := 1
	certs, _ := certutil.ParseCertsPEM(old)
	for _, c := range certs {
		p := pemCert(c.Raw)
		if n >= maxCABundle || !strings.HasPrefix(c.Subject.CommonName, caCommonName) || now.After(c.NotAfter) || bytes.Contains(out, p) {
			continue
		}
		out = append(out, p...)
		n++
	}
	return out
}

// event records an Event about a CRD (cluster-scoped: in "default").
func (m *manager) event(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, typ, reason, msg string) {
	if m.opts.Events == nil {
		return
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", crd.Name, now.UnixNano()), Namespace: metav1.NamespaceDefault}, // as client-go's recorder names them
		InvolvedObject: corev1.ObjectReference{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition",
			Name: crd.Name, UID: crd.UID, ResourceVersion: crd.ResourceVersion},
		Reason: reason, Message: msg, Type: typ, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "mvpctl-webhook"},
	}
	if _, err := m.opts.Events.Events(metav1.NamespaceDefault).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		m.log.Warn("recording an Event failed", "crd", crd.Name, "reason", reason, "error", err.Error())
	}
}
