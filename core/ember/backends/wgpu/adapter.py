"""The GPU adapter interface the kernel layer talks to.

Everything above this line (kernels, engine, allocator, backend) is written against
:class:`GpuAdapter`; one implementation wraps wgpu-py (:mod:`.native`), and a browser one can
wrap ``navigator.gpu`` through Pyodide with the same methods. Buffers, pipelines and encoders
are opaque handles owned by the adapter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field


@dataclass
class AdapterInfo:
    """What the kernel layer needs to know about the device."""

    name: str
    backend: str = ""
    features: frozenset = field(default_factory=frozenset)
    max_binding_size: int = 128 << 20  # bytes one storage binding may span
    max_buffer_size: int = 256 << 20
    offset_alignment: int = 256  # min storage buffer offset alignment
    max_invocations: int = 256  # per workgroup
    workgroup_storage: int = 16384  # bytes of workgroup memory
    max_groups_per_dim: int = 65535


class GpuAdapter(ABC):
    """Minimal WebGPU surface: buffers, compute pipelines, one command encoder at a time."""

    info: AdapterInfo

    # ---------------------------------------------------------------- buffers
    @abstractmethod
    def create_buffer(self, size: int, kind: str):
        """A buffer of ``size`` bytes; ``kind`` is ``"storage"`` (storage + copy src/dst) or
        ``"staging"`` (map-read + copy dst)."""

    @abstractmethod
    def destroy_buffer(self, buffer) -> None: ...

    @abstractmethod
    def write_buffer(self, buffer, offset: int, data: bytes) -> None:
        """Queue a write; it lands before any command buffer submitted afterwards."""

    @abstractmethod
    def map_read(self, staging, size: int) -> bytes:
        """Wait for submitted work, map a staging buffer and copy out ``size`` bytes."""

    def map_read_into(self, staging, size: int, out) -> None:
        """:meth:`map_read` into ``out`` (a writable buffer of at most ``size`` bytes): its
        first ``len(out)`` bytes. Adapters that can copy from the mapped memory straight into
        ``out`` override it; this one goes through one intermediate ``bytes``."""
        out[:] = self.map_read(staging, size)[:len(out)]

    # ---------------------------------------------------------------- pipelines
    @abstractmethod
    def create_pipeline(self, code: str, access: tuple[str, ...]):
        """A compute pipeline for WGSL ``code`` (entry point ``main`` unless the code names
        another through ``entry``) with bindings 0.. of the given access (``"read"`` or
        ``"read_write"``), all in group 0."""

    # ---------------------------------------------------------------- recording
    @abstractmethod
    def dispatch(self, pipeline, bindings: list[tuple[object, int, int]],
                 groups: tuple[int, int, int]) -> None:
        """Record a dispatch; ``bindings`` are ``(buffer, offset, size)`` in binding order."""

    @abstractmethod
    def bind_group(self, pipeline, bindings: list[tuple[object, int, int]]):
        """A bind group for ``pipeline`` built now, for :meth:`dispatch_bound` to use many
        times (a captured program builds its groups once)."""

    @abstractmethod
    def dispatch_bound(self, pipeline, group, groups: tuple[int, int, int]) -> None:
        """Record a dispatch with a group from :meth:`bind_group`."""

    def compile_commands(self, commands: list[tuple]):
        """A function that records ``commands`` in order each time it is called; each is
        ``("dispatch", pipeline, group, groups)`` (``group`` from :meth:`bind_group`) or
        ``("copy", src, src_offset, dst, dst_offset, size)``. Adapters may override it with a
        faster loop."""
        calls = [(self.dispatch_bound if c[0] == "dispatch" else self.copy, c[1:])
                 for c in commands]

        def record() -> None:
            for fn, args in calls:
                fn(*args)

        return record

    @abstractmethod
    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        """Record a buffer-to-buffer copy (offsets and size multiples of 4)."""

    @abstractmethod
    def submit(self) -> None:
        """Finish and submit everything recorded since the last submit."""
