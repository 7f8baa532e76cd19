"""Unpickling untrusted bytes: only the globals a reader names, in bounded memory and time.

``pickle`` alone runs whatever a file names (``os.system``) and believes every number in it:
an 8-byte pickle with memo index 2**28 makes the C unpickler allocate gigabytes, a million
nested tuples used as a dict key overflow the C stack while hashing, 20 000 int keys sharing
one hash take seconds to insert (a million, hours), a list appended to itself is a cycle, and
473 bytes of lists that share their items describe a tree with 2**60 paths.
:func:`load_pickle` therefore first walks the opcodes without building anything
(:func:`pickletools.genops`), checking them against :mod:`ember.limits` — opcodes, memo
indices, integer digits, open marks, tuple nesting, the worst case of keys whose hash the
file picks — and only then lets the C unpickler build the object, resolving globals from the
reader's table alone and charging what those calls copy and hash to the same budget.
:func:`named_leaves` flattens the result into dotted names, expanding each shared container
once.

>>> load_pickle(b"\\x80\\x02]q\\x00(K\\x01K\\x02e.", "demo", {})
[1, 2]
>>> named_leaves({"a": [1.5, {"b": 2.5}]}, lambda v: isinstance(v, float), "demo", "root")
{'a.0': 1.5, 'a.1.b': 2.5}
"""

from __future__ import annotations

import io
import math
import pickle
import pickletools
import reprlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from .. import limits
from ..errors import RecordError
from .untrusted import reading

_INTS = frozenset({"INT", "LONG", "LONG1", "LONG4"})  # the others hold at most 32 bits
# opcodes the scan follows closely; tuples by how many members they take (or back to a MARK)
_RULES: dict[str, Any] = {
    **dict.fromkeys(("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"), "put"),
    **dict.fromkeys(("GET", "BINGET", "LONG_BINGET"), "get"),
    "MARK": "mark", "POP": "pop", "DUP": "dup",
    "TUPLE": "to_mark", "EMPTY_TUPLE": 0, "TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3,
}
# Each simulated stack entry is ``tuple depth << 1 | collidable``. CPython's hashes of ints,
# floats, tuples and frozensets are not randomised, so a file can pick thousands of keys with
# one hash and make each dict insertion walk all of them; str and bytes hashes are randomised,
# ints below the hash modulus have distinct hashes, and other objects hash by identity.
_COLLIDABLE = 1
_MADE_COLLIDABLE = frozenset({"FLOAT", "BINFLOAT", "FROZENSET", "REDUCE", "NEWOBJ", "NEWOBJ_EX",
                              "INST", "OBJ"})
_HASHED_EVERY = frozenset({"ADDITEMS", "FROZENSET"})  # elements hashed; dicts hash every other
_HASHED_PAIRS = frozenset({"DICT", "SETITEMS"})
_MODULUS = sys.hash_info.modulus
_HASH_SAFE = (str, bytes, bool, type(None))


