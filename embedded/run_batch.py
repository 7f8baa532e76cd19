# MicroPython script: run a model over a file of raw inputs and print results, for
# ruff: noqa: UP031, SIM115, PLR1730 - MicroPython code: % formatting, inline compares
# ember.export.run_on_micropython / run_on_qemu, the tests and the benchmark.
#
#   micropython -X heapsize=256K run_batch.py MODEL INPUTS N TIER [logits] [reps]
#   import run_batch; run_batch.main([MODEL, INPUTS, N, TIER, ...], clock)   # on a board
#
# INPUTS holds N records of the model's input size: uint8 bytes, or float32 if the file name
# ends in ".f32". Prints "tier NAME", then per input "p INDEX ARGMAX" (plus
# "l INDEX v v ..." with `logits`), then the clock's "<unit>_per_input T", "heap_after_load B"
# (live, after gc), "heap_peak B" and "garbage_per_input B" (bytes one inference allocates,
# counted with the collector off; "over" when that exceeds the free heap) and "why ..."
# (ember_micro.info()'s reason for the automatic tier).
import gc
import sys
from array import array

gc.collect()


def _ticks_us():
    import time

    return "time_us", time.ticks_us, lambda a, b: time.ticks_diff(b, a)


def _garbage(model, rec):
    gc.collect()
    gc.disable()
    try:
        a0 = gc.mem_alloc()
        model.run(rec)
        return gc.mem_alloc() - a0
    except MemoryError:
        return None
    finally:
        gc.enable()


def main(argv, clock=None):
    import ember_micro

    path, inputs, n, tier = argv[0], argv[1], int(argv[2]), argv[3]
    show_logits = len(argv) > 4 and argv[4] == "logits"
    reps = int(argv[5]) if len(argv) > 5 else 1
    unit, now, elapsed = clock or _ticks_us()
    try:
        model = ember_micro.Model(path, None if tier == "auto" else tier)
    except ember_micro.ModelError as e:
        print("error", e)
        sys.exit(3)
    gc.collect()
    print("tier", model.tier)
    gc.collect()
    print("heap_after_load", gc.mem_alloc())
    size = model.in_size
    f32 = inputs.endswith(".f32")
    rec = array("f", range(size)) if f32 else bytearray(size)
    src = open(inputs, "rb")
    total = 0
    peak = 0
    garbage = -1
    for i in range(n):
        src.readinto(rec)
        if i == 0:
            garbage = _garbage(model, rec)
        gc.collect()
        t0 = now()
        for _ in range(reps):
            out = model.run(rec)
        total += elapsed(t0, now())
        a = gc.mem_alloc()
        if a > peak:
            peak = a
        best = 0
        for j in range(1, model.n_out):
            if out[j] > out[best]:
                best = j
        print("p", i, best)
        if show_logits:  # value by value: a list of 1000 strings would need the heap
            print("l", i, end="")
            for v in out:
                print(" %.7g" % v, end="")
            print()
    src.close()
    print("%s_per_input" % unit, total // (n * reps) if n else 0)
    # heap in use right after an inference that started from a collected heap: live data plus
    # the garbage one inference makes; an upper bound on what the inference needs
    print("heap_peak", peak)
    print("garbage_per_input", "over" if garbage is None else garbage)
    # last, with the model released: info() imports every tier, which would count in the heap
    # figures above and in the smallest heap the model runs in (tests/embedded/_heap.py)
    model = None
    gc.collect()
    print("why", ember_micro.info()["why"].replace(" ", "_"))


if __name__ == "__main__":
    # sys.path[0] is this script's folder, which holds ember_micro's sources: drop it so the
    # import takes MICROPYPATH's precompiled .mpy (compiling the sources costs heap and
    # leaves it fragmented, as a board running .mpy files wouldn't be)
    sys.path.pop(0)
    main(sys.argv[1:])
