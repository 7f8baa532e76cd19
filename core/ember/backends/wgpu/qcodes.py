"""Int8/uint8 codes between quantized layers on wgpu (``qlinear_q``/``qconv_q`` of
:mod:`ember.contract.quantized`): the kernels' input reads of codes, the code outputs'
layout — rows padded to whole u32 words, so a kernel writing four consecutive codes owns
its word — and the requantizing elementwise pass of the paths without a codes epilogue.

>>> import ember
>>> from ember import dtype as dt
>>> from ember.backends.wgpu import qcodes
>>> rt = ember.get_backend("wgpu").rt
>>> codes, row = qcodes.padded(rt, (2, 3, 7, 7), 2, dt.uint8)
>>> row, codes.strides  # each 7×7 plane starts on a word
(52, (156, 52, 7, 1))
"""

from __future__ import annotations

from typing import NamedTuple

from ... import dtype as dt
from ...contract.quantized import CODE_DTYPES
from ...shape import numel
from .launch import Runtime, map_op
from .primitive import WgpuTensor, contiguous_strides


class Codes(NamedTuple):
    """Codes out (``qlinear_q``/``qconv_q``): the output scale (1,), the clamp range, and
    the codes' dtype (uint8 when ``lo >= 0``, else int8)."""

    scale: WgpuTensor
    lo: int
    hi: int
    dtype: dt.DType


def wide(x: WgpuTensor, unsigned: bool) -> bool:
    """Whether the input codes reach 255 (uint8 codes, or a float input quantized unsigned):
    the shorter exact sums of ``_EXACT_K``."""
    return x.dtype is dt.uint8 or (x.dtype is dt.float32 and unsigned)


def reader(rt: Runtime, name: str, x: WgpuTensor, unsigned: bool,
           centred: bool = False) -> str:
    """WGSL ``read_<name>(e)``: the code of ``x``'s element e as f32 — int8/uint8 codes read
    from their packed words as they are, a float32 input quantized at the input scale;
    ``centred``: unsigned codes less 128 (``wide`` inputs only)."""
    tail = "_centred" if centred else ""
    if x.dtype in CODE_DTYPES:
        section = "read_codes" if x.dtype is dt.int8 else "read_codes_u8" + tail
        return rt.lib.snippet("lib_quant", section, NAME=name)
    return rt.lib.snippet("lib_quant", "read_quantized" + tail, NAME=name,
                          CODE="code_u8" if unsigned else "code")


def source_key(x: WgpuTensor, unsigned: bool) -> str:
    """The input's part of a pipeline or tuning key: its dtype, ``u`` for unsigned quantizing."""
    return x.dtype.name + ("u" if x.dtype is dt.float32 and unsigned else "")


def padded(rt: Runtime, shape: tuple, lead: int, dtype: dt.DType) -> tuple[WgpuTensor, int]:
    """``(codes, row)``: a ``shape`` tensor of int8/uint8 codes whose dims from ``lead`` on are
    contiguous rows of ``row`` elements — their size rounded up to a whole number of words, so
    a kernel writing four consecutive codes owns a whole u32 word (the rows' padding bytes are
    no element of the view)."""
    cols = numel(shape[lead:])
    row = -(-cols // 4) * 4
    outer = contiguous_strides(tuple(shape[:lead]) + (row,))[:-1]
    buf = rt.empty((numel(shape[:lead]) * row,), dtype, "qcodes")
    return buf.view(shape, outer + contiguous_strides(tuple(shape[lead:]))), row


def requant_map(rt: Runtime, y: WgpuTensor, codes: Codes) -> WgpuTensor:
    """Codes out from the float op's result ``y`` in one elementwise pass
    (``v = y / out_scale``, within an ulp or so of the contract's ``v``)."""
    full = tuple(y.shape)
    out = codes.scale.view(full, (0,) * len(full))
    q = f"round_code(x0 / x1, {codes.lo:.1f}, {codes.hi:.1f})"
    return map_op(rt, [y, out], codes.dtype, q, libs=rt.lib.snippet("lib_quant", "code"))
