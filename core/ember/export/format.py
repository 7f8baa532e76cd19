"""The ember micro model file: a compact binary that ``embedded/ember_micro`` runs on MicroPython.

Everything is little-endian. Offsets are from the start of the file; weight blocks are 4-byte
aligned so a board can read them straight into ``array('f')``.

Header (48 bytes, ``HEADER_FMT``)::

    magic      4s   b"EMBM"
    version    H    2, or 3 when some layer holds weight-only codes (wdtype 2 or 3): version 2
                    readers refuse such a file as too new instead of misreading it, and
                    files without them stay readable there (version 1 left the header
                    outside the checksum)
    flags      H    bit 0: some layer holds int8 weights
    n_layers   H    at least 1
    n_slots    H    extra activation buffers for residual skips (0 for plain chains)
    in_c, in_h, in_w        3×H   input shape (C, H, W); a flat input is (features, 1, 1)
    reserved   H    0
    max_act    I    largest activation, in floats: sizes the two ping-pong buffers
    max_qin    I    largest int8-quantised layer input, in values (0 without int8)
    n_out      I    values the last layer outputs
    in_mul, in_add          2×f   a uint8 input byte b becomes b * in_mul + in_add
    payload    I    bytes after the header
    crc32      I    CRC-32 (zlib's) of the whole file except these 4 bytes: bytes 0..43, then
                    48..end

Then ``n_layers`` records of ``LAYER_FMT`` (52 bytes), then the weight blocks::

    op, act, wdtype, lflags   4×B   opcode, fused activation, weight dtype (0 = f32, 1 = int8,
                                    2 = int8 per block, 3 = int4 per block: see below); lflags
                                    bit 0: avg pool counts padding, bit 1 / bit 2: one more
                                    zero row after (bottom) / column after (right) than the
                                    ph / pw before (TensorFlow's lopsided "SAME" padding)
    in_c, in_h, in_w          3×H
    out_c, out_h, out_w       3×H
    kh, kw, sh, sw, ph, pw, groups, slot   8×H   (conv/pool geometry; slot: the residual
                                    slot of SAVE/ADD, the block size of a weight-only layer)
    woff, wlen, boff, soff    4×I   weights, their byte length, f32 bias (0: none), f32
                                    weight scales (int8 and weight-only layers; 0: f32)
    in_scale                  f     int8 layers: the calibrated input activation scale

Window geometry: ``out = (in + before + after - k) // stride + 1`` with ``before = ph`` and
``after = ph + (lflags bit 1)`` (likewise for the width); reads outside the input are zeros.

Weights are row-major: Linear (out, in), Conv2d (out, in/groups, kh, kw); int8 weights w_q
mean ``w_q * scale[out]``; an int8 layer quantises its input as ``round_code(x / in_scale,
-127, 127)`` (:mod:`ember.contract.rounding`) and accumulates in int32. The blocks follow the
layer table in layer order (weights, bias, scales), each at the next 4-byte boundary, and the
file ends with the last block.

Weight-only layers (``ember.quantize`` schemes ``"int4"``, ``"int8-weights"``) keep float
activations: each weight row (``row_len`` weights) is cut into ``nb = ceil(row_len / block)``
blocks of ``block`` weights (the record's ``slot``; 0: one block of the whole row), and the
scales are float32 ``(rows, nb)``. wdtype 2 (INT8_BLOCK): int8 codes, ``rows * row_len``
bytes; wdtype 3 (INT4_BLOCK): codes -8..7 stored as ``code + 8`` in a nibble, two per byte,
low nibble first, each row starting on a byte (``ceil(row_len / 2)`` bytes a row, an odd row
padded with code 0). A weight is ``code * scale[row, i // block]``; ``in_scale`` is 0. A file
holds int8 layers or weight-only layers, not both.

A reader trusts nothing it has not checked: :class:`Checker` holds every rule a file must
satisfy, and both decoders (``ember.export.decode`` on CPython, ``ember_micro`` on MicroPython)
run it before they allocate what the file declares.
"""

