# Decoding Lab: `make run` starts the app on the bundled default model,
# `make test` runs every test. Each target sets up what it needs first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# Re-install when a requirements file changes.
STAMP := $(VENV)/.stamp-$(shell cat requirements.txt requirements-dev.txt scripts/install.sh scripts/build_llama_cpp.sh 2>/dev/null | cksum | cut -d' ' -f1)
PORT ?= 7860

.PHONY: run test test-fast test-model test-app setup models browser llama-server vllm vllm-cache bench load clean

$(STAMP): requirements.txt requirements-dev.txt scripts/install.sh scripts/build_llama_cpp.sh
	bash scripts/install.sh "$(PYTHON)" "$(VENV)"
	touch $@

setup: $(STAMP)

# Convert the bundled GGUF models once into a fast-loading cache (~/.cache/decoding_lab).
models: setup
	$(PY) -m decoding_lab models --prepare

# Debian's chromium for the browser tests (playwright never downloads a browser here).
browser:
	bash scripts/install_browser.sh

# llama.cpp's own llama-server for the remote-engine tests, from the llama.cpp source that
# llama-cpp-python vendors: compiled with the wheel in `setup` (scripts/build_llama_cpp.sh) and
# copied from ~/.cache here.
llama-server: setup
	bash scripts/build_llama_server.sh "$(VENV)"

# vLLM's CPU build for the vLLM tests, in its own environment shared by every checkout (~/.cache;
# about 2 min the first time). Where it cannot install, the vLLM tests skip and say why.
vllm: setup vllm-cache
	bash scripts/setup_vllm.sh "$(VENV)"

# vLLM's install into ~/.cache needs nothing of the app's environment: `make test` runs it beside `setup`.
vllm-cache:
	bash scripts/setup_vllm.sh --cache-only

run: setup models
	GRADIO_ANALYTICS_ENABLED=False $(PY) app.py

# The tests, in three lanes named for what they need (tests/lanes.py puts each test in one):
#   test-fast   unit tests, doctests, the tiny random model: no real model, no server, no browser
#   test-model  the bundled models: parity, strategies, lessons' claims, llama.cpp, live servers
#   test-app    gradio_client and browser tests against one shared app and one Chromium
# `make test` runs all three at once (what CI runs). Every lane runs in JOBS processes
# (pytest-xdist, one test file per group, so a file's module fixtures start once; each process
# starts the shared app and Chromium at most once); JOBS=0 runs them in this one process.
PYTEST := $(PY) -m pytest -q -ra --durations=30
JOBS ?= 2
XDIST = $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist loadgroup)

# A lane's set-up runs three jobs at once: on a fresh machine llama.cpp compiles (in `setup`, beside
# its pip installs) while vLLM installs and the browser is checked; then the models, llama-server
# and the vLLM link. With everything in place each step is a check of a second or less.
SETUP_JOBS = @$(MAKE) --no-print-directory -j 3

test:
	$(SETUP_JOBS) setup models browser llama-server vllm
	$(PYTEST) $(XDIST)

test-fast: setup
	$(PYTEST) -m fast $(XDIST)

test-model:
	$(SETUP_JOBS) setup models llama-server vllm
	$(PYTEST) -m model $(XDIST)

test-app:
	$(SETUP_JOBS) setup models browser llama-server vllm
	$(PYTEST) -m app $(XDIST)

bench: setup models
	$(PY) -m decoding_lab bench --json

# Many tabs at once against app.py (scripts/load_test.py --help for sessions, seconds, rounds).
load: setup models
	OMP_NUM_THREADS=1 $(PY) scripts/load_test.py --sessions 16 --seconds 120 --rounds 3 --ttl 60

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
