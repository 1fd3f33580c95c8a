# The two commands a user needs: `make demo` and `make test`. Both set up everything they need on
# a bare Debian machine (system packages, TimescaleDB, the Python environment) and are safe to
# run twice.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export TAPELENS_HOME ?= $(HOME)/.local/share/tapelens

.PHONY: demo test test-fast test-spark test-cluster fuzz setup system spark lint typecheck pytest clean-venv

# DASHBOARDS=0 skips serving the dashboards at the end; DEMO_FILES sets the site's size;
# ENGINE=spark runs the demo on Spark in local mode (its marts build copies the aggregate marts
# into the embedded database, which the dashboards read on either engine).
DASHBOARDS ?= 1
DEMO_FILES ?= 50000
ENGINE ?= postgres

demo: setup
	$(BIN)/tapelens demo run --files $(DEMO_FILES) --engine $(ENGINE)
	@if [ "$(DASHBOARDS)" != 0 ]; then \
		$(BIN)/tapelens dashboards serve --no-wait; fi

test: setup lint typecheck pytest

setup: system $(STAMP) spark

# The Spark engine: Java, and Delta Lake's jars resolved once from Maven Central (the Python
# packages come with the venv's `spark` extra). A no-op once done.
spark: $(STAMP)
	@VENV=$(VENV) bash scripts/install-spark

# PostgreSQL 15 + TimescaleDB (built from Debian's source package; a no-op when installed).
system:
	@bash scripts/install-system

$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,spark]'
	@touch $(STAMP)

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

# The Spark loader's tests start a session of their own (and JVMs they kill): they run in a
# pytest process of their own, where no other module's session is left.
pytest:
	$(BIN)/pytest -q -m "not cluster and not every_profile and not own_process"
	$(BIN)/pytest -q -m "own_process and not cluster and not every_profile" tests/spark

# Every Spark test: the marts against PostgreSQL's on every profile of the generator, and the
# standalone cluster's (below).
test-spark: setup
	$(BIN)/pytest -q tests/spark

# tapelens on a Spark standalone cluster (a master and two workers on 127.0.0.1, each its own
# JVM): ingest, marts, a report and a plan, both workers' tasks, a worker killed mid-load. Left
# out of `make test` for its length (three JVMs and seven Spark applications on two cores).
test-cluster: setup
	$(BIN)/pytest -q -m cluster tests/spark/test_cluster.py

# The edit loop: every test but those marked slow (end-to-end sites, Superset, long builds),
# in under three minutes; `make test` (and CI) still runs them all.
test-fast: setup
	$(BIN)/pytest -q -m "not slow"

# Property tests with fresh random examples, many more of them (CI runs them derandomised).
fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q -p no:cacheprovider \
		tests/ingest/test_formats_catalog_fuzz.py tests/ingest/test_formats_logs_fuzz.py \
		tests/ingest/test_readers_real_fuzz.py tests/ingest/test_inventories_real.py \
		tests/analysis/recall/copies/test_copy_choice.py \
		tests/analysis/recall/plan/test_planner_props.py \
		tests/analysis/dedup/test_dedup.py

clean-venv:
	rm -rf $(VENV)
