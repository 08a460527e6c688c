package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// The adversarial suite: real kube-apiservers of both versions, `mvpctl
// proxy` in front with client-certificate impersonation (its client CA is
// the cluster's CA) and the seed rules emulating
// myapps.example.com/v1alpha1, and clients that try to lose, borrow or
// inflate an identity, or to make the proxy hold memory and work. mallory
// is unprivileged: a client certificate of the cluster's CA (CN mallory,
// O mvp:testers) and a ServiceAccount token, both allowed get, list and
// watch of customresources and nothing else.

const (
	advNamespace = "adversarial"
	// advRSSBound bounds the proxy's peak resident memory over the whole
	// suite: a memory bound, far above what it needs (tens of MiB).
	advRSSBound = 512 << 20
	// crEmulated is the emulated version's collection, crServed the served
	// one's.
	crEmulated = "/apis/myapps.example.com/v1alpha1/namespaces/" + advNamespace + "/customresources"
	crServed   = "/apis/myapps.example.com/v1beta1/namespaces/" + advNamespace + "/customresources"
	// secretsPath lists every Secret: mallory may not.
	secretsPath = "/api/v1/namespaces/kube-system/secrets"
	// escalationName is the ClusterRoleBinding mallory tries to create.
	escalationName = "adversarial-escalation"
)

// advLimits are the proxy's limits in this suite, below their defaults so
// that the slow clients meet all of them within seconds: a body must arrive
// within 5s, 32 MiB of bodies may be held at once (so 31 slow bodies of
// 1 MiB), and 150 client connections may be open (the rest wait to be
// accepted).
var advLimits = []string{"--request-body-timeout=5s", "--max-buffered-request-bytes=33554432", "--max-connections=150"}

// protocols are the client protocols every request is tried over.
var protocols = []string{"h1", "h2"}

func protoName(proto string) string {
	if proto == "h2" {
		return "HTTP/2"
	}
	return "HTTP/1.1"
}

// principal is how one client authenticates: a client certificate, a
// bearer token, or nothing.
type principal struct {
	name  string
	cert  *tls.Certificate
	token string
}

// advEnv is the environment the subtests share.
type advEnv struct {
	cp      *framework.ControlPlane
	proxy   *proxyProcess
	direct  string // the v1.36 server's URL
	proxyCA *x509.CertPool
	ca      *x509.CertPool

	admin        principal // system:masters client certificate
	editor       principal // client certificate, may create and patch customresources, not update
	mallory      principal // client certificate, may read customresources
	malloryToken principal // ServiceAccount token, may read customresources
	anonymous    principal

	mu      sync.Mutex
	clients map[string]*http.Client
}

// TestProxy_Adversarial attacks the proxy as unprivileged clients (results:
// docs/security.md). Every attempt ends in kube-apiserver's answer for the
// attacker (or the proxy's 400, 408, 429 where it refuses first), never in
// the proxy's identity; after each subtest the proxy is ready and its peak
// memory is bounded.
func TestProxy_Adversarial(t *testing.T) {
	e := newAdvEnv(t)
	start := time.Now()
	for _, st := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"MastersCertificateWritesEmulatedVersion", e.testMastersCertificate},
		{"EditorCertificateWritesEmulatedVersion", e.testEditorCertificate},
		{"HopByHopIdentityHeaders", e.testHopByHop},
		{"HopByHopIdentityHeadersHTTP2", e.testHopByHopHTTP2},
		{"ForgedIdentityHeaders", e.testForgedIdentity},
		{"WebSocketProtocolToken", e.testWebSocketToken},
		{"JSONPatchBombs", e.testPatchBombs},
		{"PoisonedConversionData", e.testPoisonedConversionData},
		{"MetricsAndDebug", e.testMetricsAndDebug},
		{"SlowBodies", e.testSlowBodies},
	} {
		t.Run(st.name, func(t *testing.T) {
			st.run(t)
			e.checkProxy(t)
		})
	}
	t.Logf("the suite ran %s after the control plane and the proxy were up; proxy peak RSS %d MiB",
		time.Since(start).Round(time.Second), procKB(e.proxy.PID(), "VmHWM")>>20)
}

// newAdvEnv starts the control plane and the proxy, and creates the
// namespace, the principals and their RBAC.
func newAdvEnv(t *testing.T) *advEnv {
	t.Helper()
	cp := framework.Start(t, framework.Options{Versions: []string{oldVersion, newVersion}})
	p, _ := emulationProxy(t, cp, advLimits...)
	e := &advEnv{cp: cp, proxy: p, direct: cp.Server(1).URL, clients: map[string]*http.Client{}}
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, c := range e.clients {
			c.CloseIdleConnections()
		}
	})
	var err error
	if e.proxyCA, err = certutil.NewPoolFromBytes(p.CAData); err != nil {
		t.Fatal(err)
	}
	e.ca = cp.PKI.CAPool
	e.admin = principal{name: "admin (system:masters certificate)", cert: &cp.PKI.AdminCert}
	e.anonymous = principal{name: "anonymous"}
	for _, c := range []struct {
		to          *principal
		name, group string
	}{{&e.mallory, "mallory", "mvp:testers"}, {&e.editor, "carol", "mvp:editors"}} {
		cert, err := cp.PKI.IssueClientCert(c.name, c.group)
		if err != nil {
			t.Fatal(err)
		}
		*c.to = principal{name: c.name + " (certificate)", cert: &cert.Cert}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.Server(1).RESTConfig())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: advNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(advNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "mallory"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(advNamespace).CreateToken(ctx, "mallory",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.malloryToken = principal{name: "mallory (ServiceAccount token)", token: tok.Status.Token}
	createRBAC(t, ctx, cs)

	// The bindings reach each server's RBAC cache, and the proxy emulates
	// v1alpha1, within moments; bounded waits for both.
	for _, who := range []principal{e.mallory, e.malloryToken, e.editor} {
		for _, s := range cp.Servers() {
			e.await(t, ctx, fmt.Sprintf("%s may list customresources on %s", who.name, s.Version), func() error {
				return is200(e.sendTo(t, s.URL, who, "h2", http.MethodGet, crServed, nil, nil))
			})
		}
	}
	e.await(t, ctx, "the proxy emulates myapps.example.com/v1alpha1", func() error {
		return is200(e.send(t, e.admin, "h2", http.MethodGet, crEmulated, nil, nil))
	})
	return e
}

func createRBAC(t *testing.T, ctx context.Context, cs *kubernetes.Clientset) {
	t.Helper()
	crs := rbacv1.PolicyRule{APIGroups: []string{"myapps.example.com"}, Resources: []string{"customresources"}}
	reader, editor := crs, crs
	reader.Verbs = []string{"get", "list", "watch"}
	editor.Verbs = []string{"get", "list", "watch", "create", "patch"}
	roles := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "adversarial-reader"}, Rules: []rbacv1.PolicyRule{reader}},
		{ObjectMeta: metav1.ObjectMeta{Name: "adversarial-editor"}, Rules: []rbacv1.PolicyRule{editor}},
		// The role mallory tries to bind herself to: no rules, so that a
		// binding that got through harms none of the later subtests.
		{ObjectMeta: metav1.ObjectMeta{Name: "adversarial-none"}},
	}
	for _, r := range roles {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(name, role string, subjects ...rbacv1.Subject) {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind("adversarial-reader", "adversarial-reader",
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "mvp:testers"},
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: advNamespace, Name: "mallory"})
	bind("adversarial-editor", "adversarial-editor", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "mvp:editors"})
}

