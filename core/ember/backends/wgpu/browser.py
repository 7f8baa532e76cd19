"""The browser adapter: ``navigator.gpu`` (WebGPU) through Pyodide's ``pyodide.ffi``.

It implements :class:`~.adapter.GpuAdapter`, so every WGSL kernel, the engine and the
allocator are shared with the native wgpu-py adapter. WebGPU reads are asynchronous
(``buffer.mapAsync``); where the browser has JavaScript Promise Integration (Chromium) and
Python was entered through ``pyodide.runPythonAsync``, ``pyodide.ffi.run_sync`` gives the same
synchronous ``tensor.tolist()`` as native. Elsewhere use ``await tensor.to_data_async()``.

In a page, ``web/ember.js`` calls :func:`ember.backends.browser.init_browser`, which picks
WebGPU when an adapter is offered (else the wasm kernels, else the pure-Python backend):

>>> backend = await browser_backend()    # doctest: +SKIP
>>> y = ember.tensor([1.0, 2.0], backend=backend).exp()  # doctest: +SKIP
>>> (await y.to_data_async()).tolist()   # doctest: +SKIP
[2.718281828459045, 7.38905609893065]
"""

from __future__ import annotations

from typing import Any

from ...tensordata import TensorData
from ...errors import EmberError, UnsupportedOpError
from .adapter import AdapterInfo, GpuAdapter

# Limits the kernel layer benefits from: request the adapter's maximum instead of WebGPU's
# defaults (128 MiB bindings, 256 invocations, 16 KiB workgroup memory).
_LIMITS = (
    "maxStorageBufferBindingSize",
    "maxBufferSize",
    "maxComputeInvocationsPerWorkgroup",
    "maxComputeWorkgroupStorageSize",
    "maxStorageBuffersPerShaderStage",
    "maxComputeWorkgroupSizeX",
    "maxComputeWorkgroupSizeY",
    "maxComputeWorkgroupsPerDimension",
)

# body of (device, layout, ...flat): flat is buffer, offset, size per binding, in order
_BIND_GROUP_JS = """
const entries = [];
for (let i = 0; i < flat.length; i += 3) {
  entries.push({ binding: i / 3, resource: { buffer: flat[i], offset: flat[i + 1],
                                             size: flat[i + 2] } });
}
return device.createBindGroup({ layout, entries });
"""

_NO_JSPI = (
    "wgpu (browser): a synchronous read ({op}) needs JavaScript Promise Integration, which "
    "this browser (or this call path) lacks. Enter Python through pyodide.runPythonAsync in "
    "a browser with JSPI (Chromium 137+), or read asynchronously: `await t.to_data_async()`."
)


def _ffi():
    try:
        import js
        from pyodide import ffi
    except ImportError as e:
        raise ImportError(
            "ember.backends.wgpu.browser runs inside Pyodide (a web page); natively use the "
            "wgpu-py adapter: ember.get_backend('wgpu')"
        ) from e
    return js, ffi


def _obj(d: Any):
    """A Python dict/list tree as plain JS objects (what WebGPU descriptors must be)."""
    js, ffi = _ffi()
    return ffi.to_js(d, dict_converter=js.Object.fromEntries)


def jspi_available() -> bool:
    """Whether synchronous reads work here (JSPI and a ``runPythonAsync`` call stack)."""
    _, ffi = _ffi()
    can = getattr(ffi, "can_run_sync", None)
    return bool(can()) if can is not None else False


def _is_null(value, ffi) -> bool:
    # JS null arrives as pyodide.ffi.jsnull (Pyodide 0.28+), undefined as None
    return value is None or value is getattr(ffi, "jsnull", None)


def _limit(limits, name: str, default: int) -> int:
    value = getattr(limits, name, None)
    return int(value) if value is not None else default


