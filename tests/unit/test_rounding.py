"""The one rounding of quantization (``ember.contract.rounding``), bit for bit in every
language: the Python scalar, backend-primitive and numpy forms, the C of the wasm kernels
(``qt_round4``, under wasmtime), the WGSL of the wgpu kernels (``round_code``, on lavapipe)
and MicroPython's copy (``ember_micro._chain.round_code``, on a real MicroPython), all on the
same float32 inputs — ties, the floats beside them, -0.0, denormals, NaN, ±inf, values beyond
the clamp — against numpy float64 (where ``floor(|v| + 0.5)`` of a float32 is exact)."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

import ember  # noqa: E402
from ember.contract.rounding import round_code, round_codes, round_codes_np  # noqa: E402
from ember.export import embedded_dir  # noqa: E402
from ember.quantize.functional import qlinear  # noqa: E402

RANGES = ((-127, 127), (0, 255), (-5, 6))
F32 = np.float32


def _values() -> np.ndarray:
    below = lambda v: np.nextafter(F32(v), F32(0))  # noqa: E731
    above = lambda v: np.nextafter(F32(v), F32(np.inf))  # noqa: E731
    edges = [0.5, 1.5, 2.5, 5.5, 6.5, 126.5, 127.5, 254.5, 255.5, below(0.5), above(0.5),
             below(1.5), above(1.5), below(2.5), below(126.5), above(126.5), below(255.5),
             0.25, 0.75, 1.0, 127.0, 128.0, 200.0, 256.0, 300.0, 8388609.0, 1e30,
             float(np.finfo(F32).max), 1e-45, 1e-38, np.inf]
    signed = [s * float(v) for v in edges for s in (1.0, -1.0)]
    rng = np.random.default_rng(37)
    noise = rng.uniform(-300.0, 300.0, 24).tolist() + rng.uniform(-3.0, 3.0, 24).tolist()
    return np.array(signed + [0.0, -0.0, np.nan] + noise, dtype=F32)


VALUES = _values()


def _reference(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """numpy float64: exact for float32 inputs (|v| + 0.5 needs at most 53 bits, or rounds
    below 1 for the tiniest); NaN is code 0."""
    w = v.astype(np.float64)
    with np.errstate(invalid="ignore"):
        r = np.clip(np.sign(w) * np.floor(np.abs(w) + 0.5), lo, hi)
    return np.where(np.isnan(w), 0.0, r).astype(np.int64)


def _check(got, lo, hi, where, values=VALUES):
    want = _reference(values, lo, hi)
    got = np.asarray(got, dtype=np.int64).reshape(-1)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{where} [{lo}, {hi}]: " + ", ".join(
        f"{values[i]!r} -> {got[i]} (want {want[i]})" for i in bad[:8]))


def test_reference_sees_the_float32_shortcut_fail():
    """The inputs can tell the rule from ``floor(|v| + 0.5)`` in float32 (the test can fail)."""
    v = np.nextafter(F32(0.5), F32(0))
    assert np.floor(np.abs(v) + F32(0.5)) == 1.0
    assert _reference(np.array([v]), -127, 127)[0] == 0


@pytest.mark.parametrize(("lo", "hi"), RANGES)
def test_python_forms(lo, hi):
    _check([round_code(float(v), lo, hi) for v in VALUES], lo, hi, "round_code")
    for dtype in (np.float32, np.float64, np.float16):
        small = VALUES[np.abs(VALUES.astype(np.float64)) < 6e4] if dtype is np.float16 else VALUES
        _check(round_codes_np(small.astype(dtype), lo, hi), lo, hi, f"round_codes_np {dtype}",
               small.astype(dtype).astype(F32))
    b = ember.get_backend("python")
    p = b.from_data(ember.tensor(VALUES).to_data())
    _check(b.to_data(round_codes(b, p, lo, hi)).to_numpy(), lo, hi, "round_codes (python)")


def _backend(name):
    if name == "wasm":
        pytest.importorskip("wasmtime")
    if name == "wgpu":
        pytest.importorskip("wgpu")
    try:
        ember.get_backend(name)
    except Exception as e:  # noqa: BLE001 - no wasm module / no adapter: say which
        pytest.skip(f"{name} backend unavailable: {e}")
    return name


def _input_codes(values, backend, unsigned):
    """``qlinear`` of ``values`` (n, 1) by the weight [[1]] at scales 1: y = code(v)."""
    t = lambda a: ember.tensor(np.asarray(a), backend=backend)  # noqa: E731
    one = t(np.ones(1, F32))
    y = qlinear(t(values.reshape(-1, 1)), t(np.ones((1, 1), np.int8)), one, None, one,
                unsigned=unsigned)
    return y.numpy()


def _output_codes(values, backend, lo, hi):
    """``qlinear`` with codes out: zero input codes, so ``v = acc * m + c`` is the bias
    ``values`` at out_scale 1."""
    t = lambda a: ember.tensor(np.asarray(a), backend=backend)  # noqa: E731
    n = values.size
    one = t(np.ones(1, F32))
    y = qlinear(t(np.zeros((1, 3), np.int8)), t(np.zeros((n, 3), np.int8)), t(np.ones(n, F32)),
                t(values), one, out_scale=one, out_range=(lo, hi))
    assert y.dtype.name == ("uint8" if lo >= 0 else "int8")
    return y.numpy()


@pytest.mark.parametrize("name", ["numpy", "python", "wasm", "wgpu"])
def test_kernels(name):
    """Each backend's quantizing input reads (signed, unsigned) and requantizing outputs:
    all values at once (the SIMD lanes), and one at a time (the scalar tails)."""
    backend = _backend(name)
    single = name == "wasm"  # its kernels' scalar tails: a value alone never reaches SIMD
    for values in [VALUES] + ([VALUES[i:i + 1] for i in range(VALUES.size)] if single else []):
        for unsigned, (lo, hi) in ((False, (-127, 127)), (True, (0, 255))):
            _check(_input_codes(values, backend, unsigned), lo, hi, f"{name} input", values)
        for lo, hi in RANGES:
            _check(_output_codes(values, backend, lo, hi), lo, hi, f"{name} output", values)


MICRO = """
import struct, sys
sys.path.insert(0, {path!r})
from ember_micro._chain import round_code
data = {data!r}
out = []
for lo, hi in {ranges!r}:
    for i in range(0, len(data), 4):
        out.append(round_code(struct.unpack('<f', data[i:i + 4])[0], lo, hi))
