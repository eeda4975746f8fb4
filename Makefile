# joinery: the two commands are `make demo` and `make test`. Everything else is optional.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export JOINERY_SPARK_DIR ?= $(CURDIR)/.spark/local
export JOINERY_JARS_DIR ?= $(CURDIR)/.spark/jars
export DBT_PROFILES_DIR ?= $(CURDIR)/profiles
# pytest-xdist workers of `make test`; each starts its own Thrift server (about 1.5 GB of memory).
# Four on 2 cores: a worker spends part of its time waiting on dbt, the metastore and process starts,
# so more workers keep the cores busier (pytest 20:30 on three workers, 18:42 on four, within the
# same hour on one machine; about 6 GB of memory for the four servers). With four the cores stay
# fully busy (vmstat: 0% idle), so what is left to gain is less work, not more workers: five took
# 18:50 against 19:50 for four an hour before, with CPU 99.8% busy and a module's builds skipped
# (a failed setup), so no gain beyond the hour-to-hour spread.
# Where the CPU goes (2026-11-25): the Thrift servers' JVMs about three quarters (JFR profile of
# test_fk_join: metastore calls 29%, Catalyst 22%, Janino codegen 15%, task execution 12%; turning
# codegen or adaptive execution off made modules slower), dbt's Python the rest, of which a full
# parse of the project (each new schema or new vars; about 17 in a run) takes 13 s, 15-60 s under
# load; a worker's later ones reuse its Jinja parses (harness/dbt.py, reuse_template_parses).
# Tried and not kept (2026-11-25): a larger code-generation cache on the servers
# (spark.sql.codegen.cache.maxEntries 1000, default 100). It cut test_fk_join's compilations from
# 1117 to 353, but two whole suites run side by side, with and without it, ended 4 s apart
# (33:22 and 33:26): compiling is a small share of the servers' work. Of that work, about 12% is
# Hadoop Configuration objects copied, serialized and parsed per query and per task (JFR): a fixed
# cost of every Spark job on small data, not one joinery's statements can avoid.
TEST_WORKERS ?= 4

.PHONY: demo test setup lint thrift-start thrift-stop thrift-status cluster-start cluster-stop cluster-status bench clean

## demo: install if needed, then `dbt build` every seed, example model and test on the embedded Spark
demo: setup
	$(PY) -m harness.demo

## test: install if needed, then the whole suite: pytest (own Thrift server), sqlfluff, ruff
test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 python_tests
	$(MAKE) --no-print-directory lint

setup:
	@bash scripts/setup.sh

lint: setup
	$(VENV)/bin/sqlfluff lint --processes 0 models macros tests integration_tests/models
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

## thrift-start / thrift-stop: a local Spark Thrift server on 127.0.0.1:$${JOINERY_THRIFT_PORT:-10000}
thrift-start: setup
	$(PY) -m harness.thrift_server start

thrift-stop:
	$(PY) -m harness.thrift_server stop

thrift-status:
	$(PY) -m harness.thrift_server status

## cluster-start / cluster-stop: a Spark standalone cluster on 127.0.0.1 (Master, two Workers, a Thrift
## server submitted to it) for the `cluster` target; docs/cluster.md
cluster-start: setup
	$(PY) -m harness.cluster start

cluster-stop:
	$(PY) -m harness.cluster stop

cluster-status:
	$(PY) -m harness.cluster status

## bench: the benchmark suite (not part of `make test`); ARGS="--all" or ARGS="CASE --rows N"
bench: setup
	$(PY) -m benchmarks $(ARGS)

clean:
	rm -rf target logs .spark
