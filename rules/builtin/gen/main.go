// Command gen writes zz_generated.lifecycle.go, the lifecycle of every
// built-in Kubernetes API kind (introduced, deprecated, removed, replacement),
// read from the APILifecycle* methods that Kubernetes' prerelease-lifecycle-gen
// writes into each API package (zz_generated.prerelease-lifecycle.go).
//
// Two kinds of source feed it:
//   - the k8s.io modules of go.mod, read from the module cache (no network);
//   - zz_history.go: what older releases say about kinds that the go.mod
//     versions no longer have (removed types are deleted from k8s.io/api some
//     releases after the API is removed), plus modules go.mod does not require;
//     for the releases before lifecycle methods existed (k8s.io/api < v0.19)
//     and kinds that never had them, removal is derived from the first
//     release whose register.go no longer has the kind (legacy.go);
//   - documented.go: removals older than the first release on the module
//     proxy, from Kubernetes' documentation (ThirdPartyResource).
//
// `go generate ./rules/builtin` regenerates the table from both. With
// -history, zz_history.go is first rewritten from the releases listed in
// historyAPIReleases and legacyAPIReleases, downloaded through the Go module proxy (`go mod download`);
// run it when go.mod's k8s.io/api moves to a new release, then commit both
// files. The test of this package checks that the committed table is what
// the go.mod versions and zz_history.go give, without any download.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("o", "zz_generated.lifecycle.go", "output file")
	refresh := flag.Bool("history", false, "rewrite gen/"+historyFile+" from older releases first (downloads them)")
	flag.Parse()
	if err := run(*out, filepath.Join("gen", historyFile), *refresh); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, historyFile string, refresh bool) error {
	live, err := liveEntries()
	if err != nil {
		return err
	}
	old := history
	if refresh {
		if old, err = refreshHistory(live); err != nil {
			return err
		}
		src, err := renderHistory(old)
		if err != nil {
			return err
		}
		if err := os.WriteFile(historyFile, src, 0o644); err != nil {
			return err
		}
	}
	newest, err := newestRelease()
	if err != nil {
		return err
	}
	src, err := render(merge(live, old), newest)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
