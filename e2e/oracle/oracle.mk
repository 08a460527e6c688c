# Conversion oracle: expected outputs from Kubernetes' own conversion code,
# each pair from the release that last served its older version. The harness
# is e2e/oracle; e2e/oracle/releases/v1.<minor>/ is one Go module per
# Kubernetes release (k8s.io/kubernetes pinned in its go.mod, so the main
# module never depends on it). Included from the root Makefile.
#
#   make oracle         regenerate testdata/oracle/*/{out,served,ROUNDTRIP.md,MANIFEST}
#   make oracle-check   exit 1 if the committed fixtures are not what the
#                       release modules produce (compiles every module)
#   make oracle ORACLE_RELEASES=v1.21   one release only
#   make oracle-table   rewrite the correctness table in BENCHMARKS.md (make
#                       test fails when it is out of date)
#
# CI does not build the release modules: `make test` checks every pair's
# MANIFEST (the sha256 of its inputs and outputs) instead. Cold, each release
# module compiles k8s.io/kubernetes packages for minutes (figures in
# testdata/oracle/README.md); warm, a run takes about a second.

ORACLE_DIR      := e2e/oracle
ORACLE_GO       ?= nice $(GO)
ORACLE_RELEASES ?= $(sort $(notdir $(patsubst %/go.mod,%,$(wildcard $(ORACLE_DIR)/releases/v*/go.mod))))
ORACLE_FLAGS    ?=

.PHONY: oracle oracle-check oracle-harness oracle-table

# The harness's own tests (pair list, release modules, JSON diff): no
# k8s.io/kubernetes, seconds.
oracle-harness:
	cd $(ORACLE_DIR) && $(ORACLE_GO) vet ./... && $(ORACLE_GO) test -count=1 ./...

oracle: oracle-harness
	@set -e; for r in $(ORACLE_RELEASES); do \
	  echo "== $$r"; (cd $(ORACLE_DIR)/releases/$$r && $(ORACLE_GO) run . -dir $(CURDIR)/testdata/oracle $(ORACLE_FLAGS)); \
	done

oracle-check: oracle-harness
	@rc=0; for r in $(ORACLE_RELEASES); do \
	  echo "== $$r"; (cd $(ORACLE_DIR)/releases/$$r && $(ORACLE_GO) run . -dir $(CURDIR)/testdata/oracle -check $(ORACLE_FLAGS)) || rc=1; \
	done; exit $$rc

oracle-table:
	$(GO) test -count=1 -run '^TestOracleTable$$' ./engine -update-oracle-table
