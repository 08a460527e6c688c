package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The proxy's own token can come from a file (a ServiceAccount token, which
// the kubelet rotates); it is sent on the requests made with its identity.
func TestBackend_BearerTokenFile(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := newBackend(Backend{URL: u, BearerTokenFile: file}, testUpstreamLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	resp, err := b.get(t.Context(), "/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "Bearer file-token" {
		t.Errorf("Authorization = %q, want the file's token", got)
	}

	// An explicit token wins over the file.
	b2, err := newBackend(Backend{URL: u, BearerToken: "flag-token", BearerTokenFile: file}, testUpstreamLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.close()
	h := http.Header{}
	b2.setIdentity(h)
	if h.Get("Authorization") != "Bearer flag-token" {
		t.Errorf("with both: Authorization = %q", h.Get("Authorization"))
	}

	_, err = newBackend(Backend{URL: u, BearerTokenFile: filepath.Join(t.TempDir(), "missing")}, testUpstreamLimits)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing token file: %v", err)
	}
}
