# The two front-door commands: `make run` (a single-node broker on 127.0.0.1:9092, data in
# ./data) and `make test` (installs everything the tests need, then runs all of them).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.brook-installed
TEST_STAMP := $(VENV)/.brook-test-installed
SPARK_STAMP := $(VENV)/.brook-spark-installed
EXPERIMENTS_STAMP := $(VENV)/.brook-experiments-installed

.PHONY: run test lint bench bench-spark experiments experiment-kip794 experiment-kip227 experiment-kip951 experiment-kip250 pipeline clean

# The C extensions are built by the install, so a change to one reinstalls.
$(STAMP): pyproject.toml brook/protocol/_crecords.c brook/protocol/_cwalk.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

$(SPARK_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[spark]'
	touch $@

$(EXPERIMENTS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[experiments]'
	touch $@

run: $(STAMP)
	$(BIN)/brook server --override log.dirs=./data

test: $(TEST_STAMP)
	scripts/install-system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PYSPARK_PYTHON=$(abspath $(BIN)/python) SPARK_LOCAL_IP=127.0.0.1 \
		$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(TEST_STAMP)
	$(BIN)/python -m bench.broker_throughput
	$(BIN)/python -m bench.producer_clients
	$(BIN)/python -m bench.txn_produce

# The seed proposals' experiments (docs/experiments.md), each on a 3-node brook cluster, with
# its plot redrawn into docs/images/; KIP-794's full run takes ~6 minutes, KIP-227's ~4 (its
# follower case ~4 more), KIP-951's ~13, KIP-250's ~45 (four configurations of 10 minutes, each
# on a fresh cluster). `make experiments` runs them all, then prints one table: each seed's
# claim, Brook's figure, whether it reproduces; EXPERIMENT_ARGS=--quick runs each at a tiny size (the tooling's smoke
# test, a few minutes), EXPERIMENT_ARGS=--summary only tabulates the saved results.
experiments: $(EXPERIMENTS_STAMP)
	$(BIN)/python -m bench.experiments $(EXPERIMENT_ARGS)

experiment-kip794: $(EXPERIMENTS_STAMP)
	$(BIN)/python -m bench.kip794_experiment --plot $(EXPERIMENT_ARGS)

experiment-kip227: $(EXPERIMENTS_STAMP)
	$(BIN)/python -m bench.kip227_experiment --plot $(EXPERIMENT_ARGS)
	$(BIN)/python -m bench.kip227_followers --plot

experiment-kip951: $(EXPERIMENTS_STAMP)
	$(BIN)/python -m bench.kip951_experiment --plot $(EXPERIMENT_ARGS)

experiment-kip250: $(EXPERIMENTS_STAMP)
	$(BIN)/python -m bench.kip250_experiment --plot $(EXPERIMENT_ARGS)

# The clickstream example: a broker on a free loopback port (data in ./data-pipeline), the
# generator and the Spark job; prints the results and stops everything.
pipeline: $(SPARK_STAMP)
	scripts/install-system-deps
	PYSPARK_PYTHON=$(abspath $(BIN)/python) SPARK_LOCAL_IP=127.0.0.1 \
		$(BIN)/python -m examples.clickstream.pipeline --data-dir ./data-pipeline

bench-spark: $(TEST_STAMP)
	scripts/install-system-deps
	PYSPARK_PYTHON=$(abspath $(BIN)/python) SPARK_LOCAL_IP=127.0.0.1 \
		$(BIN)/python -m bench.spark_read

clean:
	rm -rf $(VENV) data data-pipeline .pytest_cache
