"""Every public function and class of Ember's user API has a docstring with a runnable example.

What "public" means here (the API reference is generated from exactly these docstrings):

- **modules**: ``ember`` and the user-facing subpackages in ``MODULES`` below. A module's public
  names are its ``__all__`` when it has one, else its globals not starting with ``_`` (plus the
  lazily loaded names it lists in ``_LAZY``/``__dir__``); names that are modules, objects
  defined outside ``ember`` (re-exported ``math.pi``, ``typing`` helpers) or, without an
  ``__all__``, helpers imported from another package's private module are not its API.
  Only functions and classes are checked; constants (``ember.float32``, ``INSTALL``) are data.
- **classes**: a public class's own public methods and properties (names not starting with
  ``_``, defined in an ``ember`` module), for ``ember.Tensor``, ``nn.Module`` and every layer,
  loss, optimizer and scheduler, and every other public class above. Inherited members are
  checked once, on the class that defines them.
- **not user API** (``EXCLUDED``): ``ember.backends.*`` and the op contract (``Backend``'s op
  methods like ``float_add`` are backend internals, documented by the registry entry of each
  op), and the members of a ``Backend`` subclass (Autodiff, Fusion, Router implement the
  contract: their op methods are generated from the registry). The classes themselves are
  public and need an example.

The rule, per object:

- functions and classes: a docstring with a ``>>>`` example;
- methods and properties: a docstring (``inspect.getdoc``, so an override inherits its base's,
  as ``help()`` shows it); an example of its own, or its name in an example of the class
  docstring (``.name`` on a ``>>>``/``...`` line): one class example can show several members;
  ``forward`` is shown by any example of its class (calling a module runs its forward);
- every example is collected by ``tests/unit/test_docstrings.py`` (doctest of the module that
  defines the object), so none can rot; an example that is only ``+SKIP`` lines is allowed
  just for the objects in ``NOT_RUN``, each with the reason it can't run in the tests.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import types

import pytest

import ember

MODULES = [
    "ember", "ember.nn", "ember.nn.functional", "ember.nn.loss", "ember.nn.init", "ember.optim",
    "ember.optim.lr_scheduler", "ember.train", "ember.io", "ember.onnx", "ember.jit",
    "ember.quantize", "ember.export", "ember.dataset", "ember.router", "ember.remote",
    "ember.distributed", "ember.array_api", "ember.array_api.linalg", "ember.fusion",
    "ember.autodiff", "ember.random", "ember.errors", "ember.dtype",
]
# backend internals, by module prefix: never user API even when a public module re-exports them
EXCLUDED = ("ember.backends", "ember.contract")
# public objects whose examples are all ``# doctest: +SKIP``, and why they can't run in a test
NOT_RUN = {
    "ember.distributed.to_ray_dataset": "imports Ray (seconds) and builds a Ray Dataset",
}


def _module_names(module) -> list[str]:
    if hasattr(module, "__all__"):
        return list(module.__all__)
    names = set(vars(module)) | set(getattr(module, "_LAZY", ()))
    if "__dir__" in vars(module):
        names |= set(module.__dir__())
    return sorted(n for n in names if not n.startswith("_"))


def _is_ours(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] == "ember" and not module.startswith(EXCLUDED)


def _private_helper(obj, modname: str) -> bool:
    """Imported from a private module outside ``modname`` (``linalg``'s ``check_array`` from
    ``array_api._common``): a helper the module uses, not one it exports."""
    module = getattr(obj, "__module__", "")
    private = any(part.startswith("_") for part in module.split("."))
    return private and not module.startswith(modname + ".")


def _defined_members(cls):
    """(name, object) of a class's own public methods and properties."""
    for name, raw in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if isinstance(raw, property) or (inspect.isfunction(raw) and _is_ours(raw)):
            yield name, raw


def _is_backend(cls) -> bool:
    return any(base.__module__.startswith("ember.contract") and base.__name__ == "Backend"
               for base in cls.__mro__)


