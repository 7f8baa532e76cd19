"""Hatchling build hook: the wheel also carries the native ember_micro kernels that `make`
built (``embedded/build/native/<arch>/ember_kernels.mpy``, git-ignored, so not listed in
pyproject's force-include, which fails on a missing path). A checkout without them builds a
wheel whose MicroPython runs the ulab or pure tiers only.
"""

from __future__ import annotations

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install reads embedded/build/ from the checkout itself
        for mpy in sorted(Path(self.root, "embedded/build/native").glob("*/ember_kernels.mpy")):
            arch = mpy.parent.name
            build_data["force_include"][str(mpy)] = (
                f"ember/_data/micro/build/native/{arch}/ember_kernels.mpy")
