"""The harness itself: every outcome class is recognised, the checksum fixups still match the
formats' current layouts (each flipped byte is caught by the real reader, and accepted again
after the fixup), and a seeded mutator repeats itself."""

from __future__ import annotations

import random
import struct

import pytest

from .formats import mcu_checksum, png_checksum, png_chunks, png_join, record_checksum
from .harness import Worker
from .mutate import Mutator
from .pt import zip_checksum, zip_members
from .targets import SELFTEST, TARGETS


@pytest.mark.parametrize(("command", "status"), [
    (b"ok", "ok"), (b"typed", "typed"), (b"untyped", "untyped"), (b"hang", "timeout"),
    (b"memory", "memory"), (b"crash", "crash"), (b"inject", "injection"), (b"ok", "ok"),
])
def test_outcomes(command, status):
    with Worker(SELFTEST, timeout=1.0) as worker:
        outcome = worker.run(command)
        assert outcome.status == status, outcome
        if status in ("untyped", "timeout", "memory"):  # where it happened, for routing
            assert "load_selftest" in outcome.where, outcome
        assert worker.run(b"ok").status == "ok"  # a bug restarts the worker; it goes on


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]


def _record(seed: bytes) -> bytes:
    return _flip(seed, len(seed) - 2)  # a tensor byte


def _mcu(seed: bytes) -> bytes:
    return _flip(seed, len(seed) - 2)  # a weight byte


def _pt_zip(seed: bytes) -> bytes:
    import io
    import zipfile

    info = next(i for i in zipfile.ZipFile(io.BytesIO(seed)).infolist() if "/data/" in i.filename)
    (n, x) = struct.unpack_from("<HH", seed, info.header_offset + 26)
    return _flip(seed, info.header_offset + 30 + n + x)


def _png(seed: bytes) -> bytes:
    chunks = png_chunks(seed)
    at = next(i for i, (kind, _) in enumerate(chunks) if kind == b"PLTE")
    start = len(png_join(chunks[:at])) + 8
    return _flip(seed, start)  # a palette byte, its CRC left as it was


@pytest.mark.parametrize(("name", "seed", "damage", "fixup"), [
    ("record", "checkpoint", _record, record_checksum), ("mcu", "cnn", _mcu, mcu_checksum),
    ("mcu_micropython", "int8", _mcu, mcu_checksum), ("pt_zip", "views", _pt_zip, zip_checksum),
    ("image", "palette_png", _png, png_checksum),
])
def test_fixup_reaches_past_the_checksum(worker, name, seed, damage, fixup):
    damaged = damage(TARGETS[name].seeds()[seed])
    caught = worker(name).run(damaged)
    assert caught.status == "typed", caught
    assert worker(name).run(fixup(damaged)).status == "ok"


def test_zip_members_reads_what_zipfile_wrote():
    seed = TARGETS["pt_zip"].seeds()["state_dict"]
    assert any(name.endswith("data.pkl") for name, _, _ in zip_members(seed))


def test_mutator_is_deterministic():
    target = TARGETS["safetensors"]
    corpus = target.seeds()
    a, b = (Mutator(corpus, random.Random(7), target.structured, target.fixup) for _ in "ab")
    assert [a() for _ in range(50)] == [b() for _ in range(50)]
