"""The wasm backend's reduction, sort, indexing and random kernels against what they replace
(the ops' default composite bodies, run on the same wasm backend) and against the numpy
backend, side by side in one run, in alternation (``_common.median_times``).

Columns: milliseconds of the wasm kernel, of the default body on wasm, and of numpy; the
ratios default/kernel (how much the kernel saves) and kernel/numpy. Run:

    python benchmarks/bench_wasm_reductions.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import platform

import ember
import numpy as np
from _common import median_times, row, write_record
from ember.contract import registry
from ember.tensordata import TensorData


def cases(rng: np.random.Generator):
    """(label, op name, args builder): the builder takes a backend and returns the args."""
    big = rng.standard_normal((1024, 1024)).astype(np.float32)
    rows = rng.standard_normal((256, 1000)).astype(np.float32)
    mask = rng.random((1024, 1024)) < 0.001
    index = rng.integers(0, 1024, 512)

    def up(b, a):
        return b.from_data(TensorData.from_numpy(a))

    yield "mean 1024², dim 1", "float_mean", lambda b: (up(b, big), (1,))
    yield "var 1024², dim 0", "float_var", lambda b: (up(b, big), (0,), 1)
    yield "var 1024², dim 1", "float_var", lambda b: (up(b, big), (1,), 1)
    yield "logsumexp 256×1000, dim 1", "float_logsumexp", lambda b: (up(b, rows), (1,))
    yield "any 1024² bool, all dims", "bool_any", lambda b: (up(b, mask), (0, 1))
    yield "softplus 1024²", "softplus", lambda b: (up(b, big), 1.0, 20.0)
    yield "index_select 512 rows of 1024²", "index_select", lambda b: (up(b, big), 0,
                                                                        up(b, index))
    yield "random_uniform 256×1024", "random_uniform", lambda b: ((256, 1024), ember.float32,
                                                                  7, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    wasm, peer = ember.get_backend("wasm"), ember.get_backend("numpy")
    print(f"{platform.node()} · {platform.processor() or platform.machine()} · "
          f"repeat {args.repeat}\n")
    print("| op | wasm kernel ms | default body on wasm ms | numpy ms | default/kernel | "
          "kernel/numpy |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = []
    for label, name, build in cases(np.random.default_rng(0)):
        op = registry.REGISTRY[name]
        wa, na = build(wasm), build(peer)
        fns = [lambda: getattr(wasm, name)(*wa), lambda: op.default(wasm, *wa),
               lambda: getattr(peer, name)(*na)]
        kernel, default, numpy_ = median_times(fns, repeat=args.repeat)
        print(f"| {label} | {kernel * 1e3:.3f} | {default * 1e3:.3f} | {numpy_ * 1e3:.3f} | "
              f"{default / kernel:.1f}× | {kernel / numpy_:.2f}× |")
        rows.append(row("wasm", f"wasm kernel: {label}", kernel * 1e3, numpy_ * 1e3, "ms", "numpy",
                        note=f"the op's default body on wasm: {default / kernel:.1f}× slower"))
    write_record(rows)


if __name__ == "__main__":
    main()
