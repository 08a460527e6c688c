# mvpctl — build, test and demo targets.
# `make test` is what CI runs; long-running suites have their own targets.

GO            ?= go
BIN           ?= bin
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT        ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS       := -X github.com/mvpctl/mvpctl/cmd/mvpctl/cli.version=$(VERSION) -X github.com/mvpctl/mvpctl/cmd/mvpctl/cli.commit=$(COMMIT)

.PHONY: all build test vet docs bench example demo bench-proxy roundtrip fuzz lifecycle

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/mvpctl ./cmd/mvpctl

vet:
	$(GO) vet ./...

test: vet
	$(GO) test -count=1 ./...

# docs/cli.md from the commands (a test fails when it is out of date).
docs:
	$(GO) generate ./cmd/mvpctl/cli

# Conversion cost as ratios to same-run floors (see BENCHMARKS.md): 9
# interleaved rounds, then the plain per-variant benchmarks.
bench:
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkConvertRatios$$' -benchtime 9x ./engine
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkConvert$$' -benchmem ./engine

# Round trips at scale: 10,000 generated objects per shipped rule set and
# direction, converted to the other version and back (docs/reliability.md).
# Prints one line per rule set and direction; the full log is in $(BIN).
ROUNDTRIP_N ?= 10000
roundtrip:
	@mkdir -p $(BIN)
	@MVPCTL_ROUNDTRIP_N=$(ROUNDTRIP_N) $(GO) test -count=1 -timeout 60m -run TestRoundTripAtScale -v ./engine > $(BIN)/roundtrip.log 2>&1; rc=$$?; \
	  sed -n 's/^ *roundtrip_scale_test.go:[0-9]*: roundtrip: //p' $(BIN)/roundtrip.log; \
	  if [ $$rc -ne 0 ]; then grep -v '^=== RUN' $(BIN)/roundtrip.log | tail -60; fi; exit $$rc

# Every fuzz target in the module, one after the other (go test -fuzz takes
# one target at a time), FUZZTIME each. Prints the executions per target;
# each target's log is in $(BIN), and a failing input is written to the
# package's testdata/fuzz/ (commit it as a regression seed with the fix).
# Every new interesting input is minimized too, up to FUZZMINIMIZETIME
# (go test's default, 60s, can eat a whole FUZZTIME on slow targets).
FUZZTIME ?= 30s
FUZZMINIMIZETIME ?= 5s
fuzz:
	@mkdir -p $(BIN)
	@rc=0; for entry in $$(grep -rHo --include='*_test.go' --exclude-dir=e2e --exclude-dir=testdata '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func /:/' | sort); do \
	  file=$${entry%%:*}; name=$${entry##*:}; dir=$$(dirname $$file); log=$(BIN)/fuzz-$$name.log; \
	  if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$dir > $$log 2>&1; then result=ok; else result=FAIL; rc=1; fi; \
	  execs=$$(grep -o 'execs: [0-9]*' $$log | tail -1 | cut -d' ' -f2); \
	  printf '%-24s %-16s %12s execs in %s  %s\n' $$name $$dir "$${execs:-?}" $(FUZZTIME) $$result; \
	  if [ $$result = FAIL ]; then grep -A20 -- '--- FAIL' $$log | head -40; fi; \
	done; exit $$rc

# The lifecycle table of built-in API versions (rules/builtin), from go.mod's
# k8s.io modules and, for versions they no longer have, older releases
# downloaded through the Go module proxy (rules/builtin/gen/history.json).
# Run it after moving k8s.io/api to a new release; `make test` checks that the
# committed table is current without downloading anything.
lifecycle:
	cd rules/builtin && $(GO) run ./gen -history

# Upgrades a tree of manifests written for Kubernetes v1.21 for v1.36 with
# the built-in rules (scan exits 1 on what v1.36 no longer serves), then
# converts the seed example both ways with its own rules.
example: build
	@echo '# testdata/examples/upgrade: what Kubernetes v1.36 no longer serves (mvpctl scan exits 1):'
	$(BIN)/mvpctl scan -R -f testdata/examples/upgrade --kubernetes-version v1.36; test $$? -eq 1
	@echo '# ... the whole tree upgraded for v1.36 in one command (objects that need no change as they were):'
	$(BIN)/mvpctl convert -R -f testdata/examples/upgrade --kubernetes-version v1.36
	@echo '# testdata/examples/seed/customresource-v1alpha1.yaml converted to v1beta1:'
	$(BIN)/mvpctl convert --rules testdata/examples/seed/mvp-rules.yaml -f testdata/examples/seed/customresource-v1alpha1.yaml --output-version myapps.example.com/v1beta1
	@echo '# ... and back to v1alpha1 (identical to the input):'
	$(BIN)/mvpctl convert --rules testdata/examples/seed/mvp-rules.yaml -f testdata/examples/seed/customresource-v1alpha1.yaml --output-version myapps.example.com/v1beta1 \
	  | $(BIN)/mvpctl convert --rules testdata/examples/seed/mvp-rules.yaml -f - --output-version myapps.example.com/v1alpha1

# kube-apiservers v1.35.4 and v1.36.3 on one etcd, mvpctl proxy in front, a
# short kubectl session through it, then teardown (builds the servers first).
demo: build e2e-bins
	cd e2e && $(GO) run ./proxy/demo -mvpctl ../$(BIN)/mvpctl

# Proxy overhead against direct, a bare ReverseProxy and nginx (needs nginx-light).
bench-proxy: e2e-bins
	cd e2e && MVPCTL_E2E_BENCH=1 MVPCTL_E2E_BENCH_REPORT=$(CURDIR)/docs/bench-proxy-table.md $(GO) test -count=1 -run TestProxy_Benchmark -v -timeout 30m ./proxy/

# The e2e suite (real etcd and kube-apiservers) lives in its own module.
-include e2e/e2e.mk
-include e2e/oracle/oracle.mk
