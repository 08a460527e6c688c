package proxy

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
)

// EndpointSliceBackends lists the kube-apiservers of a cluster from the
// EndpointSlices of the default/kubernetes Service (kept by the apiservers'
// endpoint reconciler), as https URLs, sorted. Endpoints marked not ready are
// left out.
func EndpointSliceBackends(ctx context.Context, client discoveryclient.EndpointSlicesGetter) ([]string, error) {
	list, err := client.EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kubernetes",
	})
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, s := range list.Items {
		port := 0
		for _, p := range s.Ports {
			if p.Port != nil && (port == 0 || p.Name != nil && *p.Name == "https") {
				port = int(*p.Port)
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				u := (&url.URL{Scheme: "https", Host: net.JoinHostPort(a, strconv.Itoa(port))}).String()
				if !slices.Contains(urls, u) {
					urls = append(urls, u)
				}
			}
		}
	}
	slices.Sort(urls)
	return urls, nil
}

// FollowEndpointSlices keeps the proxy's backends equal to static plus the
// apiservers listed by [EndpointSliceBackends], read every interval until
// ctx ends; discovered backends get template's TLS and token. A failed read
// keeps the current set. A server that restarts stays a backend while its
// endpoint is gone: the proxy answers 503 rather than forgetting what it
// served, until the reconciler removes the endpoint for good.
func (p *Proxy) FollowEndpointSlices(ctx context.Context, client discoveryclient.EndpointSlicesGetter, template Backend, static []Backend, interval time.Duration) {
	var last []string
	for {
		urls, err := EndpointSliceBackends(ctx, client)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				p.log.Warn("reading the kubernetes EndpointSlices", "error", err)
			}
		case len(urls) > 0 && !slices.Equal(urls, last):
			cfgs := slices.Clone(static)
			for _, raw := range urls {
				if slices.ContainsFunc(static, func(b Backend) bool { return b.URL.String() == raw }) {
					continue
				}
				u, _ := url.Parse(raw)
				b := template
				b.URL, b.Name = u, ""
				cfgs = append(cfgs, b)
			}
			if err := p.SetBackends(cfgs); err != nil {
				p.log.Warn("discovered backends", "error", err)
			} else {
				last = urls
				p.log.Info("backends from EndpointSlices", "urls", urls)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
