"""A griffe extension for the API reference: Ember's docstrings are doctest- and
reST-flavoured plain text, and mkdocstrings renders docstrings as Markdown. Without this,
``>>> x[1, 2]`` would be a nested block quote holding a Markdown link reference.

- a doctest example (a ``>>>`` line up to the next blank line) becomes a ```pycon fence;
- a reST literal block (a paragraph ending in ``::`` and the indented lines after it) becomes
  a ```python fence;
- a reST role (``:func:`~ember.nn.Linear```) becomes inline code of its target's last name;
- a function made by a factory call that takes its name and docstring
  (``exp = _float_unary("exp", "e ** x ...")``) gets that docstring: static analysis sees only
  an attribute; one whose docstring is set when its module runs (``abs = _unary(...)`` in
  ``ember.array_api._elementwise``, documented from a table at import) gets the imported
  object's ``__doc__``.

mkdocs.yml loads it by path (``extensions: [docs/_ext/griffe_docstrings.py]``).
"""

from __future__ import annotations

import ast
import re

from griffe import Docstring, Extension, Object

ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj|ref):`~?([^`]+)`")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def to_markdown(text: str) -> str:
    """``text`` (a cleaned docstring) with its doctests and literal blocks fenced."""
    lines = ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text).split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            pad = " " * _indent(line)
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(pad):] if lines[i].startswith(pad) else lines[i])
                i += 1
            out += ["", pad + "```pycon", *(pad + b for b in block), pad + "```", ""]
            continue
        if line.rstrip().endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            body_start = i + 2
            j = body_start
            base = _indent(line)
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > base):
                j += 1
            while j > body_start and not lines[j - 1].strip():
                j -= 1
            if j > body_start:
                body = lines[body_start:j]
                cut = min(_indent(b) for b in body if b.strip())
                pad = " " * base
                stem = line.rstrip()[:-2].rstrip()
                out += [stem + ":" if stem else "", "", pad + "```python",
                        *(pad + b[cut:] for b in body), pad + "```"]
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def factory_docstring(node, name: str) -> str | None:
    """The docstring a ``name = factory("name", "doc", ...)`` assignment gives its result."""
    call = getattr(node, "value", None)
    if not isinstance(call, ast.Call) or len(call.args) < 2:
        return None
    first, second = call.args[:2]
    if (isinstance(first, ast.Constant) and first.value == name
            and isinstance(second, ast.Constant) and isinstance(second.value, str)):
        return second.value
    return None


def runtime_docstring(node, obj: Object) -> str | None:
    """The ``__doc__`` of the object a ``name = factory(...)`` assignment made, read from
    the imported module (None where the module does not import or sets none)."""
    import importlib

    if not isinstance(getattr(node, "value", None), ast.Call) or obj.parent is None:
        return None
    try:
        made = getattr(importlib.import_module(obj.parent.path), obj.name)
    except Exception:  # noqa: BLE001 - a docs build never fails for want of a docstring
        return None
    doc = getattr(made, "__doc__", None)
    return doc if callable(made) and doc else None


class DoctestFences(Extension):
    """Rewrites every docstring of the loaded objects with :func:`to_markdown`."""

    def on_instance(self, *, node, obj: Object, **kwargs) -> None:
        if obj.is_attribute and obj.docstring is None:
            doc = factory_docstring(node, obj.name) or runtime_docstring(node, obj)
            if doc is not None:
                obj.docstring = Docstring(doc, parent=obj)

    def on_object(self, *, obj: Object, **kwargs) -> None:
        self._rewrite(obj)

    def on_package(self, *, pkg: Object, **kwargs) -> None:
        self._rewrite(pkg)  # a top-level package gets this event, not on_object

    @staticmethod
    def _rewrite(obj: Object) -> None:
        doc = obj.docstring
        if doc is not None and not getattr(doc, "ember_markdown", False):
            doc.value = to_markdown(doc.value)
            doc.ember_markdown = True  # once: a fenced doctest must not be fenced again
