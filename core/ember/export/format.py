"""The ember micro model file: a compact binary that ``embedded/ember_micro`` runs on MicroPython.

Everything is little-endian. Offsets are from the start of the file; weight blocks are 4-byte
aligned so a board can read them straight into ``array('f')``.

Header (44 bytes, ``HEADER_FMT``)::

    magic      4s   b"EMBM"
    version    H    FORMAT_VERSION
    flags      H    bit 0: some layer holds int8 weights
    n_layers   H
    n_slots    H    extra activation buffers for residual skips (0 for plain chains)
    in_c, in_h, in_w        3×H   input shape (C, H, W); a flat input is (features, 1, 1)
    reserved   H
    max_act    I    largest activation, in floats: sizes the two ping-pong buffers
    max_qin    I    largest int8-quantised layer input, in values (0 without int8)
    in_mul, in_add          2×f   a uint8 input byte b becomes b * in_mul + in_add
    payload    I    bytes after the header
    crc32      I    zlib.crc32 of those bytes

Then ``n_layers`` records of ``LAYER_FMT`` (52 bytes), then the weight blocks::

    op, act, wdtype, lflags   4×B   opcode, fused activation, 0 = f32 / 1 = int8; lflags
                                    bit 0: avg pool counts padding, bit 1 / bit 2: one more
                                    zero row after (bottom) / column after (right) than the
                                    ph / pw before (TensorFlow's lopsided "SAME" padding)
    in_c, in_h, in_w          3×H
    out_c, out_h, out_w       3×H
    kh, kw, sh, sw, ph, pw, groups, slot   8×H   (conv/pool geometry; slot for SAVE/ADD)
    woff, wlen, boff, soff    4×I   weights, their byte length, f32 bias (0: none), f32
                                    per-output-channel int8 weight scales (0: f32 weights)
    in_scale                  f     int8 layers: the calibrated input activation scale

Window geometry: ``out = (in + before + after - k) // stride + 1`` with ``before = ph`` and
``after = ph + (lflags bit 1)`` (likewise for the width); reads outside the input are zeros.

Weights are row-major: Linear (out, in), Conv2d (out, in/groups, kh, kw); int8 weights w_q
mean ``w_q * scale[out]``; an int8 layer quantises its input as
``clamp(round_half_away(x / in_scale), -127, 127)`` and accumulates in int32.
"""

from __future__ import annotations

import struct

MAGIC = b"EMBM"
FORMAT_VERSION = 1
HEADER_FMT = "<4s8HII2fII"
HEADER_SIZE = struct.calcsize(HEADER_FMT)
LAYER_FMT = "<4B6H8H4If"
LAYER_SIZE = struct.calcsize(LAYER_FMT)
FLAG_INT8 = 1

# opcodes
LINEAR, CONV2D, MAXPOOL, AVGPOOL, GAP, ACT, SOFTMAX, SAVE, ADD = range(1, 10)
OP_NAMES = {LINEAR: "linear", CONV2D: "conv2d", MAXPOOL: "maxpool", AVGPOOL: "avgpool",
            GAP: "global_avg_pool", ACT: "activation", SOFTMAX: "softmax", SAVE: "save",
            ADD: "add"}
# activation codes (fused into LINEAR/CONV2D or standalone ACT)
NONE, RELU, RELU6, SIGMOID, TANH, HARDSWISH = range(6)
ACT_NAMES = {NONE: "none", RELU: "relu", RELU6: "relu6", SIGMOID: "sigmoid", TANH: "tanh",
             HARDSWISH: "hardswish"}
F32, INT8 = 0, 1
LFLAG_COUNT_PAD = 1
LFLAG_PAD_BOTTOM = 2
LFLAG_PAD_RIGHT = 4

assert HEADER_SIZE == 44 and LAYER_SIZE == 52
