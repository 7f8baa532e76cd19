"""Damaged and hostile Ember records: the checksum covers the whole file, and every malformed
header is a RecordError (never a TypeError, KeyError, RecursionError...).

Independent references: the expected checksum is zlib's CRC-32 of the bytes on disk, and
version-1 files are built here by hand the way the previous writer laid them out. Each
reproducer's bytes live in tests/fuzz/regressions/record/, checked against its builder.
"""

import contextlib
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.errors import RecordError
from ember.io import save_file

REGRESSIONS = Path(__file__).parents[1] / "fuzz/regressions/record"


def _linear(tmp_path) -> tuple[nn.Linear, Path]:
    ember.seed(0)
    model = nn.Linear(3, 2)
    path = tmp_path / "linear.safetensors"
    ember.save(model, path)
    return model, path


def _v1(tensors: dict, **meta) -> bytes:
    """A version-1 record as the previous writer laid it out: the CRC covers the data only."""
    from ember.io.safetensors import encode

    data = b"".join(bytes(t.to_data().buffer) for t in tensors.values())
    header = {"format": "ember-record", "version": "1", "kind": "module", "ember": "0.1",
              "meta": "{}", "crc32": f"{zlib.crc32(data):08x}"} | meta
    return b"".join(encode(tensors, metadata=header))


def _record_bytes(**meta) -> bytes:
    """A one-tensor v1 record with ``meta`` overriding its header fields (no checksum)."""
    raw = _v1({"w": ember.zeros(2)}, **meta)
    return raw.replace(b'"crc32":', b'"nocrc":') if "crc32" not in meta else raw


