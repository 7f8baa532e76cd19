"""A machine without any GPU driver: wgpu finds no adapter and the error says what to install.

The driver search paths of the Vulkan loader and of glvnd's EGL are pointed at an empty
folder, so wgpu-py really sees no adapter (no mock)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("wgpu")

SCRIPT = """
import ember
try:
    ember.get_backend("wgpu")
except ember.EmberError as e:
    print("ERROR:", e)
else:
    print("FOUND AN ADAPTER")
"""


def test_no_adapter_error_names_the_driver_to_install(tmp_path):
    empty = str(tmp_path)
    env = dict(os.environ, VK_DRIVER_FILES=empty, VK_ICD_FILENAMES=empty,
               __EGL_VENDOR_LIBRARY_DIRS=empty,
               __EGL_VENDOR_LIBRARY_FILENAMES=os.path.join(empty, "none.json"))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120).stdout
    assert "ERROR: wgpu: no GPU adapter found" in out, out
    assert "apt-get install mesa-vulkan-drivers" in out
