"""Array-agnostic libraries accept Ember arrays: scikit-learn estimators and functions with
``array_api_dispatch=True`` and SciPy functions (SCIPY_ARRAY_API=1) return Ember arrays on
the backend of their input, equal to what they return for numpy arrays — on every host
backend, whether it is the default backend or not (arrays the libraries make with
``device=x.device`` must stay on ``x``'s backend; 0-d ones SciPy makes without ``device=``
join them by Ember's 0-d host tensor rule)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember

CHECK = Path(__file__).with_name("_library_check.py")


# (the arrays' backend, the default backend)
RUNS = [(b, default) for b in ("numpy", "python", "wasm")
        for default in (b, "python" if b == "numpy" else "numpy")]


@pytest.fixture(scope="module", params=RUNS, ids=[f"{b}-default-{d}" for b, d in RUNS])
def report(request):
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    device, default = request.param
    if device not in ember.available_backends():
        pytest.skip(f"{device} backend not available here")
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    done = subprocess.run([sys.executable, str(CHECK), device, default], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return device, default, json.loads(done.stdout.strip().splitlines()[-1])


NAMES = [
    "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "Normalizer", "PCA",
    "LinearDiscriminantAnalysis", "Ridge(svd)", "euclidean_distances", "cosine_similarity",
    "rbf_kernel", "r2_score", "mean_squared_error", "accuracy_score",
    "scipy.special.logsumexp", "scipy.special.softmax", "scipy.stats.zscore",
    "scipy.stats.skew", "scipy.stats.kurtosis", "scipy.stats.moment", "scipy.stats.pearsonr",
    "scipy.stats.pearsonr(pvalue)", "scipy.cluster.vq.whiten",
]
SCALARS = {"r2_score", "mean_squared_error", "accuracy_score"}  # Python floats by design
# accuracy_score averages int labels in the namespace's default float dtype, float32 here
TOLERANCE = {"accuracy_score": 1e-6}


@pytest.mark.parametrize("name", NAMES)
def test_library_function_on_ember_arrays(report, name):
    device, default, results = report
    r = results[name]
    assert "error" not in r, r.get("error")
    if name not in SCALARS:
        assert r["ember"] and r["backend"] == device, r
    assert r["max_abs_diff"] < TOLERANCE.get(name, 1e-9), r
