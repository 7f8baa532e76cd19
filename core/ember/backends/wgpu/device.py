"""Finding a GPU adapter: list them, choose by name, power preference or ``EMBER_WGPU_ADAPTER``.

>>> from ember.backends.wgpu.device import list_adapters
>>> names = list_adapters()   # e.g. ['llvmpipe (LLVM 15.0.6, 256 bits) via Vulkan']
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading

from ...errors import EmberError

_NO_ADAPTER = (
    "wgpu: no GPU adapter found. Install a Vulkan driver (on Debian/Ubuntu: apt-get install "
    "mesa-vulkan-drivers, which gives the CPU 'lavapipe' driver without a GPU; on a machine "
    "with a GPU, its vendor driver) and check with `python -c \"import wgpu; "
    "print(wgpu.gpu.enumerate_adapters_sync())\"`."
)


def _wgpu():
    try:
        import wgpu
    except ImportError as e:
        raise ImportError(
            "the wgpu backend needs wgpu-py: pip install 'ember[gpu]' (or pip install wgpu)"
        ) from e
    return wgpu


# Mesa's EGL prints this on stderr for every OpenGL adapter probe where no Wayland session can
# exist (libwayland, from C: Python's sys.stderr never sees it); it says nothing about ember.
_PROBE_NOISE = b"XDG_RUNTIME_DIR is invalid or not set"
_PROBING = threading.Lock()  # one redirection of fd 2 at a time: each restores what it saved


@contextlib.contextmanager
def _quiet_probe():
    """Drop :data:`_PROBE_NOISE` lines that native code writes to file descriptor 2 inside the
    block; every other line is written back to stderr afterwards. The environment is left
    alone (setting XDG_RUNTIME_DIR would also change it for child processes and other code)."""
    with _PROBING:
        sys.stderr.flush()
        try:
            saved = os.dup(2)
        except OSError:  # no stderr at all: nothing to keep quiet
            yield
            return
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                captured.seek(0)
                kept = [line for line in captured.read().splitlines(keepends=True)
                        if _PROBE_NOISE not in line]
                if kept:
                    os.write(2, b"".join(kept))


def _adapters(wgpu) -> list:
    """Every adapter wgpu-py sees, best first, probed quietly."""
    with _quiet_probe():
        return sorted(wgpu.gpu.enumerate_adapters_sync(), key=_rank)


def _label(adapter) -> str:
    info = adapter.info
    return f"{info.get('device', '?')} via {info.get('backend_type', '?')}"


def _rank(adapter) -> tuple:
    # real GPUs before CPU emulation; Vulkan/Metal/D3D12 before OpenGL
    info = adapter.info
    kind = str(info.get("adapter_type", "")).lower()
    backend = str(info.get("backend_type", "")).lower()
    return ("cpu" in kind, backend in ("opengl", "gl"))


def list_adapters() -> list[str]:
    """Names of the adapters wgpu-py sees, best first (``"<device> via <backend>"``)."""
    wgpu = _wgpu()
    return [_label(a) for a in _adapters(wgpu)]


def choose_adapter(name: str | None = None, power_preference: str | None = None):
    """A ``wgpu.GPUAdapter``: the first whose label contains ``name`` (case-insensitive;
    default ``$EMBER_WGPU_ADAPTER``), else the one wgpu suggests for ``power_preference``
    (``"high-performance"`` or ``"low-power"``), else the best ranked."""
    wgpu = _wgpu()
    name = name if name is not None else os.environ.get("EMBER_WGPU_ADAPTER") or None
    adapters = _adapters(wgpu)
    if not adapters:
        raise EmberError(_NO_ADAPTER)
    if name:
        for a in adapters:
            if name.lower() in _label(a).lower():
                return a
        raise EmberError(
            f"wgpu: no adapter matches {name!r}; available: "
            + "; ".join(_label(a) for a in adapters)
        )
    if power_preference is not None:
        try:
            with _quiet_probe():
                chosen = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        except RuntimeError:  # wgpu raises a plain RuntimeError when it finds none
            chosen = None
        if chosen is not None:
            return chosen
    return adapters[0]


def open_adapter(name: str | None = None, power_preference: str | None = None):
    """The native :class:`~.native.NativeAdapter` for the chosen adapter."""
    from .native import NativeAdapter

    return NativeAdapter(choose_adapter(name, power_preference))