// await polls cond every 100ms until it returns nil or ctx ends.
func (e *advEnv) await(t *testing.T, ctx context.Context, what string, cond func() error) {
	t.Helper()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: %v (last: %v)", what, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// is200 is nil for a 200, else the answer as an error.
func is200(a answer) error {
	if a.code == http.StatusOK {
		return nil
	}
	return errors.New(a.String())
}

// checkProxy is the end of every subtest: the proxy is ready, and its peak
// resident memory so far is within advRSSBound.
func (e *advEnv) checkProxy(t *testing.T) {
	t.Helper()
	if a := e.send(t, e.anonymous, "h1", http.MethodGet, "/readyz", nil, nil); a.code != http.StatusOK {
		t.Errorf("proxy /readyz: %s", a)
	}
	hwm := procKB(e.proxy.PID(), "VmHWM")
	t.Logf("proxy peak RSS so far: %d MiB", hwm>>20)
	if hwm == 0 || hwm > advRSSBound {
		t.Errorf("proxy peak RSS %d MiB, want at most %d MiB (0: the proxy is gone)", hwm>>20, advRSSBound>>20)
	}
}

// tlsConfig is who's TLS configuration for the proxy (or, direct, for the
// kube-apiservers).
func (e *advEnv) tlsConfig(who principal, direct bool) *tls.Config {
	tc := &tls.Config{RootCAs: e.proxyCA, MinVersion: tls.VersionTLS12}
	if direct {
		tc.RootCAs = e.ca
	}
	if who.cert != nil {
		tc.Certificates = []tls.Certificate{*who.cert}
	}
	return tc
}

// client is who's HTTP client over proto, for the proxy or a server.
func (e *advEnv) client(who principal, proto string, direct bool) *http.Client {
	key := fmt.Sprint(who.name, proto, direct)
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.clients[key]; c != nil {
		return c
	}
	tr := &http.Transport{
		TLSClientConfig:       e.tlsConfig(who, direct),
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		MaxConnsPerHost:       4,
		Protocols:             new(http.Protocols),
	}
	tr.Protocols.SetHTTP1(proto == "h1")
	tr.Protocols.SetHTTP2(proto == "h2")
	c := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	e.clients[key] = c
	return c
}

// answer is a response's status and body.
type answer struct {
	code int
	body []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %.400s", a.code, a.body) }

// object decodes the answer's JSON body.
func (a answer) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %s: %v", a, err)
	}
	return m
}

// namesUser reports whether a 403 of kube-apiserver names user: the request
// reached it as that user.
func (a answer) namesUser(user string) bool {
	return bytes.Contains(a.body, []byte(`User \"`+user+`\"`)) || bytes.Contains(a.body, []byte(`User "`+user+`"`))
}

// send makes one request through the proxy and reads the answer whole.
func (e *advEnv) send(t *testing.T, who principal, proto, method, path string, h http.Header, body []byte) answer {
	t.Helper()
	return e.sendTo(t, e.proxy.URL, who, proto, method, path, h, body)
}

// sendDirect is send to the v1.36 kube-apiserver.
func (e *advEnv) sendDirect(t *testing.T, who principal, proto, method, path string, h http.Header, body []byte) answer {
	t.Helper()
	return e.sendTo(t, e.direct, who, proto, method, path, h, body)
}

func (e *advEnv) sendTo(t *testing.T, base string, who principal, proto, method, path string, h http.Header, body []byte) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	if who.token != "" {
		req.Header.Set("Authorization", "Bearer "+who.token)
	}
	resp, err := e.client(who, proto, base != e.proxy.URL).Do(req)
	if err != nil {
		t.Fatalf("%s %s as %s over %s: %v", method, path, who.name, protoName(proto), err)
	}
	defer resp.Body.Close()
	if want := map[string]int{"h1": 1, "h2": 2}[proto]; resp.ProtoMajor != want {
		t.Fatalf("%s %s: answered over %s, want %s", method, path, resp.Proto, protoName(proto))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("%s %s as %s over %s: reading the answer: %v", method, path, who.name, protoName(proto), err)
	}
	return answer{code: resp.StatusCode, body: b}
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

var (
	jsonBody       = header("Content-Type", "application/json")
	mergePatch     = header("Content-Type", "application/merge-patch+json")
	jsonPatch      = header("Content-Type", "application/json-patch+json")
	strategicPatch = header("Content-Type", "application/strategic-merge-patch+json")
	applyPatch     = header("Content-Type", "application/apply-patch+yaml")
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// crV1alpha1Object is a v1alpha1 CustomResource as an old client writes it.
func crV1alpha1Object(name string, timeout int) map[string]any {
	return map[string]any{
		"apiVersion": "myapps.example.com/v1alpha1", "kind": "CustomResource",
		"metadata": map[string]any{"name": name, "namespace": advNamespace},
		"spec": map[string]any{"replicas": 1, "stateManagement": "ephemeral",
			"config": map[string]any{"legacyTimeout": timeout, "retries": 3}},
	}
}

// createServed creates a v1beta1 object directly on a server, as an admin.
func (e *advEnv) createServed(t *testing.T, name string, labels, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "myapps.example.com/v1beta1", "kind": "CustomResource",
		"metadata": map[string]any{"name": name, "namespace": advNamespace},
		"spec": map[string]any{"replicas": int64(1), "stateManagement": "stateless",
			"config": map[string]any{"requestTimeoutSeconds": int64(40), "retries": int64(3)}},
	}}
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := dynamic.NewForConfigOrDie(e.cp.Server(1).RESTConfig()).Resource(crV1beta1).Namespace(advNamespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return out
}

