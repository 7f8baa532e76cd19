"""The plain-Python graph that ember's ONNX import works on, and its error types.

:mod:`._proto` builds these from protobuf; the runtime, the op registry, the checks and the
code generator read them, and none of them needs ``onnx`` to do so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import EmberError, UnsupportedOpError


class OnnxLoadError(EmberError, ValueError):
    """An ONNX file that cannot be read: missing, truncated, not a model, or a bad graph.

    >>> import ember.onnx
    >>> ember.onnx.load(b"not a model")
    Traceback (most recent call last):
    ...
    ember.onnx._graph.OnnxLoadError: ...
    """


class OnnxUnsupportedError(OnnxLoadError, UnsupportedOpError):
    """A readable model that uses operators or features ember does not implement.

    >>> import ember, ember.onnx
    >>> error = ember.onnx.OnnxUnsupportedError
    >>> issubclass(error, ember.onnx.OnnxLoadError), issubclass(error, ember.UnsupportedOpError)
    (True, True)
    """


class OnnxRunError(EmberError, ValueError):
    """A model that loaded fails when run: a node's inputs or attributes break its operator
    (the message names the node and what went wrong).

    >>> import ember.onnx
    >>> issubclass(ember.onnx.OnnxRunError, ValueError)
    True
    """


@dataclass
class Node:
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    domain: str = ""
    name: str = ""

    def subgraphs(self) -> list[Graph]:
        """The graphs among the attributes (If/Loop/Scan bodies)."""
        return [g for v in self.attrs.values() for g in (v if isinstance(v, list) else [v])
                if isinstance(g, Graph)]


def walk(nodes: list[Node]):
    """Every node of ``nodes``, and of the subgraphs they hold."""
    for n in nodes:
        yield n
        for g in n.subgraphs():
            yield from walk(g.nodes)


@dataclass
class Graph:
    """A graph: nodes in topological order, named inputs/outputs, constant tensors."""

    name: str
    nodes: list[Node]
    inputs: list[str]  # runtime inputs (initializers excluded)
    outputs: list[str]
    initializers: dict[str, Any] = field(default_factory=dict)  # name -> numpy array
    input_info: dict[str, tuple] = field(default_factory=dict)  # name -> (elem_type, shape)
    output_info: dict[str, tuple] = field(default_factory=dict)

    def walk(self):
        """Every node, including those in subgraphs (If/Loop/Scan bodies)."""
        return walk(self.nodes)


@dataclass
class Function:
    """A model-local function (or an ONNX schema's function body): an op defined by nodes."""

    inputs: list[str]
    outputs: list[str]
    defaults: dict[str, Any]  # attribute name -> default value
    nodes: list[Node]


@dataclass
class Model:
    graph: Graph
    opset: int  # version of the default (ai.onnx) domain
    opsets: dict[str, int]
    functions: dict[tuple[str, str], Function]  # (domain, name) -> body
    producer: str = ""


@dataclass(frozen=True)
class _AttrRef:
    """An attribute of a function body that refers to the caller's attribute."""

    name: str