class _Brief(reprlib.Repr):
    """``repr`` cut short: error messages quote values from the file, which may be huge."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxother = 3, 60

    def repr1(self, x: Any, level: int) -> str:
        for base in (dict, list, tuple):  # subclasses too (OrderedDict), never their full repr
            if isinstance(x, base) and type(x) is not base:
                return getattr(self, f"repr_{base.__name__}")(x, level)
        return super().repr1(x, level)


brief = _Brief().repr


# ---------------------------------------------------------------------------- the opcode scan
def _effect(op: pickletools.OpcodeInfo) -> tuple[bool, int, int]:
    """(pops back to a MARK first?, objects it then takes, objects it leaves)."""
    before = op.stack_before
    if op.name == "BUILD":
        return False, 1, 0  # takes the state; the object below stays what it was
    if pickletools.markobject in before:  # the container below the mark is taken too
        return True, before.index(pickletools.markobject), len(op.stack_after)
    return False, len(before), len(op.stack_after)


_EFFECTS = {op.name: _effect(op) for op in pickletools.opcodes}


def _digits(value: int) -> int:
    """Decimal digits of ``value``; a lower bound past ~4000 digits (str() refuses those)."""
    bits = abs(value).bit_length()
    return len(str(abs(value))) if bits < 13_000 else int(bits * math.log10(2))


def _scan(f: Any, where: str) -> tuple[int, int]:
    """Walk one pickle's opcodes without building any object. Returns the work it will take
    (opcodes + worst-case hash collisions) and how many collidable keys it hashes.

    The stack is simulated with, for each object, only how deeply tuples nest in it (CPython
    hashes nested tuples recursively, without a depth check) and whether its hash is the
    file's choice. Marks are kept apart as the C unpickler keeps them (a fence that no opcode
    may pop through).
    """
    bounds = limits.current()
    max_ops, max_nesting = bounds.max_pickle_ops, bounds.max_nesting
    max_memo = bounds.max_pickle_memo
    items: list[int] = []
    marks: list[int] = []
    fence = 0  # the position of the innermost open MARK: no opcode may take objects below it
    memo: dict[int, int] = {}
    ops = collisions = collidable_keys = 0

    def corrupt(why: str) -> RecordError:
        return RecordError(f"{where}: corrupt pickle ({why})")

    try:
        for op, arg, _pos in pickletools.genops(f):
            ops += 1
            if ops + collisions > max_ops:
                _check_work(where, ops + collisions)
            name = op.name
            rule = _RULES.get(name)
            if rule is None:  # most opcodes: take some objects (maybe back to a MARK), leave one
                made = _COLLIDABLE if name in _MADE_COLLIDABLE else 0
                if name in _INTS:
                    limits.check(RecordError, f"{where}: digits in a pickle integer",
                                 _digits(arg), "max_int_digits")
                    made = 0 if -_MODULUS < arg < _MODULUS else _COLLIDABLE
                to_mark, take, leave = _EFFECTS[name]
                hashed: list[int] = []
                if to_mark:
                    if not marks:
                        raise corrupt(f"opcode {ops} ({name}) expects a MARK and none is open")
                    start = marks.pop()
                    if name in _HASHED_EVERY or name in _HASHED_PAIRS:
                        hashed = items[start::1 if name in _HASHED_EVERY else 2]
                    del items[start:]
                    fence = marks[-1] if marks else 0
                keep = len(items) - take
                if keep < fence:
                    raise corrupt(f"opcode {ops} ({name}) takes {take} objects from a stack "
                                  "that has fewer")
                if name == "SETITEM":
                    hashed = items[keep + 1:keep + 2]
                del items[keep:]
                for entry in hashed:
                    if entry & _COLLIDABLE:  # the worst case: it collides with all before it
                        collidable_keys += 1
                        collisions += collidable_keys
                if leave:
                    items.append(made)
            elif rule == "put":
                index = len(memo) if name == "MEMOIZE" else arg
                if index >= max_memo:
                    limits.check(RecordError, f"{where}: pickle memo index", index + 1,
                                 "max_pickle_memo")
                # the C unpickler sizes its memo by the largest index: hold an index to the
                # objects the pickle can have made so far, one per opcode
                if index >= ops:
                    raise corrupt(f"memo index {index} at opcode {ops}: a pickle memoises at "
                                  "most one object per opcode")
                if len(items) <= fence:
                    raise corrupt(f"opcode {ops} ({name}) memoises an object the stack lacks")
                memo[index] = items[-1]
            elif rule == "get":
                if arg not in memo:
                    raise corrupt(f"memo entry {arg} is read before it is written")
                items.append(memo[arg])
            elif rule == "pop" and marks and fence == len(items):
                marks.pop()  # POP right after MARK discards the mark
                fence = marks[-1] if marks else 0
            elif rule in ("pop", "dup"):
                if len(items) <= fence:
                    raise corrupt(f"opcode {ops} ({name}) finds no object on the stack")
                items.append(items[-1]) if rule == "dup" else items.pop()
            elif rule == "mark":
                marks.append(len(items))
                fence = len(items)
                if len(marks) > max_nesting:
                    limits.check(RecordError, f"{where}: pickle marks open at once",
                                 len(marks), "max_nesting")
            else:  # a tuple: one deeper than its deepest member
                if rule == "to_mark":
                    if not marks:
                        raise corrupt(f"opcode {ops} (TUPLE) expects a MARK and none is open")
                    keep = marks.pop()
                    fence = marks[-1] if marks else 0
                else:
                    keep = len(items) - rule
                    if keep < fence:
                        raise corrupt(f"opcode {ops} ({name}) takes {rule} objects from a "
                                      "stack that has fewer")
                depth = 1 + max((entry >> 1 for entry in items[keep:]), default=0)
                del items[keep:]
                if depth > max_nesting:
                    limits.check(RecordError, f"{where}: tuple nesting", depth, "max_nesting")
                items.append(depth << 1 | _COLLIDABLE)
    except RecordError:
        raise
    except ValueError as e:  # genops: unknown opcode, argument past the end, bad UTF-8
        raise RecordError(f"{where}: corrupt pickle ({e})") from e
    _check_work(where, ops + collisions)
    return ops + collisions, collidable_keys


def _check_work(where: str, work: int) -> None:
    limits.check(RecordError, f"{where}: pickle work (opcodes, elements copied, worst-case "
                 "hash collisions)", work, "max_pickle_ops")


def _next_pickle(f: BinaryIO, where: str) -> tuple[bytes, tuple[int, int]]:
    """The pickle starting at ``f``'s position (its bytes and :func:`_scan`), leaving ``f`` after
    it. Its end is found by scanning a buffer that grows until it holds the whole pickle:
    never more than the file has, nor past max_header_bytes."""
    start = f.tell()
    left = f.seek(0, io.SEEK_END) - start
    cap = limits.current().max_header_bytes
    size = 1 << 16
    while True:
        f.seek(start)
        data = f.read(min(size, left, cap + 1))
        stream = io.BytesIO(data)
        try:
            scanned = _scan(stream, where)
        except RecordError:
            # an error before the end of the buffer is the pickle's; at its end it may only
            # be that the buffer is too short
            if stream.tell() < len(data) or len(data) == left:
                raise
            limits.check(RecordError, f"{where}: pickle size in bytes", len(data),
                         "max_header_bytes")
            size *= 8
            continue
        f.seek(start + stream.tell())
        return data[: stream.tell()], scanned


# ---------------------------------------------------------------------------- unpickling
class _Unpickler(pickle.Unpickler):
    """The C unpickler with globals from a table, charging what their calls do to the work
    budget the scan started."""

    def __init__(self, data: bytes, where: str, allowed: Mapping[tuple[str, str], Any],
                 persistent_load: Callable[[Any], Any] | None, refusal: str,
                 scanned: tuple[int, int]):
        super().__init__(io.BytesIO(data))
        self._where, self._allowed, self._refusal = where, allowed, refusal
        self._persistent = persistent_load
        self._work, self._collidable = scanned

    def find_class(self, module: str, name: str) -> Any:
        try:
            target = self._allowed[(module, name)]
        except KeyError:
            raise RecordError(f"{self._where} refers to the global '{module}.{name}', which is "
                              f"not allowed: {self._refusal}") from None
        # each use gets a fresh wrapper, so a BUILD opcode can't set attributes on the target
        return self._charged(target) if callable(target) else target

    def _charged(self, fn: Callable) -> Callable:
        # A constructor copies its argument, and a pickle can pass one shared list to it a
        # million times: elements copied count like opcodes. Sets and dicts also hash them.
        hashes = fn in (set, frozenset) or (isinstance(fn, type) and issubclass(fn, dict))

        def call(*args: Any) -> Any:
            self._work += sum(len(a) for a in args if isinstance(a, (tuple, list, dict, str)))
            if self._work > limits.current().max_pickle_ops:
                _check_work(self._where, self._work)
            if hashes and args:
                for key in args[0]:  # a dict's keys, a list's items
                    if not _hash_safe(key):
                        self._collidable += 1
                        self._work += self._collidable
                _check_work(self._where, self._work)
            try:
                return fn(*args)
            except RecordError as e:  # the callable's message, placed in the file
                raise RecordError(f"{self._where}: {e}") from e

        return call

    def persistent_load(self, pid: Any) -> Any:
        if self._persistent is None:
            raise RecordError(f"{self._where}: unexpected persistent id {brief(pid)}")
        return self._persistent(pid)


def load_pickle(source: bytes | BinaryIO, where: str, allowed: Mapping[tuple[str, str], Any],
                persistent_load: Callable[[Any], Any] | None = None,
                refusal: str = "this file may only name known data types") -> Any:
    """The object one pickle describes, built only if every check passes.

    ``source`` is the pickle's bytes, or a seekable binary file positioned at a pickle (read
    up to its STOP opcode, then left there). ``allowed`` maps ``(module, name)`` to what that
    global stands for; any other global raises :class:`~ember.errors.RecordError` (its message
    ends with ``refusal``) before anything is called. ``persistent_load`` resolves persistent
    ids. Every failure, and every passed limit, is a RecordError naming ``where``.

    >>> load_pickle(b"\\x80\\x02cos\\nsystem\\n.", "demo", {})
    Traceback (most recent call last):
    ...
    ember.errors.RecordError: demo refers to the global 'os.system', which is not allowed: ...
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        scanned = _scan(io.BytesIO(data), where)
    else:
        data, scanned = _next_pickle(source, where)
    with reading(f"{where}: pickle"):
        return _Unpickler(data, where, allowed, persistent_load, refusal, scanned).load()


