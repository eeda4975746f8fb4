# joinery: the two commands are `make demo` and `make test`. Everything else is optional.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export JOINERY_SPARK_DIR ?= $(CURDIR)/.spark/local
export JOINERY_JARS_DIR ?= $(CURDIR)/.spark/jars
export DBT_PROFILES_DIR ?= $(CURDIR)/profiles
# pytest-xdist workers of `make test`; they share one Thrift server, started before them (6 GB of heap).
# More workers than cores: a worker spends part of its time waiting on dbt, the metastore and process
# starts (benchmarks/optimizations.md, "The test suite").
TEST_WORKERS ?= 4
CHECK_TESTS := $(addprefix python_tests/,test_macro_layout.py test_packaging.py test_security.py \
	test_input_formats.py test_rebuild.py test_upsert_delta.py)
# make check's second pass, on dbt-core 1.11 (still admitted by require-dbt-version): the package in
# an installing project, and joinery_upsert's commits (.venv-dbt111, built by `setup.sh --dbt111`).
CHECK_TESTS_DBT111 := $(addprefix python_tests/,test_packaging.py test_upsert_delta.py)

.PHONY: demo test check setup lint thrift-start thrift-stop thrift-status cluster-start cluster-stop cluster-status bench clean

## demo: install if needed, then `dbt build` every seed, example model and test on the embedded Spark
demo: setup
	$(PY) -m harness.demo

## test: install if needed, then the whole suite: pytest (own Thrift server), `make lint` among its
## tests (python_tests/test_lint.py), so that the lint runs beside the other modules
test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 python_tests

## check: the quick tier for everyday work: ruff, sqlfluff on the SQL sources, and the tests of the
## layout, the package's surface, the input formats of every capability and joinery_upsert's commits;
## then the package's surface and joinery_upsert's commits again on dbt-core 1.11
check: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/sqlfluff lint --processes 0 models macros tests integration_tests/models
	$(PY) -m pytest -n 2 --dist loadfile $(CHECK_TESTS)
	@bash scripts/setup.sh --dbt111
	.venv-dbt111/bin/python -m pytest -n 2 --dist loadfile $(CHECK_TESTS_DBT111)

setup:
	@bash scripts/setup.sh

## lint: ruff; sqlfluff on the SQL sources, then on the SQL the macros generate: every example model's
## first run and every incremental example's incremental run, compiled on the embedded Spark after an
## empty build of their inputs, the public macros no example calls, incremental runs on rows that
## force compaction's other paths and the FK join's MERGEs, and the statements that write which those
## runs sent (harness/compile_examples.py).
## `macros` renders to no SQL as a source: sqlfluff checks its Jinja and line lengths there.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/sqlfluff lint --processes 0 models macros tests integration_tests/models
	$(PY) -m harness.compile_examples target/lint_compile
	$(VENV)/bin/sqlfluff lint --processes 0 --config lint/compiled.sqlfluff \
		$(addprefix target/lint_compile/sql/,first_run incremental macros forced)
	$(VENV)/bin/sqlfluff lint --processes 0 --config lint/sent.sqlfluff target/lint_compile/sql/sent

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
