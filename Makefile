# `make build` and `make test` each create .venv when it is missing, install orgseed with its dev extras,
# then build the default org / run the whole suite (ruff, mypy, pytest).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: build test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	@# the audit page test drives Debian's chromium (headless): install it when missing
	command -v chromium >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
		apt-get install -y -qq chromium; else sudo apt-get install -y -qq chromium; fi; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

build: $(STAMP)
	$(BIN)/orgseed build --profile crmarena --out output/crmarena --force

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_build.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
