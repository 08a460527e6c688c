# e2e suite: real etcd and kube-apiservers of several versions, built from
# their Go modules (see docs/e2e.md). Included by the root Makefile.

# Kubernetes versions to build and test, oldest first.
E2E_VERSIONS   ?= v1.35.4,v1.36.3
comma := ,
# Bound for the whole e2e test run.
E2E_TIMEOUT    ?= 30m
# Extra flags for go test, e.g. E2E_TESTFLAGS='-run Baseline -v'.
E2E_TESTFLAGS  ?=
# How long `make soak` loads the proxy, and the bound of the whole run
# (start-up and the wait for idle connections to close come on top).
E2E_SOAK_DURATION ?= 10m
E2E_SOAK_TIMEOUT  ?= 40m

.PHONY: e2e-bins e2e-bins-convert e2e e2e-dumps soak compare-convert bench-scan

# Builds etcd, kube-apiserver and kubectl into the cache
# ($MVPCTL_E2E_CACHE, else $XDG_CACHE_HOME/mvpctl-e2e); skips what is there.
e2e-bins:
	cd e2e && $(GO) run ./cmd/e2e-bins -versions '$(E2E_VERSIONS)'

# kubectl-convert of the first E2E_VERSIONS release, for `make compare-convert`
# (not in e2e-bins: the suite does not need it).
e2e-bins-convert:
	cd e2e && $(GO) run ./cmd/e2e-bins -versions '$(firstword $(subst $(comma), ,$(E2E_VERSIONS)))' -components kubectl-convert

# Packages run one at a time (-p 1): each starts its own control planes, and
# on a 2-core CI machine concurrent ones would skew the timing-sensitive
# proxy measurements.
e2e: e2e-bins
	cd e2e && $(GO) vet ./...
	cd e2e && $(GO) test -p 1 -count=1 -timeout $(E2E_TIMEOUT) $(E2E_TESTFLAGS) ./...

# Regenerates testdata/clusters/<version>/ from real servers.
e2e-dumps: e2e-bins
	cd e2e && $(GO) run ./cmd/dump-clusters -out ../testdata/clusters -versions '$(E2E_VERSIONS)'

# Soak of mvpctl proxy (not part of e2e): mixed load for E2E_SOAK_DURATION,
# sampling the proxy's memory, goroutines and descriptors every 10s.
# MVPCTL_E2E_SOAK_REPORT=path writes the figures as Markdown.
soak: e2e-bins
	cd e2e && MVPCTL_E2E_SOAK=1 MVPCTL_E2E_SOAK_DURATION=$(E2E_SOAK_DURATION) $(GO) test -count=1 -timeout $(E2E_SOAK_TIMEOUT) -run 'TestProxy_Soak$$' -v ./proxy/

# mvpctl convert against kubectl-convert (BENCHMARKS.md): outputs compared on
# the corpus (testdata/oracle's hand-written inputs of every old version the
# built-in rules convert), then CPU and wall time in interleaved rounds.
# COMPARE_FLAGS, e.g. '-rounds 3 -keep /tmp/cc', go to e2e/cmd/convert-compare.
COMPARE_FLAGS ?=
compare-convert: build e2e-bins-convert
	cd e2e && $(GO) run ./cmd/convert-compare -mvpctl ../$(BIN)/mvpctl \
	  -kubernetes-version '$(firstword $(subst $(comma), ,$(E2E_VERSIONS)))' $(COMPARE_FLAGS)

# mvpctl scan -R on 10,000 manifests in a nested tree, against a walker that
# only reads the files and `mvpctl version`, in interleaved rounds
# (BENCHMARKS.md). SCAN_SCALE_FLAGS go to e2e/cmd/scan-scale.
SCAN_SCALE_FLAGS ?=
bench-scan: build
	cd e2e && $(GO) run ./cmd/scan-scale -mvpctl ../$(BIN)/mvpctl $(SCAN_SCALE_FLAGS)
