"""Sentence embeddings: ``ember demo embed``'s all-MiniLM-L6-v2 on the numpy backend vs the same
model in PyTorch CPU (tests/demos/minilm_torch.py, float32), side by side in one run.

    python benchmarks/bench_embed.py [--repeat 20] [--threads 1]

Batches of real sentences padded to a fixed token count; the two run in alternation (median
seconds per call, ratio ember / torch: lower is better for ember). Tokenization (ember's
pure-Python WordPiece, shared by both) is timed on its own. ``--threads`` (default 1) bounds
numpy's BLAS and torch's intra-op threads.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "demos"))

from _common import median_times, pin_blas_threads, row, write_record  # noqa: E402

pin_blas_threads("1")

import numpy as np  # noqa: E402

SENTENCES = [
    "A man is eating food.", "A man is eating a piece of bread.",
    "The girl is carrying a baby.", "A man is riding a horse.",
    "A woman is playing the violin.", "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
]
CASES = [(1, 16), (8, 16), (8, 64), (32, 128)]  # (sentences, tokens per sentence)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    import torch

    import ember
    from ember.demos.embed import tokenizer
    from ember.demos.minilm import load_minilm, package_file
    from minilm_torch import torch_minilm

    torch.set_num_threads(args.threads)
    model = load_minilm(backend="numpy")
    peer = torch_minilm(package_file("model.safetensors"), torch.float32)
    tok = tokenizer()
    print(f"# {datetime.date.today()} {platform.processor() or platform.machine()}, "
          f"{args.threads} thread(s), load {os.getloadavg()[0]:.2f}, median of {args.repeat}")
    (t_tok,) = median_times([lambda: [tok.encode(s) for s in SENTENCES]], args.repeat)
    print(f"WordPiece: {1e6 * t_tok / len(SENTENCES):.0f} µs per sentence")
    print("| sentences × tokens | ember numpy ms | torch CPU ms | ember / torch | max |diff| |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    for n, length in CASES:
        texts = [SENTENCES[i % len(SENTENCES)] + " and more" * length for i in range(n)]
        ids, mask = tok.batch(texts, max_length=length)
        e_ids, e_mask = ember.tensor(ids), ember.tensor(mask)
        t_ids, t_mask = torch.tensor(ids), torch.tensor(mask)

        def run_ember():
            with ember.no_grad():
                return model.embed(e_ids, e_mask).numpy()

        def run_torch():
            with torch.no_grad():
                return peer(t_ids, t_mask).numpy()

        diff = float(np.abs(run_ember() - run_torch()).max())
        t_e, t_t = median_times([run_ember, run_torch], args.repeat)
        print(f"| {n} × {length} | {1e3 * t_e:.1f} | {1e3 * t_t:.1f} | {t_e / t_t:.2f} | "
              f"{diff:.1e} |")
        rows.append(row("cpu", f"all-MiniLM-L6-v2 embeddings, {n} × {length} tokens, "
                        f"{args.threads} thread(s)", 1e3 * t_e, 1e3 * t_t, "ms", "PyTorch CPU"))
    write_record(rows)


if __name__ == "__main__":
    main()