print(' '.join(str(q) for q in out))
"""

# each kernel tier's quantize (int8 codes of x * inv_scale, clamped to +-127) on the same values
KERNELS = """
import struct, sys
sys.path.insert(0, {path!r})
sys.path.insert(0, {native!r})
from array import array
from ember_micro import kernels
data = {data!r}
x = array('f', [struct.unpack('<f', data[i:i + 4])[0] for i in range(0, len(data), 4)])
for tier in ('pure', 'native'):
    try:
        k = kernels.get(tier)
    except ImportError:
        continue
    q = array('b', bytes(len(x)))
    k.quantize(q, x, len(x), 1.0)
    print(tier, ' '.join(str(v) for v in q))
"""


def _micropythons() -> list[Path]:
    """The project's build (embedded/build_micropython.sh) and the shared ulab builds with
    single- and double-precision floats, where present."""
    shared = Path(__file__).resolve().parents[3] / "shared" / "ulab"
    found = [embedded_dir() / "build" / "micropython", shared / "micropython-ulab-2d-f32",
             shared / "micropython-ulab-2d-f64"]
    return [p for p in found if p.is_file()]


@pytest.mark.parametrize("exe", _micropythons() or [None], ids=lambda p: p and p.name)
def test_micropython_copy(exe, tmp_path):
    """ember_micro can't import ember: its copy of the rule, on a real MicroPython."""
    if exe is None:
        pytest.skip("no MicroPython binary: run embedded/build_micropython.sh")
    data = b"".join(struct.pack("<f", v) for v in VALUES.tolist())
    script = tmp_path / "rounding.py"
    script.write_text(MICRO.format(path=str(embedded_dir()), data=data, ranges=RANGES))
    proc = subprocess.run([str(exe), str(script)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    codes = [int(q) for q in proc.stdout.split()]
    n = VALUES.size
    for k, (lo, hi) in enumerate(RANGES):
        _check(codes[k * n:(k + 1) * n], lo, hi, f"MicroPython {exe.name}")


def test_micropython_kernel_tiers():
    """ember_micro's quantize on the pure tier (Python, through the copy above) and the native
    tier (C, embedded/native/ember_kernels.c) of the project's MicroPython build."""
    exe = embedded_dir() / "build" / "micropython"
    if not exe.is_file():
        pytest.skip("no MicroPython binary: run embedded/build_micropython.sh")
    import tempfile

    data = b"".join(struct.pack("<f", v) for v in VALUES.tolist())
    native = embedded_dir() / "build" / "native" / "x64"
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "kernels.py"
        script.write_text(KERNELS.format(path=str(embedded_dir()), native=str(native),
                                         data=data))
        proc = subprocess.run([str(exe), str(script)], capture_output=True, text=True,
                              timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    tiers = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert set(tiers) == {"pure", "native"}, proc.stdout[:200]  # both tiers ran
    for tier, codes in tiers.items():
        _check([int(q) for q in codes.split()], -127, 127, f"ember_micro {tier} quantize")
