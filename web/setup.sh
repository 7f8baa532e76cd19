#!/usr/bin/env bash
# Set-up of Ember's browser runtime and browser tests, idempotent (each step checks first):
# Debian's chromium (ships SwiftShader for WebGPU), Playwright for Python (drives
# /usr/bin/chromium; never `playwright install`), npm packages (pyodide; onnxruntime-web for
# benchmarks/bench_browser.py) into web/node_modules, the wasm kernels when missing
# (`make wasm`, which installs their toolchain), then web/dist
# (python web/build_dist.py, which runs Pyodide under Node to compile ember's wheel).
#
#   PYTHON=.venv/bin/python web/setup.sh
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
apt_install() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
[ -x /usr/bin/chromium ] || { echo "apt-get install chromium"; apt_install chromium; }
command -v npm >/dev/null || { echo "apt-get install npm"; apt_install npm; }
"$PY" -c "import playwright" 2>/dev/null \
    || "$PY" -m pip install -q --disable-pip-version-check playwright
[ -f node_modules/pyodide/pyodide-lock.json ] \
    || npm install --no-audit --no-fund --silent
[ -f ../core/ember/backends/wasm/ember.wasm ] || make -C .. wasm
"$PY" build_dist.py