def _hash_safe(value: Any) -> bool:
    """Whether the file can't choose ``value``'s hash (see ``_COLLIDABLE``)."""
    kind = type(value)
    return (kind in _HASH_SAFE or kind.__hash__ is object.__hash__
            or (kind is int and -_MODULUS < value < _MODULUS))


# ---------------------------------------------------------------------------- flattening
def _children(node: Any):
    return node.items() if isinstance(node, dict) else enumerate(node)


def _key_name(key: Any) -> str:
    return str(key) if isinstance(key, (str, int, float)) or key is None else brief(key)


def named_leaves(root: Any, is_leaf: Callable[[Any], bool], where: str,
                 root_name: str) -> dict[str, Any]:
    """The leaves inside nested dicts, lists and tuples by dotted path (``{"a": [x]}`` →
    ``"a.0"``; a leaf at the root is ``root_name``). Only dict values are walked, not keys.

    An unpickled object is a graph: containers may be shared (each is expanded once, then
    its leaves are named under every path that reaches it) or hold themselves (a cycle: a
    RecordError). Nesting past ``max_nesting``, more than ``max_tensors`` names, or names
    longer than ``max_header_bytes`` in all also raise RecordError.
    """
    if is_leaf(root):
        return {root_name: root}
    if not isinstance(root, (dict, list, tuple)):
        return {}
    kept = _kept_entries(root, is_leaf, where)
    bounds = limits.current()
    names: dict[str, Any] = {}
    chars = 0
    todo = [("", iter(kept[id(root)]))]  # depth first, so names come in the file's order
    while todo:
        prefix, entries = todo[-1]
        for key, child in entries:
            name = f"{prefix}.{_key_name(key)}" if prefix else _key_name(key)
            if not is_leaf(child):
                todo.append((name, iter(kept[id(child)])))
                break
            names[name] = child
            chars += len(name)
            if len(names) > bounds.max_tensors or chars > bounds.max_header_bytes:
                limits.check(RecordError, f"{where}: tensor names", len(names), "max_tensors")
                limits.check(RecordError, f"{where}: characters in tensor names", chars,
                             "max_header_bytes")
        else:
            todo.pop()
    return names


