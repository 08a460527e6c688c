# Conversion oracle: expected outputs from Kubernetes' own conversion code
# (k8s.io/kubernetes, pinned in e2e/oracle/go.mod, a module of its own so the
# main module never depends on it). Included from the root Makefile.
#
#   make oracle         regenerate testdata/oracle/*/{out,served,ROUNDTRIP.md}
#   make oracle-check   exit 1 if the committed fixtures are not what the
#                       generator produces (for CI)
#
# With a cold build cache the first run compiles k8s.io/kubernetes packages:
# about 2 CPU-minutes, 1.5 to 4 minutes of wall time on 2 cores depending on
# load. After that a run takes under a second (generation itself ~0.1 s).

ORACLE_DIR := e2e/oracle
ORACLE_GO  ?= nice go

.PHONY: oracle oracle-check

oracle:
	cd $(ORACLE_DIR) && $(ORACLE_GO) run ./cmd/gen-oracle -dir ../../testdata/oracle

oracle-check:
	cd $(ORACLE_DIR) && $(ORACLE_GO) run ./cmd/gen-oracle -dir ../../testdata/oracle -check
