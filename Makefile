# The two front-door commands: `make run` (a single-node broker on 127.0.0.1:9092, data in
# ./data) and `make test` (installs everything the tests need, then runs all of them).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.brook-installed
TEST_STAMP := $(VENV)/.brook-test-installed

.PHONY: run test lint bench clean

# The C record decoder is built by the install, so a change to it reinstalls.
$(STAMP): pyproject.toml brook/protocol/_crecords.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: $(STAMP)
	$(BIN)/brook server --override log.dirs=./data

test: $(TEST_STAMP)
	scripts/install-system-deps
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

bench: $(TEST_STAMP)
	$(BIN)/python -m bench.broker_throughput
	$(BIN)/python -m bench.producer_clients

clean:
	rm -rf $(VENV) data .pytest_cache
