"""Decoded image size is bounded against the file's size, not by pixels alone (issue 33): a
7,840-byte 8000×8000 1-bit PNG (under the 64 M pixel limit) asked ``load_image`` for 1.8 GB."""

from __future__ import annotations

import struct
import zlib

import pytest

pytest.importorskip("PIL")

import ember
from ember.dataset import load_image
from ember.demos.classify import load_image as classify_load_image
from ember.errors import DatasetError


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def one_bit_png(width: int, height: int) -> bytes:
    """A valid all-black 1-bit greyscale PNG, written by hand (no 64 MB canvas needed)."""
    row = b"\x00" + bytes((width + 7) // 8)  # filter byte + packed bits
    pixels = zlib.compress(row * height, 9)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0,
                                                               0, 0, 0))
            + _chunk(b"IDAT", pixels) + _chunk(b"IEND", b""))


def test_a_small_file_declaring_a_huge_flat_image_is_refused_before_decoding(tmp_path):
    path = tmp_path / "flat.png"
    path.write_bytes(one_bit_png(8000, 8000))
    assert len(path.read_bytes()) < 10_000  # 64 M pixels: under max_image_pixels
    with pytest.raises(DatasetError, match=r"8000×8000 RGB image decodes to 768000000 bytes "
                                           r"from a file of \d+: more than max_image_ratio=1024"):
        load_image(path)
    with pytest.raises(DatasetError, match="decodes to 192000000 bytes"):
        classify_load_image(path)  # uint8 RGB before its 224×224 crop


def test_real_images_and_small_flat_ones_still_load(tmp_path):
    from PIL import Image

    flat = tmp_path / "flat.png"
    flat.write_bytes(one_bit_png(1000, 1000))  # 12 MB of float32: under the 64 MiB any may use
    assert load_image(flat).shape == (3, 1000, 1000)
    noise = tmp_path / "noise.png"
    Image.effect_noise((300, 200), 60).convert("RGB").save(noise)
    img = load_image(noise, mode="L")
    assert img.shape == (1, 200, 300)
    with ember.limits.override(max_image_ratio=1):  # the ratio applies past 64 MiB only
        assert load_image(noise).shape == (3, 200, 300)


def test_the_absolute_bound_is_max_expansion_bytes(tmp_path):
    path = tmp_path / "flat.png"
    path.write_bytes(one_bit_png(1000, 1000))
    with ember.limits.override(max_expansion_bytes=1_000_000):
        with pytest.raises(DatasetError, match="decoded bytes: 12000000 exceeds the limit "
                                               "max_expansion_bytes=1000000"):
            load_image(path)
