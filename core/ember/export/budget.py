"""How much flash and RAM an exported model needs on the board, and the budget check.

The estimate follows what ``embedded/ember_micro`` allocates (see ``model.py`` there):

- **flash**: the model file, byte for byte (header, layer table, aligned weight blocks);
- **RAM** (``ram_bytes``, what the budget is checked against; ``heap_bytes`` adds the room a
  MicroPython heap needs beyond its live data): two ping-pong activation buffers of the largest activation (float32), one more per
  open residual skip, the int8 buffer for quantised layer inputs, weights kept resident (blocks
  of at most ``resident`` bytes) with biases and scales, the chunk buffer that streams the
  larger weight blocks from flash (weight-only layers: also the float buffer their rows are
  dequantized into, a few rows at a time), the output vector, and the runtime itself (its code and
  per-layer records: :data:`RUNTIME_BYTES` + :data:`LAYER_BYTES` per layer, measured on the
  MicroPython unix port with ember_micro precompiled to .mpy);
- **per kernel tier** (``tier_bytes``): what one inference allocates on top, at its peak —
  a few KB on the native tier (its C loops allocate nothing), boxed floats on the pure tier
  (garbage the collector takes back as it goes), and on the ulab tier
  the largest set of live ndarray temporaries (a conv/pool output row a few times over, a
  conv row's gathered input patch, or ``STEP``-element slices). ``ram_bytes``/``heap_bytes`` take the hungriest tier, so the
  figure holds whichever tier the board picks; ``ram_for(tier)``/``heap_for(tier)`` give one.

>>> from ember import nn
>>> from ember.export import lower
>>> est = estimate_memory(lower(nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU()), (1, 28, 28)))
>>> est.activation_bytes, est.flash_bytes
(43264, 420)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import EmberError
from . import format as fmt
from .ir import Layer, Program

# ember_micro's loaded code, the Model and file objects, and per-layer records with their
# geometry arrays: ~25 KB + ~0.8 KB per layer live after loading on the unix port (ember_micro
# as .mpy; the weight-only layers' format checks and chunk loop added ~2 KB, their dequant
# module ~1 KB more where a model has them), rounded up; tests/embedded/test_budget.py and
# test_tiers.py check the estimate bounds the real heap
RUNTIME_BYTES = 30 * 1024
LAYER_BYTES = 1024
# a MicroPython heap needs room beyond the live data (fragmentation, the interpreter, the
# script that runs the model): heap_for = HEAP_FACTOR × ram_for + HEAP_BASE, fitted to the
# smallest heaps the MNIST MLP and CNN (f32, int8, int4) ran in on every tier of the unix
# port and the ulab builds (tests/embedded/test_heap.py bisects them; heap_for stays between
# the measured minimum and 15 % above it)
HEAP_FACTOR = 1.1
HEAP_BASE = 4 * 1024
# A 32-bit board that runs ember_micro's .mpy files in place from a ROMFS image (the emulated
# Cortex-M boards, ember.export.qemu) keeps the runtime's bytecode out of the heap and its
# objects are half the size of the 64-bit unix port's, so each tier needs this much less than
# ram_for(tier) counts (heap_for(tier, romfs=True)); fitted to the smallest heaps the MNIST MLP
# (f32, int8, int4) ran in on the an385 and an386 boards (native, pure) and the an386u (ulab),
# with the boards' RAM at 0x20000000 (embedded/qemu/mps2_sram.ld: with the heap at 0x2E300,
# byte counts such as the ROMFS image's size pinned heap blocks, and the pure-tier minima moved
# with the checkout's path): tests/embedded/test_board_heap.py bisects them
ROMFS_SAVING = {"native": 24 * 1024 + 512, "ulab": 33 * 1024 + 768, "pure": 33 * 1024}
# ... all of it with ember_micro precompiled (.mpy); imported from .py sources, the board compiles
# every module first: 45-56 KB more heap for the MNIST models on the unix port
SOURCE_BYTES = 56 * 1024
RESIDENT = 16384  # ember_micro.Model defaults: weight blocks up to this stay in RAM
CHUNK = 8192  # larger ones stream through a buffer of about this size
ULAB_CHUNK = 16384  # ... of this size on the ulab tier (fewer chunks: less garbage)
TIERS = ("native", "ulab", "pure")  # ember_micro's automatic order
# ulab tier (embedded/ember_micro/_ulab.py): elementwise work goes in slices of STEP floats
# with up to ULAB_STEP_TEMPS live temporaries (quantize); a conv keeps its row accumulator,
# one dot result, a widened int8 row and an activation result alive (ULAB_ROW_TEMPS rows);
# ULAB_HEADERS covers the ndarray headers of views
ULAB_STEP = 256
ULAB_STEP_TEMPS = 8
ULAB_ROW_TEMPS = 4
ULAB_HEADERS = 4 * 1024
ULAB_PATCH = 8192  # _ulab.SCRATCH: a conv row's input patch, reserved once by the loader
# the pure tier's boxed floats and loop objects between collections, and its larger module
PURE_BYTES = 12 * 1024 + 512
# int8 models on the pure tier (embedded/ember_micro/_chain.py) also keep a second int8 buffer
# (at most the largest activation), the uint8 input table, 8 ints per output row of each int8
# layer and the chain planner's code (the loader allocates the buffer with the activations,
# before the weights' small arrays, so the heap the model needs is monotonic in its size)
PURE_CHAIN_CODE = 6 * 1024
# the native tier's per-inference allocations (memoryview slices for streamed chunks, boxed
# scalars): 4.4 KB measured on the unix port, 2.1 KB on the Cortex-M boards
NATIVE_BYTES = 8 * 1024


class BudgetError(EmberError, ValueError):
    """The model does not fit the stated flash or RAM budget.

    >>> from ember import nn
    >>> from ember.export import check_budget, estimate_memory, lower
    >>> est = estimate_memory(lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), (1, 2, 2)))
    >>> check_budget(est, ram_bytes=1024)
    Traceback (most recent call last):
    ...
    ember.export.budget.BudgetError: export: the model needs ~... of RAM, over the 1 KB RAM budget...
    """


def human(n: float) -> str:
    """Bytes in the units a datasheet uses: ``256 KB``, ``4.8 MB`` (1 KB = 1024 bytes)."""
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) or v >= 100 else f"{v:.1f} {unit}"
    return f"{int(n)} bytes"


def _size(shape) -> int:
    return shape[0] * shape[1] * shape[2]


def _dims(shape) -> str:
    c, h, w = shape
    return f"{c}" if (h, w) == (1, 1) else f"{c}×{h}×{w}"


@dataclass
class MemoryEstimate:
    """Flash and RAM an exported program needs on the board, in bytes, part by part.

    >>> from ember import nn
    >>> from ember.export import estimate_memory, lower
    >>> est = estimate_memory(lower(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), (1, 2, 2)))
    >>> est.flash_bytes > 0, est.ram_bytes == est.ram_for(), est.heap_bytes == est.heap_for()
    (True, True, True)
    >>> est.largest_activation
    '1×2×2 f32 = 16 bytes'
    """

    flash_bytes: int
    activation_bytes: int  # the two ping-pong buffers
    skip_bytes: int  # residual skip buffers
    int8_input_bytes: int
    resident_weight_bytes: int  # weights, biases and scales kept in RAM
    stream_bytes: int  # the buffer that streams large weight blocks
    output_bytes: int
    runtime_bytes: int
    largest_shape: tuple[int, int, int] = (0, 0, 0)
    largest_layer: str = ""
    n_slots: int = 0
    parts: list[tuple[str, int]] = field(default_factory=list)
    tier_bytes: dict[str, int] = field(default_factory=dict)

    def ram_for(self, tier: str | None = None, *, romfs: bool = False) -> int:
        """RAM with ``tier``'s inference temporaries (None: the hungriest tier); ``romfs``: on
        a 32-bit board running ember_micro from ROMFS (:data:`ROMFS_SAVING`)."""
        if tier is not None and tier not in TIERS:
            raise ValueError(f"unknown kernel tier {tier!r}: use one of {', '.join(TIERS)}")
        tiers = [tier] if tier is not None else list(self.tier_bytes)
        extra = max((self.tier_bytes.get(t, 0) - (ROMFS_SAVING[t] if romfs else 0)
                     for t in tiers), default=0)
        return (self.activation_bytes + self.skip_bytes + self.int8_input_bytes
                + self.resident_weight_bytes + self.stream_bytes + self.output_bytes
                + self.runtime_bytes + extra)

    def heap_for(self, tier: str | None = None, *, mpy: bool = True,
                 romfs: bool = False) -> int:
        """A MicroPython heap size (``-X heapsize``, ``gc`` heap) that runs the model on
        ``tier`` (None: on any tier), with ember_micro as ``.mpy`` files loaded into the heap
        (``mpy=False``: from ``.py`` sources, which the board compiles first). ``romfs``: on a
        32-bit board that runs the ``.mpy`` files in place from a ROMFS image (less heap: see
        :data:`ROMFS_SAVING`); without it, the 64-bit unix port's figure, above every minimum
        measured on the emulated boards.

        >>> from ember import nn
        >>> from ember.export import estimate_memory, lower
        >>> est = estimate_memory(lower(nn.Sequential(nn.Flatten(), nn.Linear(784, 64)),
        ...                             (1, 28, 28)))
        >>> est.heap_for("native", romfs=True) < est.heap_for("native")
        True
        """
        if romfs and not mpy:
            raise ValueError("heap_for: romfs=True runs ember_micro's .mpy files from ROMFS; "
                             "mpy=False (sources compiled on the board) contradicts it")
        return (int(HEAP_FACTOR * self.ram_for(tier, romfs=romfs)) + HEAP_BASE
                + (0 if mpy else SOURCE_BYTES))

    @property
    def ram_bytes(self) -> int:
        """RAM on the hungriest tier (:meth:`ram_for` with no tier)."""
        return self.ram_for(None)

    @property
    def heap_bytes(self) -> int:
        """A MicroPython heap size that runs the model on whichever tier the board picks."""
        return self.heap_for(None)

    @property
    def largest_activation(self) -> str:
        """``"96×112×112 f32 = 4.6 MB"``: the activation that sizes every buffer."""
        return (f"{_dims(self.largest_shape)} f32 = "
                f"{human(4 * _size(self.largest_shape))}")

    def __str__(self) -> str:
        return (f"RAM ~{human(self.ram_bytes)} (activations 2 × {self.largest_activation}"
                + (f" + {self.n_slots} skip buffer{'s' * (self.n_slots > 1)}"
                   if self.n_slots else "")
                + f", weights in RAM {human(self.resident_weight_bytes)}, stream buffer "
                f"{human(self.stream_bytes)}, runtime {human(self.runtime_bytes)}), "
                f"flash {human(self.flash_bytes)}; MicroPython heap >= "
                f"{human(self.heap_bytes)}"
                + (" (" + ", ".join(f"{t} {human(self.heap_for(t))}" for t in TIERS
                                    if t in self.tier_bytes) + ")" if self.tier_bytes else ""))


def _stored(layer: Layer, int8: bool) -> int:
    """The weight dtype the file stores for a weighted layer (``int8``: as if quantised)."""
    return layer.wdtype if layer.w_q is not None else fmt.INT8 if int8 else fmt.F32


def _weight_blocks(layer: Layer, int8: bool) -> tuple[int, int, int]:
    """(weight bytes, bias bytes, scale bytes) of a weighted layer as the file stores them."""
    rows, row_len = fmt.weight_rows(layer.op, layer.in_shape[0], _size(layer.in_shape),
                                    layer.out_shape[0], layer.kh, layer.kw, layer.groups)
    wdtype = _stored(layer, int8)
    scales = 0 if wdtype == fmt.F32 else rows
    if wdtype in (fmt.INT8_BLOCK, fmt.INT4_BLOCK):
        scales *= fmt.n_blocks(row_len, layer.w_block)
    return rows * fmt.row_bytes(wdtype, row_len), 4 * rows if layer.bias is not None else 0, \
        4 * scales


def _stream_bytes(program: Program, int8: bool, resident: int, chunk: int) -> int:
    """The chunk buffers (ember_micro's rule): streamed rows of about ``chunk`` bytes, or for
    weight-only layers rows dequantized at a time into about ``chunk`` bytes of floats; the
    float buffer and the byte buffer are each as large as the largest layer needs."""
    stream_f = stream_b = 0
    for layer in program.layers:
        if not layer.weighted:
            continue
        wdtype = _stored(layer, int8)
        wbytes = _weight_blocks(layer, int8)[0]
        rows = layer.out_shape[0]
        row_bytes = wbytes // rows
        wonly = wdtype in (fmt.INT8_BLOCK, fmt.INT4_BLOCK)
        row_len = fmt.weight_rows(layer.op, layer.in_shape[0], _size(layer.in_shape), rows,
                                  layer.kh, layer.kw, layer.groups)[1]
        rpc = max(1, min(rows, chunk // (4 * row_len if wonly else row_bytes)))
        if wonly:
            stream_f = max(stream_f, 4 * rpc * row_len)
        if wbytes <= resident:
            continue
        if wdtype == fmt.F32:
            stream_f = max(stream_f, rpc * row_bytes)
        else:
            stream_b = max(stream_b, rpc * row_bytes)
    return stream_f + stream_b


def estimate_memory(program: Program, *, int8: bool = False, resident: int = RESIDENT,
                    chunk: int | None = None) -> MemoryEstimate:
    """What ``program`` needs on the board (``int8``: as if its weights were quantised;
    ``resident``, ``chunk``: ember_micro.Model's arguments, None for each tier's own chunk).

    The flash figure equals the size of the file ``export`` writes; the RAM figure bounds the
    MicroPython heap after loading plus one inference.

    >>> from ember import nn
    >>> from ember.export import lower
    >>> program = lower(nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), (1, 8, 8))
    >>> f32, i8 = estimate_memory(program), estimate_memory(program, int8=True)
    >>> f32.flash_bytes > 3 * i8.flash_bytes  # 640 weights of 4 bytes vs 1
    True
    """
    flash = fmt.HEADER_SIZE + fmt.LAYER_SIZE * len(program.layers)
    largest, where = program.input_shape, "the input"
    max_qin = resident_bytes = int8_rows = 0
    for layer in program.layers:
        for shape in (layer.in_shape, layer.out_shape):
            if _size(shape) > _size(largest):
                largest, where = shape, layer.name.split("+")[0]
        if not layer.weighted:
            continue
        wdtype = _stored(layer, int8)
        wbytes, bbytes, sbytes = _weight_blocks(layer, int8)
        for block in (wbytes, bbytes, sbytes):
            if block:
                flash += -flash % 4 + block  # blocks are 4-byte aligned
        resident_bytes += bbytes + sbytes + (wbytes if wbytes <= resident else 0)
        if wdtype == fmt.INT8:
            max_qin = max(max_qin, _size(layer.in_shape))
            int8_rows += layer.out_shape[0]
    stream = _stream_bytes(program, int8, resident, chunk or CHUNK)
    # the ulab tier streams in chunks of its own size (ember_micro/_ulab.py's CHUNK)
    ulab_stream = _stream_bytes(program, int8, resident, chunk or ULAB_CHUNK) - stream
    act = 4 * _size(largest)
    chains = _size(largest) + 256 + 32 * int8_rows + PURE_CHAIN_CODE if int8_rows else 0
    return MemoryEstimate(
        tier_bytes={"native": NATIVE_BYTES, "ulab": _ulab_bytes(program) + ulab_stream,
                    "pure": PURE_BYTES + chains},
        flash_bytes=flash, activation_bytes=2 * act, skip_bytes=program.n_slots * act,
        int8_input_bytes=max_qin, resident_weight_bytes=resident_bytes,
        stream_bytes=stream, output_bytes=4 * _size(program.output_shape),
        runtime_bytes=RUNTIME_BYTES + LAYER_BYTES * len(program.layers),
        largest_shape=largest, largest_layer=where, n_slots=program.n_slots)


def _ulab_bytes(program: Program) -> int:
    """Peak live temporaries of one inference on the ulab tier (see ``_ulab.py``)."""
    rows = patch = 0
    for layer in program.layers:
        c, _, w = layer.out_shape
        if layer.op in (fmt.CONV2D, fmt.MAXPOOL, fmt.AVGPOOL):
            rows = max(rows, 4 * c * w)  # one output row of every channel
        elif layer.op == fmt.LINEAR:
            rows = max(rows, 4 * c)
        if layer.op == fmt.CONV2D:  # the loader reserves the whole patch for any conv
            patch = ULAB_PATCH
    return ULAB_ROW_TEMPS * rows + patch + ULAB_STEP_TEMPS * 4 * ULAB_STEP + ULAB_HEADERS


def check_budget(est: MemoryEstimate, ram_bytes: int | None = None,
                 flash_bytes: int | None = None, tier: str | None = None,
                 romfs: bool = False) -> None:
    """Raise :class:`BudgetError` naming what exceeds the budget (every part that does).
    ``ram_bytes`` is the board's MicroPython heap: the model must fit with the room a heap
    needs beyond its live data (:meth:`MemoryEstimate.heap_for`). ``tier``: the kernel tier
    the board will use (None: whichever it picks); ``romfs``: the board runs ember_micro from
    ROMFS (``heap_for(romfs=True)``).

    >>> est = MemoryEstimate(1000, 2 * 4_816_896, 4_816_896, 0, 0, 0, 4000, 0,
    ...                      (96, 112, 112), "blocks.1.expand_conv", 1)
    >>> check_budget(est, ram_bytes=256 * 1024)  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    Traceback (most recent call last):
    ...
    ember.export.budget.BudgetError: export: the model needs ~15.2 MB of RAM, over the 256 KB
    RAM budget: activations 96×112×112 f32 = 4.6 MB (blocks.1.expand_conv) exceed the 256 KB
    RAM budget (×2 ping-pong buffers + 1 residual skip buffer = 13.8 MB). Smaller inputs ...
    """
    problems = []
    need = est.heap_for(tier, romfs=romfs)
    if ram_bytes is not None and need > ram_bytes:
        budget = f"the {human(ram_bytes)} RAM budget"
        act_one = est.activation_bytes // 2
        parts = []
        if act_one > ram_bytes or est.activation_bytes + est.skip_bytes > ram_bytes:
            copies = "×2 ping-pong buffers" + (
                f" + {est.n_slots} residual skip buffer{'s' * (est.n_slots > 1)}"
                if est.n_slots else "")
            parts.append(f"activations {est.largest_activation} ({est.largest_layer}) exceed "
                         f"{budget} ({copies} = "
                         f"{human(est.activation_bytes + est.skip_bytes)})")
        if est.resident_weight_bytes > ram_bytes:
            parts.append(f"weights kept in RAM ({human(est.resident_weight_bytes)}) exceed "
                         f"{budget}")
        if not parts:
            parts.append(
                f"together: activations {human(est.activation_bytes + est.skip_bytes)}, "
                f"weights in RAM {human(est.resident_weight_bytes)}, stream buffer "
                f"{human(est.stream_bytes)}, int8 input {human(est.int8_input_bytes)}, "
                f"runtime {human(est.runtime_bytes)}, inference temporaries "
                f"{human(est.ram_for(tier) - est.ram_for('native'))}, heap overhead "
                f"{human(need - est.ram_for(tier))}")
        on = f" on the {tier} tier" if tier else ""
        problems.append(f"the model needs ~{human(need)} of RAM{on}, over {budget}: "
                        + "; ".join(parts))
    if flash_bytes is not None and est.flash_bytes > flash_bytes:
        problems.append(f"the model file ({human(est.flash_bytes)}) exceeds the "
                        f"{human(flash_bytes)} flash budget")
    if problems:
        raise BudgetError("export: " + "; and ".join(problems) + ". Smaller inputs shrink the "
                          "activations; int8 shrinks the weights (flash) 4×.")
