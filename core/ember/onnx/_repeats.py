"""Repeated blocks for ``ember onnx convert``: a graph that runs the same block k times (the
6 layers of an encoder) reads as a loop over an ``nn.ModuleList`` of one block class.

The forward's statements are compared in a form that forgets names: a local is written as
the distance back to the statement that defines it, a weight as its shape and dtype. The
longest stretch that repeats with one period L (at least ``_MIN_LEN`` statements, twice or
more) is a candidate; it is taken only when its data flow is a chain: each repetition reads
the previous one's results, or values every repetition shares (graph inputs, shared
weights), and nothing after the stretch reads anything but the last repetition's results.
The weights that differ between repetitions become the block's parameters, saved as
``<container>.<i>.<name>`` (``layers.0.linear1_weight``). ``convert`` checks the result
against ``ember.onnx.load`` like any other module.
"""

from __future__ import annotations

import ast
import copy
import re

from ._pyast import RESERVED, funcdef, name, store, template

_MIN_LEN = 8  # statements: shorter repeats (conv, relu) read better unrolled


class Repeat:
    """A stretch of the forward written as a loop: ``classdef`` (the block class),
    ``init`` (the ModuleList statement) and the new forward body; ``weights`` maps each
    block weight's file key to its old attribute, ``buffers`` the keys that are buffers."""

    def __init__(self, classdef, init, body, weights: dict[str, str], buffers: set[str]):
        self.classdef, self.init, self.body = classdef, init, body
        self.weights, self.buffers = weights, buffers


def _self_attr(node) -> str | None:
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self"):
        return node.attr
    return None


def _targets(stmt) -> list[str]:
    t = stmt.targets[0]
    return [t.id] if isinstance(t, ast.Name) else [e.id for e in t.elts]


def _simple(stmt) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and (
        isinstance(stmt.targets[0], ast.Name) or isinstance(stmt.targets[0], ast.Tuple)
        and all(isinstance(e, ast.Name) for e in stmt.targets[0].elts)))


def _reads(stmt) -> list[str]:
    """Local names a statement reads, in order of first appearance."""
    out: list[str] = []
    for n in ast.walk(stmt.value):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in out:
            out.append(n.id)
    return out


def _attrs(stmt) -> list[str]:
    return [a for n in ast.walk(stmt.value) if (a := _self_attr(n)) is not None]


def _keys(body, defs: dict[str, int], weights: dict) -> list[str]:
    keys = []
    for i, stmt in enumerate(body):
        if not _simple(stmt):
            keys.append(f"#{i}")  # control flow: never part of a repeat
            continue
        value = copy.deepcopy(stmt.value)
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and defs.get(n.id, -1) >= 0:  # an argument keeps its name
                n.id = f"L{i - defs[n.id]}"
            elif isinstance(n, ast.Attribute) and _self_attr(n) in weights:
                t = weights[n.attr]
                n.attr = f"W{tuple(t.shape)}{t.dtype.name}"
        keys.append(f"{len(_targets(stmt))}:{ast.dump(value)}")
    return keys


