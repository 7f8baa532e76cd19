"""The wgpu-py adapter: Vulkan / Metal / DX12 natively (Mesa lavapipe on a CPU-only machine)."""

from __future__ import annotations

from collections import OrderedDict

from ...errors import EmberError, UnsupportedOpError
from .adapter import AdapterInfo, GpuAdapter

try:
    import wgpu
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the wgpu backend needs wgpu-py: pip install 'ember[gpu]' (or pip install wgpu)"
    ) from e

_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-storage-size",
    "max-storage-buffers-per-shader-stage",
    "max-compute-workgroup-size-x",
    "max-compute-workgroup-size-y",
)


class NativeAdapter(GpuAdapter):
    """Wraps one ``wgpu.GPUAdapter`` and the device requested from it."""

    def __init__(self, adapter):
        # timestamp-query: only for GPU timing (start_gpu_timer), which benchmarks turn on;
        # subgroup: the subgroup reductions (compute.subgroups says when they run)
        features = [f for f in ("shader-f16", "timestamp-query", "subgroup")
                    if f in adapter.features]
        limits = {k: adapter.limits[k] for k in _LIMITS if k in adapter.limits}
        self._device = adapter.request_device_sync(required_features=features,
                                                   required_limits=limits)
        lim = self._device.limits
        raw = adapter.info
        self.info = AdapterInfo(
            name=f"{raw.get('device', '?')} via {raw.get('backend_type', '?')}",
            backend=str(raw.get("backend_type", "")),
            features=frozenset(self._device.features),
            max_binding_size=int(lim["max-storage-buffer-binding-size"]),
            max_buffer_size=int(lim["max-buffer-size"]),
            offset_alignment=int(lim["min-storage-buffer-offset-alignment"]),
            max_invocations=int(lim["max-compute-invocations-per-workgroup"]),
            workgroup_storage=int(lim["max-compute-workgroup-storage-size"]),
            max_groups_per_dim=int(lim["max-compute-workgroups-per-dimension"]),
        )
        self._queue = self._device.queue
        self._encoder = None
        self._pass = None
        self._last_pipe = None
        self._layouts: dict[tuple[str, ...], tuple] = {}
        # Bind groups cost more Python time than anything else in a dispatch; recycled buffers
        # make the same (layout, buffers, offsets) come back often in loops.
        self._groups: OrderedDict = OrderedDict()
        self.max_groups = 4096
        self._timer = None  # (query set, capacity) while GPU timing is on
        self._stamps = 0
        self._written = False  # queue writes since the last submit
        self._staging: set = set()  # the staging buffers this adapter made
        self._staged: list = []  # staging buffers copied into since the last submit
        self._staged_at: dict[int, int] = {}  # id(staging buffer) -> its copy's submission
        self._map_state: list[int] = []  # the status the map callback hands over
        self._raw = self._raw_mapping()

    # ---------------------------------------------------------------- buffers
    def create_buffer(self, size: int, kind: str):
        if kind == "staging":
            usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
            buffer = self._device.create_buffer(size=size, usage=usage)
            self._staging.add(buffer)
            return buffer
        else:
            usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                     | wgpu.BufferUsage.COPY_DST)
        return self._device.create_buffer(size=size, usage=usage)

    def destroy_buffer(self, buffer) -> None:
        self._groups.clear()
        self._staging.discard(buffer)
        self._staged_at.pop(id(buffer), None)
        buffer.destroy()

    def write_buffer(self, buffer, offset: int, data: bytes) -> None:
        self._queue.write_buffer(buffer, offset, data)
        self._written = True

    def map_read(self, staging, size: int) -> bytes:
        if self._raw is None:  # pragma: no cover - another wgpu-py layout: its own mapping
            staging.map_sync(wgpu.MapMode.READ, 0, size)
            try:
                return bytes(staging.read_mapped(0, size, copy=False))
            finally:
                staging.unmap()
        ffi, lib = self._raw
        try:
            return ffi.buffer(self._map(staging, size), size)[:]
        finally:
            lib.wgpuBufferUnmap(staging._internal)

    def map_read_into(self, staging, size: int, out) -> None:
        if self._raw is None:  # pragma: no cover - another wgpu-py layout
            return super().map_read_into(staging, size, out)
        ffi, lib = self._raw
        try:
            ffi.memmove(out, self._map(staging, size), len(out))
        finally:
            lib.wgpuBufferUnmap(staging._internal)

    def _map(self, staging, size: int):
        """Map ``staging``'s first ``size`` bytes for reading and return their address.

        wgpu-py's ``map_sync`` submits an empty command buffer first and then waits on an event
        that its poll thread sets: two thread hand-offs per read (an H200 measured ~0.29 ms
        for a dispatch and a small read, ~0.1 ms for a dispatch and a wait). Polling
        the device from this thread, with wgpu-native's blocking ``wgpuDevicePoll``, fires the
        map callback right here. Reads always follow the submit of their copy, so the empty
        submit (for queue writes not yet submitted) isn't needed."""
        ffi, lib = self._raw
        state = self._map_state
        state.clear()
        lib.wgpuBufferMapAsync(staging._internal, lib.WGPUMapMode_Read, 0, size,
                               self._map_info[0])
        device, idle = self._device._internal, 0
        # Wait for the submit that filled this buffer, not for later ones: a chunked read has
        # the next chunk's copy running meanwhile.
        index = self._staged_at.pop(id(staging), None)
        until = ffi.NULL if index is None else ffi.new("WGPUSubmissionIndex *", index)
        while not state:
            # wgpuDevicePoll says whether the queue is empty; an empty queue that leaves the
            # map pending for long means it will never finish (a lost device): fail, don't hang
            idle += bool(lib.wgpuDevicePoll(device, True, until))
            if idle > 100 and not state:
                raise EmberError(f"wgpu: mapping a staging buffer of {size} bytes for reading "
                                 "never finished although the GPU queue is empty (the device "
                                 "may have been lost)")
        if state[0] != lib.WGPUMapAsyncStatus_Success:
            raise EmberError(f"wgpu: mapping a staging buffer of {size} bytes for reading "
                             f"failed (status {state[0]}; the device may have been lost)")
        return lib.wgpuBufferGetConstMappedRange(staging._internal, 0, size)

    def _raw_mapping(self):
        """(ffi, lib) of wgpu-native and the map callback :meth:`_map` uses, or None."""
        try:
            from wgpu.backends.wgpu_native._api import ffi, lib
        except ImportError:  # pragma: no cover - another wgpu-py layout
            return None
        state = self._map_state

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def mapped(status, _message, _user1, _user2):
            state.append(status)

        self._map_info = ffi.new("WGPUBufferMapCallbackInfo *", {
            "mode": lib.WGPUCallbackMode_AllowProcessEvents, "callback": mapped})
        self._map_callback = mapped  # cffi frees a callback whose object dies
        return ffi, lib

    # ---------------------------------------------------------------- pipelines
    def _layout(self, access: tuple[str, ...]):
        if access not in self._layouts:
            # Binding 0 (the engine's meta words in its arena) takes a dynamic offset, so one
            # bind group serves a kernel's dispatches wherever their words lie in the arena.
            entries = [
                {
                    "binding": i,
                    "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.read_only_storage
                               if a == "read" else wgpu.BufferBindingType.storage,
                               "has_dynamic_offset": i == 0},
                }
                for i, a in enumerate(access)
            ]
            bgl = self._device.create_bind_group_layout(entries=entries)
            layout = self._device.create_pipeline_layout(bind_group_layouts=[bgl])
            self._layouts[access] = (bgl, layout)
        return self._layouts[access]

    def create_pipeline(self, code: str, access: tuple[str, ...]):
        bgl, layout = self._layout(access)
        module = self._device.create_shader_module(code=code)
        pipeline = self._device.create_compute_pipeline(
            layout=layout, compute={"module": module, "entry_point": "main"}
        )
        return pipeline, bgl

    # ---------------------------------------------------------------- recording
    def _compute_pass(self):
        if self._encoder is None:
            self._encoder = self._device.create_command_encoder()
        if self._pass is None:
            writes = None
            if self._timer is not None and self._stamps + 2 <= self._timer[1]:
                writes = {"query_set": self._timer[0],
                          "beginning_of_pass_write_index": self._stamps,
                          "end_of_pass_write_index": self._stamps + 1}
                self._stamps += 2
            self._pass = self._encoder.begin_compute_pass(timestamp_writes=writes)
            self._last_pipe = None
        return self._pass

    # ---------------------------------------------------------------- GPU timing
    def start_gpu_timer(self, capacity: int = 4096) -> None:
        """Time every compute pass on the GPU from now on (timestamp queries; the adapter
        must have ``timestamp-query``): :meth:`gpu_seconds` reads the sum."""
        if "timestamp-query" not in self.info.features:
            raise UnsupportedOpError(f"wgpu: {self.info.name} has no timestamp-query, so GPU "
                                     "time can't be measured on it")
        self._timer = (self._device.create_query_set(type="timestamp", count=capacity),
                       capacity)
        self._stamps = 0

    def stop_gpu_timer(self) -> None:
        self._timer = None

    def gpu_seconds(self) -> float:
        """GPU seconds spent in compute passes since the timer started or was last read
        (waits for the submitted work); passes beyond the timer's capacity aren't counted."""
        queries, n = self._timer[0], self._stamps
        if n == 0:
            return 0.0
        self.submit()
        usage = wgpu.BufferUsage
        resolved = self._device.create_buffer(size=8 * n,
                                              usage=usage.QUERY_RESOLVE | usage.COPY_SRC)
        staging = self._device.create_buffer(size=8 * n,
                                             usage=usage.MAP_READ | usage.COPY_DST)
        encoder = self._device.create_command_encoder()
        encoder.resolve_query_set(queries, 0, n, resolved, 0)
        encoder.copy_buffer_to_buffer(resolved, 0, staging, 0, 8 * n)
        self._queue.submit([encoder.finish()])
        ticks = memoryview(self.map_read(staging, 8 * n)).cast("Q")
        resolved.destroy()
        staging.destroy()
        self._stamps = 0
        from wgpu.backends.wgpu_native._api import lib

        period = lib.wgpuQueueGetTimestampPeriod(self._queue._internal)  # ns per tick
        return sum(ticks[i + 1] - ticks[i] for i in range(0, n, 2)) * period * 1e-9

    def dispatch(self, pipeline, bindings, groups) -> None:
        pipe, bgl = pipeline
        (meta, meta_off, meta_size), rest = bindings[0], bindings[1:]
        key = (bgl, id(meta), meta_size, *[(id(b), off, size) for b, off, size in rest])
        groups_cache = self._groups
        group = groups_cache.get(key)
        if group is None:
            group = self._create_group(bgl, bindings)
            groups_cache[key] = group
            if len(groups_cache) > self.max_groups:
                groups_cache.popitem(last=False)
        else:
            groups_cache.move_to_end(key)
        p = self._pass or self._compute_pass()
        if pipe is not self._last_pipe:
            p.set_pipeline(pipe)
            self._last_pipe = pipe
        p.set_bind_group(0, group, (meta_off,))
        p.dispatch_workgroups(*groups)

    def _create_group(self, bgl, bindings):
        # binding 0 at offset 0: its offset is the dynamic one given at each dispatch
        (meta, _, meta_size), rest = bindings[0], bindings[1:]
        entries = [{"binding": 0, "resource": {"buffer": meta, "offset": 0, "size": meta_size}}]
        entries += [{"binding": i, "resource": {"buffer": b, "offset": off, "size": size}}
                    for i, (b, off, size) in enumerate(rest, 1)]
        return self._device.create_bind_group(layout=bgl, entries=entries)

    def bind_group(self, pipeline, bindings):
        return self._create_group(pipeline[1], bindings), (bindings[0][1],)

    def dispatch_bound(self, pipeline, group, groups) -> None:
        pipe = pipeline[0]
        p = self._pass or self._compute_pass()
        if pipe is not self._last_pipe:
            p.set_pipeline(pipe)
            self._last_pipe = pipe
        p.set_bind_group(0, *group)
        p.dispatch_workgroups(*groups)

    def compile_commands(self, commands):
        # wgpu-native's C entry points straight from cffi: a third of wgpu-py's per-call cost
        # (no argument wrapping, offsets array built once). Validation already ran when the
        # commands were first recorded through wgpu-py, so skipping its checks loses nothing.
        try:
            from wgpu.backends.wgpu_native._api import ffi, lib
        except ImportError:  # pragma: no cover - another wgpu-py layout: the portable loop
            return super().compile_commands(commands)
        segments: list[tuple] = []  # ("copy", args) or ("dispatch", [raw dispatch, ...])
        keep = []  # the Python objects the raw handles belong to
        previous = None
        for c in commands:
            if c[0] == "copy":
                segments.append(c)
                previous = None
                continue
            (pipe, _), (group, offsets), (x, y, z) = c[1:]
            offs = ffi.new("uint32_t[]", list(offsets))
            keep += [pipe, group, offs]
            if not segments or segments[-1][0] != "dispatch":
                segments.append(("dispatch", []))
            raw_pipe = None if pipe is previous else pipe._internal
            segments[-1][1].append((raw_pipe, group._internal, len(offsets), offs, x, y, z))
            previous = pipe
        set_pipe = lib.wgpuComputePassEncoderSetPipeline
        set_group = lib.wgpuComputePassEncoderSetBindGroup
        dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups

        def record() -> None:
            for kind, *body in segments:
                if kind == "copy":
                    self.copy(*body)
                    continue
                p = (self._pass or self._compute_pass())._internal
                for pipe, group, n, offs, x, y, z in body[0]:
                    if pipe is not None:
                        set_pipe(p, pipe)
                    set_group(p, 0, group, n, offs)
                    dispatch(p, x, y, z)
                self._last_pipe = None  # set behind wgpu-py's back

        record.keep = keep
        return record

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        if dst in self._staging:
            self._staged.append(dst)
        if self._pass is not None:
            self._pass.end()
            self._pass = None
        if self._encoder is None:
            self._encoder = self._device.create_command_encoder()
        self._encoder.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)

    def submit(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None
        if self._encoder is None and self._written:
            # wgpu-native runs queue writes (and frees their staging copies) only at a submit
            self._encoder = self._device.create_command_encoder()
        self._written = False
        if self._encoder is not None:
            commands = self._encoder.finish()
            self._encoder = None
            if self._raw is None:  # pragma: no cover - another wgpu-py layout
                self._queue.submit([commands])
                return
            ffi, lib = self._raw
            index = lib.wgpuQueueSubmitForIndex(self._queue._internal, 1,
                                                ffi.new("WGPUCommandBuffer[]",
                                                        [commands._internal]))
            for staging in self._staged:
                self._staged_at[id(staging)] = index
            self._staged.clear()