# This module is shared: embedded/ember_micro/format.py is a symbolic link to it, so the
# writer, the CPython decoder and the MicroPython runtime read one layout and apply one set of
# checks. It must therefore run on MicroPython: no __future__ imports, f-strings or annotations.
# ruff: noqa: UP031

import struct

MAGIC = b"EMBM"
FORMAT_VERSION = 3  # the newest version this module reads
MIN_VERSION = 2
BLOCK_VERSION = 3  # the version a file with weight-only layers needs
HEADER_FMT = "<4s8H3I2fII"
HEADER_SIZE = struct.calcsize(HEADER_FMT)
CRC_OFFSET = HEADER_SIZE - 4  # the checksum is the header's last field
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
F32, INT8, INT8_BLOCK, INT4_BLOCK = 0, 1, 2, 3
DTYPE_NAMES = {F32: "f32", INT8: "int8", INT8_BLOCK: "int8 per block",
               INT4_BLOCK: "int4 per block"}
LFLAG_COUNT_PAD = 1
LFLAG_PAD_BOTTOM = 2
LFLAG_PAD_RIGHT = 4

assert HEADER_SIZE == 48 and LAYER_SIZE == 52


def check_envelope(header, size, fail):
    """Magic, version and length of a file of ``size`` bytes whose header unpacks (with
    ``HEADER_FMT``) to ``header``; ``fail(message)`` makes the reader's error."""
    magic, version, plen = header[0], header[1], header[14]
    if magic != MAGIC:
        raise fail("bad magic %r, expected %r: not an ember micro model" % (magic, MAGIC))
    if version < MIN_VERSION:
        raise fail("format version %d was written by an older ember (its header was not "
                   "checksummed); re-export the model with this ember (ember.export.export) "
                   "to get version %d" % (version, MIN_VERSION))
    if version > FORMAT_VERSION:
        raise fail("format version %d is newer than this reader (version %d): update ember "
                   "and ember_micro" % (version, FORMAT_VERSION))
    if size != HEADER_SIZE + plen:
        raise fail("truncated or padded: header says %d payload bytes, file has %d"
                   % (plen, size - HEADER_SIZE))


