package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestProxyCmd_NonLoopbackListenNeedsCertificate: the self-signed serving
// certificate is only for loopback; any other address (all interfaces
// included) without --tls-cert-file and --tls-private-key-file is refused
// before anything listens.
func TestProxyCmd_NonLoopbackListenNeedsCertificate(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.10:6443", "[2001:db8::1]:6443", "example.com:6443"} {
		t.Run(listen, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run([]string{"mvpctl", "proxy", "--backend", "https://127.0.0.1:1", "--listen", listen}, &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr: %s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), "listening on "+listen+" needs a serving certificate") {
				t.Errorf("stderr %q does not say that %s needs a serving certificate", stderr.String(), listen)
			}
		})
	}
}
