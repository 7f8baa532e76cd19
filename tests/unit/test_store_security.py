"""Hostile safetensors headers: every one is a RecordError, within ember.limits, never a crash.

The reference ``safetensors`` package is the oracle: each file rejected here is rejected by
it too, and files it writes (in any entry order) still load. Each reproducer's bytes live in
tests/fuzz/regressions/safetensors/ (the fuzz harness replays them); a test checks that the
stored file is exactly what its builder here produces.
"""

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.errors import RecordError
from ember.io import SafeTensorsFile, load_file, load_weights, save_file
from ember.io.untrusted import nesting_depth, parse_json

safetensors_numpy = pytest.importorskip("safetensors.numpy")

REGRESSIONS = Path(__file__).parents[1] / "fuzz/regressions/safetensors"


def _file(header, data: bytes = b"") -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def _f32(name="w", shape=(1,), offsets=(0, 4), **extra) -> dict:
    return {name: {"dtype": "F32", "shape": list(shape), "data_offsets": list(offsets), **extra}}


def _header_one_byte_short() -> bytes:
    """A valid [1, 2, 3] file whose header size is one less than it should be: the JSON still
    parses (the padding space drops off) and the tensor was read one byte off, as garbage."""
    raw = _file(b'{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}} ',
                struct.pack("<3f", 1.0, 2.0, 3.0))
    (n,) = struct.unpack("<Q", raw[:8])
    return struct.pack("<Q", n - 1) + raw[8:]


# name → builder; the crash each one caused before the fix is in the comment
REPRODUCERS = {
    # TypeError: unhashable type: 'list'
    "dtype_is_a_list": lambda: _file(_f32() | {"w": {**_f32()["w"], "dtype": ["F32"]}}, bytes(4)),
    # RecursionError in json.loads
    "nested_3000_deep": lambda: _file(b"[" * 3000 + b"]" * 3000),
    # ValueError: exceeds the limit (4300 digits) for integer string conversion
    "int_with_5000_digits": lambda: _file(
        b'{"w":{"dtype":"F32","shape":[' + b"1" * 5000 + b'],"data_offsets":[0,4]}}', bytes(4)
    ),
    # loaded garbage instead of [1, 2, 3]
    "header_size_one_byte_short": _header_one_byte_short,
    # accepted: two tensors on the same bytes
    "overlapping_tensors": lambda: _file(_f32("a") | _f32("b"), bytes(4)),
    # accepted: 4 bytes nobody owns between two tensors
    "gap_between_tensors": lambda: _file(_f32("a") | _f32("b", offsets=(8, 12)), bytes(12)),
    # accepted: True counted as the int 1
    "bool_in_shape": lambda: _file(_f32(shape=[True]), bytes(4)),
    # AttributeError later (records call .get on it)
    "metadata_is_a_list": lambda: _file({"__metadata__": ["x"]} | _f32(), bytes(4)),
}


@pytest.mark.parametrize("name", list(REPRODUCERS))
def test_reproducer_is_a_record_error_like_in_the_reference(tmp_path, name):
    raw = REPRODUCERS[name]()
    assert (REGRESSIONS / f"{name}.safetensors").read_bytes() == raw
    with pytest.raises(Exception):  # noqa: B017 - any error: the reference is only an oracle
        safetensors_numpy.load(raw)
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)
    with pytest.raises(RecordError):
        SafeTensorsFile(path)
    with pytest.raises(RecordError):
        load_weights(nn.Linear(1, 1), path)


def test_errors_name_the_problem_and_the_limit(tmp_path):
    cases = {
        "nested_3000_deep": "nesting depth: 3000 exceeds the limit max_nesting=200",
        "int_with_5000_digits": "5000 exceeds the limit max_int_digits=100",
        "header_size_one_byte_short": "cover 12 bytes but the data section has 13",
        "overlapping_tensors": "'b' starts at byte 0 .* byte 4 was expected",
        "dtype_is_a_list": r"unsupported dtype \['F32'\]",
    }
    for name, message in cases.items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(REPRODUCERS[name]())
        with pytest.raises(RecordError, match=message):
            SafeTensorsFile(path)


def test_tensor_count_is_bounded_before_the_entries_are_checked(tmp_path):
    header = {}
    for i in range(11):
        header |= _f32(f"t{i}", offsets=(4 * i, 4 * i + 4))
    path = tmp_path / "many.safetensors"
    path.write_bytes(_file(header, bytes(44)))
    assert len(SafeTensorsFile(path).keys()) == 11
    with ember.limits.override(max_tensors=10), pytest.raises(RecordError, match="max_tensors"):
        SafeTensorsFile(path)


def test_header_and_tensor_sizes_are_bounded(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file({"w": ember.ones(4, 4)}, path)
    with ember.limits.override(max_header_bytes=16), pytest.raises(RecordError,
                                                                   match="max_header_bytes"):
        SafeTensorsFile(path)
    f = SafeTensorsFile(path)
    with ember.limits.override(max_tensor_bytes=63), pytest.raises(RecordError,
                                                                   match="max_tensor_bytes"):
        f.get("w")


def test_reference_files_in_any_entry_order_still_load(tmp_path):
    arrays = {"z": np.arange(3, dtype=np.float32), "a": np.zeros((0, 2), dtype=np.float32),
              "m": np.array([[1, 2]], dtype=np.int64), "e": np.zeros(0, dtype=np.uint8)}
    path = tmp_path / "ref.safetensors"
    safetensors_numpy.save_file(arrays, str(path))
    # the same file with its JSON entries reversed: layout is by offsets, not entry order
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    flipped = json.dumps(dict(reversed(header.items())), separators=(",", ":")).encode()
    assert len(flipped) <= n
    flipped = flipped.ljust(n)
    (tmp_path / "flipped.safetensors").write_bytes(raw[:8] + flipped + raw[8 + n:])
    for name in ("ref", "flipped"):
        got = load_file(tmp_path / f"{name}.safetensors")
        for k, v in arrays.items():
            assert got[k].numpy().shape == v.shape and np.array_equal(got[k].numpy(), v)


def test_nesting_depth_ignores_brackets_inside_strings():
    assert nesting_depth(b'{"a": "[[[{{{\\"]]"}') == 1
    assert nesting_depth(b'[[1], [[2]]]') == 3
    assert nesting_depth(b'"unterminated [[[') == 0
    assert parse_json(b'{"k": ["}}}", 1]}', "test") == {"k": ["}}}", 1]}
    # a 100,000-deep document inside a string is only a string
    assert parse_json(json.dumps("[" * 100_000).encode(), "test") == "[" * 100_000
