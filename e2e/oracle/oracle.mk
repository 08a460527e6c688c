# Conversion oracle: expected outputs from Kubernetes' own conversion code
# (k8s.io/kubernetes, pinned in e2e/oracle/go.mod, a module of its own so the
# main module never depends on it). Included from the root Makefile.
#
#   make oracle         regenerate testdata/oracle/*/{out,served,ROUNDTRIP.md}
#   make oracle-check   exit 1 if the committed fixtures are not what the
#                       generator produces (for CI)
#
# The first build compiles k8s.io/kubernetes packages: about 1.5 minutes on
# 2 cores with a cold build cache, a few seconds after that.

ORACLE_DIR := e2e/oracle
ORACLE_GO  ?= nice go

.PHONY: oracle oracle-check

oracle:
	cd $(ORACLE_DIR) && $(ORACLE_GO) run ./cmd/gen-oracle -dir ../../testdata/oracle

oracle-check:
	cd $(ORACLE_DIR) && $(ORACLE_GO) run ./cmd/gen-oracle -dir ../../testdata/oracle -check
