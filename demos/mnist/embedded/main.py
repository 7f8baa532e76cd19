# MNIST on a microcontroller with ember_micro (MicroPython). See README.md in this folder.
# ruff: noqa: UP031, SIM115 - MicroPython code: % formatting, inline compares
# Needs on the board's filesystem: ember_micro/ (the package, .py or .mpy), optionally
# ember_kernels.mpy (native kernels for the board's architecture), model.emb and digits.bin
# (both written by prepare.py on a PC).
import gc
import struct
import time

import ember_micro

MODEL = "model.emb"
DIGITS = "digits.bin"  # u16 count, then `count` labels, then count x 784 uint8 pixels


def main():
    gc.collect()
    model = ember_micro.Model(MODEL)
    gc.collect()
    print("ember_micro %s, %s kernels; heap in use %d bytes, free %d bytes"
          % (ember_micro.__version__, model.tier, gc.mem_alloc(), gc.mem_free()))
    f = open(DIGITS, "rb")
    n = struct.unpack("<H", f.read(2))[0]
    labels = f.read(n)
    image = bytearray(784)
    correct = 0
    total_us = 0
    for i in range(n):
        f.readinto(image)
        t0 = time.ticks_us()
        p = model.predict(image)
        dt = time.ticks_diff(time.ticks_us(), t0)
        total_us += dt
        correct += p == labels[i]
        print("digit %d: predicted %d, label %d (%d us)" % (i, p, labels[i], dt))
    f.close()
    model.close()
    print("accuracy %d/%d, %.2f ms per image" % (correct, n, total_us / max(n, 1) / 1000))


main()
