package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mvpctl/mvpctl/engine/proxy"
)

// pdbBackend is a TLS server that answers like a v1.36 kube-apiserver
// serving policy/v1 PodDisruptionBudgets only (policy/v1beta1 is gone), with
// one object, default/x, and SelfSubjectReviews naming the bearer token's
// user ("alice" for alice-token).
func pdbBackend(t *testing.T) *httptest.Server {
	t.Helper()
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/readyz":
			io.WriteString(w, "ok")
		case "/version":
			io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
		case "/api":
			io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case "/api/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[]}`)
		case "/apis":
			io.WriteString(w, `{"kind":"APIGroupList","groups":[{"name":"policy","versions":[{"groupVersion":"policy/v1","version":"v1"}],"preferredVersion":{"groupVersion":"policy/v1","version":"v1"}}]}`)
		case "/apis/policy/v1":
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"policy/v1","resources":[{"name":"poddisruptionbudgets","singularName":"poddisruptionbudget","namespaced":true,"kind":"PodDisruptionBudget","verbs":["get","list"]}]}`)
		case "/apis/policy/v1/namespaces/default/poddisruptionbudgets/x":
			io.WriteString(w, `{"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"name":"x","namespace":"default"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}}`)
		case "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			if r.Header.Get("Authorization") != "Bearer alice-token" {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":401}`)
				return
			}
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"alice"}}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(backend.Close)
	return backend
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// mvpctl proxy --builtin-rules serves policy/v1beta1 from a server that
// has only policy/v1, and `mvpctl rules usage` reads from its
// /debug/clients who called it.
func TestProxyCmd_BuiltinRulesAndRulesUsage(t *testing.T) {
	backend := pdbBackend(t)
	metrics := freeLoopbackAddr(t)
	run := startProxyCmd(t, "--kubeconfig", backendKubeconfig(t, backend, "alice-token"), "--health-interval", "50ms",
		"--builtin-rules", "--metrics-listen", metrics)
	host, tr, token := run.client(t)
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, host+"/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets/x", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("User-Agent", "old-operator/0.9")
		resp, err := tr.RoundTrip(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			code, body = resp.StatusCode, string(b)
			if code == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy/v1beta1 through the proxy: %d %s %v; stderr: %s", code, body, err, run.stderr)
		}
	}
	if !strings.Contains(body, `"apiVersion":"policy/v1beta1"`) {
		t.Errorf("not converted: %s", body)
	}

	var stdout, stderr bytes.Buffer
	if code := Run([]string{"mvpctl", "rules", "usage", "--url", "http://" + metrics}, &stdout, &stderr); code != 0 {
		t.Fatalf("rules usage: exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "API VERSION") ||
		strings.Join(strings.Fields(lines[1])[:7], " ") != "policy/v1beta1 poddisruptionbudgets alice old-operator/0.9 1 1 get=1" {
		t.Errorf("rules usage:\n%s", stdout.String())
	}

	stdout.Reset()
	if code := Run([]string{"mvpctl", "rules", "usage", "--url", "http://" + metrics + "/debug/clients", "--group", "policy", "--version", "v1beta1", "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("rules usage -o json: exit %d: %s", code, stderr.String())
	}
	var report proxy.ClientsReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil || len(report.Clients) != 1 || report.Clients[0].User != "alice" || report.Capacity != proxy.DefaultUsageTableSize {
		t.Errorf("rules usage -o json: %v\n%s", err, stdout.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := Run([]string{"mvpctl", "rules", "usage", "--url", "http://" + metrics, "--group", "", "--version", "v1beta1"}, &stdout, &stderr); code != 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "No clients") {
		t.Errorf("core group filter: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// Bad flags and an unreachable proxy are one line each, exit 2.
func TestRulesUsage_Errors(t *testing.T) {
	closed := freeLoopbackAddr(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rules", "usage", "-o", "wide"}, `--output "wide": want text, json or yaml`},
		{[]string{"rules", "usage", "--url", "http://10.0.0.1:9464"}, "off loopback the proxy serves /debug/clients over HTTPS only"},
		{[]string{"rules", "usage", "--url", "ftp://127.0.0.1:9464"}, "want http://127.0.0.1:PORT"},
		{[]string{"rules", "usage", "--url", "https://127.0.0.1:9464", "--server", "https://x"}, "give the proxy's address with --url"},
		{[]string{"rules", "usage", "--url", "http://" + closed}, "was refused; is --url the proxy's --metrics-listen address?"},
		{[]string{"proxy", "--backend", "https://127.0.0.1:1", "--usage-table-size", "-1"}, "--usage-table-size must not be negative"},
		{[]string{"proxy", "--backend", "https://127.0.0.1:1", "--usage-table-size", "100001"}, "--usage-table-size 100001: at most 100000"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(append([]string{"mvpctl"}, tc.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}

// A refusal by the proxy is the proxy's message, exit 1; text output
// quotes what does not print.
func TestRulesUsage_RefusalAndHostileText(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("credentials sent over plain HTTP: %q", r.Header.Get("Authorization"))
		}
		if r.URL.Query().Get("deny") != "" || r.URL.Path != "/debug/clients" {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"bob\" cannot get path \"/debug/clients\"","reason":"Forbidden","code":403}`)
			return
		}
		io.WriteString(w, `{"capacity":5,"evicted":3,"clients":[{"group":"policy","version":"v1beta1","resource":"poddisruptionbudgets","user":"eve\u001b[2J","userAgent":"a\tb","count":1,"emulated":0,"verbs":{"get":1},"firstSeen":"2026-01-01T00:00:00Z","lastSeen":"2026-01-01T00:00:00Z"}]}`)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"mvpctl", "rules", "usage", "--url", srv.URL + "/other", "--token", "secret"}, &stdout, &stderr); code != exitFailure ||
		!strings.Contains(stderr.String(), `HTTP 403: forbidden: User "bob" cannot get path "/debug/clients" (bind the user to the ClusterRole mvpctl-proxy-debug-reader)`) {
		t.Errorf("refusal: exit %d, stderr %q", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run([]string{"mvpctl", "rules", "usage", "--url", srv.URL, "--token", "secret"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); strings.ContainsAny(out, "\x1b\t") || !strings.Contains(out, `"eve\x1b[2J"`) || !strings.Contains(out, `"a\tb"`) {
		t.Errorf("text output:\n%q", out)
	}
	if !strings.Contains(stderr.String(), "3 less recently seen entries were dropped") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// A full table of the largest size, every entry at its largest (each string
// at its bound, escaping to twice its bytes; every verb counted), is read
// whole: the report fits the command's cap.
func TestRulesUsage_ReadsAFullTable(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a report of hundreds of MiB")
	}
	verbs := map[string]uint64{}
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy", "other"} {
		verbs[v] = math.MaxUint64
	}
	at := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", -(23*3600+59*60)))
	entry := proxy.ClientUsage{
		Group: strings.Repeat(`"`, 253), Version: strings.Repeat(`\`, 63), Resource: strings.Repeat(`"`, 127),
		UserAgent: strings.Repeat(`\`, 256), Count: math.MaxUint64, Emulated: math.MaxUint64, Verbs: verbs, FirstSeen: at, LastSeen: at,
	}
	report := proxy.ClientsReport{Capacity: proxy.MaxUsageTableSize, PerUser: 100, Evicted: math.MaxUint64}
	users := strings.Repeat(`"`, 512-8)
	for i := range proxy.MaxUsageTableSize {
		e := entry
		e.User = fmt.Sprintf("%08d", i) + users
		report.Clients = append(report.Clients, e)
	}
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{w: w}
		if err := proxy.WriteClients(cw, report); err != nil {
			t.Error(err)
		}
		served.Store(cw.n)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	want := report.Clients[proxy.MaxUsageTableSize-1].User
	if code := Run([]string{"mvpctl", "rules", "usage", "--url", srv.URL, "--user-name", want}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := served.Load(); n > proxy.MaxClientsReportBytes || n < proxy.MaxClientsReportBytes/2 {
		t.Errorf("served %d bytes; the cap is %d", n, proxy.MaxClientsReportBytes)
	}
	if !strings.Contains(stdout.String(), "00099999") || strings.Count(stdout.String(), "\n") != 2 {
		t.Errorf("stdout %.300q", stdout.String())
	}
	t.Logf("a full table of %d entries: %d bytes (cap %d)", proxy.MaxUsageTableSize, served.Load(), proxy.MaxClientsReportBytes)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
