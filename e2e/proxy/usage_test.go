package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mvpctl/mvpctl/e2e/framework"
)

// clientsEntry is one entry of the proxy's /debug/clients.
type clientsEntry struct {
	Group, Version, Resource, User, UserAgent string
	Count, Emulated                           uint64
	Verbs                                     map[string]uint64
	LastSeen                                  time.Time
}

// TestProxy_BuiltinRulesUsage: `mvpctl proxy --builtin-rules`, given no
// rules files, in front of a v1.36 control plane serves policy/v1beta1
// PodDisruptionBudgets (removed in v1.25) to kubectl, which creates, gets
// and lists them; /debug/clients and `mvpctl rules usage` then name the
// users (a client certificate and a bearer token) and user agents that
// called policy/v1beta1.
func TestProxy_BuiltinRulesUsage(t *testing.T) {
	cp := framework.Start(t, framework.Options{Versions: []string{newVersion}})
	p := startProxy(t, cp, "--builtin-rules", "--refresh-interval", "2s")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	direct := cp.Server(0).Kubeconfig
	tokenKubeconfig := writeTokenKubeconfig(t, p, cp)

	if out, err := kubectl(t, ctx, p.Kubeconfig, "api-versions"); err != nil || !strings.Contains(out, "policy/v1beta1\n") {
		t.Fatalf("kubectl api-versions through the proxy lacks policy/v1beta1: %v\n%s", err, out)
	}
	const res = "poddisruptionbudgets.v1beta1.policy"
	pdb := "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: default}\nspec:\n  minAvailable: 2\n  selector: {matchLabels: {app: web}}\n"
	if out, err := kubectlIn(t, ctx, nil, pdb, p.Kubeconfig, "create", "-f", "-"); err != nil {
		t.Fatalf("kubectl create policy/v1beta1 through the proxy: %v\n%s", err, out)
	}
	if v1 := getJSON(t, ctx, direct, "poddisruptionbudgets.v1.policy", "web", "-n", "default"); field(v1, "spec", "minAvailable") != float64(2) {
		t.Errorf("stored as policy/v1: %v", v1)
	}
	if old := getJSON(t, ctx, p.Kubeconfig, res, "web", "-n", "default"); old["apiVersion"] != "policy/v1beta1" || field(old, "spec", "minAvailable") != float64(2) {
		t.Errorf("kubectl get %s: %v", res, old)
	}
	out, err := kubectlIn(t, ctx, nil, "", tokenKubeconfig, "get", res, "-n", "default")
	if err != nil || !strings.Contains(out, "web") {
		t.Errorf("kubectl get %s (list) with a token: %v\n%s", res, err, out)
	}
	// Current versions are not counted: the table holds policy/v1beta1 only.
	if out, err := kubectlIn(t, ctx, nil, "", p.Kubeconfig, "get", "poddisruptionbudgets.v1.policy", "-n", "default"); err != nil {
		t.Errorf("kubectl get policy/v1: %v\n%s", err, out)
	}

	entries := clientsOf(t, p)
	byUser := map[string]clientsEntry{}
	for _, e := range entries {
		if e.Group != "policy" || e.Version != "v1beta1" || e.Resource != "poddisruptionbudgets" {
			t.Errorf("/debug/clients has %s/%s %s", e.Group, e.Version, e.Resource)
		}
		if !strings.HasPrefix(e.UserAgent, "kubectl/v1.36.3") || e.Count != e.Emulated {
			t.Errorf("entry %+v: want kubectl's user agent, every request emulated", e)
		}
		prev := byUser[e.User]
		e.Count += prev.Count
		for v, n := range prev.Verbs {
			e.Verbs[v] += n
		}
		byUser[e.User] = e
	}
	admin, token := byUser[framework.AdminUser], byUser[framework.TokenUser]
	if admin.Verbs["create"] != 1 || admin.Verbs["get"] < 1 {
		t.Errorf("%s (client certificate): verbs %v, want a create and a get", framework.AdminUser, admin.Verbs)
	}
	if token.Verbs["list"] < 1 {
		t.Errorf("%s (bearer token): verbs %v, want a list", framework.TokenUser, token.Verbs)
	}
	if len(byUser) != 2 {
		t.Errorf("users %v, want %s and %s", entries, framework.AdminUser, framework.TokenUser)
	}

	// The operator's question, through the command.
	cmd := exec.CommandContext(ctx, mvpctl(t), "rules", "usage", "--url", p.MetricsURL, "--group", "policy", "--version", "v1beta1")
	table, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mvpctl rules usage: %v\n%s", err, table)
	}
	for _, want := range []string{"API VERSION", "policy/v1beta1", framework.AdminUser, framework.TokenUser, "kubectl/v1.36.3"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("mvpctl rules usage lacks %q:\n%s", want, table)
		}
	}
	t.Logf("mvpctl rules usage:\n%s", table)
	if text := p.metricsText(t); !strings.Contains(text, `mvpctl_proxy_old_version_requests_total{emulated="true",group="policy",resource="poddisruptionbudgets",version="v1beta1"}`) {
		t.Error("/metrics lacks mvpctl_proxy_old_version_requests_total for policy/v1beta1")
	}
}

// writeTokenKubeconfig writes a kubeconfig for the proxy with the control
// plane's bearer token as its user, which the proxy passes through.
func writeTokenKubeconfig(t *testing.T, p *proxyProcess, cp *framework.ControlPlane) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.URL, CertificateAuthorityData: p.CAData}
	cfg.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: cp.PKI.Token}
	cfg.Contexts["token"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "token"}
	cfg.CurrentContext = "token"
	path := filepath.Join(t.TempDir(), "token.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientsOf reads the proxy's /debug/clients.
func clientsOf(t *testing.T, p *proxyProcess) []clientsEntry {
	t.Helper()
	resp, err := http.Get(p.MetricsURL + "/debug/clients")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var report struct {
		Capacity int            `json:"capacity"`
		Clients  []clientsEntry `json:"clients"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&report); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/debug/clients: %d %v", resp.StatusCode, err)
	}
	if report.Capacity == 0 || !slices.IsSortedFunc(report.Clients, func(a, b clientsEntry) int { return b.LastSeen.Compare(a.LastSeen) }) {
		t.Errorf("/debug/clients: capacity %d, not sorted by last seen: %+v", report.Capacity, report.Clients)
	}
	return report.Clients
}
