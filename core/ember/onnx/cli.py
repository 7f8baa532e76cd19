"""``ember onnx ...`` subcommands: convert, info, run.

Wire-up: ``add_subcommand(subparsers)`` from ember's main CLI.
"""

from __future__ import annotations

import argparse
import sys


def _shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, _, dims = text.rpartition("=")
    try:
        return name, tuple(int(d) for d in dims.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--shape {text!r}: expected NAME=D1,D2,... such as input_ids=1,128") from None


def _convert(args: argparse.Namespace) -> int:
    import warnings

    from . import convert

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            py, w = convert(args.model, args.out, args.class_name, shapes=dict(args.shape),
                            force=args.force)
        except Exception as e:  # noqa: BLE001 - the CLI reports, it doesn't trace back
            print(f"ember onnx convert: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
    for c in caught:
        print(f"ember onnx convert: warning: {c.message}", file=sys.stderr)
    # convert raises when the check fails or cannot run: reaching here means it passed
    print(f"wrote {py}\nwrote {w}\nchecked: the generated module matches ember.onnx.load")
    return 0


def _info(args: argparse.Namespace) -> int:
    from collections import Counter

    from . import supported_ops
    from ._proto import OnnxLoadError, read_model

    try:
        model = read_model(args.model)
    except (OnnxLoadError, ImportError) as e:
        print(f"ember onnx info: {e}", file=sys.stderr)
        return 1
    ops = Counter(n.op_type for n in model.graph.walk())
    known = set(supported_ops())
    print(f"{args.model}: opset {model.opset}, producer {model.producer or '?'}")
    print(f"inputs: {model.graph.inputs}\noutputs: {model.graph.outputs}")
    for op, n in sorted(ops.items()):
        print(f"  {op:28} x{n:<4} {'ok' if op in known else 'function/unsupported'}")
    return 0


def add_subcommand(subparsers) -> None:
    """Add ``onnx`` with its ``convert`` and ``info`` commands to an argparse subparsers."""
    p = subparsers.add_parser("onnx", help="import ONNX models")
    sub = p.add_subparsers(dest="onnx_command", required=True)
    c = sub.add_parser("convert", help="generate an ember Python module + safetensors weights")
    c.add_argument("model", help="path to model.onnx")
    c.add_argument("-o", "--out", required=True, help="output folder")
    c.add_argument("--force", action="store_true",
                   help="write into --out even if it holds files an earlier convert did not "
                        "write (model.py and model.safetensors are overwritten)")
    c.add_argument("--class-name", default="Model")
    c.add_argument("--shape", type=_shape, action="append", default=[],
                   help="fix an input's dims, NAME=D1,D2,... (more shape arithmetic folds; "
                        "the check runs on these shapes)")
    c.set_defaults(run=_convert)
    i = sub.add_parser("info", help="opset, inputs/outputs and operators of a model")
    i.add_argument("model")
    i.set_defaults(run=_info)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
