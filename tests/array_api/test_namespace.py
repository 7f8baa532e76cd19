"""The namespace has every name of the 2024.12 standard, and the array object the
attributes, methods and operator behaviour the standard lists."""

import math

import numpy as np
import pytest

import ember
import ember.array_api as xp
from array_api_spec import ARRAY_ATTRIBUTES, ARRAY_METHODS, LINALG, NAMES
from array_api_support import to_ember


@pytest.mark.parametrize("name", NAMES)
def test_namespace_has(name):
    assert hasattr(xp, name), f"ember.array_api lacks {name}"


@pytest.mark.parametrize("name", LINALG)
def test_linalg_extension_has(name):
    assert callable(getattr(xp.linalg, name, None)), f"ember.array_api.linalg lacks {name}"


def test_version_and_namespace_of_an_array(device):
    x = xp.asarray([1.0], device=device)
    assert xp.__array_api_version__ == "2024.12"
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")


def test_constants():
    assert xp.e == math.e and xp.pi == math.pi and math.isinf(xp.inf) and math.isnan(xp.nan)
    assert xp.newaxis is None


@pytest.mark.parametrize("name", ARRAY_ATTRIBUTES)
def test_array_attribute(device, name):
    x = xp.ones((2, 3), device=device)
    expected = {"dtype": xp.float32, "ndim": 2, "shape": (2, 3), "size": 6}
    value = getattr(x, name)
    if name in expected:
        assert value == expected[name]
    elif name in ("T", "mT"):
        assert value.shape == (3, 2)
    else:
        assert xp.asarray([1], device=value).device == x.device


@pytest.mark.parametrize("name", ARRAY_METHODS)
def test_array_method(name):
    assert callable(getattr(ember.Tensor, name, None)), f"the array object lacks {name}"


def test_python_scalar_conversions(device):
    assert bool(xp.asarray(True, device=device)) is True
    assert int(xp.asarray(7, device=device)) == 7
    assert float(xp.asarray(2.5, device=device)) == 2.5
    assert [10, 20, 30][xp.asarray(1, device=device)] == 20
    assert complex(xp.asarray(1.5, device=device)) == 1.5 + 0j


def test_arithmetic_operators_follow_the_functions(device):
    a = np.array([[1.5, -2.0], [0.0, 4.0]], dtype=np.float32)
    x = to_ember(a, device)
    pairs = [(x + 1, a + 1), (2 - x, 2 - a), (x * x, a * a), (x / 2, a / 2), (-x, -a),
             (x ** 2, a ** 2), (x // 1.5, a // 1.5), (x % 1.5, a % 1.5), (abs(x), abs(a)),
             (x @ x, a @ a), (x < 1, a < 1), (x == x, a == a)]
    for got, want in pairs:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_bitwise_operators_on_integers(device):
    a = np.array([6, 5, -3], dtype=np.int32)
    x = to_ember(a, device)
    for got, want in [(x & 3, a & 3), (x | 8, a | 8), (x ^ x, a ^ a), (~x, ~a)]:
        assert np.asarray(got).tolist() == want.tolist()


def test_shift_operators(device):
    a = np.array([1, 2, 40], dtype=np.int64)
    x = to_ember(a, device)
    assert np.asarray(x << 2).tolist() == (a << 2).tolist()
    assert np.asarray(x >> 1).tolist() == (a >> 1).tolist()


def test_setitem_and_getitem(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = to_ember(a, device)
    x[1, ::2] = -1.0
    a[1, ::2] = -1.0
    x[x > 9] = 0.0
    a[a > 9] = 0.0
    assert np.asarray(x).tolist() == a.tolist()
    assert np.asarray(x[..., None, 1:3]).shape == a[..., None, 1:3].shape
    assert np.asarray(x[xp.asarray([2, 0], device=device)]).tolist() == a[[2, 0]].tolist()


def test_to_device_moves_between_backends(device):
    x = xp.asarray([1, 2, 3], device=device)
    other = "python" if device == "numpy" else "numpy"
    y = x.to_device(other)
    assert y.backend.name == other and y.tolist() == [1, 2, 3]


def test_inspection(device):
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["boolean indexing"] and caps["data-dependent shapes"]
    assert xp.asarray(1, device=device).device in info.devices()
    assert info.default_device() in info.devices()
    defaults = info.default_dtypes(device=device)
    assert defaults["real floating"] == xp.asarray(1.0, device=device).dtype
    assert defaults["integral"] == xp.asarray(1, device=device).dtype
    assert defaults["indexing"] == xp.argmax(xp.asarray([1, 2], device=device)).dtype
    held = ember.get_backend(device).caps.dtypes
    assert set(info.dtypes(device=device, kind="integral")) == {d.name for d in held if d.is_int}
    if device in ("numpy", "python"):  # the hosts hold every integer dtype of the standard
        assert len(info.dtypes(device=device, kind="integral")) == 8
    assert info.dtypes(device=device, kind="real floating") == {
        d.name: d for d in (xp.float32, xp.float64) if d in held}


def test_devices_round_trip_and_keep_arrays_on_their_backend(device):
    x = xp.asarray([1.0, 2.0], device=device)
    other = "python" if device == "numpy" else "numpy"
    with ember.use_backend(other):  # array-agnostic code's device=x.device beats the default
        made = [xp.zeros(2, device=x.device), xp.asarray([3.0], device=x.device),
                xp.arange(2, device=x.device), xp.full((1,), 2, device=x.device),
                x.to_device(x.device), xp.astype(x, xp.int32, device=x.device)]
    assert all(m.backend is x.backend and m.device == x.device for m in made)
    assert x.device != xp.asarray([1.0], device=other).device
    assert ember.tensor([1.0], backend=other).to(x.device).backend is x.backend
    for d in xp.__array_namespace_info__().devices():
        assert xp.zeros(1, device=d).device == d


def test_devices_lists_only_backends_that_can_be_made():
    """Without wgpu-py the wgpu backend can't be made: devices() leaves it out."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['wgpu'] = None\n"
            "import ember.array_api as xp\n"
            "print(' '.join(str(d) for d in xp.__array_namespace_info__().devices()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    names = out.stdout.split()
    assert "wgpu" not in names and {"numpy", "python"} <= set(names), names


def test_array_api_compat_recognises_ember_arrays(device):
    compat = pytest.importorskip("array_api_compat")
    x = xp.asarray([1.0, 2.0], device=device)
    assert compat.array_namespace(x) is xp
    assert compat.is_array_api_obj(x)
    assert compat.size(x) == 2
