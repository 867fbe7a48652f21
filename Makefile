# The two commands: `make run` and `make test`. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help

.PHONY: help setup build run stop reset run-ha stop-ha reset-ha test docs bench-soak bench-embed bench-risk bench-hnsw bench-vectordb bench-vectordb-recall bench-identity bench-risk-quality bench-embed-int8 bench-citus test-citus fuzz

help:
	@echo "make run          set up, build, start PostgreSQL + the sidecar (Ctrl-C to stop)"
	@echo "make test         set up, build, run every test"
	@echo "make test-citus   the Citus cluster test, against a Citus you installed (docs/scaling-out.md)"
	@echo "make fuzz         fuzz the identity check's image paths for 15 minutes a target (cargo fuzz; make test fuzzes 1 minute)"
	@echo "make docs         build docs/ into a browsable book under target/book/ (mdBook)"
	@echo "make stop         stop make run's sidecar and its PostgreSQL cluster"
	@echo "make reset        delete the local cluster and its data (keys, accounts, records)"
	@echo "make run-ha       like make run, on three PostgreSQL nodes under Patroni with failover (docs/high-availability.md)"
	@echo "make stop-ha      stop make run-ha's sidecar, nodes and etcd"
	@echo "make reset-ha     delete make run-ha's nodes and their data"
	@echo "make bench-embed  embedding throughput: in-database vs raw ONNX Runtime"
	@echo "make bench-embed-int8  the int8 model against the published one: speed and search quality"
	@echo "make bench-risk   risk assessments per second: in-database and over HTTP (wrk)"
	@echo "make bench-risk-quality  risk engine on 4 months of simulated fraud: AUC, fraud caught at 1% and 5% flagged, per pattern"
	@echo "make bench-hnsw   vigil_hnsw vs FAISS and usearch (PyPI) and an exact scan: q/s at equal recall, build, size (pgvector too where installed)"
	@echo "make bench-vectordb  vector database over HTTP: storing vs raw embedding, search p50/p99 at 100,000 records"
	@echo "make bench-vectordb-recall  a database's vector search against an exact one, whatever else the installation holds (4 layouts)"
	@echo "make bench-identity  identity checks: a 2 MP JPEG in-process, in SQL, over HTTP; duplicate lookup at 1,000,000 hashes"
	@echo "make bench-citus  vector searches on a Citus cluster (coordinator + 2 workers, loopback) against one server: q/s, latency, CPU a search on each; needs Citus installed"
	@echo "make bench-soak   a mixed load at a steady rate for 30 minutes: errors, and the memory of the sidecar and each backend over time"

setup:
	scripts/setup.sh

build:
	scripts/build.sh

run: build
	scripts/run.sh

stop:
	scripts/pg-cluster.sh down .vigil/pg

reset:
	scripts/pg-cluster.sh remove .vigil/pg
	rm -f .vigil/credentials.env

# High availability (docs/high-availability.md): Patroni and etcd are installed
# only by these targets (scripts/setup-ha.sh).
run-ha: build
	scripts/ha-run.sh

stop-ha:
	scripts/ha-cluster.sh down .vigil/ha

reset-ha:
	scripts/ha-cluster.sh remove .vigil/ha
	rm -f .vigil/credentials-ha.env

test: setup
	scripts/test.sh

# Citus is installed by its users, not by the project: this target checks for it
# before anything else and fails at once, saying how, where it is missing.
test-citus:
	scripts/test-citus.sh

fuzz: setup
	scripts/fuzz.sh

docs: setup
	scripts/setup-docs.sh
	mdbook build docs

# Benchmarks: make bench-CAPABILITY runs bench/CAPABILITY/bench.sh, and
# make bench-CAPABILITY-VARIANT bench/CAPABILITY/VARIANT.sh.
bench-embed: build
	bench/embed/bench.sh

bench-embed-int8: setup
	bench/embed/int8.sh

bench-risk: build
	bench/risk/bench.sh

bench-risk-quality: build
	bench/risk/quality.sh

bench-hnsw: build
	bench/hnsw/bench.sh

bench-vectordb: build
	bench/vectordb/bench.sh

bench-vectordb-recall: build
	bench/vectordb/recall.sh

bench-citus:
	. scripts/lib.sh && require_citus
	$(MAKE) build
	bench/citus/bench.sh

bench-identity: build
	bench/identity/bench.sh

bench-soak: build
	bench/soak/bench.sh
