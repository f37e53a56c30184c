# Two commands a user needs: `make demo` and `make test`. Each creates the
# virtual environment and installs what it needs on first use.
PYTHON ?= python3
VENV ?= .venv
# LATEST=1: the test environments get the latest releases, not the versions PINS names
# (below), as the weekly job does (.github/workflows/latest.yml): no constraints file,
# every dependency upgraded, LangGraph's graph tests those of the latest langgraph. They
# are the same folders under a stamp of their own, and making one removes the other
# stamp: an environment made one way is made again the other way before it is used.
LATEST ?=
FLAVOUR := $(if $(LATEST),-latest)
PINS := $(if $(LATEST),/dev/null,tests/constraints.txt)
INSTALL := -m pip install --quiet -c $(PINS) $(if $(LATEST),--upgrade --upgrade-strategy eager)

PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test$(FLAVOUR)
DEMO_STAMP := $(VENV)/.installed-demo
CHECKOV_STAMP := .venv-checkov/.installed

LANGGRAPH_STAMP := .venv-langgraph/.installed$(FLAVOUR)
SERVER_STAMP := .venv-server/.installed$(FLAVOUR)

.PHONY: demo dist test test-sweeps test-aws lint lint-workflows test-e2e test-integration test-langgraph test-store-contract test-upstream bench clean lambda-package lambda-figures checkov

# The test environments install under PINS, tests/constraints.txt (none with LATEST=1,
# above): the versions of what decides a verdict (linters, moto, the AWS SDK, LangGraph),
# so a release on PyPI cannot fail a run; checkov's version is pinned where its
# environment is made.

# pip runs --quiet: a line before each install says what comes and how long it takes
# the first time (measured 2026-12-05 on 2 cores, a fresh $(VENV) with pip's cache
# empty: 75 s for the test environment, 43 s for the demo's; 55 s and 32 s with it full).
$(STAMP): pyproject.toml $(PINS)
	@echo "Installing the package with its test tools into $(VENV): about a minute the first time"
	$(PYTHON) -m venv $(VENV)
	rm -f $(VENV)/.installed-test $(VENV)/.installed-test-latest
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) $(INSTALL) -e '.[test]'
	touch $(STAMP)

# The demo needs the command line, LangGraph, pytest (the testing kit imports it) and moto
# server for S3 and DynamoDB (Flask): not the test extra (other savers, a PostgreSQL
# driver, ruff, mypy), nor moto[server], which brings every moto service's dependencies
# (cfn-lint, sympy, networkx). `make test` adds the rest to the same .venv.
$(DEMO_STAMP): pyproject.toml
	@echo "Installing what the demo needs into $(VENV): under a minute the first time"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[cli]' 'langgraph>=1.2' 'pytest>=8' \
		'moto[s3,dynamodb]>=5.0' flask flask-cors
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/s3dynamo demo

