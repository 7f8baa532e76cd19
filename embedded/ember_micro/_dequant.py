# Weight-only rows to floats, in plain MicroPython: the pure and native tiers' dequant (the
# ulab tier has its own in _ulab.py). A module of its own, imported only by a model that has
# weight-only layers, so float and int8 models don't spend heap on its code.


def dequant(wf, codes, c0, nrows, row_len, scales, s0, block, wdtype):
    # weight-only rows to floats: wf[r * row_len + i] = code * scales[s0 + r * nb + i // block]
    # for `nrows` rows whose codes start at byte c0 (format.py: wdtype 2 int8, one byte a
    # code; 3 int4, code + 8 in a nibble, low first, each row starting on a byte). The codes
    # are array('b'): a nibble byte reads back as -128..127, & 255 makes it 0..255
    nb = (row_len + block - 1) // block
    rb = row_len if wdtype == 2 else (row_len + 1) >> 1
    j = 0
    for r in range(nrows):
        c = c0 + r * rb
        s = s0 + r * nb
        for i in range(row_len):
            if i % block == 0:
                sc = scales[s + i // block]
            if wdtype == 2:
                v = codes[c + i]
            elif i & 1:
                v = ((codes[c + (i >> 1)] & 255) >> 4) - 8
            else:
                v = (codes[c + (i >> 1)] & 15) - 8
            wf[j] = v * sc
            j += 1
