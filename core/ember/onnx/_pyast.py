"""Python syntax trees for ``ember onnx convert``: literals, templates, and names.

The code generator builds the generated module as an ``ast`` tree and prints it with
``ast.unparse``, so the output always parses: text from the ONNX file reaches it only as an
``ast.Constant`` (printed with ``repr``), or as an identifier made of ``[a-z0-9_]``.

>>> import ast
>>> ast.unparse(template("F.relu(P_x, inplace=P_flag)", x=name("h"), flag=lit(False)))
'F.relu(h, inplace=False)'
>>> ast.unparse(lit([1.5, float("nan"), "a'b"]))
'[1.5, float(\\'nan\\'), "a\\'b"]'
"""

from __future__ import annotations

import ast
import builtins
import keyword
import math
import re

from ..errors import UnsupportedOpError
from ..nn import Module

# names the generated module itself uses, and every member of nn.Module (a weight named
# ``train`` or ``state_dict`` would hide the method): never a variable's or a weight's name
RESERVED = frozenset({"self", "ember", "F", "nn", "call", "os", "load_file", "WEIGHTS", "load",
                      "float", "bool", "int", "range", "len", "isinstance", "list", "None",
                      "True", "False", "stack_outputs", "weights", "backend", "w",
                      *dir(Module)})
# how ONNX exporters pad names: dropped when a name is shortened
_NOISE = re.compile(r"^(onnx|output|out|model|\d+|_+)$")


def name(ident: str) -> ast.Name:
    """A load of ``ident``, which must be a plain identifier (never file text unchecked)."""
    if not ident.isidentifier() or keyword.iskeyword(ident):
        raise ValueError(f"onnx convert: {ident!r} is not a Python identifier")
    return ast.Name(ident, ast.Load())


def store(ident: str) -> ast.Name:
    return ast.Name(name(ident).id, ast.Store())


def targets(idents: list[str]) -> ast.expr:
    """``a`` or ``a, b`` as an assignment target."""
    if len(idents) == 1:
        return store(idents[0])
    return ast.Tuple([store(i) for i in idents], ast.Store())


def assign(idents: list[str], value: ast.expr) -> ast.Assign:
    return ast.Assign([targets(idents)], value, lineno=0)


