// Command dump-clusters starts a real control plane with one kube-apiserver
// per version and writes what each one serves about itself, so that tests
// can use real discovery and OpenAPI data without starting servers:
//
//	<out>/<version>/version.json                          GET /version
//	<out>/<version>/discovery/legacy/api.json             GET /api
//	<out>/<version>/discovery/legacy/apis.json            GET /apis
//	<out>/<version>/discovery/legacy/api/v1.json          GET /api/v1
//	<out>/<version>/discovery/legacy/apis/<g>/<v>.json    GET /apis/<g>/<v>
//	<out>/<version>/discovery/aggregated/api.json         GET /api  (apidiscovery.k8s.io/v2)
//	<out>/<version>/discovery/aggregated/apis.json        GET /apis (apidiscovery.k8s.io/v2)
//	<out>/<version>/openapi/v2.json                       GET /openapi/v2
//	<out>/<version>/openapi/v3.json                       GET /openapi/v3 (the index)
//	<out>/<version>/openapi/v3/api/v1.json                GET /openapi/v3/api/v1
//	<out>/<version>/openapi/v3/apis/<g>/<v>.json          GET /openapi/v3/apis/<g>/<v>
//
// The servers run with default flags and features, and an empty etcd. JSON
// is re-indented with two spaces; the only rewrite is the loopback port in
// /api's serverAddressByClientCIDRs, set to 6443 so that a regenerated dump
// differs only where the servers do. The directory for each version is
// replaced as a whole.
//
//	go run ./cmd/dump-clusters -out ../testdata/clusters [-versions v1.35.4,v1.36.3]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mvpctl/mvpctl/e2e/bins"
	"github.com/mvpctl/mvpctl/e2e/framework"
)

const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func main() {
	out := flag.String("out", "../testdata/clusters", "output directory")
	versions := flag.String("versions", strings.Join(bins.DefaultVersions, ","), "comma-separated kube-apiserver versions")
	flag.Parse()
	if err := run(*out, strings.Split(*versions, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "dump-clusters:", err)
		os.Exit(1)
	}
}

func run(out string, versions []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cp, err := framework.StartContext(ctx, framework.Options{Versions: versions})
	if err != nil {
		return err
	}
	defer cp.Stop()
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: cp.PKI.TLSConfig()},
		Timeout:   time.Minute,
	}
	for _, s := range cp.Servers() {
		start := time.Now()
		d := &dumper{ctx: ctx, client: client, base: s.URL, port: fmt.Sprint(s.Port)}
		dir := filepath.Join(out, s.Version)
		tmp := dir + ".tmp"
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
		if err := d.dump(tmp); err != nil {
			return fmt.Errorf("server %d (%s): %w", s.Index, s.Version, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		fmt.Printf("dump-clusters: %s: %d documents, %d bytes, in %s\n", dir, d.files, d.bytes, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

type dumper struct {
	ctx    context.Context
	client *http.Client
	base   string
	port   string
	files  int
	bytes  int
}

func (d *dumper) dump(dir string) error {
	if _, err := d.save(dir, "version.json", "/version", ""); err != nil {
		return err
	}

	// Legacy discovery: the group lists, then each group version.
	if _, err := d.save(dir, "discovery/legacy/api.json", "/api", ""); err != nil {
		return err
	}
	if _, err := d.save(dir, "discovery/legacy/api/v1.json", "/api/v1", ""); err != nil {
		return err
	}
	raw, err := d.save(dir, "discovery/legacy/apis.json", "/apis", "")
	if err != nil {
		return err
	}
	var groups struct {
		Groups []struct {
			Versions []struct{ GroupVersion string }
		}
	}
	if err := json.Unmarshal(raw, &groups); err != nil {
		return fmt.Errorf("/apis: %w", err)
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			if _, err := d.save(dir, "discovery/legacy/apis/"+v.GroupVersion+".json", "/apis/"+v.GroupVersion, ""); err != nil {
				return err
			}
		}
	}

	// Aggregated discovery.
	for _, p := range []string{"api", "apis"} {
		if _, err := d.save(dir, "discovery/aggregated/"+p+".json", "/"+p, aggregatedAccept); err != nil {
			return err
		}
	}

	// OpenAPI.
	if _, err := d.save(dir, "openapi/v2.json", "/openapi/v2", "application/json"); err != nil {
		return err
	}
	raw, err = d.save(dir, "openapi/v3.json", "/openapi/v3", "application/json")
	if err != nil {
		return err
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		}
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return fmt.Errorf("/openapi/v3: %w", err)
	}
	paths := make([]string, 0, len(index.Paths))
	for p := range index.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		clean := path.Clean("/" + p)
		if clean == "/" || strings.Contains(clean, "..") {
			return fmt.Errorf("/openapi/v3: unexpected path %q", p)
		}
		if _, err := d.save(dir, "openapi/v3"+clean+".json", index.Paths[p].ServerRelativeURL, "application/json"); err != nil {
			return err
		}
	}
	return nil
}

var serverAddress = regexp.MustCompile(`"serverAddress":\s*"127\.0\.0\.1:[0-9]+"`)

// save GETs urlPath (with accept, if set), checks for a 200 with JSON,
// writes it re-indented to dir/name and returns the raw body.
func (d *dumper) save(dir, name, urlPath, accept string) ([]byte, error) {
	req, err := http.NewRequestWithContext(d.ctx, http.MethodGet, d.base+urlPath, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", urlPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", urlPath, resp.Status, body)
	}
	if accept == aggregatedAccept && !strings.Contains(resp.Header.Get("Content-Type"), "apidiscovery.k8s.io") {
		return nil, fmt.Errorf("GET %s: got %s, not aggregated discovery", urlPath, resp.Header.Get("Content-Type"))
	}
	if name == "discovery/legacy/api.json" {
		body = serverAddress.ReplaceAll(body, []byte(`"serverAddress":"127.0.0.1:6443"`))
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return nil, fmt.Errorf("GET %s: not JSON: %w", urlPath, err)
	}
	buf.WriteByte('\n')
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	d.files++
	d.bytes += buf.Len()
	return body, nil
}
