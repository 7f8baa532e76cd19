# On-device fine-tuning of a model's last dense layer: plain SGD on softmax cross-entropy.
# ruff: noqa: UP031, PLR1730 - MicroPython code: % formatting, inline compares
#
#   t = LastLayer(model)                  # the final Linear (f32, weights held in RAM)
#   loss = t.step(x, label, lr=0.05)      # one example: forward, gradient, update in place
#   t.save()                              # optional: write the new weights into the file
#
# The body of the model runs frozen on the model's kernel tier; only the last layer learns.
# Memory: the layer's own weight and bias arrays are updated in place; the step needs its
# input vector (the body's output buffer, no copy) and one probability vector of `rows` floats.
# For each example, with p = softmax(W f + b) and y the one-hot label:
#   loss = -log p[label];  W -= lr * (p - y) f^T;  b -= lr * (p - y)
# which is what mean-reduced cross-entropy and SGD give on a batch of one in CPython ember.
import math
from array import array

from .format import LINEAR, SOFTMAX


class LastLayer:
    def __init__(self, model):
        layers = model.layers
        i = len(layers) - 1
        while i >= 0 and layers[i].op == SOFTMAX:
            i -= 1
        if i < 0 or layers[i].op != LINEAR:
            raise ValueError("ember_micro: fine-tuning needs a model that ends in a Linear layer "
                             "(optionally followed by Softmax)")
        L = layers[i]
        if L.wdtype:
            raise ValueError("ember_micro: the last Linear layer is int8/int4 (codes); "
                             "fine-tuning needs it in f32 (export without int8=True, or keep "
                             "it float in ember.quantize)")
        if L.act:
            raise ValueError("ember_micro: the last Linear layer has a fused activation; "
                             "fine-tuning needs raw logits")
        if L.weights is None:
            raise ValueError("ember_micro: the last Linear layer's weights (%d bytes) are "
                             "streamed from flash; load the model with resident=%d or more to "
                             "train them in RAM" % (L.wlen, L.wlen))
        self.model = model
        self.layer = L
        self.index = i
        self.p = array("f", range(L.rows))

    def logits(self, inp):
        """Forward: the body on the model's tier, then the last layer; returns (f, p) with p
        the logits (overwritten by the next call)."""
        m = self.model
        L = self.layer
        f = m.forward(inp, self.index)
        m.k.dense(self.p, 0, f, L.weights, L.rows, L.n_in, L.bias, 0)
        return f, self.p

    def step(self, inp, label, lr):
        """One SGD step on one example; returns its loss before the update."""
        L = self.layer
        rows, nin = L.rows, L.n_in
        if not 0 <= label < rows:
            raise ValueError("ember_micro: label %d outside 0..%d" % (label, rows - 1))
        f, p = self.logits(inp)
        mx = p[0]
        for r in range(1, rows):
            if p[r] > mx:
                mx = p[r]
        z = p[label] - mx
        s = 0.0
        for r in range(rows):
            e = math.exp(p[r] - mx)
            p[r] = e
            s += e
        loss = math.log(s) - z
        w, b = L.weights, L.bias
        k = 0
        for r in range(rows):
            g = p[r] / s - (1.0 if r == label else 0.0)
            if b is not None:
                b[r] -= lr * g
            g = lr * g
            for j in range(nin):
                w[k + j] -= g * f[j]
            k += nin
        return loss

    def save(self, path=None):
        """Write the trained weights and bias into the model file (its CRC32 updated)."""
        from . import format as fmt

        L = self.layer
        path = path or self.model.path
        self.model.close()
        with open(path, "r+b") as f:
            f.seek(L.woff)
            f.write(L.weights)
            if L.bias is not None:
                f.seek(L.boff)
                f.write(L.bias)
            _rewrite_crc(f, fmt)
        self.model._f = open(path, "rb")  # noqa: SIM115 - the model keeps its file open


def _rewrite_crc(f, fmt):
    from binascii import crc32

    f.seek(0)
    head = f.read(fmt.HEADER_SIZE)
    crc = crc32(head[:fmt.CRC_OFFSET])
    buf = bytearray(512)
    while True:
        n = f.readinto(buf)
        if not n:
            break
        crc = crc32(memoryview(buf)[:n], crc)
    f.seek(fmt.CRC_OFFSET)
    f.write((crc & 0xFFFFFFFF).to_bytes(4, "little"))