def funcdef(ident: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    """``def ident(params): body`` (``type_params`` set where the Python version has it)."""
    args = ast.arguments([], [ast.arg(name(p).id) for p in params], None, [], [], None, [])
    fn = ast.FunctionDef(name(ident).id, args, body, [], None)
    if "type_params" in ast.FunctionDef._fields:
        fn.type_params = []
    return fn


def lit(v) -> ast.expr:
    """A literal for an attribute value: bool, int, float, str, None, lists and tuples of
    them, and numpy arrays (tensor attributes) as ``ember.tensor(...)``."""
    if v is None or isinstance(v, (bool, str)):
        return ast.Constant(v)
    if isinstance(v, int):
        return ast.Constant(int(v))
    if isinstance(v, float):
        if not math.isfinite(v):
            return ast.Call(name("float"), [ast.Constant(repr(v))], [])
        return ast.Constant(float(v))
    if isinstance(v, list):
        return ast.List([lit(x) for x in v], ast.Load())
    if isinstance(v, tuple):
        return ast.Tuple([lit(x) for x in v], ast.Load())
    if type(v).__module__ == "numpy":
        return _array(v)
    raise UnsupportedOpError(
        f"onnx convert: an attribute holds a {type(v).__name__}; the code generator writes "
        "numbers, strings, lists and tensors. Use ember.onnx.load(...) to run it")


def f32(v: float) -> float:
    """The shortest decimal that rounds to the same float32 as ``v`` (``0.2`` for ONNX's
    float32 attribute 0.20000000298023224): the float32 computation is unchanged."""
    import numpy as np

    return float(np.format_float_positional(np.float32(v), unique=True, trim="0"))


def _array(a) -> ast.expr:
    """``ember.tensor(values, dtype=ember.<dtype>)``, reshaped when it holds no elements."""
    import numpy as np

    from ._types import _NUMPY_WIDEN

    a = np.asarray(a)
    kind = _NUMPY_WIDEN.get(a.dtype.name, a.dtype.name)
    if kind not in ("float32", "float64", "float16", "int8", "uint8", "int32", "int64", "bool"):
        raise UnsupportedOpError(f"onnx convert: a tensor attribute of dtype {a.dtype.name} "
                                 "has no ember dtype")
    return tensor_literal(a.astype(kind).tolist(), kind, tuple(a.shape))


def tensor_literal(values, dtype: str, shape: tuple) -> ast.expr:
    """``ember.tensor(values, dtype=ember.<dtype>)`` (nested lists of ``shape``), reshaped when
    it holds no elements."""
    kind = ast.Attribute(name("ember"), "bool_" if dtype == "bool" else dtype, ast.Load())
    out = ast.Call(ast.Attribute(name("ember"), "tensor", ast.Load()), [lit(values)],
                   [ast.keyword("dtype", kind)])
    if 0 in shape:
        out = ast.Call(ast.Attribute(out, "reshape", ast.Load()), [lit(shape)], [])
    return out


class _Fill(ast.NodeTransformer):
    def __init__(self, parts: dict[str, ast.expr]):
        self.parts = parts

    def visit_Name(self, node: ast.Name):
        if node.id.startswith("P_"):
            return self.parts[node.id[2:]]
        return node


def template(src: str, **parts: ast.expr) -> ast.expr:
    """The expression ``src`` (code written here, never file text) with each ``P_<key>``
    replaced by the syntax tree ``parts[key]``."""
    return fill(ast.parse(src, mode="eval").body, **parts)


def fill(tree: ast.AST, **parts: ast.expr) -> ast.AST:
    """``tree`` with each name ``P_<key>`` replaced by ``parts[key]``."""
    return _Fill(parts).visit(tree)


def short(onnx_name: str, width: int = 24) -> str:
    """A short lowercase identifier from an ONNX value name: the last two meaningful parts
    of a path such as ``/encoder/layer.0/attention/query/MatMul_output_0``."""
    text = re.sub(r"_output_\d+$", "", onnx_name)
    words = [p.lower() for p in re.split(r"[^0-9A-Za-z]+", text) if p]
    parts = [p for k, p in enumerate(words) if not _NOISE.match(p)
             and (k == 0 or p != words[k - 1])]  # /stem/conv/Conv: stem_conv
    fallback = next((p for p in words if p[0].isalpha()), "v")  # a graph output "output"
    return "_".join(parts[-2:])[:width].strip("_") or fallback[:width]


class Names:
    """ONNX value names -> Python identifiers, scoped: a subgraph sees its parent's names and
    its own new names never reuse one already taken anywhere in the module."""

    def __init__(self, parent: Names | None = None):
        self.parent = parent
        self.map: dict = {}
        self.consts: dict = {}  # ONNX name -> constant tensor, this scope's and its parents'
        self.taken: set[str] = parent.taken if parent else set(RESERVED)

    def child(self) -> Names:
        return Names(self)

    def get(self, onnx_name) -> ast.expr | None:
        scope = self
        while scope is not None:
            if onnx_name in scope.map:
                return scope.map[onnx_name]
            scope = scope.parent
        return None

    def fresh(self, hint: str, prefix: str = "v_") -> str:
        """A new identifier from an ONNX name (shortened: see :func:`short`)."""
        return self.unique(short(hint), prefix)

    def unique(self, base: str, prefix: str = "v_") -> str:
        """``base`` (made of ``[a-z0-9_]``), prefixed where it would shadow a Python keyword,
        builtin or reserved name, numbered where it is taken."""
        if (not base[0].isalpha() or keyword.iskeyword(base) or base in RESERVED
                or hasattr(builtins, base)):  # never shadow slice, min, input...
            base = prefix + base
        ident, i = base, 1
        while ident in self.taken:
            ident, i = f"{base}_{i}", i + 1
        self.taken.add(ident)
        return ident

    def define(self, onnx_name: str, prefix: str = "v_") -> str:
        """A new identifier for ``onnx_name`` in this scope."""
        ident = self.fresh(onnx_name, prefix)
        self.map[onnx_name] = name(ident)
        return ident

    def bind(self, onnx_name, expr: ast.expr) -> None:
        self.map[onnx_name] = expr