def _kept_entries(root: Any, is_leaf: Callable[[Any], bool],
                  where: str) -> dict[int, list[tuple[Any, Any]]]:
    """For every container under ``root`` (by id) that has a leaf somewhere below it: its
    entries that are leaves or such containers. Each container is visited once."""
    max_nesting = limits.current().max_nesting
    kept: dict[int, list[tuple[Any, Any]]] = {}
    height: dict[int, int] = {}  # containers below, counting itself, on the longest path
    # one frame per container on the current path: [container, its entries, kept, height, key]
    path: list[list[Any]] = [[root, iter(_children(root)), [], 1, None]]
    on_path = {id(root)}
    while path:
        frame = path[-1]
        for key, child in frame[1]:
            if is_leaf(child):
                frame[2].append((key, child))
                continue
            if not isinstance(child, (dict, list, tuple)):
                continue
            cid = id(child)
            if cid in on_path:
                raise RecordError(f"{where}: a container holds itself (through key "
                                  f"{brief(key)}): a cycle, which no checkpoint has")
            if cid not in height:
                limits.check(RecordError, f"{where}: container nesting", len(path) + 1,
                             "max_nesting")
                path.append([child, iter(_children(child)), [], 1, key])
                on_path.add(cid)
                break
            _adopt(frame, key, child, height[cid], kept[cid], len(path), where, max_nesting)
        else:
            node, _, entries, h, key = path.pop()
            on_path.discard(id(node))
            height[id(node)], kept[id(node)] = h, entries
            if path:
                _adopt(path[-1], key, node, h, entries, len(path), where, max_nesting)
    return kept


def _adopt(frame: list, key: Any, child: Any, child_height: int, child_kept: list, depth: int,
           where: str, max_nesting: int) -> None:
    """Record a finished ``child`` container in its parent's ``frame``."""
    if depth + child_height > max_nesting:  # a shared container, reached deeper this time
        limits.check(RecordError, f"{where}: container nesting", depth + child_height,
                     "max_nesting")
    frame[3] = max(frame[3], child_height + 1)
    if child_kept:
        frame[2].append((key, child))