def weight_rows(op, ic, n_in, oc, kh, kw, groups):
    """(rows, row_len) of a LINEAR (``n_in`` inputs) or CONV2D layer's weight matrix."""
    if op == LINEAR:
        return oc, n_in
    return oc, (ic // groups) * kh * kw


def row_bytes(wdtype, row_len):
    """Bytes of one weight row of ``row_len`` weights stored as ``wdtype``."""
    if wdtype == INT4_BLOCK:
        return (row_len + 1) // 2
    return row_len * (4 if wdtype == F32 else 1)


def n_blocks(row_len, block):
    """Scales per row of a weight-only layer whose record says ``block`` (0: whole row)."""
    if block == 0 or block >= row_len:
        return 1
    return (row_len + block - 1) // block


class Checker:
    """Every rule a model file must satisfy beyond its checksum, applied in file order.

    ``Checker(header, fail)`` checks the header alone; ``layer(i, record)`` checks each layer
    record (its geometry, its shapes against the layer before, where its weight blocks lie)
    and returns ``(rows, row_len)`` of its weights ((0, 0) for unweighted layers);
    ``finish()`` compares the header's buffer sizes and output count with what the layers
    need, and refuses bytes no layer accounts for. ``fail(message)`` makes the reader's error.
    """

    def __init__(self, header, fail):
        (_, self.version, flags, n_layers, n_slots, c, h, w, reserved, self.max_act,
         self.max_qin, self.n_out, _, _, plen, _) = header
        self.fail = fail
        self.size = HEADER_SIZE + plen
        if n_layers == 0:
            raise fail("n_layers is 0: a model has at least one layer")
        self.cursor = HEADER_SIZE + n_layers * LAYER_SIZE  # the end of the table / last block
        if self.cursor > self.size:
            raise fail("the layer table (%d layers of %d bytes) runs past the end of the "
                       "%d-byte file" % (n_layers, LAYER_SIZE, self.size))
        if reserved or flags & ~FLAG_INT8:
            raise fail("unknown header flags 0x%x / reserved field %d (both must be 0 here)"
                       % (flags & ~FLAG_INT8, reserved))
        if n_slots > n_layers:
            raise fail("%d residual slots for %d layers: each slot needs a save layer"
                       % (n_slots, n_layers))
        self.flags, self.n_slots = flags, n_slots
        self.prev = c * h * w  # values the next layer must take
        if self.prev == 0:
            raise fail("input shape (%d, %d, %d) is empty" % (c, h, w))
        self.need = self.prev
        self.qneed = self.slots = 0
        self.int8 = False
        self.block = None  # the first weight-only layer, if any
        self.gap = None  # the first unexplained gap before a block, reported by finish()

    def layer(self, i, rec):
        """Check record ``i`` (the tuple ``LAYER_FMT`` unpacks to)."""
        (op, act, wdtype, lflags, ic, ih, iw, oc, oh, ow, kh, kw, sh, sw, ph, pw, groups,
         slot, woff, wlen, boff, soff, in_scale) = rec
        fail = self.fail
        if op not in OP_NAMES or act not in ACT_NAMES or wdtype > INT4_BLOCK or lflags > 7:
            raise fail("layer %d: unknown opcode %d, activation %d, weight dtype %d or flags "
                       "%d" % (i, op, act, wdtype, lflags))
        at = "layer %d (%s)" % (i, OP_NAMES[op])
        n_in, n_out = ic * ih * iw, oc * oh * ow
        if n_in != self.prev:
            raise fail("%s: input (%d, %d, %d) holds %d values, the previous layer gives %d"
                       % (at, ic, ih, iw, n_in, self.prev))
        if n_out == 0:
            raise fail("%s: output shape (%d, %d, %d) is empty" % (at, oc, oh, ow))
        if op == CONV2D or op == MAXPOOL or op == AVGPOOL:
            self._window(at, op, lflags, ic, ih, iw, oc, oh, ow, kh, kw, sh, sw, ph, pw, groups)
        elif op == LINEAR:
            if oh != 1 or ow != 1:
                raise fail("%s: output (%d, %d, %d) must be (features, 1, 1)" % (at, oc, oh, ow))
        elif (oc, oh, ow) != ((ic, 1, 1) if op == GAP else (ic, ih, iw)):
            raise fail("%s: output (%d, %d, %d) doesn't fit input (%d, %d, %d)"
                       % (at, oc, oh, ow, ic, ih, iw))
        if op == SAVE or op == ADD:
            if slot >= self.n_slots:
                raise fail("%s: residual slot %d, the header has %d" % (at, slot, self.n_slots))
            self.slots = max(self.slots, slot + 1)
        rows = row_len = 0
        if op == LINEAR or op == CONV2D:
            rows, row_len = weight_rows(op, ic, n_in, oc, kh, kw, groups)
            if wlen != rows * row_bytes(wdtype, row_len):
                raise fail("%s: weight block of %d bytes, a %dx%d %s matrix takes %d"
                           % (at, wlen, rows, row_len, DTYPE_NAMES[wdtype],
                              rows * row_bytes(wdtype, row_len)))
            self._block(at, "weights", woff, wlen)
            if boff:
                self._block(at, "bias", boff, 4 * rows)
            if wdtype == INT8:
                if not soff or not 0.0 < in_scale < 3.5e38:
                    raise fail("%s: int8 weights need scales and an input scale > 0, got scale "
                               "offset %d and input scale %r" % (at, soff, in_scale))
                self._block(at, "scales", soff, 4 * rows)
                self.qneed = max(self.qneed, n_in)
                self.int8 = True
            elif wdtype != F32:
                self._weight_only(at, wdtype, rows, row_len, slot, soff, in_scale)
            elif soff:
                raise fail("%s: f32 weights with int8 scales at %d" % (at, soff))
        elif woff or wlen or boff or soff:
            raise fail("%s: a layer without weights points at weight blocks" % at)
        self.need = max(self.need, n_out)
        self.prev = n_out
        return rows, row_len

    def _weight_only(self, at, wdtype, rows, row_len, block, soff, in_scale):
        fail = self.fail
        if self.version < BLOCK_VERSION:
            raise fail("%s: %s weights need format version %d, the header says %d"
                       % (at, DTYPE_NAMES[wdtype], BLOCK_VERSION, self.version))
        if not soff or in_scale != 0.0:
            raise fail("%s: %s weights need block scales and input scale 0 (float inputs), "
                       "got scale offset %d and input scale %r"
                       % (at, DTYPE_NAMES[wdtype], soff, in_scale))
        self._block(at, "scales", soff, 4 * rows * n_blocks(row_len, block))
        if self.block is None:
            self.block = at

    def _window(self, at, op, lflags, ic, ih, iw, oc, oh, ow, kh, kw, sh, sw, ph, pw, groups):
        fail = self.fail
        if not (kh and kw and sh and sw and groups) or ic % groups or oc % groups:
            raise fail("%s: kernel %dx%d, stride %dx%d, groups %d: each must be >= 1 and "
                       "groups must divide the %d input and %d output channels"
                       % (at, kh, kw, sh, sw, groups, ic, oc))
        eh, ew = (lflags >> 1) & 1, (lflags >> 2) & 1
        if op != CONV2D and (oc != ic or 2 * ph > kh or 2 * pw > kw or eh or ew):
            # PyTorch's own pooling rule; it also keeps every window on some input cell
            raise fail("%s: pooling keeps the %d channels (got %d) and pads at most half the "
                       "%dx%d window on each side (got %d, %d)" % (at, ic, oc, kh, kw, ph, pw))
        # lflags bits 1/2: one more zero row/column after than before (TF "SAME"); the
        # kernels skip reads outside the input, so only the output size carries it
        want_h = (ih + 2 * ph + eh - kh) // sh + 1
        want_w = (iw + 2 * pw + ew - kw) // sw + 1
        if (oh, ow) != (want_h, want_w):
            raise fail("%s: output %dx%d doesn't match the kernel geometry, which gives %dx%d"
                       % (at, oh, ow, want_h, want_w))

    def _block(self, at, what, off, n):
        expect = self.cursor + (-self.cursor % 4)
        if off < self.cursor or off + n > self.size:
            raise self.fail("%s: %s block of %d bytes at offset %d lies outside %d..%d (blocks "
                            "follow the layer table in order, inside the file)"
                            % (at, what, n, off, self.cursor, self.size))
        if off != expect and self.gap is None:
            self.gap = "%s: %d unexplained bytes before its %s at offset %d (expected %d)" % (
                at, off - expect, what, off, expect)
        self.cursor = off + n

    def finish(self):
        """Check the header's sizes against what the layers need; call after every layer."""
        fail = self.fail
        if self.n_out != self.prev:
            raise fail("the header declares %d outputs, the last layer gives %d: the header "
                       "or the layer table was altered" % (self.n_out, self.prev))
        if self.max_act != self.need:
            raise fail("the header's max_act is %d values, the layers need %d"
                       % (self.max_act, self.need))
        if self.max_qin != self.qneed:
            raise fail("the header's max_qin is %d values, the int8 layers need %d"
                       % (self.max_qin, self.qneed))
        if self.n_slots != self.slots:
            raise fail("the header declares %d residual slots, the layers use %d"
                       % (self.n_slots, self.slots))
        if bool(self.flags & FLAG_INT8) != self.int8:
            raise fail("the header's int8 flag says %d, the layers say %d"
                       % (self.flags & FLAG_INT8, self.int8))
        if self.int8 and self.block is not None:
            raise fail("%s holds weight-only codes in a file with int8-activation layers: a "
                       "file holds one kind or the other" % self.block)
        if self.gap is not None:
            raise fail(self.gap)
        if self.cursor != self.size:
            raise fail("%d trailing bytes after the last weight block (which ends at %d)"
                       % (self.size - self.cursor, self.cursor))

