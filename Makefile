# streamshift: every entry point a user or CI needs. `make help` lists them.
SHELL := /bin/bash
export STREAMSHIFT_CACHE ?= $(HOME)/.cache/streamshift
VENV := .venv
PY := $(VENV)/bin/python
PROTOCOL ?= unimico
CASES ?= 500

.DEFAULT_GOAL := help
.PHONY: help venv setup setup-spark up down status test test-unit lint fmt demo bench-engine verify-protocols bench-protocols bench-spark

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

venv: $(VENV)/.installed ## create .venv with the pinned Python dependencies (the dev extra: every role's, tests, linters)
$(VENV)/.installed: pyproject.toml engine-image/streamshift_engine/runtime/_fastconsume.c engine-image/streamshift_engine/runtime/_arenas.c engine-image/streamshift_engine/events/_skippable.c engine-image/streamshift_engine/events/_rowtext.c
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==25.3
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

setup: venv ## install everything: the stack's parts and Spark (idempotent, cached under $$STREAMSHIFT_CACHE)
	dev/setup.sh
	dev/setup-spark.sh

up: setup ## start Kafka, MinIO, etcd, kube-apiserver and the node agent on loopback
	dev/up.sh

down: ## stop what `make up` started (by PID file)
	dev/down.sh

status: ## health and memory (RSS) of each part of the local stack
	dev/status.sh

lint: venv ## ruff and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fmt: venv ## format the code
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test-unit: venv ## pure tests: engine and protocols, no services
	$(VENV)/bin/pytest -q -m "not stack"

test: setup ## everything CI runs: lint, unit tests, then integration tests on a stack it starts and stops
	dev/test.sh

demo: setup ## set up, start the stack and migrate a query (PROTOCOL=unimico)
	dev/demo.sh $(PROTOCOL)

bench-engine: venv ## engine throughput per core, JSON and columnar, against the decode limit
	$(PY) -m bench.engine

verify-protocols: venv ## every protocol's output with migration equals without, at scale (CASES=500)
	$(PY) -m bench.verify_protocols --cases $(CASES)

bench-protocols: venv ## protocol cost table and the seed 001 cost model against measurements
	$(PY) -m bench.protocols

setup-spark: venv ## install pyspark and cache the Spark Kafka connector jars
	dev/setup-spark.sh

bench-spark: setup-spark up ## Spark generator throughput into Kafka and oracle time
	$(PY) -m bench.spark

.PHONY: spark-kube-run
spark-kube-run: setup-spark up ## Spark on the local API server: driver here, 2 executor pods run by the node agent
	timeout 600 $(PY) -m streamshift_engine.spark.k8s_client --events 200000

.PHONY: crds
crds: venv ## generate crds/*.yaml from the operator's typed models (the Helm chart links to them)
	$(PY) -m streamshift_operator.crdgen crds

.PHONY: manifests
manifests: ## render deploy/operator/streamshift.yaml (the kubectl install) from the Helm chart
	deploy/render.sh > deploy/operator/streamshift.yaml

.PHONY: verify-runtime
verify-runtime: up ## real workers migrated by the operator equal the reference, output and dead letters (CASES=50 per protocol; CONCURRENCY=N cases at once)
	$(PY) -m bench.verify_runtime --cases $(if $(filter command line environment,$(origin CASES)),$(CASES),50) $(if $(CONCURRENCY),--concurrency $(CONCURRENCY))

.PHONY: chaos
chaos: up ## faults on a running query (lost pods, operator SIGKILL, poison records, broker and MinIO down, unreachable at create), output checked against the reference (SCENARIOS='pattern ...': a subset)
	$(PY) -m bench.chaos $(if $(SCENARIOS),--scenarios $(foreach p,$(SCENARIOS),'$(p)'))

.PHONY: bench-runtime
bench-runtime: venv ## worker vs in-process engine, each protocol's output gap, large-state downtime (PART=throughput|large-state|gaps: one part; ROUNDS=N rounds of migrations, medians kept; REPEATS=N runs a side, best kept)
	$(PY) -m bench.runtime $(if $(PART),--$(PART)-only) $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(REPEATS),--repeats $(REPEATS))

.PHONY: bench-autoscaler
bench-autoscaler: venv ## autoscaler on q8 under a step load: one worker's capacity, recovery, rescales, chosen vs optimum, gap ratio, exact (QUICK=1: shorter; LOAD=spark|spark-kube: the Spark generator writes the step)
	$(PY) -m bench.autoscaler $(if $(QUICK),--quick) $(if $(LOAD),--load $(LOAD))

.PHONY: bench-operator
bench-operator: venv ## operator: query ready time, unimico move time on q5, RSS with 20 queries
	$(PY) -m bench.operator

.PHONY: demo-elastic
demo-elastic: up ## q8 with the autoscaler under a step load up and back: live view, PNG under out/, output verified (LOAD=spark|spark-kube)
	$(PY) -m streamshift_dev.elastic_demo $(if $(LOAD),--load $(LOAD))

.PHONY: demo-compare
demo-compare: setup ## every protocol on the same q5 query, their recorded costs side by side
	dev/demo.sh compare

.PHONY: images
images: venv ## build every image with podman from Debian packages (worker, spark, operator, kafka, minio); print sizes
	e2e/kind/images.sh

.PHONY: e2e-kind
e2e-kind: venv ## kind cluster from local builds: chart, Kafka, MinIO, Spark generator, a verified Migration per protocol (KEEP_CLUSTER=1 keeps it)
	e2e/kind/run.sh
