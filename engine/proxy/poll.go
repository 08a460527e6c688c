package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// poll keeps one backend's health and capabilities current until ctx ends.
func (p *Proxy) poll(ctx context.Context, b *backend) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	reported := "" // the not-ready reason last logged
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-b.wake:
			// A request that could not reach the backend took it out of
			// rotation: say why before probing.
			reported = p.reportNotReady(b, reported)
			// Several failed requests wake the poller at once; one probe
			// answers them all.
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		p.probe(ctx, b)
		reported = p.reportNotReady(b, reported)
		next := p.opts.HealthInterval
		if !b.snapshot().ready {
			next /= 4
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// reportNotReady logs, at warn, a backend that is not ready, each time the
// reason changes (the first probe's included): clients get 503s, and the
// log is where an operator looks for why (a refused connection, a
// certificate that does not verify, the HTTP status of /readyz). It returns
// the reason now reported, empty while the backend is ready.
func (p *Proxy) reportNotReady(b *backend, reported string) string {
	st := b.snapshot()
	if st.ready {
		return ""
	}
	if st.lastError == reported {
		return reported
	}
	ver := ""
	if st.versionInfo != nil {
		ver = st.versionInfo.GitVersion
	}
	p.log.Warn("backend not ready", "backend", b.name, "version", ver, "reason", st.lastError)
	return st.lastError
}

// probe checks /readyz and /version and reads discovery when the backend
// just became ready, changed version, was asked to, or its map is older than
// the refresh interval. A backend becomes ready only with fresh
// capabilities: a restarted server may be another version.
func (p *Proxy) probe(ctx context.Context, b *backend) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	old := b.snapshot()
	next := *old

	if err := b.readyz(ctx); err != nil {
		next.ready = false
		next.lastError = err.Error()
		p.publish(b, old, &next)
		return
	}
	info, v, err := b.fetchVersion(ctx)
	if err != nil {
		next.ready = false
		next.lastError = err.Error()
		p.publish(b, old, &next)
		return
	}
	versionChanged := old.versionInfo == nil || old.versionInfo.GitVersion != info.GitVersion
	next.versionInfo, next.version = info, v
	refresh := b.refresh.Swap(false)
	if !old.ready || versionChanged || refresh || old.caps == nil || time.Since(old.caps.fetched) >= p.opts.RefreshInterval {
		caps, err := b.fetchCapabilities(ctx)
		if err != nil {
			if !old.ready || versionChanged {
				next.ready = false
				next.lastError = "reading discovery: " + err.Error()
				p.publish(b, old, &next)
				return
			}
			// A ready backend whose refresh failed keeps its last map.
			p.log.Warn("discovery refresh failed", "backend", b.name, "error", err)
			b.refresh.Store(refresh)
		} else {
			next.caps = caps
		}
	}
	if !old.ready {
		next.readySince = time.Now()
	}
	next.ready = true
	next.lastError = ""
	p.publish(b, old, &next)
}

// publish stores the new state unless a request marked the backend down in
// the meantime, in which case the next probe decides. Another probe that
// published first (a poll racing an on-demand probe) is not such a mark.
func (p *Proxy) publish(b *backend, old, next *backendState) {
	if !b.state.CompareAndSwap(old, next) {
		cur := b.snapshot()
		merged := *next
		if !cur.ready {
			merged.ready = false
			merged.lastError = cur.lastError
		}
		if !b.state.CompareAndSwap(cur, &merged) {
			return
		}
		next = &merged
	}
	if old.ready != next.ready {
		ver := ""
		if next.versionInfo != nil {
			ver = next.versionInfo.GitVersion
		}
		if next.ready {
			p.log.Info("backend ready", "backend", b.name, "version", ver, "aggregatedDiscovery", next.caps != nil && next.caps.aggregated)
		}
	}
	if next.caps != old.caps {
		p.disc.invalidate()
	}
}

func (b *backend) readyz(ctx context.Context) error {
	resp, err := b.get(ctx, "/readyz", "", nil)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: HTTP %d: %s", resp.StatusCode, truncate(body, 300))
	}
	return nil
}
