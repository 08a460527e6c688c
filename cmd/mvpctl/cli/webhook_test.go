package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	widgetRules   = "../../../webhook/testdata/widgets-rules.yaml"
	widgetCRD     = "../../../webhook/testdata/widgets-crd.yaml"
	widgetObjects = "../../../webhook/testdata/widgets-objects.yaml"
)

func TestWebhookCheck_ExitCodes(t *testing.T) {
	breaking := writeFile(t, "breaking.yaml", `apiVersion: mvp.k8s.io/v1
kind: TransformationRules
metadata: {name: breaking}
spec:
  apiMigrationRules:
  - {apiGroup: example.com, resource: widgets, kind: Widget, fromVersion: v1alpha1, toVersion: v1beta1,
     transformations: [{path: spec.size, action: rename, targetPath: spec.replicas}]}
  - {apiGroup: example.com, resource: widgets, kind: Widget, fromVersion: v1beta1, toVersion: v1,
     transformations: [{path: metadata.name, action: rename, targetPath: metadata.generateName}]}
`)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--rules", widgetRules, "-f", widgetCRD, "-f", widgetObjects}, exitOK, "1 CRDs, 2 objects checked: 0 findings"},
		{[]string{"--rules", breaking, "-f", widgetCRD, "-f", widgetObjects}, exitFailure, "metadata fields changed"},
		{[]string{"-f", widgetCRD}, exitUsage, ""},
		{[]string{"--rules", widgetRules}, exitUsage, ""},
		{[]string{"--rules", widgetRules, "-f", filepath.Join(t.TempDir(), "missing.yaml")}, exitUsage, ""},
		{[]string{"--rules", widgetRules, "-f", widgetObjects}, exitUsage, ""},
		{[]string{"--rules", writeFile(t, "bad.yaml", "kind: Nope\n"), "-f", widgetCRD}, exitUsage, ""},
	} {
		code, out, errOut := run(t, "", append([]string{"webhook", "check"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%v: exit %d, want %d; stdout %q; stderr %q", tc.args, code, tc.code, out, errOut)
		}
		if strings.Contains(errOut, "goroutine ") {
			t.Errorf("%v: a stack trace: %s", tc.args, errOut)
		}
	}
}

func TestWebhook_UsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--cert-dir", dir},
		{"--rules", widgetRules},
		{"--rules", widgetRules, "--cert-dir", dir, "--tls-cert-file", "a", "--tls-private-key-file", "b"},
		{"--rules", widgetRules, "--cert-dir", dir, "--program-timeout", "0s"},
		{"--rules", widgetRules, "--cert-dir", dir, "--cert-validity", "1s"},
		{"--rules", widgetRules, "--tls-cert-file", "a", "--tls-private-key-file", "b", "--manage-crds"},
		{"--rules", writeFile(t, "bad.yaml", "kind: Nope\n"), "--cert-dir", dir},
	} {
		code, _, errOut := run(t, "", append([]string{"webhook"}, args...)...)
		if code != exitUsage || errOut == "" || strings.Contains(errOut, "goroutine ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// TestWebhook_ServesConversion runs `mvpctl webhook` in-process with a
// certificate directory, converts a review over HTTPS with the CA it
// wrote, and stops it.
func TestWebhook_ServesConversion(t *testing.T) {
	dir := t.TempDir()
	var stderr lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCmd("mvpctl", "mvpctl")
	root.SetArgs([]string{"webhook", "--rules", widgetRules, "--cert-dir", dir, "--tls-san", "127.0.0.1",
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--log-format", "text"})
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	addrRE := regexp.MustCompile(`msg="serving conversion" address=(\S+)`)
	var addr string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != "", nil
	})
	if err != nil {
		t.Fatalf("not serving: %v\n%s", err, stderr.String())
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u1","desiredAPIVersion":"example.com/v1",
		"objects":[{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a","namespace":"ns"},"spec":{"size":2}}]}}`
	resp, err := client.Post("https://"+addr+"/convert", "application/json", bytes.NewBufferString(review))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Response struct {
			UID              string           `json:"uid"`
			ConvertedObjects []map[string]any `json:"convertedObjects"`
			Result           struct{ Status string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Response.UID != "u1" || got.Response.Result.Status != "Success" || len(got.Response.ConvertedObjects) != 1 ||
		got.Response.ConvertedObjects[0]["apiVersion"] != "example.com/v1" {
		t.Errorf("response: %+v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("webhook: %v\n%s", err, stderr.String())
	}
}
