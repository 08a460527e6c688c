package proxy_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// labelsTableSize is the proxy's --usage-table-size in
// TestProxy_BoundedLabelsAndUsage: three tenants at their quota of 100
// entries fill it.
const labelsTableSize = 300

// TestProxy_BoundedLabelsAndUsage: in front of a real v1.36 control plane,
// with --builtin-rules emulating policy/v1beta1, clients without
// credentials send invented methods and long unique paths, and three
// certificate users allowed to list PodDisruptionBudgets rotate their
// User-Agent on every request, invent methods and subresources. After a
// first round of each, 150 more rounds add no series to /metrics;
// /debug/clients stays within its size, each tenant within its quota, and
// keeps the operator's one entry made before the flood; `mvpctl rules
// usage` reads the full table.
func TestProxy_BoundedLabelsAndUsage(t *testing.T) {
	began := time.Now()
	cp := framework.Start(t, framework.Options{Versions: []string{newVersion}})
	p := startProxy(t, cp, "--builtin-rules", "--refresh-interval", "2s", "--usage-table-size", fmt.Sprint(labelsTableSize))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	cs := kubernetes.NewForConfigOrDie(cp.Server(0).RESTConfig())
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "labels-pdb-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list"},
	}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "labels-pdb-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "mvp:tenants"}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	pool, err := certutil.NewPoolFromBytes(p.CAData)
	if err != nil {
		t.Fatal(err)
	}
	client := func(cert *tls.Certificate) *http.Client {
		cfg := &tls.Config{RootCAs: pool}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
	}
	anonymous := client(nil)
	var tenants []*http.Client
	for i := range 3 {
		cert, err := cp.PKI.IssueClientCert(fmt.Sprintf("tenant-%d", i), "mvp:tenants")
		if err != nil {
			t.Fatal(err)
		}
		tenants = append(tenants, client(&cert.Cert))
	}
	send := func(c *http.Client, method, path, agent, token string) int {
		req, err := http.NewRequestWithContext(ctx, method, p.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", agent)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("%s %.80s: %v", method, path, err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const pdbs = "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets"
	// The binding reaches the server's RBAC cache, and the proxy emulates
	// policy/v1beta1, within moments: a bounded wait.
	for send(tenants[0], http.MethodGet, pdbs, "wait", "") != http.StatusOK {
		select {
		case <-ctx.Done():
			t.Fatal("tenant-0 cannot list policy/v1beta1 PodDisruptionBudgets through the proxy")
		case <-time.After(200 * time.Millisecond):
		}
	}
	// The operator's client, before the flood.
	const operatorAgent = "kubectl/v1.36.3 (operator)"
	if code := send(anonymous, http.MethodGet, pdbs, operatorAgent, cp.PKI.Token); code != http.StatusOK {
		t.Fatalf("the operator's list: %d", code)
	}

	long := strings.Repeat("x", 2000)
	round := func(i int) {
		var wg sync.WaitGroup
		wg.Go(func() {
			send(anonymous, fmt.Sprintf("FROB%d", i), fmt.Sprintf("/api/v1/namespaces/default/%s%d", long, i), "anon", "")
			send(anonymous, fmt.Sprintf("FROB%d", i), "/version", "anon", "")
			send(anonymous, http.MethodGet, fmt.Sprintf("%s/x/madeup%d", pdbs, i), "anon", "")
			send(anonymous, http.MethodGet, fmt.Sprintf("/apis/made.up%d/v%d/things%s", i, i, long), "anon", "")
			send(anonymous, http.MethodGet, pdbs, "anon", fmt.Sprintf("forged-%d", i))
		})
		for j, c := range tenants {
			wg.Go(func() {
				agent := fmt.Sprintf("rotating/%d/%d", j, i)
				if code := send(c, http.MethodGet, pdbs, agent, ""); code != http.StatusOK {
					t.Errorf("tenant-%d's list: %d", j, code)
				}
				send(c, fmt.Sprintf("FROB%d", i), pdbs, agent, "")
				send(c, fmt.Sprintf("FROB%d", i), "/version", agent, "")
				send(c, http.MethodGet, fmt.Sprintf("%s/x/madeup%d", pdbs, i), agent, "")
				send(c, http.MethodGet, fmt.Sprintf("/api/v1/namespaces/default/%s%d", long, i), agent, "")
			})
		}
		wg.Wait()
	}
	round(0)
	before := proxySeries(t, p)
	const rounds = 150
	for i := 1; i <= rounds; i++ {
		round(i)
	}
	after := proxySeries(t, p)
	// The unique methods, paths and user agents add nothing; a handful of
	// series may come from the proxy's own state (a retried request).
	if len(after) > len(before)+10 {
		for s := range after {
			if !before[s] {
				t.Errorf("new series: %.200s", s)
			}
		}
		t.Errorf("%d series after %d rounds, %d after the first", len(after), rounds, len(before))
	}
	for s := range after {
		if strings.Contains(s, "FROB") || strings.Contains(s, "frob") || strings.Contains(s, "madeup") || strings.Contains(s, "made.up") ||
			strings.Contains(s, "xxxxxxxx") || strings.Contains(s, "rotating") {
			t.Errorf("a series carries a client's value: %.200s", s)
		}
	}
	text := p.metricsText(t)
	if !strings.Contains(text, `mvpctl_proxy_unauthenticated_requests_total{code="4xx"}`) {
		t.Error("/metrics lacks mvpctl_proxy_unauthenticated_requests_total")
	}

	entries := clientsOf(t, p)
	byUser := map[string]int{}
	operator := false
	for _, e := range entries {
		byUser[e.User]++
		operator = operator || e.User == framework.TokenUser && e.UserAgent == operatorAgent
	}
	if len(entries) != labelsTableSize || !operator {
		t.Errorf("/debug/clients: %d entries (want %d, full), the operator's kept: %v; by user %v", len(entries), labelsTableSize, operator, byUser)
	}
	for i := range tenants {
		if n := byUser[fmt.Sprintf("tenant-%d", i)]; n > 100 {
			t.Errorf("tenant-%d holds %d entries, more than its quota of 100", i, n)
		}
	}

	out, err := exec.CommandContext(ctx, mvpctl(t), "rules", "usage", "--url", p.MetricsURL, "-o", "json").Output()
	if err != nil {
		t.Fatalf("mvpctl rules usage: %v", err)
	}
	var report struct {
		Capacity, PerUser int
		Clients           []clientsEntry
	}
	if err := json.Unmarshal(out, &report); err != nil || len(report.Clients) != labelsTableSize || report.Capacity != labelsTableSize || report.PerUser != 100 {
		t.Errorf("mvpctl rules usage -o json: %v, %d entries, capacity %d, per user %d", err, len(report.Clients), report.Capacity, report.PerUser)
	}
	t.Logf("%d series before the flood, %d after %d rounds (%d requests); /debug/clients %v; %s in all",
		len(before), len(after), rounds, rounds*(5+5*len(tenants)), byUser, time.Since(began).Round(time.Second))
}

// proxySeries is the set of the proxy's own series in /metrics.
func proxySeries(t *testing.T, p *proxyProcess) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for line := range strings.Lines(p.metricsText(t)) {
		if !strings.HasPrefix(line, "mvpctl_proxy_") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}