// testMastersCertificate: a system:masters client certificate reads,
// creates, updates and patches the emulated version, in every patch type.
func (e *advEnv) testMastersCertificate(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) { e.emulatedWrites(t, e.admin, proto, "masters-"+proto, true) })
	}
}

// testEditorCertificate: a client certificate allowed to create and patch
// (not update) customresources does so through the emulated version; its
// update is refused as kube-apiserver refuses it.
func (e *advEnv) testEditorCertificate(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) { e.emulatedWrites(t, e.editor, proto, "editor-"+proto, false) })
	}
}

// emulatedWrites creates name through the proxy as who in v1alpha1, reads
// it, updates it (or, without mayUpdate, checks that the update gets
// kube-apiserver's answer) and patches it with a merge, JSON, strategic
// merge and apply patch, checking each against the served object.
func (e *advEnv) emulatedWrites(t *testing.T, who principal, proto, name string, mayUpdate bool) {
	item := crEmulated + "/" + name
	legacyTimeout := func(a answer) any { return field(a.object(t), "spec", "config", "legacyTimeout") }
	served := func() map[string]any {
		return e.sendDirect(t, e.admin, "h2", http.MethodGet, crServed+"/"+name, nil, nil).object(t)
	}
	a := e.send(t, who, proto, http.MethodPost, crEmulated, jsonBody, mustJSON(t, crV1alpha1Object(name, 30)))
	if a.code != http.StatusCreated || a.object(t)["apiVersion"] != "myapps.example.com/v1alpha1" || legacyTimeout(a) != float64(30) {
		t.Fatalf("create v1alpha1 as %s: %s", who.name, a)
	}
	if got := field(served(), "spec", "config", "requestTimeoutSeconds"); got != float64(30) {
		t.Errorf("v1beta1 requestTimeoutSeconds after the create: %v", got)
	}
	a = e.send(t, who, proto, http.MethodGet, item, nil, nil)
	if a.code != http.StatusOK || legacyTimeout(a) != float64(30) {
		t.Fatalf("get v1alpha1 as %s: %s", who.name, a)
	}

	obj := a.object(t)
	obj["spec"].(map[string]any)["config"].(map[string]any)["legacyTimeout"] = 31
	a = e.send(t, who, proto, http.MethodPut, item, jsonBody, mustJSON(t, obj))
	if mayUpdate {
		if a.code != http.StatusOK || legacyTimeout(a) != float64(31) {
			t.Errorf("update v1alpha1 as %s: %s", who.name, a)
		}
	} else {
		sv := served()
		want := e.sendDirect(t, who, "h2", http.MethodPut, crServed+"/"+name, jsonBody, mustJSON(t, sv))
		if a.code != want.code {
			t.Errorf("update v1alpha1 as %s: %s; kube-apiserver answers the update of v1beta1 %s", who.name, a, want)
		}
	}

	for _, p := range []struct {
		kind  string
		h     http.Header
		query string
		body  string
		want  float64
	}{
		{"merge", mergePatch, "", `{"spec":{"config":{"legacyTimeout":32}}}`, 32},
		{"JSON", jsonPatch, "", `[{"op":"replace","path":"/spec/config/legacyTimeout","value":33},{"op":"test","path":"/spec/stateManagement","value":"ephemeral"}]`, 33},
		{"apply", applyPatch, "?fieldManager=adversarial&force=true", string(mustJSON(t, crV1alpha1Object(name, 34))), 34},
	} {
		a := e.send(t, who, proto, http.MethodPatch, item+p.query, p.h, []byte(p.body))
		if a.code != http.StatusOK || legacyTimeout(a) != p.want {
			t.Errorf("%s patch of v1alpha1 as %s: %s", p.kind, who.name, a)
			continue
		}
		if got := field(served(), "spec", "config", "requestTimeoutSeconds"); got != p.want {
			t.Errorf("v1beta1 requestTimeoutSeconds after the %s patch: %v, want %v", p.kind, got, p.want)
		}
	}
	// Custom resources take no strategic merge patch: the same answer as
	// kube-apiserver's for the served version.
	sp := `{"spec":{"replicas":2}}`
	a = e.send(t, who, proto, http.MethodPatch, item, strategicPatch, []byte(sp))
	if want := e.sendDirect(t, who, "h2", http.MethodPatch, crServed+"/"+name, strategicPatch, []byte(sp)); a.code != want.code {
		t.Errorf("strategic merge patch of v1alpha1 as %s: %s; kube-apiserver answers for v1beta1 %s", who.name, a, want)
	}
}

// h1Request is an HTTP/1.1 request written byte for byte.
func h1Request(method, path string, headers []string, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

// rawH1 sends request on a new HTTP/1.1 TLS connection to addr and reads
// the answer: its status and up to 64 KiB of its body (none for a 101).
func rawH1(ctx context.Context, addr string, tc *tls.Config, request string) (answer, error) {
	tc = tc.Clone()
	tc.NextProtos = []string{"http/1.1"}
	d := tls.Dialer{Config: tc}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return answer{}, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, request); err != nil {
		return answer{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return answer{code: resp.StatusCode}, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return answer{code: resp.StatusCode, body: b}, err
}

func (e *advEnv) proxyAddr() string { return strings.TrimPrefix(e.proxy.URL, "https://") }

// escalation is the ClusterRoleBinding mallory tries to create for herself.
const escalation = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"` + escalationName + `"},` +
	`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"adversarial-none"},` +
	`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mallory"}]}`