def _candidates(keys: list[str]):
    """(coverage, period, start, reps) of each stretch repeating with one period."""
    n = len(keys)
    for period in range(_MIN_LEN, n // 2 + 1):
        i = 0
        while i + period < n:
            if keys[i] != keys[i + period]:
                i += 1
                continue
            j = i
            while j + period < n and keys[j] == keys[j + period]:
                j += 1
            reps = (j + period - i) // period
            if reps >= 2:
                yield reps * period, period, i, reps
            i = j + 1


def find(body: list, inputs: list[str], used_after: set[str], weights: dict,
         buffers: set, taken: set[str]) -> Repeat | None:
    """The best repeat of ``body`` (the forward's statements; ``used_after``: the names the
    return reads), or None."""
    defs = {a: -1 for a in inputs}
    for i, stmt in enumerate(body):
        if _simple(stmt):
            for t in _targets(stmt):
                defs[t] = i
    keys = _keys(body, defs, weights)
    for _, period, start, reps in sorted(_candidates(keys), key=lambda c: (-c[0], c[1])):
        found = _chain(body, start, period, reps, defs, used_after, weights, buffers, taken)
        if found is not None:
            return found
    return None


def _window_io(body, lo: int, hi: int, defs: dict, used_after: set[str]):
    """(locals defined before the window that it reads, in order; names defined in it and
    read after it). The forward's arguments count as defined before everything."""
    ins: list[str] = []
    for stmt in body[lo:hi]:
        for r in _reads(stmt):
            if r in defs and defs[r] < lo and r not in ins:
                ins.append(r)
    later = _read_from(body, hi, used_after)
    outs = [t for stmt in body[lo:hi] for t in _targets(stmt) if t in later]
    return ins, outs


def _read_from(body, start: int, used_after: set[str]) -> set[str]:
    """Every name ``body[start:]`` reads, and ``used_after``."""
    out = set(used_after)
    for stmt in body[start:]:
        out.update(_reads(stmt) if _simple(stmt) else (
            n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)))
    return out


def _chain(body, start, period, reps, defs, used_after, weights, buffers, taken):
    windows = [(start + j * period, start + (j + 1) * period) for j in range(reps)]
    io = [_window_io(body, lo, hi, defs, used_after) for lo, hi in windows]
    local = {n for lo, hi in windows for s in body[lo:hi] for n in _targets(s)}
    if len({len(i) for i, _ in io}) != 1 or len({len(o) for _, o in io}) != 1:
        return None
    slots = []  # per input slot: ("shared", name) or ("chain", index into the outputs)
    for p in range(len(io[0][0])):
        names = [ins[p] for ins, _ in io]
        if all(n == names[0] for n in names) and names[0] not in local:
            slots.append(("shared", names[0]))
            continue
        q = {io[j - 1][1].index(names[j]) if names[j] in io[j - 1][1] else None
             for j in range(1, reps)}
        if len(q) != 1 or None in q:
            return None
        slots.append(("chain", q.pop()))
    firsts = {}
    for p, (kind, q) in enumerate(slots):  # one carried value, one name before the loop
        if kind == "chain" and firsts.setdefault(q, io[0][0][p]) != io[0][0][p]:
            return None
    for j in range(reps - 1):  # a repetition's results feed only the next one
        lo, hi = windows[j + 1]
        nxt = set(_window_io(body, lo, hi, defs, set())[0])
        if set(io[j][1]) - nxt or set(io[j][1]) & _read_from(body, hi, used_after):
            return None
    # weights: per position of self.<attr> in the window, the attribute of each repetition
    per_rep = [[a for s in body[lo:hi] for a in _attrs(s)] for lo, hi in windows]
    if len({len(a) for a in per_rep}) != 1:
        return None
    return _write(body, windows, io, slots, per_rep, weights, buffers, taken)


def _split(names: list[str]) -> tuple[str, str]:
    """(container, attribute) from one weight's names across repetitions."""
    a, b = names[0], names[1]
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
    head = re.sub(r"[_0-9]+$", "", a[:pre])
    tail = a[len(a) - suf:].lstrip("_0123456789") if suf else ""
    return head, tail


