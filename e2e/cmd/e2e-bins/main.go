// Command e2e-bins builds the etcd, kube-apiserver and kubectl binaries the
// e2e suite runs into the binary cache, skipping those already there;
// -components kubectl-convert builds kubectl-convert instead.
//
//	go run ./cmd/e2e-bins [-versions v1.35.4,v1.36.3] [-etcd v3.6.16] [-components etcd,kube-apiserver,kubectl] [-force]
//
// It runs from the e2e directory (or give -src). See package bins for the
// cache layout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mvpctl/mvpctl/e2e/bins"
)

func main() {
	opts := bins.BuildOptions{Out: os.Stdout}
	versions := flag.String("versions", strings.Join(bins.DefaultVersions, ","), "comma-separated Kubernetes versions to build kube-apiserver and kubectl for")
	components := flag.String("components", strings.Join(bins.DefaultComponents, ","), "comma-separated components to build: etcd, kube-apiserver, kubectl, kubectl-convert")
	flag.StringVar(&opts.EtcdVersion, "etcd", bins.DefaultEtcdVersion, "etcd version to build")
	flag.StringVar(&opts.SourceDir, "src", "build", "directory of the pinned build modules")
	flag.StringVar(&opts.Cache, "cache", "", "binary cache (default $MVPCTL_E2E_CACHE, else $XDG_CACHE_HOME/mvpctl-e2e)")
	flag.BoolVar(&opts.Force, "force", false, "rebuild binaries already in the cache")
	printCache := flag.Bool("print-cache", false, "print the binary cache directory and exit")
	flag.Parse()
	if *printCache {
		c := opts.Cache
		if c == "" {
			var err error
			if c, err = bins.CacheDir(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e-bins:", err)
				os.Exit(1)
			}
		}
		fmt.Println(c)
		return
	}
	opts.Versions = list(*versions) // an empty -versions builds etcd only
	opts.Components = list(*components)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bins.Build(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-bins:", err)
		os.Exit(1)
	}
}

// list splits a comma-separated flag value, dropping empty items.
func list(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
