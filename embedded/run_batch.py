# MicroPython script: run a model over a file of raw inputs and print results, for
# ruff: noqa: UP031, SIM115, PLR1730 - MicroPython code: % formatting, inline compares
# ember.export.run_on_micropython, the tests and the benchmark.
#
#   micropython -X heapsize=256K run_batch.py MODEL INPUTS N TIER [logits] [reps]
#
# INPUTS holds N records of the model's input size: uint8 bytes, or float32 if the file name
# ends in ".f32". Prints "tier NAME", then per input "p INDEX ARGMAX" (plus "l INDEX v v ..."
# with `logits`), then "time_us_per_input T", "heap_after_load B" (live, after gc) and "heap_peak B".
import gc
import sys
import time
from array import array

gc.collect()

import ember_micro

path, inputs, n, tier = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
show_logits = len(sys.argv) > 5 and sys.argv[5] == "logits"
reps = int(sys.argv[6]) if len(sys.argv) > 6 else 1
try:
    model = ember_micro.Model(path, None if tier == "auto" else tier)
except ember_micro.ModelError as e:
    print("error", e)
    sys.exit(3)
gc.collect()
print("tier", model.tier)
print("heap_after_load", gc.mem_alloc())
size = model.in_size
f32 = inputs.endswith(".f32")
rec = array("f", bytes(4 * size)) if f32 else bytearray(size)
src = open(inputs, "rb")
total = 0
peak = 0
for i in range(n):
    src.readinto(rec)
    t0 = time.ticks_us()
    for _ in range(reps):
        out = model.run(rec)
    total += time.ticks_diff(time.ticks_us(), t0)
    a = gc.mem_alloc()
    if a > peak:
        peak = a
    best = 0
    for j in range(1, model.n_out):
        if out[j] > out[best]:
            best = j
    print("p", i, best)
    if show_logits:
        print("l", i, " ".join(["%.7g" % v for v in out]))
    gc.collect()
print("time_us_per_input", total // (n * reps) if n else 0)
# heap in use right after an inference that started from a collected heap: live data plus the
# garbage one inference makes; an upper bound on what the inference needs
print("heap_peak", peak)
