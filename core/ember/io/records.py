"""``ember.save`` / ``ember.load``: modules, optimizers, schedulers and checkpoints on disk.

The file is plain safetensors (any safetensors reader opens the tensors) with Ember's
metadata in the header: format name and version, what was saved, the module's class and
config, the dtype, a JSON tree for non-tensor state and a checksum.

The checksum (``crc32``, 8 hex digits) is a CRC-32 of the whole file — size prefix, header and
data — computed with its own 8 digits written as ``00000000``, so a flipped bit anywhere (a
tensor's dtype in the header as much as its data) fails the load. Version 1 records had a
checksum of the data only; they still load, verified as before. The checksum catches damage,
not tampering: whoever edits a file can recompute it. What keeps a hostile file harmless is
the reader's checks within :mod:`ember.limits`.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import dtype as dt
from ..tensordata import TensorData
from ..errors import RecordError
from .safetensors import SafeTensorsFile, encode, write_parts
from .untrusted import parse_json, reading
from .record_tree import flatten, tensor_keys, unflatten

FORMAT = "ember-record"
"""The ``format`` a record's metadata names (every reader checks it)."""
VERSION = 2
"""The record format version written: 2, the checksum covers the whole file (1: it covered
the tensor data only; both load)."""
_UNSET_CRC = "0" * 8

Remap = Iterable[tuple[str, str]] | Mapping[str, str] | None


@dataclass
class LoadResult:
    """What :func:`load` did to a module: keys left at their values, keys ignored.

    >>> import os, tempfile
    >>> from ember import io, nn
    >>> path = os.path.join(tempfile.mkdtemp(), "linear.emb")
    >>> io.save(nn.Linear(2, 1), path)
    >>> io.load(nn.Linear(2, 1), path)
    LoadResult(missing_keys=[], unexpected_keys=[], loaded_keys=['weight', 'bias'])
    """

    missing_keys: list[str] = field(default_factory=list)
    unexpected_keys: list[str] = field(default_factory=list)
    loaded_keys: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- helpers
def _is_module(obj) -> bool:
    from ..nn.module import Module

    return isinstance(obj, Module)


def _has_state(obj) -> bool:
    return callable(getattr(obj, "state_dict", None)) and callable(
        getattr(obj, "load_state_dict", None)
    )


def _to_state(obj):
    return obj.state_dict() if _has_state(obj) else obj


def _cast(data: TensorData, dtype) -> TensorData:
    if dtype is None or not data.dtype.is_float or data.dtype == dtype:
        return data
    return data.astype(dtype)


def _crc(blobs: Iterable) -> str:
    crc = 0
    for blob in blobs:
        crc = zlib.crc32(blob, crc)
    return f"{crc:08x}"


def _crc_field(value: str) -> bytes:
    """How the checksum appears in the header's JSON (an unescaped quote can only be JSON
    syntax, so this byte string can't occur inside another string)."""
    return b'"crc32":"%s"' % value.encode("ascii")


def _version() -> str:
    from .. import __version__

    return __version__


def _jsonable(value, what: str):
    if value is None:
        return None
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        value = to_dict()
    try:
        json.dumps(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"save: {what} must be JSON-serialisable: {e}") from None
    return value


# ---------------------------------------------------------------------------- save
def save(
    obj: Any,
    path: str | os.PathLike,
    *,
    metadata: Mapping | None = None,
    config: Any = None,
    dtype=None,
) -> None:
    """Save a Module, an Optimizer, a scheduler, or a dict of them (a checkpoint), atomically.

    ``dtype`` (e.g. ``ember.float16``) converts the float tensors on the way out; ``config``
    (an ``nn.Config`` or a JSON-able dict) and ``metadata`` (a JSON-able dict) are stored in
    the header and returned by :func:`read_metadata`.

    >>> import os, tempfile, ember
    >>> from ember import nn
    >>> path = os.path.join(tempfile.mkdtemp(), "net.safetensors")
    >>> net = nn.Linear(3, 2)
    >>> ember.save(net, path)
    >>> twin = nn.Linear(3, 2)
    >>> _ = ember.load(twin, path)
    >>> twin.weight.tolist() == net.weight.tolist()
    True
    """
    dtype = None if dtype is None else dt.as_dtype(dtype)
    info: dict[str, Any] = {"class": type(obj).__name__}
    if config is None and _is_module(obj):
        config = getattr(obj, "config", None)
    if config is not None:
        info["config"] = _jsonable(config, "config")
    if metadata:
        info["user"] = _jsonable(dict(metadata), "metadata")
    if _is_module(obj):
        kind, tree = "module", None
        tensors = {k: _cast(v.to_data(), dtype) for k, v in obj.state_dict().items()}
        floats = sorted({str(t.dtype) for t in tensors.values() if t.dtype.is_float})
        info["dtype"] = floats[0] if len(floats) == 1 else floats
    else:
        kind = "state"
        tree, tensors = flatten(_to_state(obj), _to_state)
        tensors = {k: _cast(v, dtype) for k, v in tensors.items()}
    header = {
        "format": FORMAT,
        "version": str(VERSION),
        "kind": kind,
        "ember": _version(),
        "meta": json.dumps(info),
        "crc32": _UNSET_CRC,
    }
    if tree is not None:
        header["tree"] = json.dumps(tree)
    parts = encode(tensors, metadata=header)
    parts[0] = parts[0].replace(_crc_field(_UNSET_CRC), _crc_field(_crc(parts)), 1)
    write_parts(path, parts)


