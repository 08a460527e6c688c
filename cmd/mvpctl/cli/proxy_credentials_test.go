package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// writeKubeconfig writes a kubeconfig into a test's directory.
func writeKubeconfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// credentialsOf parses the kubeconfig flags of mvpctl proxy and builds the
// proxy's identity from them.
func credentialsOf(t *testing.T, args ...string) (backendIdentity, error) {
	t.Helper()
	fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
	kube := addKubeconfigFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return backendCredentials(kube)
}

func TestProxyCmd_BackendCredentials(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	withTokenFile := writeKubeconfig(t, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6441", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: `+tokenFile+`}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`)
	t.Run("token file of the kubeconfig is read again", func(t *testing.T) {
		id, err := credentialsOf(t, "--kubeconfig", withTokenFile)
		if err != nil {
			t.Fatal(err)
		}
		if id.backend.BearerTokenFile != tokenFile || id.config.Host != "https://127.0.0.1:6441" || id.user == nil || id.user.TokenFile != tokenFile {
			t.Errorf("token file %q, host %q, user %+v", id.backend.BearerTokenFile, id.config.Host, id.user)
		}
	})
	t.Run("--token wins over the kubeconfig's token file", func(t *testing.T) {
		id, err := credentialsOf(t, "--kubeconfig", withTokenFile, "--token", "flag-token")
		if err != nil {
			t.Fatal(err)
		}
		if id.backend.BearerToken != "flag-token" || id.backend.BearerTokenFile != "" {
			t.Errorf("token %q, token file %q: want the flag's token alone", id.backend.BearerToken, id.backend.BearerTokenFile)
		}
	})
	t.Run("without --kubeconfig, KUBECONFIG is not read", func(t *testing.T) {
		t.Setenv("KUBECONFIG", withTokenFile)
		id, err := credentialsOf(t, "--token", "flag-token", "--insecure-skip-tls-verify")
		if err != nil {
			t.Fatal(err)
		}
		if id.config.Host != "" || id.backend.BearerTokenFile != "" || id.user != nil {
			t.Errorf("host %q, token file %q, user %+v: want nothing of $KUBECONFIG", id.config.Host, id.backend.BearerTokenFile, id.user)
		}
	})
}

// TestProxyCmd_CredentialErrors: what the proxy cannot use as its own
// identity is a one-line usage or input error before it starts.
func TestProxyCmd_CredentialErrors(t *testing.T) {
	execUser := writeKubeconfig(t, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6441"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token, interactiveMode: Never}}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`)
	// Without a server, client-go would take localhost:8080 and, over
	// plain HTTP, drop the user's token.
	usersOnly := writeKubeconfig(t, `apiVersion: v1
kind: Config
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {user: u}}]
current-context: ctx
`)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"exec credentials", []string{"--kubeconfig", execUser}, exitUsage, "exec and auth-provider credentials are not supported for the proxy's identity"},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(t.TempDir(), "none")}, exitUsage, "--kubeconfig:"},
		{"missing context", []string{"--kubeconfig", execUser, "--context", "other"}, exitUsage, `context "other" does not exist`},
		{"no server", []string{"--backend", "https://127.0.0.1:1", "--kubeconfig", usersOnly}, exitUsage, `context "ctx" names no cluster with a server`},
		{"CA and insecure", []string{"--backend", "https://127.0.0.1:1", "--backend-ca", "ca.pem", "--insecure-skip-tls-verify"}, exitUsage, "--backend-ca and --insecure-skip-tls-verify exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(append([]string{"mvpctl", "proxy"}, tt.args...), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
				t.Errorf("exit %d, stderr %q: want exit %d and one line with %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}
