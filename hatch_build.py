"""Hatchling build hook: ember's wheel and sdist carry the compiled kernels, or the build fails
saying what to run. Never a wheel that silently lacks them.

The kernels are git-ignored build outputs of ``make``: the wasm backend's
``core/ember/backends/wasm/ember.wasm`` and the native ember_micro kernels
``embedded/build/native/<arch>/ember_kernels.mpy`` for every arch in :data:`NATIVE_ARCHS`.
Building them here is not an option: they need apt packages (clang, lld, wasi-libc, compiler-rt's
wasm32 builtins; MicroPython's source package, gcc-arm-none-eabi), which a wheel build must not
install, and an sdist has no Makefile. The sdist carries the built files at the same paths, so
``python -m build`` (sdist, then the wheel from it) keeps them.

``EMBER_WHEEL_WITHOUT_KERNELS=1`` builds without them, saying so: for web/build_dist.py, whose
Pyodide wheel drops both (the page loads ember.wasm beside it and runs no MicroPython).
"""

from __future__ import annotations

import os
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

WASM = "core/ember/backends/wasm/ember.wasm"
#: what embedded/setup.sh builds: the unix port's x64 and the Cortex-M0/M3/M4F boards'
NATIVE_ARCHS = ("x64", "armv6m", "armv7m", "armv7emsp")
SKIP = "EMBER_WHEEL_WITHOUT_KERNELS"


def native_kernel(arch: str) -> str:
    """The checkout path of ``arch``'s native kernels."""
    return f"embedded/build/native/{arch}/ember_kernels.mpy"


def missing_kernels(root: str | os.PathLike) -> list[str]:
    """The kernel files (paths relative to ``root``) that a build of ``root`` would lack."""
    wanted = [WASM, *(native_kernel(arch) for arch in NATIVE_ARCHS)]
    return [path for path in wanted if not Path(root, path).is_file()]


def refusal(missing: list[str]) -> str:
    """The build error for ``missing`` kernel files: what is missing and the commands that
    build it."""
    steps = []
    if WASM in missing:
        steps.append("`make wasm` (ember.wasm; installs clang, lld, wasi-libc and "
                     "libclang-rt-14-dev-wasm32 with apt)")
    if any(path != WASM for path in missing):
        steps.append(f"`bash embedded/setup.sh` (the native kernels for {', '.join(NATIVE_ARCHS)};"
                     " installs its apt packages and builds MicroPython from Debian's source)")
    return (f"ember's wheel must carry its compiled kernels, and these are missing: "
            f"{', '.join(missing)}. In the ember checkout run {' and '.join(steps)}, then build "
            f"again (`make test` runs both). {SKIP}=1 builds a wheel without them on purpose.")


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if version == "editable":
            return  # an editable install reads the kernels from the checkout itself
        missing = missing_kernels(self.root)
        if missing and os.environ.get(SKIP, "") not in ("", "0"):
            self.app.display_warning(f"{SKIP}: building ember's {self.target_name} without "
                                     f"{', '.join(missing)}")
        elif missing:
            raise RuntimeError(refusal(missing))
        for arch in NATIVE_ARCHS:
            mpy = Path(self.root, native_kernel(arch))
            if not mpy.is_file():
                continue
            # the wheel: where ember.resources finds them; the sdist: where this hook does
            build_data["force_include"][str(mpy)] = (
                f"ember/_data/micro/build/native/{arch}/ember_kernels.mpy"
                if self.target_name == "wheel" else native_kernel(arch))
        if self.target_name == "sdist" and WASM not in missing:
            build_data["force_include"][str(Path(self.root, WASM))] = WASM
