"""Build Ember's WebAssembly kernels: every ``wasm/*.c`` into one module,
``core/ember/backends/wasm/ember.wasm`` (git-ignored; the wheel ships it as an artifact).

Needs Debian's ``clang``, ``lld``, ``wasi-libc`` (malloc and libm for wasm32; the module
imports nothing: no WASI calls are linked) and ``libclang-rt-14-dev-wasm32`` (compiler-rt's
wasm32 builtins, which clang links into every module); ``make wasm`` installs them. Skips the build when the module is newer than
every source.

    python wasm/build.py [--force]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "core" / "ember" / "backends" / "wasm" / "ember.wasm"
FLAGS = [
    "--target=wasm32-wasi", "-O3", "-msimd128", "-mbulk-memory", "-mnontrapping-fptoint",
    "-nostartfiles", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
    "-Wno-tautological-constant-out-of-range-compare", "-Wno-type-limits",
    "-Wl,--no-entry", "-Wl,--strip-all", "-Wl,--initial-memory=4194304",
]


INSTALL = "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32, or run `make wasm`"


def sources() -> list[Path]:
    return sorted(HERE.glob("*.c"))


def is_stale() -> bool:
    if not OUT.is_file():
        return True
    built = OUT.stat().st_mtime
    return any(p.stat().st_mtime > built for p in [*sources(), *HERE.glob("*.h"), Path(__file__)])


def build(force: bool = False) -> Path:
    if not force and not is_stale():
        return OUT
    if shutil.which("clang") is None:
        raise SystemExit(f"wasm/build.py: clang is missing ({INSTALL})")
    tmp = OUT.with_suffix(".wasm.tmp")
    cmd = ["clang", *FLAGS, *map(str, sources()), "-lm", "-o", str(tmp)]
    if subprocess.run(cmd).returncode != 0:
        raise SystemExit(f"wasm/build.py: clang failed (above); the toolchain is: {INSTALL}")
    tmp.replace(OUT)  # atomic: a page or test never reads a half-written module
    return OUT


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    out = build(p.parse_args(argv).force)
    print(f"wasm: {out.relative_to(HERE.parent)} ({out.stat().st_size // 1024} KiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
