"""The import layers of core/ember: no module imports from a layer above its own, and the
import graph has no cycle. Imports inside functions count too (they are how cycles hide).

Layers, bottom up (docs/architecture.md draws them):

0. errors, dtype, shape, tensordata, random, limits, resources (where the runtime files
   are) — no imports from ember above;
1. contract — the op registry, the Backend base class, caps;
2. backends — python, numpy, wgpu;
3. decorators — autodiff, fusion, router, remote;
4. the user API — tensor, tensor_methods, ops, printing, jit (graph capture, on tensors),
   dlpack (the capsules ``Tensor.__dlpack__`` exchanges) and tensor_stub (writes tensor.pyi);
5. everything built on tensors — nn, optim, train, dataset, io, onnx, export, distributed, the
   ``array_api`` (the Array API namespace), and the ``ember`` package itself (its ``__init__``
   gathers the public API);
6. demos and the CLI.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "core"

LAYERS = {
    0: ("errors", "dtype", "shape", "tensordata", "random", "limits", "resources"),
    1: ("contract",),
    2: ("backends",),
    3: ("autodiff", "fusion", "router", "remote"),
    4: ("tensor", "tensor_methods", "tensor_stub", "ops", "printing", "jit", "dlpack"),
    5: ("", "nn", "optim", "train", "dataset", "io", "onnx", "export", "array_api",
        "distributed", "quantize"),
    6: ("demos", "cli", "__main__"),
}


def layer_of(module: str) -> int:
    """The layer of a module ``ember.a.b`` by its first component (``ember`` alone: 5)."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else ""
    for layer, names in LAYERS.items():
        if head in names:
            return layer
    raise AssertionError(f"{module}: not in any layer; add it to LAYERS in {__file__}")


def module_names(root: Path) -> dict[str, Path]:
    """``{"ember.ops.math": path, ...}`` for every module under ``root/ember``."""
    out = {}
    for path in sorted((root / "ember").rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported ember module, line)`` for every import in the file, at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # `from pkg import sub` imports the submodule pkg.sub when there is one
            targets = [
                f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target in known and target.split(".")[0] == "ember" and target != module:
                found.append((target, node.lineno))
    return found


def violations(root: Path) -> list[str]:
    known = module_names(root)
    graph: dict[str, set[str]] = {m: set() for m in known}
    problems = []
    for module, path in known.items():
        for target, line in imports(module, path, known):
            if _is_parent_package(target, module):
                continue  # Python imports a package before its modules; no real dependency
            graph[module].add(target)
            if layer_of(target) > layer_of(module):
                problems.append(
                    f"{path.relative_to(root)}:{line}: {module} (layer {layer_of(module)}) "
                    f"imports {target} (layer {layer_of(target)}), a layer above it"
                )
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    return problems


def _is_parent_package(target: str, module: str) -> bool:
    return module.startswith(target + ".")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_a_cycle(graph, set(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _a_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A concrete cycle through a strongly connected component, for the message."""
    start = min(component)
    path, seen = [start], {start}
    while True:
        nxt = min(w for w in graph[path[-1]] if w in component)
        if nxt in seen:
            return path[path.index(nxt):] + [nxt]
        path.append(nxt)
        seen.add(nxt)


def test_core_has_no_upward_import_and_no_cycle():
    problems = violations(ROOT)
    assert not problems, "\n".join(problems)


def jit_imports(root: Path, packages: tuple[str, ...] = ("nn", "optim")) -> list[str]:
    """Imports of ``ember.jit`` from ``packages``: state kept across calls goes through
    ``ember.ops.state``, which the tracer records, so nn and optim need no jit hooks."""
    known = module_names(root)
    return [
        f"{path.relative_to(root)}:{line}: {module} imports {target}"
        for module, path in known.items()
        if module.split(".")[1:2] and module.split(".")[1] in packages
        for target, line in imports(module, path, known)
        if target == "ember.jit" or target.startswith("ember.jit.")
    ]


def test_nn_and_optim_import_no_jit():
    problems = jit_imports(ROOT)
    assert not problems, "\n".join(problems)


def plant(root: Path, files: dict[str, str]) -> None:
    """A package ``ember`` under ``root`` holding ``files`` (path -> source)."""
    (root / "ember").mkdir()
    (root / "ember" / "__init__.py").write_text("")
    for name, text in files.items():
        path = root / "ember" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_jit_scan_fails_on_a_planted_import(tmp_path):
    files = {
        "jit/__init__.py": "",
        "jit/state.py": "",
        "optim/__init__.py": "",
        "optim/sgd.py": "def f():\n    from ..jit import state\n",
        "nn/__init__.py": "",
        "nn/layer.py": "import ember.jit\n",
    }
    plant(tmp_path, files)
    problems = jit_imports(tmp_path)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "ember.nn.layer imports ember.jit",
        "ember.optim.sgd imports ember.jit.state",
    ]


@pytest.mark.parametrize(
    "files, expected",
    [
        # the contract importing the Tensor (the loop this test was written to stop)
        ({"contract/__init__.py": "from ..tensor import Tensor\n", "tensor.py": ""},
         "a layer above it"),
        # an upward import hidden inside a function
        ({"backends/__init__.py": "def f():\n    from ..nn import Linear\n",
          "nn/__init__.py": ""}, "a layer above it"),
        # two modules of one layer importing each other
        ({"nn/__init__.py": "", "nn/a.py": "from . import b\n", "nn/b.py": "from .a import x\n"},
         "import cycle: ember.nn.a -> ember.nn.b -> ember.nn.a"),
    ],
)
def test_the_check_fails_on_a_planted_violation(tmp_path, files, expected):
    plant(tmp_path, files)
    problems = violations(tmp_path)
    assert any(expected in p for p in problems), problems