class BrowserAdapter(GpuAdapter):
    """Wraps a ``GPUDevice`` from ``navigator.gpu``; build it with :meth:`create`."""

    def __init__(self, device, label: str = "WebGPU"):
        js, _ = _ffi()
        self._js = js
        self._device = device
        self._queue = device.queue
        lim = device.limits
        features = frozenset(str(f) for f in getattr(js.Array, "from")(device.features))
        self.info = AdapterInfo(
            name=label,
            backend="webgpu",
            features=features,
            max_binding_size=_limit(lim, "maxStorageBufferBindingSize", 128 << 20),
            max_buffer_size=_limit(lim, "maxBufferSize", 256 << 20),
            offset_alignment=_limit(lim, "minStorageBufferOffsetAlignment", 256),
            max_invocations=_limit(lim, "maxComputeInvocationsPerWorkgroup", 256),
            workgroup_storage=_limit(lim, "maxComputeWorkgroupStorageSize", 16384),
            max_groups_per_dim=_limit(lim, "maxComputeWorkgroupsPerDimension", 65535),
        )
        self._encoder = None
        self._pass = None
        self._layouts: dict[tuple[str, ...], tuple] = {}
        self._timer = None  # (query set, capacity) while GPU timing is on
        self._stamps = 0
        # An eager dispatch makes a bind group: built in JS from flat arguments it is one call
        # (~15 us in Pyodide) instead of a Python dict tree converted by to_js (~90 us).
        self._create_group = js.Function.new("device", "layout", "...flat", _BIND_GROUP_JS)
        self.errors: list[str] = []  # uncaptured WebGPU errors, newest last
        self._on_error = _ffi()[1].create_proxy(self._record_error)
        device.addEventListener("uncapturederror", self._on_error)

    def _record_error(self, event) -> None:
        self.errors.append(str(event.error.message))
        del self.errors[:-20]

    @classmethod
    async def create(cls, power_preference: str = "high-performance") -> BrowserAdapter:
        """Request an adapter and a device with the adapter's best limits (and shader-f16
        when offered). Raises :class:`EmberError` when the page has no WebGPU."""
        js, ffi = _ffi()
        gpu = getattr(js.navigator, "gpu", None)
        if _is_null(gpu, ffi):
            raise EmberError(
                "wgpu (browser): navigator.gpu is missing: this browser has no WebGPU or the "
                "page is not a secure context (serve it on https, 127.0.0.1 or localhost)"
            )
        adapter = await gpu.requestAdapter(_obj({"powerPreference": power_preference}))
        if _is_null(adapter, ffi):
            raise EmberError("wgpu (browser): navigator.gpu.requestAdapter() found no adapter")
        limits = {}
        for name in _LIMITS:
            value = getattr(adapter.limits, name, None)
            if value is not None:
                limits[name] = value
        # timestamp-query: only for GPU timing (start_gpu_timer), which benchmarks turn on
        features = [f for f in ("shader-f16", "timestamp-query") if adapter.features.has(f)]
        device = await adapter.requestDevice(
            _obj({"requiredFeatures": features, "requiredLimits": limits})
        )
        raw = getattr(adapter, "info", None)
        parts = []
        if raw is not None:
            parts = [str(getattr(raw, k, "") or "") for k in ("description", "vendor",
                                                                "architecture")]
        label = " ".join(p for p in parts if p) or "adapter"
        return cls(device, f"{label} via WebGPU")

    # ---------------------------------------------------------------- buffers
    def create_buffer(self, size: int, kind: str):
        usage = self._js.GPUBufferUsage
        if kind == "staging":
            flags = usage.MAP_READ | usage.COPY_DST
        else:
            flags = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        return self._device.createBuffer(_obj({"size": size, "usage": flags}))

    def destroy_buffer(self, buffer) -> None:
        buffer.destroy()

    def write_buffer(self, buffer, offset: int, data: bytes) -> None:
        arr = self._js.Uint8Array.new(len(data))
        arr.assign(data)
        self._queue.writeBuffer(buffer, offset, arr)

    def _copy_out(self, staging, size: int) -> bytes:
        try:
            return self._js.Uint8Array.new(staging.getMappedRange(0, size)).to_bytes()
        finally:
            staging.unmap()

    def map_read(self, staging, size: int) -> bytes:
        if not jspi_available():
            raise EmberError(_NO_JSPI.format(op="map_read"))
        _, ffi = _ffi()
        ffi.run_sync(staging.mapAsync(self._js.GPUMapMode.READ, 0, size))
        return self._copy_out(staging, size)

    async def map_read_async(self, staging, size: int) -> bytes:
        """:meth:`map_read` for browsers without JSPI (awaits ``mapAsync``)."""
        await staging.mapAsync(self._js.GPUMapMode.READ, 0, size)
        return self._copy_out(staging, size)

    # ---------------------------------------------------------------- pipelines
    def _layout(self, access: tuple[str, ...]):
        if access not in self._layouts:
            compute = self._js.GPUShaderStage.COMPUTE
            entries = [
                {"binding": i, "visibility": compute,
                 "buffer": {"type": "read-only-storage" if a == "read" else "storage"}}
                for i, a in enumerate(access)
            ]
            bgl = self._device.createBindGroupLayout(_obj({"entries": entries}))
            layout = self._device.createPipelineLayout(_obj({"bindGroupLayouts": [bgl]}))
            self._layouts[access] = (bgl, layout)
        return self._layouts[access]

    def create_pipeline(self, code: str, access: tuple[str, ...]):
        bgl, layout = self._layout(access)
        module = self._device.createShaderModule(_obj({"code": code}))
        desc = _obj({"layout": layout, "compute": {"module": module, "entryPoint": "main"}})
        if not jspi_available():  # errors surface later as uncaptured errors
            return self._device.createComputePipeline(desc), bgl
        _, ffi = _ffi()
        try:
            pipeline = ffi.run_sync(self._device.createComputePipelineAsync(desc))
        except ffi.JsException as e:
            raise EmberError(f"wgpu (browser): pipeline creation failed: {e}"
                             f"{self._compile_messages(module)}") from e
        return pipeline, bgl

    def _compile_messages(self, module) -> str:
        _, ffi = _ffi()
        try:
            info = ffi.run_sync(module.getCompilationInfo())
            lines = [f"\n  {m.type} line {m.lineNum}: {m.message}" for m in info.messages]
        except Exception:  # noqa: BLE001 (the messages are a courtesy; the error itself is already known)
            return ""
        return "".join(lines[:10])

    # ---------------------------------------------------------------- recording
    def _compute_pass(self):
        if self._encoder is None:
            self._encoder = self._device.createCommandEncoder()
        if self._pass is None:
            desc = {}
            if self._timer is not None and self._stamps + 2 <= self._timer[1]:
                desc["timestampWrites"] = {"querySet": self._timer[0],
                                           "beginningOfPassWriteIndex": self._stamps,
                                           "endOfPassWriteIndex": self._stamps + 1}
                self._stamps += 2
            self._pass = self._encoder.beginComputePass(_obj(desc))
        return self._pass

    # ---------------------------------------------------------------- GPU timing
    def start_gpu_timer(self, capacity: int = 4096) -> None:
        """Time every compute pass on the GPU from now on (timestamp queries; the device
        must have ``timestamp-query``): :meth:`gpu_seconds` reads the sum. Chromium rounds
        timestamps to 100 us unless started with ``--enable-webgpu-developer-features``."""
        if "timestamp-query" not in self.info.features:
            raise UnsupportedOpError(f"wgpu (browser): {self.info.name} has no "
                                     "timestamp-query, so GPU time can't be measured on it")
        query_set = self._device.createQuerySet(_obj({"type": "timestamp", "count": capacity}))
        self._timer, self._stamps = (query_set, capacity), 0

    def stop_gpu_timer(self) -> None:
        self._timer = None

    def gpu_seconds(self) -> float:
        """GPU seconds spent in compute passes since the timer started or was last read
        (submits and waits, synchronously: needs JSPI); passes beyond the capacity aren't
        counted."""
        queries, n = self._timer[0], self._stamps
        if n == 0:
            return 0.0
        self.submit()
        usage = self._js.GPUBufferUsage
        resolved = self._device.createBuffer(
            _obj({"size": 8 * n, "usage": usage.QUERY_RESOLVE | usage.COPY_SRC}))
        staging = self.create_buffer(8 * n, "staging")
        encoder = self._device.createCommandEncoder()
        encoder.resolveQuerySet(queries, 0, n, resolved, 0)
        encoder.copyBufferToBuffer(resolved, 0, staging, 0, 8 * n)
        self._queue.submit(self._js.Array.of(encoder.finish()))
        try:
            ticks = memoryview(self.map_read(staging, 8 * n)).cast("Q")
        finally:
            resolved.destroy()
            staging.destroy()
        self._stamps = 0
        # WebGPU timestamps are nanoseconds
        return sum(ticks[i + 1] - ticks[i] for i in range(0, n, 2)) * 1e-9

    def dispatch(self, pipeline, bindings, groups) -> None:
        self.dispatch_bound(pipeline, self.bind_group(pipeline, bindings), groups)

    def bind_group(self, pipeline, bindings):
        flat = [value for binding in bindings for value in binding]
        return self._create_group(self._device, pipeline[1], *flat)

    def dispatch_bound(self, pipeline, group, groups) -> None:
        p = self._compute_pass()
        p.setPipeline(pipeline[0])
        p.setBindGroup(0, group)
        p.dispatchWorkgroups(*groups)

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None
        if self._encoder is None:
            self._encoder = self._device.createCommandEncoder()
        self._encoder.copyBufferToBuffer(src, src_offset, dst, dst_offset, size)

    def submit(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None
        if self._encoder is not None:
            self._queue.submit(self._js.Array.of(self._encoder.finish()))
            self._encoder = None


def _browser_backend_class():
    from ... import dtype as dt
    from .backend import WgpuBackend, _int32_to_int64
    from .launch import contiguous
    from .primitive import PACK

    class BrowserWgpuBackend(WgpuBackend):
        """:class:`WgpuBackend` on a :class:`BrowserAdapter`, plus awaitable reads."""

        async def to_data_async(self, x) -> TensorData:
            x = contiguous(self.rt, x)
            nbytes = x.size * (4 // PACK[x.dtype])
            raw = b""
            if nbytes:
                size = -(-nbytes // 4) * 4
                staging = self.rt.adapter.create_buffer(size, "staging")
                try:
                    # the copy out after the pending kernels, in their command buffer
                    self.rt.adapter.copy(x.block.buffer, 0, staging, 0, size)
                    self.rt.engine.submit()
                    raw = (await self.rt.adapter.map_read_async(staging, size))[:nbytes]
                finally:
                    self.rt.adapter.destroy_buffer(staging)
            if x.dtype == dt.int64:
                raw = _int32_to_int64(raw)
            return TensorData(raw, x.shape, x.dtype)

    return BrowserWgpuBackend


async def browser_backend(power_preference: str = "high-performance"):
    """A wgpu backend on this page's WebGPU device (raises :class:`EmberError` without one)."""
    adapter = await BrowserAdapter.create(power_preference)
    return _browser_backend_class()(adapter=adapter)


async def call_async(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` (e.g. a model) with its tensor result(s) read asynchronously:
    the async model call for browsers without JSPI. Returns TensorData (or a tuple of them).

    >>> probs = await call_async(model, x)      # doctest: +SKIP
    >>> probs.tolist()                          # doctest: +SKIP
    """
    out = fn(*args, **kwargs)
    if isinstance(out, (tuple, list)):
        return tuple([await t.to_data_async() for t in out])
    return await out.to_data_async()