def public_api():
    """[(qualified name, object, kind, owning class or None)], each object once."""
    seen, out = set(), []

    def add(qual, obj, kind, owner=None):
        key = (id(obj), owner)
        if key not in seen:
            seen.add(key)
            out.append((qual, obj, kind, owner))

    classes = {}
    for modname in MODULES:
        module = importlib.import_module(modname)
        for name in _module_names(module):
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or not callable(obj) or not _is_ours(obj):
                continue
            if not hasattr(module, "__all__") and _private_helper(obj, modname):
                continue
            if inspect.isclass(obj):
                add(f"{modname}.{name}", obj, "class")
                classes.setdefault(id(obj), obj)
            elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
                add(f"{modname}.{name}", obj, "function")
    # Tensor's methods bound from ember.ops are the functions above (each checked once)
    classes.setdefault(id(ember.Tensor), ember.Tensor)
    for cls in classes.values():
        if _is_backend(cls):
            continue
        for klass in cls.__mro__:
            if not _is_ours(klass) or klass is object:
                continue
            for name, member in _defined_members(klass):
                kind = "property" if isinstance(member, property) else "method"
                if kind == "method" and any(member is o for _, o, k, _ in out if k == "function"):
                    continue
                add(f"{klass.__module__}.{klass.__qualname__}.{name}", member, kind, klass)
    return out


EXAMPLE = re.compile(r"^\s*(>>>|\.\.\.)(.*)$", re.M)


def _example_lines(doc: str) -> str:
    return "\n".join(m.group(2) for m in EXAMPLE.finditer(doc or ""))


def _doc(obj, owner=None, name=None):
    if isinstance(obj, property):
        return obj.__doc__ or ""
    if owner is not None and name is not None:
        return inspect.getdoc(getattr(owner, name)) or ""
    return inspect.getdoc(obj) or ""


def _runs(doc: str) -> bool:
    """Whether at least one example of ``doc`` runs (is not ``+SKIP``)."""
    examples = doctest.DocTestParser().get_examples(doc)
    return any(not e.options.get(doctest.SKIP) for e in examples)


def _shown_by_class(name: str, owner) -> bool:
    shown = _example_lines(inspect.getdoc(owner) or "")
    if name == "forward":
        return bool(shown)
    return re.search(rf"\.{re.escape(name)}\b", shown) is not None


def audit():
    """{qualified name: problem} for every public object that breaks the rule."""
    problems = {}
    for qual, obj, kind, owner in public_api():
        name = qual.rsplit(".", 1)[1]
        doc = _doc(obj, owner, name)
        if not doc.strip():
            problems[qual] = "no docstring"
        elif kind in ("function", "class"):
            if ">>>" not in doc:
                problems[qual] = "no >>> example"
            elif not _runs(doc) and qual not in NOT_RUN:
                problems[qual] = "only skipped examples (make one run, or list it in NOT_RUN)"
        elif ">>>" not in doc and not _shown_by_class(name, owner):
            problems[qual] = f"no example (its own, or .{name} in {owner.__name__}'s example)"
    return problems


def coverage() -> tuple[int, int, int]:
    """(public objects, with a docstring, with an example as the rule asks)."""
    api = public_api()
    problems = audit()
    documented = sum(1 for qual, *_ in api if problems.get(qual) != "no docstring")
    return len(api), documented, len(api) - len(problems)


def test_every_public_object_is_documented_with_an_example():
    problems = audit()
    assert not problems, f"{len(problems)} public objects break the docstring rule:\n" + \
        "\n".join(f"  {q}: {p}" for q, p in sorted(problems.items()))


_FOUND: dict[str, set[str]] = {}


def _collected(modname: str) -> set[str]:
    """The docstrings whose examples tests/unit/test_docstrings.py runs for a module."""
    if modname not in _FOUND:
        module = importlib.import_module(modname)
        _FOUND[modname] = {t.docstring for t in doctest.DocTestFinder().find(module) if t.examples}
    return _FOUND[modname]


def test_every_example_is_run_by_the_doctest_suite():
    missed = []
    for qual, obj, _kind, _owner in public_api():
        target = obj.fget if isinstance(obj, property) else obj
        doc = getattr(target, "__doc__", None) if not isinstance(obj, property) else obj.__doc__
        if not doc or ">>>" not in doc:
            continue
        modname = getattr(target, "__module__", None)
        if modname is None or doc not in _collected(modname):
            missed.append(qual)
    assert not missed, "examples no doctest collects (define them in a module's globals):\n" + \
        "\n".join(f"  {q}" for q in missed)


@pytest.mark.parametrize("modname", MODULES)
def test_public_module_imports(modname):
    assert importlib.import_module(modname).__doc__, f"{modname} has no module docstring"


if __name__ == "__main__":  # a coverage report: python tests/unit/test_public_docstrings.py
    total, documented, exemplified = coverage()
    print(f"public objects {total}, documented {documented}, with examples {exemplified}")
    for qual, problem in sorted(audit().items()):
        print(f"  {qual}: {problem}")
