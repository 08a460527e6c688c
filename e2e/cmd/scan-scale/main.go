// Command scan-scale measures `mvpctl scan -R` on a large nested tree of
// manifests, as rendered Helm charts with subcharts are laid out: wall
// time, CPU time and peak resident memory of the process, next to
// baselines measured in the same interleaved rounds: a trivial walker that
// reads every file of the tree (this command itself, run again), and
// `mvpctl version` (the process's start-up alone).
//
// Four in five files hold a current object (Deployment, Service,
// ConfigMap, autoscaling/v2 HorizontalPodAutoscaler); every fifth holds a
// manifest of an old version from the corpus (package corpus), so that the
// tree has every old version mvpctl's built-in rules know. A first,
// unmeasured run with -o json checks that the scan found each of them with
// the status its version has.
//
//	make bench-scan
//	go run ./cmd/scan-scale [-mvpctl ../bin/mvpctl] [-n 10000] [-rounds 5] [-report FILE] [-keep DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// walkEnv makes this command the walker baseline: it reads every file
// under the directory the variable names and prints how many.
const walkEnv = "MVPCTL_SCAN_SCALE_WALK"

type options struct {
	mvpctl, repo            string
	n, rounds               int
	kubernetesVersion       string
	timeout, processTimeout time.Duration
	report, keep            string
}

func main() {
	if dir := os.Getenv(walkEnv); dir != "" {
		n, err := walk(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "walk:", err)
			os.Exit(1)
		}
		fmt.Println(n)
		return
	}
	var o options
	flag.StringVar(&o.mvpctl, "mvpctl", "../bin/mvpctl", "mvpctl binary")
	flag.StringVar(&o.repo, "repo", "..", "root of the mvpctl checkout (testdata/oracle)")
	flag.IntVar(&o.n, "n", 10000, "manifests in the tree, one per file (at most 200,000)")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds (at most 20)")
	flag.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "scan's --kubernetes-version (default: scan's own)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	flag.DurationVar(&o.processTimeout, "process-timeout", 5*time.Minute, "bound on one process")
	flag.StringVar(&o.report, "report", "", "write the Markdown report here too")
	flag.StringVar(&o.keep, "keep", "", "write the tree under this directory and keep it")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "scan-scale:", err)
		os.Exit(1)
	}
}

// walk reads every regular file under root with one worker per CPU, as
// mvpctl scan reads a tree, and does nothing else with them.
func walk(root string) (int64, error) {
	jobs := make(chan string, runtime.GOMAXPROCS(0))
	var read atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			buf := make([]byte, 64<<10)
			for p := range jobs {
				if err := readFile(p, buf); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				read.Add(1)
			}
		})
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			jobs <- p
		}
		return err
	})
	close(jobs)
	wg.Wait()
	return read.Load(), errors.Join(append(errs, err)...)
}

func readFile(p string, buf []byte) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyBuffer(io.Discard, f, buf)
	return err
}
