# Load an ember micro model file (written by ember.export on CPython) and run it.
# ruff: noqa: UP031, SIM115, FURB136, PLR1730 - MicroPython code: % formatting, inline compares
# format.py is a link to core/ember/export/format.py: the writer, the CPython decoder and this
# runtime share one layout and one Checker, which runs over every record before anything the
# header declares is allocated.
#
# Memory: two ping-pong activation buffers (array('f') of the largest activation), one int8
# buffer for quantised layer inputs, one buffer per open residual skip, small per-layer arrays
# (bias, scales, geometry). Weights of up to `resident` bytes stay in RAM as compact arrays;
# bigger ones are streamed from the open file in chunks of about `chunk` bytes per inference.
# Weight-only layers (int8/int4 codes per block, float activations) keep their codes in RAM or
# stream them the same way, and dequantize a few rows at a time (about `chunk` bytes of floats)
# into one float buffer that the float kernels read: no whole float weight matrix is made.
# Order: the checked layer records, then every large buffer at once into a collected heap, then
# the weights' small arrays; a large block allocated after them could find no contiguous room
# in the heap they fragment, even with enough free in total.
import struct
from array import array

from . import format as fmt
from . import kernels
from .format import ACT, AVGPOOL, CONV2D, F32, GAP, INT8, LINEAR, MAXPOOL, SAVE, SOFTMAX


class ModelError(ValueError):
    pass


def _crc_ok(f, head, n, want):
    # whether the CRC32 of the header's bytes before the checksum field, then of the n payload
    # bytes after the header, is `want` (True where binascii is missing: nothing to check
    # with). Only a bool leaves: the running CRC is a long int on 32-bit ports, and one kept
    # alive would sit in the heap where the loop's garbage pushed it, splitting the free room
    try:
        from binascii import crc32
    except ImportError:
        return True
    crc = crc32(head[:fmt.CRC_OFFSET])
    buf = bytearray(512)
    mv = memoryview(buf)
    f.seek(fmt.HEADER_SIZE)
    while n > 0:
        m = n if n < 512 else 512
        if f.readinto(mv[:m]) != m:
            return False
        crc = crc32(mv[:m], crc)
        n -= m
    return crc & 0xFFFFFFFF == want


def _heap_free():
    # MicroPython's free heap; None on CPython, whose gc can't say
    try:
        import gc

        gc.collect()
        return gc.mem_free()
    except (ImportError, AttributeError):
        return None


def _zeros_f(n):
    # array('f', bytes(4n)) would hold a second copy while it builds; range is lazy and has a
    # length, so the array is allocated once (contents are overwritten before use)
    return array("f", range(n if n > 0 else 1))


def _zeros_b(n):
    # the same for int8: MicroPython stores range's values truncated to a byte (they are
    # overwritten by readinto); CPython refuses values over 127, and has no heap to spare
    n = n if n > 0 else 1
    try:
        return array("b", range(n))
    except OverflowError:
        return array("b", bytes(n))