// wsUpgrade are the headers of a WebSocket upgrade, after a Connection
// header that lists Upgrade.
var wsUpgrade = []string{"Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Origin: https://127.0.0.1"}

// testHopByHop: a client-certificate user names its identity headers (and
// Authorization, X-Remote-*) in Connection over HTTP/1.1, plainly and in
// upgrades, to have them removed after the proxy set them. Each ends in
// 400 from the proxy or kube-apiserver's 403 for mallory: never as the
// proxy.
func (e *advEnv) testHopByHop(t *testing.T) {
	defer e.removeEscalation(t)
	connections := [][]string{
		{"Connection: keep-alive, Impersonate-User, Impersonate-Group"},
		{"Connection: Impersonate-User"},
		{"Connection: impersonate-user, impersonate-group, impersonate-uid"},
		{"Connection: keep-alive", "Connection: Impersonate-User, Impersonate-Group"},
		{"Connection: close,Impersonate-User ,\tImpersonate-Group"},
		{"Connection: Impersonate-Extra-Scopes, Impersonate-User, Impersonate-Group"},
		{"Connection: Authorization"},
		{"Connection: X-Remote-User, X-Remote-Group"},
	}
	type attempt struct {
		what    string
		request string
	}
	var attempts []attempt
	for _, conn := range connections {
		upgrade := append([]string{strings.Replace(conn[len(conn)-1], "Connection: ", "Connection: Upgrade, ", 1)}, conn[:len(conn)-1]...)
		attempts = append(attempts,
			attempt{"list secrets, " + strings.Join(conn, "; "), h1Request(http.MethodGet, secretsPath, conn, "")},
			attempt{"create a ClusterRoleBinding, " + strings.Join(conn, "; "), h1Request(http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", conn, escalation)},
			attempt{"WebSocket watch of secrets, " + strings.Join(upgrade, "; "), h1Request(http.MethodGet, secretsPath+"?watch=true", append(upgrade, wsUpgrade...), "")},
			attempt{"SPDY exec, " + strings.Join(upgrade, "; "), h1Request(http.MethodPost, "/api/v1/namespaces/kube-system/pods/etcd/exec?command=id&stdout=true",
				append(upgrade, "Upgrade: SPDY/3.1", "X-Stream-Protocol-Version: v4.channel.k8s.io"), "")},
		)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, a := range attempts {
		got, err := rawH1(ctx, e.proxyAddr(), e.tlsConfig(e.mallory, false), a.request)
		switch {
		case err != nil:
			t.Errorf("mallory: %s: %v", a.what, err)
		case got.code == http.StatusBadRequest:
		case got.code == http.StatusForbidden && got.namesUser("mallory"):
		default:
			t.Errorf("mallory (certificate) over HTTP/1.1: %s: %s, want 400 from the proxy or kube-apiserver's 403 for mallory", a.what, got)
		}
	}
	// A token client that drops its own Authorization is anonymous at most.
	got, err := rawH1(ctx, e.proxyAddr(), e.tlsConfig(e.anonymous, false),
		h1Request(http.MethodGet, secretsPath, []string{"Authorization: Bearer " + e.malloryToken.token, "Connection: Authorization"}, ""))
	if err != nil || (got.code != http.StatusBadRequest && got.code != http.StatusForbidden) {
		t.Errorf("mallory (token) with Connection: Authorization: %s %v, want 400 or 403", got, err)
	}
}

// removeEscalation deletes the ClusterRoleBinding if an attempt created it,
// and fails the test then.
func (e *advEnv) removeEscalation(t *testing.T) {
	t.Helper()
	path := "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + escalationName
	if a := e.sendDirect(t, e.admin, "h2", http.MethodDelete, path, nil, nil); a.code != http.StatusNotFound {
		t.Errorf("the ClusterRoleBinding mallory tried to create exists (deleting it: %s)", a)
	}
}

// testHopByHopHTTP2: HTTP/2 has no hop-by-hop headers; a request with
// connection-specific ones is malformed (RFC 9113, 8.2.2). mallory sends
// them anyway: the stream is reset, or answered 400 or 403 for mallory.
func (e *advEnv) testHopByHopHTTP2(t *testing.T) {
	defer e.removeEscalation(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, h := range [][2]string{
		{"connection", "keep-alive, impersonate-user, impersonate-group"},
		{"connection", "authorization"},
		{"connection", "x-remote-user"},
		{"upgrade", "websocket"},
		{"keep-alive", "timeout=5"},
		{"proxy-connection", "impersonate-user"},
		{"te", "trailers, impersonate-user"},
	} {
		for _, req := range []struct {
			method, path, body string
		}{{http.MethodGet, secretsPath, ""}, {http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", escalation}} {
			c, err := dialH2(ctx, e.proxyAddr(), e.tlsConfig(e.mallory, false))
			if err != nil {
				t.Fatal(err)
			}
			fields := [][2]string{h}
			if req.body != "" {
				fields = append(fields, [2]string{"content-type", "application/json"})
			}
			id, err := c.open(req.method, req.path, fields, []byte(req.body), true)
			var got h2Answer
			if err == nil {
				got, err = c.await(id)
			}
			c.Close()
			switch {
			case err != nil:
				t.Errorf("mallory over HTTP/2: %s %s with %s: %v", req.method, req.path, h, err)
			case got.reset == http2.ErrCodeProtocol:
			case got.code == http.StatusBadRequest:
			case got.code == http.StatusForbidden && got.namesUser("mallory"):
			default:
				t.Errorf("mallory over HTTP/2: %s %s with %s: %s, want the stream reset, 400 or kube-apiserver's 403 for mallory", req.method, req.path, h, got)
			}
		}
	}
}

// testForgedIdentity: forged Impersonate-* and X-Remote-* headers get
// exactly kube-apiserver's answer for the same client, never success.
func (e *advEnv) testForgedIdentity(t *testing.T) {
	cases := []struct {
		name string
		h    http.Header
	}{
		{"another user", header("Impersonate-User", "system:admin")},
		{"herself", header("Impersonate-User", "mallory")},
		{"system:masters", header("Impersonate-User", "mallory", "Impersonate-Group", "system:masters")},
		{"a group without a user", header("Impersonate-Group", "system:masters")},
		{"a ServiceAccount", header("Impersonate-User", "system:serviceaccount:kube-system:default")},
		{"a uid", header("Impersonate-User", "mallory", "Impersonate-Uid", "1234")},
		{"an extra", header("Impersonate-User", "mallory", "Impersonate-Extra-Scopes", "view")},
		{"a percent-encoded extra", header("Impersonate-User", "mallory", "Impersonate-Extra-Example.com%2fscope", "x")},
		{"front-proxy headers", header("X-Remote-User", "system:admin", "X-Remote-Group", "system:masters")},
		{"front-proxy extras", header("X-Remote-User", "mallory", "X-Remote-Uid", "1", "X-Remote-Extra-Scopes", "all")},
	}
	for _, who := range []principal{e.mallory, e.malloryToken, e.anonymous} {
		for _, c := range cases {
			// mallory may list customresources, not secrets.
			for _, path := range [][2]string{{secretsPath, secretsPath}, {crEmulated, crServed}} {
				want := e.sendDirect(t, who, "h2", http.MethodGet, path[1], c.h, nil)
				if path[0] == secretsPath && want.code < 400 {
					t.Fatalf("kube-apiserver let %s list secrets with %s: %s", who.name, c.name, want)
				}
				for _, proto := range protocols {
					got := e.send(t, who, proto, http.MethodGet, path[0], c.h, nil)
					if got.code != want.code {
						t.Errorf("%s impersonating %s over %s, GET %s: %s; kube-apiserver answers %s", who.name, c.name, protoName(proto), path[0], got, want)
					}
				}
			}
		}
	}
}

// testWebSocketToken: a token in Sec-WebSocket-Protocol authenticates a
// WebSocket request at kube-apiserver. The admin's client reads discovery
// that way through the proxy; right after, a client without credentials
// (and one with a made-up token there) must still get kube-apiserver's
// answer for itself, not the admin's cached access.
func (e *advEnv) testWebSocketToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	wsToken := func(token string) string {
		return "Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte(token)) + ", v4.channel.k8s.io"
	}
	ws := func(addr string, direct bool, token, path string) answer {
		t.Helper()
		a, err := rawH1(ctx, addr, e.tlsConfig(e.anonymous, direct), h1Request(http.MethodGet, path, append([]string{"Connection: Upgrade", wsToken(token)}, wsUpgrade...), ""))
		if err != nil {
			t.Fatalf("WebSocket GET %s: %v", path, err)
		}
		return a
	}
	directAddr := strings.TrimPrefix(e.direct, "https://")
	for _, path := range []string{"/api", "/apis", "/apis/myapps.example.com", "/apis/myapps.example.com/v1alpha1", "/openapi/v2", "/openapi/v3"} {
		admin := ws(e.proxyAddr(), false, e.cp.PKI.Token, path)
		t.Logf("the admin's WebSocket GET %s through the proxy: %d", path, admin.code)
		for _, proto := range protocols {
			want := e.sendDirect(t, e.anonymous, proto, http.MethodGet, path, nil, nil)
			if got := e.send(t, e.anonymous, proto, http.MethodGet, path, nil, nil); got.code != want.code {
				t.Errorf("anonymous GET %s over %s after the admin's WebSocket request: %s; kube-apiserver answers %s", path, protoName(proto), got, want)
			}
		}
		want := ws(directAddr, true, "made-up", path)
		if got := ws(e.proxyAddr(), false, "made-up", path); got.code != want.code {
			t.Errorf("WebSocket GET %s with a made-up token after the admin's: %s; kube-apiserver answers %s", path, got, want)
		}
	}
}

// testPatchBombs: a JSON patch whose copies grow the object exponentially,
// and one with more operations than kube-apiserver takes, sent to the
// emulated version by every principal: each gets kube-apiserver's answer
// for the same patch of the served version (its limits, before anything
// is written), and the object is unchanged.
func (e *advEnv) testPatchBombs(t *testing.T) {
	target := e.createServed(t, "bomb", nil, nil)
	var ops []string
	for i := range 18 {
		// Each copy doubles spec: 2^18 times its size, where kube-apiserver
		// stops at 3 MiB of copies.
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/c%d"}`, i))
	}
	copyBomb := "[" + strings.Join(ops, ",") + "]"
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/spec/replicas","value":1},`, 10001), ",") + "]"
	for _, p := range []struct{ name, body string }{{"copy bomb", copyBomb}, {"10001 operations", many}} {
		want := e.sendDirect(t, e.admin, "h2", http.MethodPatch, crServed+"/bomb", jsonPatch, []byte(p.body))
		if want.code < 400 {
			t.Fatalf("kube-apiserver applied the %s: %s", p.name, want)
		}
		t.Logf("kube-apiserver answers the %s of v1beta1: %s", p.name, want)
		for _, who := range []principal{e.mallory, e.malloryToken, e.admin} {
			for _, proto := range protocols {
				before := procKB(e.proxy.PID(), "VmHWM")
				got := e.send(t, who, proto, http.MethodPatch, crEmulated+"/bomb", jsonPatch, []byte(p.body))
				if got.code != want.code {
					t.Errorf("%s of v1alpha1 as %s over %s: %s, want %d as kube-apiserver answers", p.name, who.name, protoName(proto), got, want.code)
				}
				if after := procKB(e.proxy.PID(), "VmHWM"); after > before {
					t.Logf("%s as %s over %s: proxy peak RSS %d → %d MiB", p.name, who.name, protoName(proto), before>>20, after>>20)
				}
			}
		}
	}
	now := e.sendDirect(t, e.admin, "h2", http.MethodGet, crServed+"/bomb", nil, nil).object(t)
	if rv := field(now, "metadata", "resourceVersion"); rv != target.GetResourceVersion() {
		t.Errorf("the object changed: resourceVersion %v, was %s; spec %.300v", rv, target.GetResourceVersion(), now["spec"])
	}
}

// testPoisonedConversionData: an admin sets malformed, non-object and
// oversized round-trip annotations on objects of the served version; mallory
// lists and watches the emulated version and gets every object, complete.
func (e *advEnv) testPoisonedConversionData(t *testing.T) {
	const ann = "mvp.k8s.io/conversion-data"
	labels := map[string]string{"adversarial": "poison"}
	poisons := map[string]string{
		"clean":            "",
		"poison-malformed": `{"customresources.myapps.example.com/v1alpha1->v1beta1": {`,
		"poison-array":     `[1, 2, 3]`,
		"poison-string":    `"spec"`,
		"poison-oversized": `{"padding":"` + strings.Repeat("x", 96<<10) + `"}`,
	}
	var names []string
	for name, v := range poisons {
		var a map[string]string
		if v != "" {
			a = map[string]string{ann: v}
		}
		e.createServed(t, name, labels, a)
		names = append(names, name)
	}
	slices.Sort(names)
	query := "?labelSelector=adversarial%3Dpoison"
	if want := e.sendDirect(t, e.malloryToken, "h2", http.MethodGet, crServed+query, nil, nil); want.code != http.StatusOK || len(items(t, want)) != len(names) {
		t.Fatalf("kube-apiserver's list of v1beta1 for mallory: %s", want)
	}
	for _, who := range []principal{e.mallory, e.malloryToken} {
		for _, proto := range protocols {
			got := e.send(t, who, proto, http.MethodGet, crEmulated+query, nil, nil)
			if got.code != http.StatusOK {
				t.Errorf("list of v1alpha1 as %s over %s: %s", who.name, protoName(proto), got)
				continue
			}
			var listed []string
			for _, it := range items(t, got) {
				listed = append(listed, e.checkConverted(t, it))
			}
			slices.Sort(listed)
			if !slices.Equal(listed, names) {
				t.Errorf("list of v1alpha1 as %s over %s: %v, want %v", who.name, protoName(proto), listed, names)
			}
			e.watchAll(t, who, proto, crEmulated+query+"&watch=true&timeoutSeconds=30", names)
		}
	}
}

func items(t *testing.T, a answer) []map[string]any {
	t.Helper()
	var l struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(a.body, &l); err != nil {
		t.Fatalf("list %s: %v", a, err)
	}
	return l.Items
}

// checkConverted checks that obj is a v1alpha1 object converted from the
// served one, and returns its name.
func (e *advEnv) checkConverted(t *testing.T, obj map[string]any) string {
	t.Helper()
	name, _ := field(obj, "metadata", "name").(string)
	if obj["apiVersion"] != "myapps.example.com/v1alpha1" || field(obj, "spec", "config", "legacyTimeout") != float64(40) {
		t.Errorf("%s is not the converted v1alpha1 object: %.300v", name, obj)
	}
	return name
}

// watchAll watches path as who until an ADDED event of each name arrived;
// an ERROR event or the end of the stream before that fails the test.
func (e *advEnv) watchAll(t *testing.T, who principal, proto, path string, names []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.proxy.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if who.token != "" {
		req.Header.Set("Authorization", "Bearer "+who.token)
	}
	resp, err := e.client(who, proto, false).Do(req)
	if err != nil {
		t.Fatalf("watch as %s over %s: %v", who.name, protoName(proto), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		t.Errorf("watch as %s over %s: %d %s", who.name, protoName(proto), resp.StatusCode, b)
		return
	}
	seen := map[string]bool{}
	dec := json.NewDecoder(resp.Body)
	for len(seen) < len(names) {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			t.Errorf("watch as %s over %s ended after %d of %d objects: %v", who.name, protoName(proto), len(seen), len(names), err)
			return
		}
		if ev.Type != "ADDED" {
			t.Errorf("watch as %s over %s: %s event %.300v", who.name, protoName(proto), ev.Type, ev.Object)
			return
		}
		seen[e.checkConverted(t, ev.Object)] = true
	}
}

// debugPaths are the proxy's own endpoints besides /healthz.
var debugPaths = []string{"/metrics", "/debug/capabilities", "/debug/clients", "/debug/pprof/", "/debug/pprof/goroutine?debug=2", "/debug/pprof/heap"}

// testMetricsAndDebug: the proxy's own /metrics and /debug endpoints are
// not reachable through the API port (there, kube-apiserver answers for
// the client), and the metrics listener as deploy/ runs it, off loopback,
// answers 401 to clients without credentials and 403 to those the cluster
// does not allow the path.
func (e *advEnv) testMetricsAndDebug(t *testing.T) {
	for _, who := range []principal{e.anonymous, e.mallory, e.malloryToken} {
		for _, path := range debugPaths {
			want := e.sendDirect(t, who, "h2", http.MethodGet, path, nil, nil)
			for _, proto := range protocols {
				got := e.send(t, who, proto, http.MethodGet, path, nil, nil)
				if got.code != want.code || bytes.Contains(got.body, []byte("mvpctl_")) || bytes.Contains(got.body, []byte(`"backends"`)) {
					t.Errorf("%s GET %s over %s: %s; kube-apiserver answers %s", who.name, path, protoName(proto), got, want)
				}
			}
		}
	}
	t.Run("MetricsListenerOffLoopback", e.testMetricsListener)
}

// deployMetricsListen is the --metrics-listen of deploy/'s Deployment.
func deployMetricsListen(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/base/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if _, v, ok := strings.Cut(line, "--metrics-listen="); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("deploy/base/deployment.yaml has no --metrics-listen")
	return ""
}

// loopbackName is a host name other than localhost that resolves to
// loopback addresses only. The proxy takes any name but localhost for an
// address off loopback (what a name resolves to may change), so a metrics
// listener on it is protected as off loopback while its socket stays on
// loopback, as the tests' sockets must.
func loopbackName(t *testing.T) string {
	t.Helper()
	host, _ := os.Hostname()
	for _, name := range []string{host, "ip6-localhost", "ip6-loopback", "localhost.localdomain", "localhost6", "localhost4"} {
		if name == "" || name == "localhost" {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, name)
		cancel()
		loopback := err == nil && len(addrs) > 0
		for _, a := range addrs {
			loopback = loopback && a.IP.IsLoopback()
		}
		if loopback {
			return name
		}
	}
	t.Skip("no host name other than localhost resolves to loopback addresses only here")
	return ""
}

// testMetricsListener runs a proxy with deploy/'s metrics configuration
// (its serving certificate, the client CA, the proxy's credentials for
// TokenReview and SubjectAccessReview, and deploy/'s RBAC for readers) on a
// loopback socket the proxy takes for one off loopback.
func (e *advEnv) testMetricsListener(t *testing.T) {
	if host, _, err := net.SplitHostPort(deployMetricsListen(t)); err != nil || host == "localhost" || net.ParseIP(host).IsLoopback() {
		t.Fatalf("deploy/ serves metrics on loopback (%q, %v): this test reproduces its configuration off loopback", host, err)
	}
	name := loopbackName(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	direct := e.cp.Server(1).Kubeconfig
	if out, err := kubectl(t, ctx, direct, "apply", "-f", "../../deploy/base/rbac.yaml"); err != nil {
		t.Fatalf("applying deploy/base/rbac.yaml: %v\n%s", err, out)
	}
	cs := kubernetes.NewForConfigOrDie(e.cp.Server(1).RESTConfig())
	if _, err := cs.CoreV1().ServiceAccounts(advNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t, ctx, direct, "create", "clusterrolebinding", "adversarial-scraper", "--clusterrole=mvpctl-proxy-metrics-reader", "--serviceaccount="+advNamespace+":scraper"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tok, err := cs.CoreV1().ServiceAccounts(advNamespace).CreateToken(ctx, "scraper", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scraper := principal{name: "scraper (metrics reader token)", token: tok.Status.Token}
	// The role grants the servers' own /metrics too: once the scraper reads
	// it, the binding is in the server's RBAC cache.
	e.await(t, ctx, "the scraper may get /metrics", func() error {
		return is200(e.sendDirect(t, scraper, "h2", http.MethodGet, "/metrics", nil, nil))
	})

	cert, key := servingCert(t)
	port, mport := freePort(t), freePort(t)
	p := &proxyProcess{bin: mvpctl(t), args: []string{"proxy",
		"--listen", "127.0.0.1:" + strconv.Itoa(port),
		"--metrics-listen", net.JoinHostPort(name, strconv.Itoa(mport)),
		"--tls-cert-file", cert, "--tls-private-key-file", key,
		"--client-ca-file", e.cp.PKI.CAFile,
		"--kubeconfig", direct, "--context", "admin",
		"--backend", e.cp.Server(1).URL, "--profiling", "--log-format", "json",
	}}
	if p.logf, err = os.Create(filepath.Join(t.TempDir(), "metrics-proxy.log")); err != nil {
		t.Fatal(err)
	}
	p.start(t)
	defer func() {
		p.stop(10 * time.Second)
		p.logf.Close()
	}()

	certPEM, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := certutil.NewPoolFromBytes(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	get := func(who principal, path string) (answer, error) {
		tc := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
		if who.cert != nil {
			tc.Certificates = []tls.Certificate{*who.cert}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 30 * time.Second}
		defer c.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(name, strconv.Itoa(mport))+path, nil)
		if err != nil {
			return answer{}, err
		}
		if who.token != "" {
			req.Header.Set("Authorization", "Bearer "+who.token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return answer{code: resp.StatusCode, body: b}, err
	}
	e.await(t, ctx, "the metrics listener on "+name+" serves /healthz over TLS", func() error {
		a, err := get(e.anonymous, "/healthz")
		if err != nil {
			return err
		}
		return is200(a)
	})
	for _, c := range []struct {
		who  principal
		want func(path string) int
	}{
		{e.anonymous, func(string) int { return http.StatusUnauthorized }},
		{e.mallory, func(string) int { return http.StatusForbidden }},
		{e.malloryToken, func(string) int { return http.StatusForbidden }},
		{scraper, func(path string) int {
			if path == "/metrics" {
				return http.StatusOK
			}
			return http.StatusForbidden
		}},
		{e.admin, func(string) int { return http.StatusOK }},
	} {
		for _, path := range debugPaths {
			a, err := get(c.who, path)
			if err != nil || a.code != c.want(path) {
				t.Errorf("%s GET %s on the metrics listener: %s %v, want %d", c.who.name, path, a, err, c.want(path))
			}
		}
	}
}

// slowOutcome is how one slow client's request ended.
type slowOutcome struct {
	who, path string
	sent      bool // the headers and the first bytes went out
	answer    answer
	reset     http2.ErrCode
	err       error
}

// testSlowBodies: 200 connections, half of them without credentials, each
// declare a 1 MiB body and send a few bytes of it. While they hold on, the
// admin's requests succeed; each slow request ends in 408 or 429 from the
// proxy, or kube-apiserver's answer for its client, or the proxy closing
// the connection, within the bound.
func (e *advEnv) testSlowBodies(t *testing.T) {
	const conns, h2conns = 200, 50
	paths := []string{crEmulated, "/api/v1/namespaces/" + advNamespace + "/configmaps"}
	served := map[string]string{crEmulated: crServed}
	whos := []principal{e.anonymous, e.mallory}
	// kube-apiserver's answers for each client and path, with a body.
	want := map[string]int{}
	for _, who := range whos {
		for _, path := range paths {
			direct := path
			if s, ok := served[path]; ok {
				direct = s
			}
			a := e.sendDirect(t, who, "h2", http.MethodPost, direct, jsonBody, []byte(`{}`))
			want[who.name+" "+path] = a.code
		}
	}
	// The admin's connections are open before the attack.
	e.createServed(t, "steady", nil, nil)
	adminPaths := []string{crEmulated + "/steady", "/api/v1/namespaces/" + advNamespace + "/configmaps"}
	for _, proto := range protocols {
		if a := e.send(t, e.admin, proto, http.MethodGet, adminPaths[0], nil, nil); a.code != http.StatusOK {
			t.Fatalf("admin GET before the attack: %s", a)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sent := make(chan struct{}, conns)
	results := make(chan slowOutcome, conns)
	for i := range conns {
		who, path := whos[i%2], paths[(i/2)%2]
		go func() { results <- e.slowBody(ctx, who, path, i < h2conns, sent) }()
	}
	var outcomes []slowOutcome
	for started := 0; started < conns; {
		select {
		case <-sent:
			started++
		case o := <-results:
			outcomes = append(outcomes, o)
			if !o.sent {
				started++
			}
		case <-ctx.Done():
			t.Fatalf("the slow clients did not start within the bound (%d answered)", len(outcomes))
		}
	}
	for _, proto := range protocols {
		for _, path := range adminPaths {
			if a := e.send(t, e.admin, proto, http.MethodGet, path, nil, nil); a.code != http.StatusOK {
				t.Errorf("admin GET %s over %s during the attack: %s", path, protoName(proto), a)
			}
		}
	}
	for len(outcomes) < conns {
		outcomes = append(outcomes, <-results)
	}
	tally := map[string]int{}
	for _, o := range outcomes {
		kind := strconv.Itoa(o.answer.code)
		switch {
		case o.err != nil && errors.Is(o.err, os.ErrDeadlineExceeded):
			kind = "no answer within the bound"
		case o.err != nil && (errors.Is(o.err, io.EOF) || errors.Is(o.err, io.ErrUnexpectedEOF) || errors.Is(o.err, syscall.ECONNRESET) || errors.Is(o.err, syscall.EPIPE) || errors.As(o.err, new(http2.GoAwayError))):
			kind = "closed by the proxy"
		case o.err != nil:
			kind = "error " + o.err.Error()
		case o.reset != 0:
			kind = "stream reset " + o.reset.String()
		}
		tally[kind]++
		switch {
		case kind == "closed by the proxy", o.answer.code == http.StatusRequestTimeout, o.answer.code == http.StatusTooManyRequests:
		case o.err == nil && o.reset == 0 && o.answer.code == want[o.who+" "+o.path]:
		default:
			if tally[kind] == 1 {
				t.Errorf("slow body of %s to %s: %s %s %v", o.who, o.path, kind, o.answer, o.err)
			}
		}
	}
	t.Logf("%d slow bodies (%d over HTTP/2): %v; kube-apiserver's answers with a body: %v", conns, h2conns, tally, want)
}

// slowBody sends a POST of path as who that declares a 1 MiB body and sends
// 16 bytes of it, signals sent, and waits for the answer.
func (e *advEnv) slowBody(ctx context.Context, who principal, path string, h2 bool, sent chan<- struct{}) slowOutcome {
	const declared = 1 << 20
	first := []byte(`{"apiVersion":"v`)
	o := slowOutcome{who: who.name, path: path}
	tc := e.tlsConfig(who, false)
	if h2 {
		c, err := dialH2(ctx, e.proxyAddr(), tc)
		if err != nil {
			o.err = err
			return o
		}
		defer c.Close()
		id, err := c.open(http.MethodPost, path, [][2]string{{"content-type", "application/json"}, {"content-length", strconv.Itoa(declared)}}, first, false)
		if err != nil {
			o.err = err
			return o
		}
		o.sent = true
		sent <- struct{}{}
		got, err := c.await(id)
		o.answer, o.reset, o.err = got.answer, got.reset, err
		return o
	}
	tc.NextProtos = []string{"http/1.1"}
	d := tls.Dialer{Config: tc}
	conn, err := d.DialContext(ctx, "tcp", e.proxyAddr())
	if err != nil {
		o.err = err
		return o
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	conn.SetDeadline(dl)
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, declared, first)
	if _, err := io.WriteString(conn, req); err != nil {
		o.err = err
		return o
	}
	o.sent = true
	sent <- struct{}{}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	o.answer = answer{code: resp.StatusCode, body: b}
	return o
}

// h2Conn is a client HTTP/2 connection driven frame by frame, to send what
// Go's HTTP/2 client refuses to (connection-specific headers) and bodies
// that stop half way.
type h2Conn struct {
	conn *tls.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
	next uint32
}

// h2Answer is a stream's response, or how it was reset.
type h2Answer struct {
	answer
	reset http2.ErrCode
}

func (a h2Answer) String() string {
	if a.reset != 0 {
		return "stream reset " + a.reset.String()
	}
	return a.answer.String()
}

// dialH2 opens an HTTP/2 connection to addr; ctx's deadline bounds it
// whole.
func dialH2(ctx context.Context, addr string, tc *tls.Config) (*h2Conn, error) {
	tc = tc.Clone()
	tc.NextProtos = []string{"h2"}
	d := tls.Dialer{Config: tc}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := nc.(*tls.Conn)
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		conn.Close()
		return nil, fmt.Errorf("negotiated %q, not h2", p)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c := &h2Conn{conn: conn, fr: http2.NewFramer(conn, conn), next: 1}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.hbuf)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		conn.Close()
		return nil, err
	}
	if err := c.fr.WriteSettings(); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *h2Conn) Close() error { return c.conn.Close() }

// open starts a stream: its headers (after the pseudo-headers), then body
// if any; end ends the stream.
func (c *h2Conn) open(method, path string, fields [][2]string, body []byte, end bool) (uint32, error) {
	id := c.next
	c.next += 2
	c.hbuf.Reset()
	pseudo := [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", path}}
	for _, f := range append(pseudo, fields...) {
		if err := c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			return 0, err
		}
	}
	noBody := len(body) == 0
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndStream: noBody && end, EndHeaders: true}); err != nil {
		return 0, err
	}
	if !noBody {
		return id, c.fr.WriteData(id, end, body)
	}
	return id, nil
}

// await reads frames until stream id is answered (its headers and up to
// 64 KiB of body) or reset, acknowledging SETTINGS and PINGs.
func (c *h2Conn) await(id uint32) (h2Answer, error) {
	var a h2Answer
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return a, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := c.fr.WriteSettingsAck(); err != nil {
					return a, err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := c.fr.WritePing(true, f.Data); err != nil {
					return a, err
				}
			}
		case *http2.GoAwayFrame:
			return a, http2.GoAwayError{LastStreamID: f.LastStreamID, ErrCode: f.ErrCode, DebugData: string(f.DebugData())}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				if a.code != 0 {
					return a, nil // answered, then the unread request body reset
				}
				a.reset = f.ErrCode
				return a, nil
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				a.code, _ = strconv.Atoi(f.PseudoValue("status"))
				if f.StreamEnded() {
					return a, nil
				}
			}
		case *http2.DataFrame:
			if f.StreamID == id {
				if len(a.body) < 64<<10 {
					a.body = append(a.body, f.Data()...)
				}
				if f.StreamEnded() {
					return a, nil
				}
			}
		}
	}
}
