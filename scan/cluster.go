package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mvpctl/mvpctl/rules/builtin"
)

// LastAppliedAnnotation is where kubectl apply (client-side) keeps the
// manifest it applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

const (
	// pageSize is the limit of each LIST request.
	pageSize = 500
	// maxPages bounds the pages of one LIST, against a server that never
	// stops handing out continue tokens.
	maxPages = 20000
	// maxLastApplied bounds the annotation decoded (the apiserver bounds all
	// annotations of an object to 256 KiB together).
	maxLastApplied = 1 << 20
)

// scanCluster reads what was applied to the cluster of a kubeconfig context
// (the default loading rules: $KUBECONFIG or ~/.kube/config; "" is the
// current context): the last-applied annotation of every object whose kind
// has a deprecated or removed version, and the deployed revision of every
// Helm release.
func scanCluster(ctx context.Context, contextName string, chk checker, c *collector) {
	input := ClusterPrefix + contextName
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{CurrentContext: contextName})
	if contextName == "" {
		if raw, err := loader.RawConfig(); err == nil {
			contextName = raw.CurrentContext
		}
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		c.add(nil, 0, []error{&InputError{Input: input, Err: fmt.Errorf("kubeconfig: %w", err)}})
		return
	}
	cfg.UserAgent = "mvpctl scan"
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		c.add(nil, 0, []error{&InputError{Input: input, Err: err}})
		return
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		c.add(nil, 0, []error{&InputError{Input: input, Err: err}})
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		c.add(nil, 0, []error{&InputError{Input: input, Err: err}})
		return
	}
	at := Location{Cluster: contextName}
	if err := scanApplied(ctx, dc, md, chk, at, c); err != nil {
		c.add(nil, 0, []error{&InputError{Input: input, Err: err}})
		return
	}
	scanHelm(ctx, cs, chk, at, c)
}

// flaggedKinds are the kinds with a version the target deprecates or
// removes, in any group (Deployment moved from extensions to apps): only
// their resources can hold an object applied with such a version.
func flaggedKinds(target builtin.Release) map[string]bool {
	out := map[string]bool{}
	for _, l := range builtin.Lifecycles() {
		if l.Deprecated.AtOrAfter(target) || l.Removed.AtOrAfter(target) {
			out[l.Kind] = true
		}
	}
	return out
}

// scanApplied checks the last-applied annotation of every object of every
// resource whose kind has a flagged version. An error is for a cluster that
// cannot be asked at all; a resource that cannot be listed is a warning.
func scanApplied(ctx context.Context, dc discovery.DiscoveryInterface, md metadata.Interface, chk checker, at Location, c *collector) error {
	lists, err := discovery.ServerPreferredResources(dc)
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return fmt.Errorf("discovery: %w", err)
		}
		c.warn("%s: discovery of some groups failed, their objects are not scanned: %v", at, err)
	}
	kinds := flaggedKinds(chk.target)
	seen := map[types.UID]bool{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !kinds[r.Kind] || !canList(r) {
				continue
			}
			gvr := gv.WithResource(r.Name)
			findings, documents, err := scanResource(ctx, md, gvr, chk, at, seen)
			c.add(findings, documents, nil)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				c.warn("%s: %s: not scanned: %v", at, gvr.GroupResource(), err)
			}
		}
	}
	return nil
}

func canList(r metav1.APIResource) bool {
	for _, v := range r.Verbs {
		if v == "list" {
			return true
		}
	}
	return false
}

// scanResource lists the metadata of one resource's objects, page by page.
// seen skips objects already checked through another group (events and
// events.k8s.io serve the same objects).
func scanResource(ctx context.Context, md metadata.Interface, gvr schema.GroupVersionResource, chk checker, at Location, seen map[types.UID]bool) ([]Finding, int, error) {
	var findings []Finding
	documents := 0
	opts := metav1.ListOptions{Limit: pageSize}
	for range maxPages {
		page, err := md.Resource(gvr).List(ctx, opts)
		if err != nil {
			return findings, documents, err
		}
		for i := range page.Items {
			item := &page.Items[i]
			if seen[item.UID] && item.UID != "" {
				continue
			}
			seen[item.UID] = true
			raw, ok := item.Annotations[LastAppliedAnnotation]
			if !ok || len(raw) > maxLastApplied {
				continue
			}
			documents++
			var applied struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if json.Unmarshal([]byte(raw), &applied) != nil {
				continue // kubectl would not have written it; nothing to say
			}
			if f, ok := chk.check(applied.APIVersion, applied.Kind); ok {
				f.Location, f.Namespace, f.Name = at, item.Namespace, item.Name
				findings = append(findings, f)
			}
		}
		if page.Continue == "" {
			return findings, documents, nil
		}
		opts.Continue = page.Continue
	}
	return findings, documents, fmt.Errorf("more than %d pages", maxPages)
}

// helmCandidate is one stored revision of a Helm release, not yet decoded.
type helmCandidate struct {
	version int
	data    []byte
	store   string // Secret or ConfigMap namespace/name, for errors
}

// scanHelm checks the deployed revision of every Helm 3 release, stored in
// Secrets (Helm's default) or ConfigMaps.
func scanHelm(ctx context.Context, cs kubernetes.Interface, chk checker, at Location, c *collector) {
	latest := map[string]helmCandidate{} // namespace/name → highest deployed revision
	keep := func(ns string, labels map[string]string, store string, data []byte) {
		v, err := strconv.Atoi(labels["version"])
		if err != nil || labels["name"] == "" || data == nil {
			return
		}
		key := ns + "/" + labels["name"]
		if prev, ok := latest[key]; !ok || v > prev.version {
			latest[key] = helmCandidate{version: v, data: data, store: store}
		}
	}
	opts := metav1.ListOptions{LabelSelector: helmDeployed, FieldSelector: "type=" + helmSecretType, Limit: 100}
	err := pages(ctx, func(o metav1.ListOptions) (string, error) {
		l, err := cs.CoreV1().Secrets("").List(ctx, o)
		if err != nil {
			return "", err
		}
		for _, s := range l.Items {
			keep(s.Namespace, s.Labels, "Secret "+s.Namespace+"/"+s.Name, s.Data["release"])
		}
		return l.Continue, nil
	}, opts)
	if err != nil {
		c.warn("%s: Helm releases in Secrets not scanned: %v", at, err)
	}
	opts.FieldSelector = ""
	err = pages(ctx, func(o metav1.ListOptions) (string, error) {
		l, err := cs.CoreV1().ConfigMaps("").List(ctx, o)
		if err != nil {
			return "", err
		}
		for _, cm := range l.Items {
			if d, ok := cm.Data["release"]; ok {
				keep(cm.Namespace, cm.Labels, "ConfigMap "+cm.Namespace+"/"+cm.Name, []byte(d))
			}
		}
		return l.Continue, nil
	}, opts)
	if err != nil {
		c.warn("%s: Helm releases in ConfigMaps not scanned: %v", at, err)
	}
	for _, cand := range latest {
		rel, err := DecodeHelmRelease(cand.data)
		if err != nil {
			c.add(nil, 0, []error{&InputError{Input: at.String() + " " + cand.store, Err: err}})
			continue
		}
		c.add(scanRelease(rel, chk, at))
	}
}

// pages runs a LIST page by page until the server gives no continue token.
func pages(ctx context.Context, list func(metav1.ListOptions) (string, error), opts metav1.ListOptions) error {
	for range maxPages {
		next, err := list(opts)
		if err != nil || next == "" {
			return err
		}
		opts.Continue = next
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("more than %d pages", maxPages)
}