def _chunks(L, resident, chunk):
    # L's bytes per weight row in the file and rows per chunk (streamed rows, or weight-only
    # rows dequantized at a time); returns the (floats, bytes) the shared chunk buffers need
    L.rb = fmt.row_bytes(L.wdtype, L.row_len)
    wonly = L.wdtype > INT8
    L.rpc = max(1, min(L.rows, chunk // (4 * L.row_len if wonly else L.rb)))
    floats = L.rpc * L.row_len if wonly else 0
    if L.wlen <= resident:
        return floats, 0
    if L.wdtype == F32:
        return L.rpc * L.row_len, 0
    return floats, L.rpc * L.rb


class _Layer:
    # plain attributes instead of a dict per layer: MicroPython stores them compactly
    def __init__(self, rec):
        (self.op, self.act, self.wdtype, self.lflags, self.ic, self.ih, self.iw, self.oc,
         self.oh, self.ow, self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.groups,
         self.slot, self.woff, self.wlen, self.boff, self.soff, self.in_scale) = rec
        self.n_in = self.ic * self.ih * self.iw
        self.n_out = self.oc * self.oh * self.ow
        self.geom = None
        self.bias = None
        self.mult = None
        self.weights = None
        self.rows = 0
        self.row_len = 0
        self.rpc = 0
        self.rb = 0  # bytes per weight row in the file
        self.block = 0  # weight-only: weights per scale (the whole row when one block)
        self.nb = 0  # weight-only: scales per row
        self.inv_scale = 0.0
        self.req = None  # int8 chain (pure tier, _chain.py): requantisation to the next layer
        self.chain_end = 0


class Model:
    """A loaded model. `run(x)` takes the input's uint8 bytes (784 for MNIST; the file's input
    transform scales them), or already scaled inputs as an array('f') or a list of floats, and
    returns the output array('f'); `predict(x)` returns the argmax.

        m = Model("mnist_cnn.emb")      # tier: native, else ulab, else pure
        label = m.predict(image_bytes)

    `tier` forces one ("native", "ulab", "pure"); ember_micro.info() says which tier the
    default picks and why. Weight blocks of up to `resident` bytes stay in RAM; larger ones
    stream through one buffer of about `chunk` bytes (bytes allocated: int8 rows are 1 byte
    per weight, f32 rows 4; default: the tier's CHUNK, 8192 where it has none).
    """

    def __init__(self, path, tier=None, resident=16384, chunk=None, verify=True):
        self.k = kernels.get(tier)
        self.tier = self.k.name
        if chunk is None:
            chunk = getattr(self.k, "CHUNK", 8192)
        self.path = path
        try:
            f = open(path, "rb")
        except OSError as e:
            raise ModelError("%s: can't open: %s" % (path, e))
        try:
            self._parse(f, verify, resident, chunk)
        except BaseException:
            f.close()
            raise
        self._f = f

    def _err(self, msg):
        return ModelError("%s: %s" % (self.path, msg))

    def _parse(self, f, verify, resident, chunk):
        size = f.seek(0, 2)
        if size is None:
            size = f.tell()
        f.seek(0)
        hdr = f.read(fmt.HEADER_SIZE)
        if len(hdr) < fmt.HEADER_SIZE:
            raise self._err("truncated: %d bytes, the header alone needs %d"
                            % (len(hdr), fmt.HEADER_SIZE))
        header = struct.unpack(fmt.HEADER_FMT, hdr)
        fmt.check_envelope(header, size, self._err)
        if verify:
            if not _crc_ok(f, hdr, size - fmt.HEADER_SIZE, header[-1]):
                raise self._err("CRC32 mismatch: the file is corrupt")
            # the checksum's garbage gone, the objects that stay are allocated from the
            # bottom of the heap, below the buffers
            _heap_free()
        (_, _, flags, n_layers, n_slots, c, h, w, _, max_act, max_qin, n_out, in_mul, in_add,
         _, _) = header
        rec = bytearray(fmt.LAYER_SIZE)
        # every record is checked before the header's sizes are trusted to allocate with
        check = fmt.Checker(header, self._err)
        layers = []
        cf = cb = 0
        for i in range(n_layers):
            r = self._record(f, i, rec)
            L = _Layer(r)
            L.rows, L.row_len = check.layer(i, r)
            if L.op == CONV2D or L.op == MAXPOOL or L.op == AVGPOOL:
                L.geom = array("i", [L.ic, L.ih, L.iw, L.oc, L.oh, L.ow, L.kh, L.kw, L.sh,
                                     L.sw, L.ph, L.pw, L.groups])
            if L.op == LINEAR or L.op == CONV2D:
                need_f, need_b = _chunks(L, resident, chunk)
                cf = max(cf, need_f)
                cb = max(cb, need_b)
            layers.append(L)
        check.finish()
        chains = max_qin and getattr(self.k, "INT_CHAINS", False)  # int8 on the pure tier
        q2 = 0
        if chains:
            from . import _chain

            q2 = _chain.bound(layers)
        # every large buffer now, into a collected heap, before the weights' many small
        # arrays: allocated later, a large block can find no contiguous room in a heap
        # fragmented by them, even where the total free would do
        # a tier's scratch for convolutions (ulab's patch), allocated here once, not per call
        scratch = getattr(self.k, "SCRATCH", 0) if any(L.op == CONV2D for L in layers) else 0
        ram = 4 * (max_act * (2 + n_slots) + n_out + cf) + max_qin + cb + q2 + scratch
        free = _heap_free()
        if free is not None and ram > free:
            raise self._err("the activation and weight chunk buffers need %d bytes (max_act %d "
                            "values, %d residual slots, chunks %d bytes), the heap has %d free"
                            % (ram, max_act, n_slots, 4 * cf + cb + q2, free))
        self.in_shape = (c, h, w)
        self.in_size = c * h * w
        self.in_mul, self.in_add = in_mul, in_add
        self.flags = flags
        self.a = _zeros_f(max_act)
        self.b = _zeros_f(max_act)
        self.q = _zeros_b(max_qin)
        self.slots = [_zeros_f(max_act) for _ in range(n_slots)]
        self._cf = _zeros_f(cf) if cf else None
        self._cb = _zeros_b(cb) if cb else None
        self.out = _zeros_f(n_out)
        self._q2 = _zeros_b(q2) if q2 else None
        if scratch:
            self.k.reserve(bytearray(scratch))
        self.n_out = n_out
        self._dequant = None
        for L in layers:
            if L.op == LINEAR or L.op == CONV2D:
                self._load_weights(f, L, resident)
                if L.wdtype > INT8 and self._dequant is None:
                    self._dequant = self._dequant_kernel()
        self.layers = layers
        self._lut = None
        if chains:
            self._int_chains(max_qin)

    def _int_chains(self, max_qin):
        # the pure tier's integer paths for int8 layers (_chain.py): requantisation between
        # chained int8 layers into the second int8 buffer (allocated at its bound, _chain.bound;
        # dropped when no chain forms), and a 256-entry table from uint8 input to the first
        # layer's int8 input, computed with the tier's own kernels
        from . import _chain

        need = _chain.plan(self.layers, max_qin)
        if need > (len(self._q2) if self._q2 is not None else 0):
            raise self._err("int8 chains need %d bytes, over their bound" % need)
        if not need:
            self._q2 = None
        L = self.layers[0] if self.layers else None
        if L is not None and (L.op == LINEAR or L.op == CONV2D) and L.wdtype == INT8:
            x = _zeros_f(256)
            self.k.load_u8(x, bytes(range(256)), 256, self.in_mul, self.in_add)
            self._lut = _zeros_b(256)
            self.k.quantize(self._lut, x, 256, L.inv_scale)

    def _dequant_kernel(self):
        # the native tier's C loop, the ulab tier's vectorised one; else (the pure tier, or an
        # ember_kernels.mpy older than dequant) the plain loop, imported only when needed
        k = getattr(self.k, "dequant", None)
        if k is None:
            from ._dequant import dequant as k
        return k

    def _record(self, f, i, rec):
        f.seek(fmt.HEADER_SIZE + i * fmt.LAYER_SIZE)
        if f.readinto(rec) != fmt.LAYER_SIZE:
            raise self._err("truncated while reading layer %d" % i)
        return struct.unpack(fmt.LAYER_FMT, rec)

    def _read_f(self, f, off, n):
        a = _zeros_f(n)
        f.seek(off)
        if f.readinto(a) != 4 * n:
            raise self._err("truncated while reading %d floats at %d" % (n, off))
        return a

    def _load_weights(self, f, L, resident):
        # bias and scales, and the weights when they stay in RAM (_chunks set L.rb and L.rpc)
        if L.boff:
            L.bias = self._read_f(f, L.boff, L.rows)
        if L.wdtype == INT8:
            L.mult = self._read_f(f, L.soff, L.rows)
            for r in range(L.rows):
                L.mult[r] *= L.in_scale
            L.inv_scale = 1.0 / L.in_scale
        elif L.wdtype > INT8:  # weight-only
            L.nb = fmt.n_blocks(L.row_len, L.slot)
            L.block = L.row_len if L.nb == 1 else L.slot
            L.mult = self._read_f(f, L.soff, L.rows * L.nb)
        if L.wlen <= resident:
            L.weights = _zeros_f(L.wlen // 4) if L.wdtype == F32 else _zeros_b(L.wlen)
            f.seek(L.woff)
            if f.readinto(L.weights) != L.wlen:
                raise self._err("truncated while reading weights at %d" % L.woff)

    def close(self):
        self._f.close()

    def _weighted(self, L, x, y, xq=None, req=None):
        # xq: the int8 input, already there (an int8 chain); req: y is int8 (the next chain)
        k = self.k
        if xq is not None:
            x = xq
        elif L.wdtype == INT8:
            k.quantize(self.q, x, L.n_in, L.inv_scale)
            x = self.q
        wonly = L.wdtype > INT8
        if L.weights is not None and not wonly:
            self._call(L, y, x, L.weights, 0, L.rows, req)
            return
        buf = self._cf if L.wdtype == F32 else self._cb
        f = self._f
        if L.weights is None:
            mv = memoryview(buf)
            f.seek(L.woff)
        r = 0
        while r < L.rows:
            n = L.rows - r
            if n > L.rpc:
                n = L.rpc
            if L.weights is not None:  # weight-only, codes in RAM
                codes, c0 = L.weights, r * L.rb
            else:  # memoryviews count items: floats, or bytes for codes
                m = n * L.rb
                items = m // 4 if L.wdtype == F32 else m
                # a chunk that fills the buffer is read into it as it is: a memoryview slice
                # per chunk would be garbage
                if f.readinto(buf if items == len(buf) else mv[:items]) != m:
                    raise self._err("truncated while streaming weights")
                codes, c0 = buf, 0
            if wonly:  # this chunk's rows as floats, into the float chunk buffer
                self._dequant(self._cf, codes, c0, n, L.row_len, L.mult, r * L.nb, L.block,
                              L.wdtype)
                codes = self._cf
            self._call(L, y, x, codes, r, n, req)
            r += n

    def _call(self, L, y, x, w, r0, n, req):
        k = self.k
        if L.op == LINEAR:
            if req is not None:
                k.dense_q(y, r0, x, w, n, L.n_in, L.bias, L.mult, L.act, req)
            elif L.wdtype == INT8:
                k.dense_q(y, r0, x, w, n, L.n_in, L.bias, L.mult, L.act)
            else:
                k.dense(y, r0, x, w, n, L.n_in, L.bias, L.act)
        elif req is not None:
            k.conv_q(y, x, w, L.bias, L.mult, L.geom, r0, n, L.act, req)
        elif L.wdtype == INT8:
            k.conv_q(y, x, w, L.bias, L.mult, L.geom, r0, n, L.act)
        else:
            k.conv(y, x, w, L.bias, L.geom, r0, n, L.act)

    def run(self, inp):
        """Run one input; returns self.out (overwritten by the next call)."""
        cur = self.forward(inp, len(self.layers))
        self.k.copy(self.out, cur, self.n_out)
        return self.out

    def forward(self, inp, stop):
        """Run layers [0, stop); returns the buffer holding their output (layer stop's
        input), valid until the next call."""
        k = self.k
        cur, nxt = self.a, self.b
        n = self.in_size
        if not isinstance(inp, (bytes, bytearray, array, memoryview, list, tuple)):
            raise TypeError("ember_micro: input must be bytes or bytearray (uint8, scaled by "
                            "the model's input transform), array('f') or a list of floats "
                            "(already scaled); got %s" % type(inp).__name__)
        if len(inp) != n:
            raise ValueError("ember_micro: input has %d values, the model takes %d"
                             % (len(inp), n))
        # int8 chains (pure tier): qc holds the current values as int8 when not None, qn is
        # the other int8 buffer
        qc = qn = None
        if isinstance(inp, (bytes, bytearray)):
            if self._lut is not None and stop > 0:
                k.lut(self.q, inp, n, self._lut)
                qc, qn = self.q, self._q2
            else:
                k.load_u8(cur, inp, n, self.in_mul, self.in_add)
        elif isinstance(inp, (list, tuple)):  # Python numbers: stored as float32
            for i in range(n):
                cur[i] = inp[i]
        else:
            k.copy(cur, inp, n)
        for i in range(stop):
            L = self.layers[i]
            op = L.op
            if op == LINEAR or op == CONV2D:
                req = L.req if L.req is not None and L.chain_end < stop else None
                if req is not None and qc is None:  # float input: quantised into self.q
                    qc, qn = self.q, self._q2
                    k.quantize(qc, cur, L.n_in, L.inv_scale)
                if req is not None:
                    self._weighted(L, None, qn, qc, req)
                    qc, qn = qn, qc
                    continue
                self._weighted(L, cur, nxt, qc)
                qc = None
                cur, nxt = nxt, cur
            elif qc is not None:  # inside a chain: max pooling on int8; ReLUs are in req
                if op == MAXPOOL:
                    k.pool(qn, qc, L.geom, 0)
                    qc, qn = qn, qc
            elif op == MAXPOOL or op == AVGPOOL:
                k.pool(nxt, cur, L.geom, 0 if op == MAXPOOL else (1 if L.lflags & 1 else 2))
                cur, nxt = nxt, cur
            elif op == GAP:
                k.gap(nxt, cur, L.ic, L.ih * L.iw)
                cur, nxt = nxt, cur
            elif op == ACT:
                k.act(cur, L.n_in, L.act)
            elif op == SOFTMAX:
                _softmax(cur, L.n_in)
            elif op == SAVE:
                k.copy(self.slots[L.slot], cur, L.n_in)
            else:
                k.add(cur, self.slots[L.slot], L.n_in)
        return cur

    def predict(self, inp):
        out = self.run(inp)
        best = 0
        for i in range(1, self.n_out):
            if out[i] > out[best]:
                best = i
        return best


def _softmax(x, n):
    import math

    m = x[0]
    for i in range(1, n):
        if x[i] > m:
            m = x[i]
    s = 0.0
    for i in range(n):
        e = math.exp(x[i] - m)
        x[i] = e
        s += e
    for i in range(n):
        x[i] /= s
