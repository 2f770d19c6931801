# The two commands of the README: `make demo` and `make test`. Each creates .venv and installs
# on first use. torch==2.13.0 is installed first when no torch is present: on these machines it
# resolves to a local CPU build, while an open range would pull the newest CUDA build (GBs).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH_PIN ?= torch==2.13.0
PYTEST_ARGS ?=

.PHONY: demo test lint format gpu-test clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.base: $(BIN)/python pyproject.toml
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_PIN)"
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

$(VENV)/.dev: $(VENV)/.test
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

demo: $(VENV)/.base
	$(BIN)/python -m jagattn demo

test: $(VENV)/.test
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

format: $(VENV)/.dev
	$(BIN)/ruff check --fix src tests
	$(BIN)/ruff format src tests

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
