"""The commands that take ember's shipped runtimes somewhere (they work from the installed wheel
as from a checkout: :func:`ember.resources.resource_dir` finds the files):

    ember export MODEL -o model.emb   the model a run folder or a weights file holds, for
                                      ember_micro (``export_model`` loads it)
    ember micro deploy model.emb      ember_micro + the model onto a board (mpremote) or a folder
    ember serve-web                   the browser runtime's page on 127.0.0.1
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

from .arguments import port, positive_int


def _mnist_from_weights(path: Path):
    """The MNIST demo CNN sized like the weights in ``path``: from the ``model.json`` that
    ``ember demo mnist`` writes beside them, else from the weights' own shapes."""
    from ..io import load_file
    from .mnist_model import mnist_cnn

    config = path.parent / "model.json"
    if config.is_file():
        spec = json.loads(config.read_text())
        return mnist_cnn(tuple(spec["channels"]), spec["hidden"])
    shapes = {k: tuple(v.shape) for k, v in load_file(path).items()}
    try:
        return mnist_cnn((shapes["0.weight"][0], shapes["3.weight"][0]), shapes["7.weight"][0])
    except KeyError as e:
        raise ValueError(
            f"{path}: not the MNIST demo CNN's weights (no {e.args[0]!r}); name the model "
            f"they belong to with --arch MODULE:FUNCTION and its --input-shape") from None


def _from_arch(arch: str):
    """``"package.module:function"`` → the ember module ``function()`` returns."""
    module, _, name = arch.partition(":")
    if not module or not name:
        raise ValueError(f"--arch {arch!r}: expected MODULE:FUNCTION, e.g. "
                         f"ember.demos.mnist_model:mnist_cnn")
    return getattr(importlib.import_module(module), name)()


def load_for_export(source: str | Path, arch: str | None = None):
    """``(model, input_shape, input_transform, calibration_fn)`` for ``ember export``.

    ``source`` is a run folder of ``ember demo mnist`` or a weights file (safetensors, an
    ember record or a PyTorch checkpoint: :func:`ember.io.load_weights`). Without ``arch`` the
    weights are the MNIST demo CNN's: uint8 pixels in, int8 calibrated on MNIST training digits.
    With ``arch`` (``MODULE:FUNCTION`` building the model) the input shape is the caller's and
    int8 calibrates on nothing (``calibration_fn`` is None).
    """
    from ..io import load_weights
    from .mnist_embedded import INPUT_TRANSFORM, mnist_arrays, normalize

    source = Path(source)
    if source.is_dir():
        if not (source / "model.json").is_file():
            raise ValueError(f"{source}: not a run folder (no model.json); train one with "
                             "`ember demo mnist --run-dir DIR`")
        source = source / "model.safetensors"
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such weights file")
    model = _from_arch(arch) if arch else _mnist_from_weights(source)
    load_weights(model, source)
    model.eval()
    if arch:
        return model, None, None, None
    return (model, (1, 28, 28), INPUT_TRANSFORM,
            lambda: normalize(mnist_arrays("train", 256)[0]))


def _micro_deploy(args: argparse.Namespace) -> int:
    from ..export.deploy import deploy_to_board, deploy_to_folder
    from ..export.mpy import board_heap, find_mpy_cross, mpy_cross_version

    if args.folder:
        written = deploy_to_folder(args.model, args.folder, args.arch, force=args.force,
                                   mpy=args.mpy)
        print(f"{len(written)} files in {args.folder}/: ember_micro/ + {Path(args.model).name}"
              + (" + ember_kernels.mpy" if args.arch else ""))
    else:
        deploy_to_board(args.model, args.port, args.arch, mpy=args.mpy)
        print(f"deployed to {args.port}")
    heaps = board_heap(args.model, mpy=args.mpy)
    if args.mpy:
        version = mpy_cross_version(find_mpy_cross())[0]
        how = f"as .mpy bytecode (.mpy version {version}; 6 loads on MicroPython 1.19 or later)"
    else:
        how = "as .py sources, compiled on the board (--mpy needs less heap)"
    print(f"ember_micro {how}; MicroPython heap the model needs: "
          + ", ".join(f"{t} {(h + 1023) // 1024} KB" for t, h in heaps.items()))
    print(f'on the board: import ember_micro; m = ember_micro.load("{Path(args.model).name}")')
    return 0


def _serve_web(args: argparse.Namespace) -> int:
    from .serve import serve_runtime

    serve_runtime(host=args.host, port=args.port, dist=args.dist, force=args.force)
    return 0


def add_micro(sub) -> None:
    """``ember micro deploy [--port PORT | --folder DIR] [--arch ARCH] model.emb``."""
    micro = sub.add_parser("micro", help="MicroPython boards").add_subparsers(
        dest="micro", required=True)
    p = micro.add_parser("deploy", help="copy ember_micro and a model to a board or a folder")
    p.add_argument("model", help="a model file written by `ember export` (.emb)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--port", default="auto",
                       help="the board's serial port for mpremote (default: auto)")
    where.add_argument("--folder", default=None,
                       help="copy into this folder instead (a mounted board, a firmware tree)")
    p.add_argument("--arch", default=None,
                   help="also copy the native kernels for this architecture (x64, armv6m, "
                        "armv7m, armv7emsp; must match the board's MicroPython)")
    p.add_argument("--mpy", action="store_true",
                   help="copy ember_micro as .mpy bytecode (cross-compiled with mpy-cross): "
                        "the board needs less heap than with the .py sources")
    p.add_argument("--force", action="store_true",
                   help="with --folder: copy into a folder that holds files of its own (a "
                        "board's drive); same-named files are overwritten")
    p.set_defaults(run=_micro_deploy)


def add_serve_web(sub) -> None:
    """``ember serve-web [--host H] [--port P] [--dist DIR]``."""
    p = sub.add_parser("serve-web", help="serve ember's browser runtime page (127.0.0.1)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to serve on (default 127.0.0.1; any other exposes the page "
                        "to the network)")
    p.add_argument("--port", type=port, default=8000)
    p.add_argument("--dist", default=None,
                   help="where to build the page (default: web/dist in a checkout, else a "
                        "cache folder; $EMBER_WEB_DIST); a folder holding other files is "
                        "refused")
    p.add_argument("--force", action="store_true",
                   help="build into --dist even if it holds files of its own (they are "
                        "deleted)")
    p.set_defaults(run=_serve_web)


def add_export_options(p) -> None:
    """``ember export``'s options beyond the run folder's (``--arch``)."""
    p.add_argument("--arch", default=None,
                   help="MODULE:FUNCTION building the model the weights belong to "
                        "(default: the MNIST demo CNN); then --input-shape is needed")
    p.add_argument("--input-shape", default=None,
                   type=lambda s: tuple(positive_int(v) for v in s.split(",")),
                   help="with --arch: the input shape without the batch, e.g. 1,28,28")
