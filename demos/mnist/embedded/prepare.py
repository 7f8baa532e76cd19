"""Write the files a board needs for main.py: model.emb (the exported MNIST model) and
digits.bin (held-out digits with their labels).

    python demos/mnist/embedded/prepare.py OUT_DIR [--weights mnist.safetensors] [--int8]
                                           [--model cnn|mlp] [--n 20] [--steps 200]

Without --weights the model is trained briefly here (Autodiff numpy backend).
"""

from __future__ import annotations

import argparse
import os
import struct

from ember.demos.mnist_model import mnist_cnn
from ember.export import export
from ember.demos.mnist_embedded import INPUT_TRANSFORM, mnist_arrays, mnist_mlp, normalize, train_briefly


def write_digits(path: str, images_u8, labels) -> None:
    """digits.bin: u16 count, `count` label bytes, then count x 784 pixel bytes."""
    with open(path, "wb") as f:
        f.write(struct.pack("<H", len(labels)) + bytes(int(v) for v in labels))
        f.write(images_u8.tobytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--weights", help="a safetensors state_dict of the model")
    ap.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    ap.add_argument("--int8", action="store_true")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    tx, ty = mnist_arrays("train")
    vx, vy = mnist_arrays("test", args.n)
    model = mnist_cnn() if args.model == "cnn" else mnist_mlp()
    if args.weights:
        from ember.io import load_file

        model.load_state_dict(load_file(args.weights))
    else:
        model = train_briefly(model, tx, ty, steps=args.steps)
    os.makedirs(args.out, exist_ok=True)
    report = export(model, os.path.join(args.out, "model.emb"), (1, 28, 28), int8=args.int8,
                    input_transform=INPUT_TRANSFORM,
                    calibration=normalize(tx[:256]) if args.int8 else None,
                    evaluate=(normalize(vx), vy) if args.int8 else None)
    print(report)
    write_digits(os.path.join(args.out, "digits.bin"), vx, vy)
    print(f"wrote {args.out}/model.emb and {args.out}/digits.bin ({len(vy)} digits)")


if __name__ == "__main__":
    main()