# dist/ (or DIST=dir): the source distribution and the wheel built from it, as the release
# workflow publishes them, checked by `twine check --strict` (the metadata and the README as
# PyPI renders it). build and twine live in .venv-dist; hatchling, the build backend, is
# fetched into build's isolated environment at the version tests/constraints.txt pins.
# Until the package is on PyPI: `pip install 'dist/<wheel>[cli]'`.
DIST ?= dist
DIST_STAMP := .venv-dist/.installed
$(DIST_STAMP): $(PINS)
	$(PYTHON) -m venv .venv-dist
	.venv-dist/bin/python -m pip install --quiet --upgrade pip
	.venv-dist/bin/python -m pip install --quiet -c $(PINS) build twine
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)
	rm -rf $(DIST)
	.venv-dist/bin/python -m build --quiet --dependency-constraints-txt $(PINS) --outdir $(DIST) .
	.venv-dist/bin/python -m twine check --strict $(DIST)/*
	@ls $(DIST)/*

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks examples scripts
	$(PY) -m ruff format --check src tests benchmarks examples scripts
	$(PY) -m mypy
	$(MAKE) lint-workflows

# The GitHub Actions workflows, by zizmor's offline audits (no GitHub API): every action
# pinned to a commit, no credentials left in the checkout, permissions as narrow as each
# job needs, no template injection. WORKFLOWS=dir checks another folder.
WORKFLOWS ?= .github/workflows
lint-workflows: $(STAMP)
	@if [ -x $(VENV)/bin/zizmor ]; then \
		$(VENV)/bin/zizmor --offline --quiet $(wildcard $(WORKFLOWS)/*.yml); \
	else echo "lint-workflows: skipped: zizmor needs Python 3.11 or newer, $(VENV) has $$($(PY) -c 'import sys; print(sys.version.split()[0])')"; fi

# The unit tier (tests by subject, on the in-memory table, with its long runs: fault
# injection at every request, a 200-turn chat), and the AWS tier's share on moto in process
# (`smoke`: the ports' contract, LangGraph's conformance suite and the request budgets
# whole, and each other subject's first test on the adapters), on both cores. The rest
# of the AWS tier (`make test-aws`), the end-to-end tier and the integration tiers run
# in CI (.ci/run).
test: $(STAMP) lint
	$(PY) -m pytest -q -n 2 tests/unit tests/aws -m "(not aws or smoke) and not slow"

# The long runs on the in-memory ports that `make test` leaves out to stay within three
# minutes: a fault at every request of every multi-request operation, two operations on
# a thread and its copy racing at each request, a 200-turn chat.
test-sweeps: $(STAMP)
	$(PY) -m pytest -q -n 2 tests/unit -m slow

# Everything marked `aws` that `make test` leaves out, on moto in process.
test-aws: $(STAMP)
	$(PY) -m pytest -q -n 2 tests/aws tests/unit -m "aws and not smoke"

# The command line, the Lambda example, Terraform (fmt, validate, checkov), the testing
# kit, the wheel on every Python here, and the LangGraph server with this checkpointer
# and store, as a user runs them.
test-e2e: $(STAMP) $(CHECKOV_STAMP) $(SERVER_STAMP)
	$(PY) -m pytest -q tests/e2e

# The LangGraph server (langgraph-cli's `langgraph dev`, langgraph-api on its in-memory
# runtime) with this package, for tests/e2e/test_langgraph_server.py; the test drives it
# with langgraph-sdk from $(VENV). An environment of its own: the server brings its web
# stack (starlette, uvicorn, grpcio, ...), kept out of the one `make test` decides with.
$(SERVER_STAMP): pyproject.toml $(PINS)
	@echo "Installing the LangGraph server with the package into .venv-server (once)"
	$(PYTHON) -m venv .venv-server
	rm -f .venv-server/.installed .venv-server/.installed-latest
	.venv-server/bin/python -m pip install --quiet --upgrade pip
	.venv-server/bin/python $(INSTALL) -e . 'langgraph-cli[inmem]'
	touch $(SERVER_STAMP)

clean:
	rm -rf $(VENV) .venv-checkov .venv-dist .venv-server .venv-langgraph .langgraph-suite .store-contract .pytest_cache .mypy_cache .ruff_cache

# LangGraph's own graph tests (the version pinned in scripts/langgraph_suite/requirements.txt;
# with LATEST=1 its pins are dropped, so the latest langgraph's tests run) with
# S3DynamoSaver, default settings, as their checkpointer; in an environment of their own.
# Twice: as LangGraph runs by default, then with its strict serialization
# (LANGGRAPH_STRICT_MSGPACK=true).
LANGGRAPH_REQUIREMENTS := scripts/langgraph_suite/requirements.txt
$(LANGGRAPH_STAMP): pyproject.toml $(LANGGRAPH_REQUIREMENTS) $(PINS)
	$(PYTHON) -m venv .venv-langgraph
	rm -f .venv-langgraph/.installed .venv-langgraph/.installed-latest
	.venv-langgraph/bin/python -m pip install --quiet --upgrade pip
	sed -E '$(if $(LATEST),s/==[^[:space:];]+//)' $(LANGGRAPH_REQUIREMENTS) \
		> .venv-langgraph/requirements.txt
	.venv-langgraph/bin/python $(INSTALL) -e '.[testing]' -r .venv-langgraph/requirements.txt
	touch $(LANGGRAPH_STAMP)

test-langgraph: $(LANGGRAPH_STAMP)
	.venv-langgraph/bin/python scripts/langgraph_suite/run.py
	.venv-langgraph/bin/python scripts/langgraph_suite/run.py --strict

# LangGraph's SQLite and Postgres store tests with S3DynamoStore swapped in
# (scripts/store_contract/); two workers, for the Postgres tests' TTL waits.
test-store-contract: $(STAMP)
	$(PY) scripts/store_contract/run.py -n 2

# Every suite that judges this package by LangGraph's measure: its conformance suite and
# the delta-channel scenarios of its main branch, the LangGraph server (`langgraph dev`),
# its graph tests and its store tests. `make LATEST=1 test-upstream` is the weekly job
# (.github/workflows/latest.yml): on the latest releases, so that one breaking them is
# seen the week it ships.
test-upstream: $(STAMP) $(SERVER_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests/aws/test_conformance.py \
		tests/unit/test_delta_history.py tests/e2e/test_langgraph_server.py
	$(MAKE) test-langgraph test-store-contract

# Everything marked `aws` (the AWS tier, and the aws half of the unit tier's `backend`
# tests) against independent implementations over HTTP on 127.0.0.1: moto server, then
# dynalite (DynamoDB) with SeaweedFS (S3). See scripts/services.sh.
test-integration: $(STAMP)
	scripts/services.sh up
	trap 'scripts/services.sh down' EXIT; \
	set -e; \
	(. .services/env-moto-server.sh && S3DYNAMO_TEST_BACKEND=moto-server $(PY) -m pytest -q -p no:cacheprovider tests/aws tests/unit -m aws); \
	(. .services/env-real.sh && S3DYNAMO_TEST_BACKEND=real $(PY) -m pytest -q -p no:cacheprovider tests/aws tests/unit -m aws)

# Side by side with the savers users would otherwise pick; writes benchmarks/results.*.
# PostgresSaver needs a local PostgreSQL server (Debian's package), started by the run.
bench:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq postgresql)
	$(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet --upgrade pip
	.venv-bench/bin/python -m pip install --quiet -e '.[testing]' -r benchmarks/requirements.txt
	.venv-bench/bin/python benchmarks/run.py

# build/lambda_agent.zip for the AWS Lambda Python 3.12 runtime (x86_64; ARCH=arm64 builds
# build/lambda_agent_arm64.zip; EXTRAS=vectors adds numpy: build/lambda_agent_vectors.zip):
# the example agent in examples/lambda_agent/, this package and its dependencies, with
# bytecode compiled by Python 3.12; checks it and prints its sizes.
ARCH ?= x86_64
EXTRAS ?=
lambda-package:
	PYTHON=$(PYTHON) LAMBDA_EXTRAS=$(EXTRAS) scripts/lambda_package.sh $(ARCH)

# Both zips and the x86_64 one with the vectors extra, then examples/lambda_agent/README.md's
# table of their figures written from what the builds measured (scripts/lambda_figures.py;
# the e2e tier checks it).
LAMBDA_BUILD = $(or $(BUILD_DIR),build)
lambda-figures:
	PYTHON=$(PYTHON) scripts/lambda_package.sh x86_64
	PYTHON=$(PYTHON) scripts/lambda_package.sh arm64
	PYTHON=$(PYTHON) LAMBDA_EXTRAS=vectors scripts/lambda_package.sh x86_64
	$(PYTHON) scripts/lambda_figures.py write $(LAMBDA_BUILD)/lambda_agent.figures.json \
		$(LAMBDA_BUILD)/lambda_agent_arm64.figures.json \
		$(LAMBDA_BUILD)/lambda_agent_vectors.figures.json

# Static security checks of terraform/ (module and example) in their own virtual environment.
# checkov has its own virtual environment: its dependencies stay out of the project's.
# Its version pinned here, not in $(PINS): it pins boto3 itself (to another version).
$(CHECKOV_STAMP):
	@echo "Installing checkov into .venv-checkov (once)"
	$(PYTHON) -m venv .venv-checkov
	.venv-checkov/bin/python -m pip install --quiet --upgrade pip
	.venv-checkov/bin/python -m pip install --quiet 'checkov==3.3.30'
	touch $(CHECKOV_STAMP)

checkov: $(CHECKOV_STAMP)
	.venv-checkov/bin/checkov --quiet --compact --skip-download -d terraform --framework terraform