# ---------------------------------------------------------------------------- reading
class _Record:
    """An opened, checked record (header parsed, checksum verified); tensors read lazily."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            raise RecordError(f"load: {self.path} is a directory, not a record file")
        self.file = SafeTensorsFile(self.path)
        meta = self.file.metadata
        # a damaged "format" value must not turn a record into an unchecked plain file
        self.native = meta.get("format") == FORMAT or {"ember", "crc32"} <= meta.keys()
        self.kind, self.info, self.tree = "module", {}, None
        if self.native:
            self._check_native(meta)

    def _check_native(self, meta: dict[str, str]) -> None:
        where = f"load: {self.path}"
        version = meta.get("version", "0")
        if not re.fullmatch(r"[0-9]{1,6}", version):
            raise RecordError(f"{where}: record version {version!r} is not a number (corrupt)")
        if int(version) > VERSION:
            raise RecordError(
                f"{where} is record version {version}, written by a newer Ember "
                f"({meta.get('ember')}); this Ember reads versions up to {VERSION}"
            )
        if "crc32" in meta:
            self._verify(meta["crc32"], whole_file=int(version) >= 2)
        elif int(version) >= 2:
            raise RecordError(f"{where} has no checksum (corrupt header)")
        self.kind = meta.get("kind", "module")
        if self.kind not in ("module", "state"):
            raise RecordError(f"{where}: unknown record kind {self.kind!r} (corrupt header)")
        self.info = parse_json(meta.get("meta", "{}"), f"{where}: metadata")
        if not isinstance(self.info, dict):
            raise RecordError(f"{where}: metadata is not a JSON object (corrupt header)")
        if self.kind == "state":
            if "tree" not in meta:
                raise RecordError(f"{where} is a state record without its tree (corrupt file)")
            self.tree = parse_json(meta["tree"], f"{where}: state tree")
            absent = [k for k in tensor_keys(self.tree) if k not in self.file]
            if absent:
                raise RecordError(
                    f"{where}: the state tree names tensors the file doesn't hold: "
                    f"{absent[:5]} (corrupt file)"
                )

    def _verify(self, expected: str, whole_file: bool) -> None:
        if not re.fullmatch(r"[0-9a-f]{8}", expected):
            raise RecordError(f"load: {self.path}: checksum {expected!r} is not 8 hex digits")
        with open(self.path, "rb") as f:
            head = f.read(8 + self.file.header_size)
            field = _crc_field(expected)
            if whole_file and head.count(field) != 1:
                raise RecordError(f"load: {self.path}: checksum field is damaged (corrupt file)")
            crc = zlib.crc32(head.replace(field, _crc_field(_UNSET_CRC))) if whole_file else 0
            while chunk := f.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
        if f"{crc:08x}" != expected:
            covered = "file" if whole_file else "tensor data"
            raise RecordError(
                f"load: {self.path} is corrupt: the {covered}'s checksum is {crc:08x}, the "
                f"header says {expected} (the file was damaged after it was written)"
            )

    def shapes(self) -> dict[str, tuple[int, ...]]:
        names = self.file.keys()  # SafeTensorsFile isn't iterable
        return {k: self.file.info(k)[1] for k in names}

    def read(self, key: str, dtype=None) -> TensorData:
        return _cast(self.file.get(key), dtype)

    def state(self, backend=None, dtype=None) -> Any:
        from ..ops.creation import tensor

        values = OrderedDict(
            (k, tensor(_cast(data, dtype), backend=backend)) for k, data in self.file.items()
        )
        return values if self.kind == "module" else unflatten(self.tree, values)


def read_metadata(path: str | os.PathLike) -> dict:
    """The header of a record: ``format``, ``version``, ``kind``, ``class``, ``config``,
    ``dtype``, ``user`` (what ``save(metadata=...)`` stored), ``ember`` and ``keys``.

    >>> import os, tempfile
    >>> from ember import io, nn
    >>> path = os.path.join(tempfile.mkdtemp(), "linear.emb")
    >>> io.save(nn.Linear(2, 1), path)
    >>> meta = io.read_metadata(path)
    >>> meta["format"], meta["kind"], meta["class"], meta["dtype"], meta["keys"]
    ('ember-record', 'module', 'Linear', 'float32', ['weight', 'bias'])
    """
    with reading(f"read_metadata: {os.fspath(path)}"):
        rec = _Record(path)
    meta = rec.file.metadata
    out = {
        "format": meta.get("format"),
        "version": meta.get("version"),
        "kind": rec.kind,
        "ember": meta.get("ember"),
        "keys": rec.file.keys(),
    }
    out.update(rec.info)
    return out


# ---------------------------------------------------------------------------- modules
def _rules(remap: Remap) -> list[tuple[re.Pattern, str]]:
    if remap is None:
        return []
    items = remap.items() if isinstance(remap, Mapping) else remap
    rules = []
    for pattern, repl in items:
        try:
            rules.append((re.compile(pattern), repl))
        except re.error as e:
            raise ValueError(f"load: bad remap pattern {pattern!r}: {e}") from None
    return rules


def _remap_keys(keys: Iterable[str], rules) -> dict[str, str]:
    """``{model key: file key}`` after applying every rule in order to each file key."""
    out: dict[str, str] = {}
    for key in keys:
        new = key
        for pattern, repl in rules:
            new = pattern.sub(repl, new)
        if new in out:
            raise RecordError(f"load: remap sends both {out[new]!r} and {key!r} to {new!r}")
        out[new] = key
    return out


def _plan(module, shapes: Mapping[str, tuple], rules, strict: bool, where: str):
    """Match file keys to module keys; raise one error listing every problem."""
    targets = module.state_dict()
    names = _remap_keys(shapes, rules)
    missing = [k for k in targets if k not in names]
    unexpected = [names[k] for k in names if k not in targets]
    mismatched = [
        f"{k}: file {tuple(shapes[names[k]])} vs model {tuple(targets[k].shape)}"
        for k in targets
        if k in names and tuple(shapes[names[k]]) != tuple(targets[k].shape)
    ]
    if mismatched or (strict and (missing or unexpected)):
        lines = [
            (f"load: {where} doesn't fit {type(module).__name__}{' (strict)' if strict else ''}:")
        ]
        for label, items in (
            ("missing keys", missing if strict else []),
            ("unexpected keys", unexpected if strict else []),
            ("shape mismatches", mismatched),
        ):
            if items and label == "shape mismatches":
                lines.append(f"  {label} ({len(items)}):")
                lines += [f"    {item}" for item in items]
            elif items:
                lines.append(f"  {label} ({len(items)}): {', '.join(items)}")
        lines.append(
            "  (strict=False skips missing/unexpected keys; remap=[(regex, "
            "replacement)] renames file keys; shapes must always match)"
        )
        raise RecordError("\n".join(lines))
    pairs = {k: names[k] for k in targets if k in names}
    return pairs, LoadResult(missing, unexpected, list(pairs))


def _prepare_module(module, read, shapes, rules, strict, where) -> tuple[dict, LoadResult]:
    """Read and convert every tensor the module takes; nothing is assigned yet."""
    from ..ops.creation import tensor

    pairs, result = _plan(module, shapes, rules, strict, where)
    targets = module.state_dict()
    values = {}
    for key, file_key in pairs.items():
        current = targets[key]
        data = read(file_key)
        if data.dtype != current.dtype:
            if data.dtype.is_float != current.dtype.is_float and not current.dtype.is_float:
                raise RecordError(
                    f"load: {where}: {file_key!r} is {data.dtype} but the model's "
                    f"{key!r} is {current.dtype}"
                )
            data = data.astype(current.dtype)
        backend = current.backend.inner or current.backend
        values[key] = tensor(data, backend=backend)
    return values, result


def load(
    target: Any,
    path: str | os.PathLike | None = None,
    *,
    strict: bool = True,
    remap: Remap = None,
    backend=None,
    dtype=None,
) -> Any:
    r"""Load a record.

    * ``load(path)`` → what was saved: a module's ``state_dict`` (name → Tensor) or the
      nested state of an optimizer, scheduler or checkpoint dict (tensors on ``backend``;
      float tensors converted to ``dtype`` when given).
    * ``load(module, path, strict=True, remap=None)`` → :class:`LoadResult`. Every tensor is
      read, converted to the parameter's dtype (f16 ⇄ f32) and checked before any is
      assigned: a corrupt file or a mismatch leaves the module as it was. ``strict=False``
      skips missing and unexpected keys; ``remap`` is a list of ``(regex, replacement)``
      applied in order to each file key (``[(r"^encoder\.", "body.")]``).
    * ``load(optimizer_or_scheduler, path)`` → restores its state.
    * ``load({"model": model, "optim": opt, ...}, path)`` → restores each object from a
      checkpoint saved as ``save({"model": model, "optim": opt, "epoch": 3}, path)`` and
      returns the whole loaded checkpoint (``["epoch"]`` …).

    Whatever is wrong with the file raises :class:`~ember.errors.RecordError` (a bad argument
    raises TypeError or ValueError first).

    >>> import os, tempfile
    >>> from ember import io, nn
    >>> path = os.path.join(tempfile.mkdtemp(), "linear.emb")
    >>> model = nn.Linear(2, 1)
    >>> io.save(model, path)
    >>> state = io.load(path)  # the state dict
    >>> list(state), state["bias"].tolist() == model.bias.tolist()
    (['weight', 'bias'], True)
    >>> io.load(nn.Linear(2, 1), path).loaded_keys  # into a module
    ['weight', 'bias']
    """
    if path is None:
        if not isinstance(target, (str, os.PathLike)):
            raise TypeError("load: pass a path, or an object and a path: load(model, path)")
        target, path = None, target
    elif not (_is_module(target) or isinstance(target, Mapping) or _has_state(target)):
        raise TypeError(f"load: can't load into a {type(target).__name__} (needs load_state_dict)")
    rules = _rules(remap)
    dtype = None if dtype is None else dt.as_dtype(dtype)
    with reading(f"load: {os.fspath(path)}"):
        return _load(target, _Record(path), rules, strict, backend, dtype)


def _load(target: Any, rec: _Record, rules, strict: bool, backend, dtype) -> Any:
    if target is None:
        return rec.state(backend, dtype)
    if _is_module(target):
        if rec.kind != "module":
            raise RecordError(
                f"load: {rec.path} holds a {rec.info.get('class', 'state')} "
                f"state, not a module's weights; load it into that object"
            )
        values, result = _prepare_module(target, rec.read, rec.shapes(), rules, strict, rec.path)
        target.load_state_dict(values, strict=False)
        return result
    if rec.kind == "module":
        raise RecordError(f"load: {rec.path} holds a module's weights; load it into a Module")
    state = rec.state(backend)
    if isinstance(target, Mapping):
        return _load_checkpoint(target, state, rules, strict, rec.path)
    target.load_state_dict(state)
    return target


def _load_checkpoint(targets: Mapping, state: Any, rules, strict: bool, where: str) -> Any:
    if not isinstance(state, dict):
        raise RecordError(f"load: {where} holds a {type(state).__name__}, not a checkpoint dict")
    absent = [k for k in targets if k not in state]
    if absent:
        raise RecordError(f"load: {where} has no entries {absent}; it holds {list(state)}")
    prepared = {}
    for name, obj in targets.items():  # check every module before touching any
        if _is_module(obj):
            sub = state[name]
            shapes = {k: tuple(v.shape) for k, v in sub.items()}
            prepared[name] = _prepare_module(
                obj,
                lambda k, sub=sub: sub[k].to_data(),
                shapes,
                rules,
                strict,
                f"{where}[{name!r}]",
            )
    for name, obj in targets.items():
        if _is_module(obj):
            obj.load_state_dict(prepared[name][0], strict=False)
        elif obj is not None:
            obj.load_state_dict(state[name])
    return state