def _write(body, windows, io, slots, per_rep, weights, buffers, taken) -> Repeat | None:
    reps = len(windows)
    lo, hi = windows[0]
    attr_names: dict[str, str] = {}  # rep-0 attribute -> block attribute
    shared_w: list[str] = []
    container = ""
    for pos, first in enumerate(per_rep[0]):
        names = [per_rep[j][pos] for j in range(reps)]
        if all(n == first for n in names):
            if first not in shared_w:
                shared_w.append(first)
            continue
        if len(set(names)) != reps or any(n in per_rep[0] for n in names[1:]):
            return None  # a weight used by two repetitions, or twice in one
        head, tail = _split(names)
        container = container or head
        attr = tail if tail.isidentifier() and tail not in RESERVED else first
        attr_names.setdefault(first, attr)
    if not attr_names or len(set(attr_names.values())) != len(attr_names):
        return None
    if not container.isidentifier() or container in taken or container in RESERVED:
        container = next(c for c in ("blocks", "repeated_blocks") if c not in taken)
    # the block class: its forward is the first repetition's statements
    chain_in = {p: q for p, (kind, q) in enumerate(slots) if kind == "chain"}
    in_names = io[0][0]
    args = [in_names[p] for p in range(len(slots))]
    stmts = copy.deepcopy(body[lo:hi])
    w_args = {a: f"w_{a}" for a in shared_w}
    for s in stmts:
        for n in ast.walk(s):
            a = _self_attr(n)
            if a in attr_names:
                n.attr = attr_names[a]
    stmts = [_swap_shared(s, w_args) for s in stmts]
    outs0 = io[0][1]
    ret = [name(o) for o in outs0]
    fwd = funcdef("forward", ["self", *args, *w_args.values()], [*stmts, ast.Return(
        ret[0] if len(ret) == 1 else ast.Tuple(ret, ast.Load()))])
    init_body: list[ast.stmt] = [ast.Expr(template("super().__init__()"))]
    file_keys: dict[str, str] = {}
    block_buffers: set[str] = set()
    for first, attr in attr_names.items():
        key = ast.BinOp(name("prefix"), ast.Add(), ast.Constant(attr))
        if first in buffers:
            init_body.append(ast.Expr(template("self.register_buffer(P_k, w[P_p])",
                                               k=ast.Constant(attr), p=key)))
        else:
            init_body.append(ast.Assign([ast.Attribute(name("self"), attr, ast.Store())],
                                        template("nn.Parameter(w[P_p])", p=key), lineno=0))
        pos = per_rep[0].index(first)
        for j in range(reps):
            file_keys[f"{container}.{j}.{attr}"] = per_rep[j][pos]
            if first in buffers:
                block_buffers.add(f"{container}.{j}.{attr}")
    cls_name = next(c for c in ("Block", "RepeatedBlock", "GraphBlock") if c not in taken)
    classdef = ast.ClassDef(cls_name, [template("nn.Module")], [], [
        ast.Expr(ast.Constant(f"One of the {reps} repetitions of a block of the graph.")),
        funcdef("__init__", ["self", "w", "prefix"], init_body), fwd], [])
    if "type_params" in ast.ClassDef._fields:
        classdef.type_params = []
    init = ast.Assign([ast.Attribute(name("self"), container, ast.Store())], template(
        f"nn.ModuleList([{cls_name}(w, f'{container}.{{i}}.') for i in range(P_n)])",
        n=ast.Constant(reps)), lineno=0)
    # the loop: carried names are the last repetition's results
    last_outs = io[-1][1]
    carried = [last_outs[q] for q in range(len(outs0))]
    pre = [ast.Assign([store(carried[q])], name(in_names[p]), lineno=0)
           for p, q in chain_in.items() if carried[q] != in_names[p]]
    call_args = [name(carried[v]) if kind == "chain" else name(v) for kind, v in slots]
    call_args += [template(f"self.{a}") for a in shared_w]
    layer = next(n for n in ("layer", "block", "layer_block") if n not in taken)
    target = store(carried[0]) if len(carried) == 1 else ast.Tuple(
        [store(c) for c in carried], ast.Store())
    loop = ast.For(store(layer), template(f"self.{container}"), [ast.Assign(
        [target], ast.Call(name(layer), call_args, []), lineno=0)], [])
    new_body = [*body[:lo], *pre, loop, *body[windows[-1][1]:]]
    return Repeat(classdef, init, new_body, file_keys, block_buffers)


class _SwapShared(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Attribute(self, node):
        a = _self_attr(node)
        if a in self.names:
            return name(self.names[a])
        return self.generic_visit(node)


def _swap_shared(stmt, names: dict[str, str]):
    return _SwapShared(names).visit(stmt) if names else stmt
