"""embedded/native/fdiv_pic.c (the armv6m modules' float division) bit for bit against the
host's IEEE division (numpy float32): compiled for the host with gcc, called through ctypes, on
random bit patterns (every exponent, subnormals, NaN, infinities) and on hand-picked edges."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from ember.export import embedded_dir

HARNESS = r"""
#include <stdint.h>
float __aeabi_fdiv(float a, float b);
void fdiv_many(const float *a, const float *b, float *out, int n) {
    for (int i = 0; i < n; i++) out[i] = __aeabi_fdiv(a[i], b[i]);
}
"""


@pytest.fixture(scope="module")
def fdiv(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.fail("gcc missing (build-essential, installed by embedded/setup.sh)")
    d = tmp_path_factory.mktemp("fdiv")
    (d / "h.c").write_text(HARNESS)
    lib = d / "libfdiv.so"
    # the file uses integers only, so the host computes exactly what a Cortex-M0 would
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-fno-builtin", "-o", str(lib),
                    str(embedded_dir() / "native" / "fdiv_pic.c"), str(d / "h.c")], check=True)
    so = ctypes.CDLL(str(lib))
    ptr = ctypes.POINTER(ctypes.c_float)

    def run(a, b):
        a = np.ascontiguousarray(a, dtype=np.float32)
        b = np.ascontiguousarray(b, dtype=np.float32)
        out = np.empty_like(a)
        so.fdiv_many(a.ctypes.data_as(ptr), b.ctypes.data_as(ptr), out.ctypes.data_as(ptr),
                     len(a))
        return out

    return run


def _same(got, want):
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    g, w = got.view(np.uint32)[~nan], want.view(np.uint32)[~nan]
    bad = np.flatnonzero(g != w)
    assert bad.size == 0, f"{bad.size} mismatches, first: got {g[bad[0]]:#x} want {w[bad[0]]:#x}"


def test_random_bit_patterns(fdiv):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, 400_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    b = rng.integers(0, 2**32, 400_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        _same(fdiv(a, b), a / b)


def test_ordinary_values_and_edges(fdiv):
    rng = np.random.default_rng(1)
    with np.errstate(over="ignore"):  # the widest exponents overflow float32 on purpose
        a = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-40, 39, 200_000)).astype(
            np.float32)
        b = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-40, 39, 200_000)).astype(
            np.float32)
    edges = np.array([0.0, -0.0, 1.0, -1.0, 3.0, 6.0, np.inf, -np.inf, np.nan, 1e-45, 1.1754942e-38,
                      1.1754944e-38, 3.4028235e38, 2.0 ** -126, 2.0 ** -149, 0.1, 1 / 3],
                     dtype=np.float32)
    ea, eb = np.meshgrid(edges, edges)
    a = np.concatenate([a, ea.ravel()])
    b = np.concatenate([b, eb.ravel()])
    with np.errstate(all="ignore"):
        _same(fdiv(a, b), a / b)
