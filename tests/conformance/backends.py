"""Backend names the conformance suite accepts, and how each is built.

``python``/``numpy``/``wgpu`` come from ``ember.get_backend``; ``autodiff-X`` wraps backend X
in ``ember.autodiff.Autodiff``; ``fusion-X`` and ``autodiff-fusion-X`` wrap X in
``ember.Fusion`` (fusing tensors of every size); ``checked-X`` runs X and checks every op's
result against its declared shape/dtype rule (:mod:`.infer_check`). A backend whose
dependency is missing raises :class:`Unavailable`, which the suite turns into a clean skip.
"""

from __future__ import annotations

import ember

# What ``--backend=all`` runs (those whose dependencies are missing are skipped).
ALL = ("numpy", "python", "wasm", "wgpu", "autodiff-wasm", "autodiff-numpy", "autodiff-python", "autodiff-wgpu",
       "fusion-numpy", "fusion-wgpu", "autodiff-fusion-wgpu", "router-wgpu-numpy",
       "autodiff-router-wgpu-numpy", "remote-numpy", "autodiff-remote-numpy", "remote-wgpu")


class Unavailable(Exception):
    """The backend can't be built here (a missing dependency or a not-yet-written module)."""


_CACHE: dict[str, object] = {}


def make_backend(name: str):
    if name in _CACHE:
        return _CACHE[name]
    if name.startswith(("fusion-", "autodiff-fusion-")):
        from ember.autodiff import Autodiff
        from ember.fusion import Fusion

        backend = Fusion(make_backend(name.split("fusion-", 1)[1]))
        if backend.compiler is not None:
            # the suite's tensors are small: fuse them too (numpy fuses only large ones)
            backend.compiler.min_elements = 0
        if name.startswith("autodiff-"):
            backend = Autodiff(backend)
    elif name.startswith("router-"):
        from ember.router import Router

        backend = Router(*(make_backend(n) for n in name[len("router-"):].split("-")))
    elif name.startswith("remote-"):
        from .remote_server import connect

        backend = connect(make_backend(name[len("remote-"):]))
    elif name.startswith("checked-"):
        from .infer_check import InferChecked

        backend = InferChecked(make_backend(name[len("checked-") :]))
    elif name.startswith("autodiff-") and name not in ember.available_backends():
        inner = make_backend(name[len("autodiff-") :])
        try:
            from ember.autodiff import Autodiff
        except ImportError as e:
            raise Unavailable(f"{name}: ember.autodiff is not importable ({e})") from e
        backend = Autodiff(inner)
    else:
        try:
            backend = ember.get_backend(name)
        except ImportError as e:
            raise Unavailable(f"{name}: a dependency is missing ({e})") from e
        except ember.EmberError as e:  # not registered (yet)
            raise Unavailable(f"{name}: {e}") from e
    _CACHE[name] = backend
    return backend


def names(option: str) -> list[str]:
    """Backend names for a ``--backend`` value: one name, a comma list, or ``all``."""
    if option == "all":
        return list(ALL)
    return [n.strip() for n in option.split(",") if n.strip()]
