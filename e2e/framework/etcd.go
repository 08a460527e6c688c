package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// etcd is the single-member etcd every server of a control plane shares. It
// listens on loopback without TLS.
type etcd struct {
	proc *process
	url  string
}

func startEtcd(ctx context.Context, bin, dir string) (*etcd, error) {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		e, err := tryStartEtcd(ctx, bin, dir, attempt)
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, errAddrInUse) {
			return nil, err
		}
		last = err
	}
	return nil, last
}

func tryStartEtcd(ctx context.Context, bin, dir string, attempt int) (*etcd, error) {
	client, err := freePort()
	if err != nil {
		return nil, err
	}
	peer, err := freePort()
	if err != nil {
		return nil, err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	args := []string{
		"--name=e2e",
		"--data-dir=" + filepath.Join(dir, fmt.Sprintf("etcd-data-%d", attempt)),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=e2e=" + peerURL,
		"--initial-cluster-state=new",
		// Test data need not survive a power cut; fsync dominates the
		// latency of writes on a shared CI disk.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
	p, err := startProcess("etcd", bin, args, filepath.Join(dir, "etcd.log"), "")
	if err != nil {
		return nil, err
	}
	e := &etcd{proc: p, url: clientURL}
	if err := waitHealthy(ctx, p, http.DefaultClient, clientURL+"/health", `"health":"true"`); err != nil {
		p.stop(0)
		return nil, err
	}
	return e, nil
}

// waitHealthy polls url until it answers 200 with a body containing want,
// the process exits or ctx ends.
func waitHealthy(ctx context.Context, p *process, client *http.Client, url, want string) error {
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w (last answer: %s); end of %s:\n%s",
				p.name, url, ctx.Err(), last, p.logPath, p.tail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