def _metadata_not_an_object() -> bytes:
    raw = json.dumps({"__metadata__": 5,
                      "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(4)


# name → builder; the crash each one caused before the fix is in the comment
REPRODUCERS = {
    # ValueError: invalid literal for int()
    "version_not_a_number": lambda: _record_bytes(version="x"),
    # AttributeError: 'int' object has no attribute 'get'
    "metadata_not_an_object": _metadata_not_an_object,
    # KeyError: ... has no tensor 'nope'
    "tree_names_a_missing_tensor": lambda: _record_bytes(
        kind="state", tree=json.dumps({"a": {"__tensor__": "nope"}, "w": {"__tensor__": "w"}})
    ),
    # TypeError: 'int' object is not iterable
    "tree_tuple_is_a_number": lambda: _record_bytes(
        kind="state", tree=json.dumps({"__tuple__": 5, "w": {"__tensor__": "w"}})
    ),
    # RecursionError in json.loads
    "tree_nested_3000_deep": lambda: _record_bytes(kind="state", tree="[" * 3000 + "]" * 3000),
    # TypeError: 'int' object is not iterable (read_metadata's update)
    "meta_is_a_list": lambda: _record_bytes(meta="[1]"),
    # AttributeError: 'int' object has no attribute 'items' (an optimizer's state)
    "optimizer_state_is_a_number": lambda: _record_bytes(
        kind="state", tree=json.dumps({"state": 5, "param_groups": [{"params": [0, 1]}],
                                       "w": {"__tensor__": "w"}})
    ),
}


@pytest.mark.parametrize("name", list(REPRODUCERS))
def test_reproducer_is_a_record_error(tmp_path, name):
    raw = REPRODUCERS[name]()
    assert (REGRESSIONS / f"{name}.safetensors").read_bytes() == raw
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)
    for read in (ember.load, ember.io.read_metadata):
        with contextlib.suppress(RecordError):  # may succeed: it reads only part of the file
            read(path)
    opt = optim.SGD(nn.Linear(1, 1, backend="autodiff-numpy").parameters(), lr=0.1)
    with pytest.raises(RecordError):
        ember.load(opt, path)


def test_header_bit_flip_f32_to_i32_fails_the_checksum(tmp_path):
    model, path = _linear(tmp_path)
    raw = path.read_bytes()
    assert raw.count(b'"F32"') == 2
    flipped = raw.replace(b'"F32"', b'"I32"', 1)  # the weight's dtype: 4 bits flipped
    assert sum(bin(a ^ b).count("1") for a, b in zip(raw, flipped)) == 4
    bad = tmp_path / "flipped.safetensors"
    bad.write_bytes(flipped)
    target = nn.Linear(3, 2)
    before = target.weight.tolist()
    with pytest.raises(RecordError, match="checksum"):
        ember.load(target, bad, strict=True)
    assert target.weight.tolist() == before


def test_stored_header_flip_reproducer_fails_the_checksum():
    """The fuzz corpus copy of the flip above (a version-2 file, so not byte-compared: the
    header names the Ember version that wrote it)."""
    with pytest.raises(RecordError, match="checksum"):
        ember.load(nn.Linear(3, 2), REGRESSIONS / "header_flip_f32_to_i32.safetensors")


def test_checksum_is_the_crc32_of_the_whole_file(tmp_path):
    _, path = _linear(tmp_path)
    raw = path.read_bytes()
    stored = ember.io.SafeTensorsFile(path).metadata["crc32"]
    field = f'"crc32":"{stored}"'.encode()
    assert zlib.crc32(raw.replace(field, b'"crc32":"00000000"')) == int(stored, 16)
    assert ember.io.read_metadata(path)["version"] == "2"


@pytest.mark.parametrize("edit", [
    (b'"ember-record"', b'"ember-recorf"'),  # the format name: still recognised, and caught
    (b'"version":"2"', b'"version":"0"'),  # a downgrade to the data-only check
    (b'"kind":"module"', b'"kind":"modulf"'),
])
def test_any_header_flip_is_caught(tmp_path, edit):
    _, path = _linear(tmp_path)
    raw = path.read_bytes()
    assert raw.count(edit[0]) == 1
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(raw.replace(*edit))
    with pytest.raises(RecordError, match="checksum|corrupt"):
        ember.load(nn.Linear(3, 2), bad)


def test_version_1_records_still_load_and_check_their_data(tmp_path):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensors = {"weight": ember.tensor(values), "bias": ember.tensor([0.5, -0.5])}
    path = tmp_path / "v1.safetensors"
    path.write_bytes(_v1(tensors))
    model = nn.Linear(3, 2)
    ember.load(model, path)
    np.testing.assert_array_equal(model.weight.numpy(), values)
    raw = path.read_bytes()
    path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    with pytest.raises(RecordError, match="tensor data's checksum"):
        ember.load(model, path)


def test_many_tensors_are_bounded_by_max_tensors(tmp_path):
    path = tmp_path / "many.safetensors"
    ember.save({f"t{i}": ember.zeros(1) for i in range(11)}, path)
    assert len(ember.load(path)) == 11
    with ember.limits.override(max_tensors=10), pytest.raises(RecordError, match="max_tensors"):
        ember.load(path)


def test_unknown_kind_and_plain_files(tmp_path):
    plain = tmp_path / "plain.safetensors"
    save_file({"w": ember.ones(2)}, plain, metadata={"format": "something-else"})
    assert ember.load(plain)["w"].tolist() == [1.0, 1.0]  # plain safetensors: no checksum
    odd = tmp_path / "odd.safetensors"
    odd.write_bytes(_record_bytes(kind="weights"))
    with pytest.raises(RecordError, match="unknown record kind 'weights'"):
        ember.load(odd)


def test_checksum_text_inside_user_metadata_is_only_text(tmp_path):
    path = tmp_path / "m.safetensors"
    note = {"crc32": "00000000", "quoted": '"crc32":"00000000"'}
    ember.save(nn.Linear(2, 1), path, metadata=note)
    assert ember.io.read_metadata(path)["user"] == note
    assert len(ember.load(path)) == 2
