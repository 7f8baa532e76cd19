"""Run array-agnostic library code on Ember arrays of one backend, with another (or the same)
backend as the default, and on numpy arrays; print the results' differences as JSON. A
separate process: SciPy reads SCIPY_ARRAY_API at import, and scikit-learn's array API dispatch
needs it set.

    SCIPY_ARRAY_API=1 python tests/array_api/_library_check.py python numpy
"""

import json
import sys

import numpy as np
import scipy.cluster.vq
import scipy.special
import scipy.stats
import sklearn
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score
from sklearn.metrics.pairwise import cosine_similarity, euclidean_distances, rbf_kernel
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, Normalizer, StandardScaler

import ember
import ember.array_api as xp

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 4))
y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
target = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=30)

CASES = {
    "StandardScaler": lambda X, y, t: StandardScaler().fit_transform(X),
    "MinMaxScaler": lambda X, y, t: MinMaxScaler().fit_transform(X),
    "MaxAbsScaler": lambda X, y, t: MaxAbsScaler().fit_transform(X),
    "Normalizer": lambda X, y, t: Normalizer().fit_transform(X),
    # component signs are arbitrary: compare magnitudes
    "PCA": lambda X, y, t: abs(PCA(n_components=2, svd_solver="full").fit_transform(X)),
    "LinearDiscriminantAnalysis": lambda X, y, t: LinearDiscriminantAnalysis().fit(X, y)
    .predict_proba(X),
    "Ridge(svd)": lambda X, y, t: Ridge(alpha=0.5, solver="svd").fit(X, t).coef_,
    "euclidean_distances": lambda X, y, t: euclidean_distances(X),
    "cosine_similarity": lambda X, y, t: cosine_similarity(X),
    "rbf_kernel": lambda X, y, t: rbf_kernel(X, gamma=0.3),
    "r2_score": lambda X, y, t: r2_score(t, X[:, 0]),
    "mean_squared_error": lambda X, y, t: mean_squared_error(t, X[:, 1]),
    "accuracy_score": lambda X, y, t: accuracy_score(y, y[::-1]),
    "scipy.special.logsumexp": lambda X, y, t: scipy.special.logsumexp(X, axis=0),
    "scipy.special.softmax": lambda X, y, t: scipy.special.softmax(X, axis=1),
    "scipy.stats.zscore": lambda X, y, t: scipy.stats.zscore(X, axis=0),
    "scipy.stats.skew": lambda X, y, t: scipy.stats.skew(X, axis=0),
    "scipy.stats.kurtosis": lambda X, y, t: scipy.stats.kurtosis(X, axis=0),
    "scipy.stats.moment": lambda X, y, t: scipy.stats.moment(X, order=3, axis=0),
    "scipy.stats.pearsonr": lambda X, y, t: scipy.stats.pearsonr(X[:, 0], t).statistic,
    "scipy.stats.pearsonr(pvalue)": lambda X, y, t: scipy.stats.pearsonr(X[:, 0], X[:, 3]).pvalue,
    "scipy.cluster.vq.whiten": lambda X, y, t: scipy.cluster.vq.whiten(X),
}


def main(device: str, default: str) -> None:
    ember.set_default_backend(default)
    args = [xp.asarray(a, device=device) for a in (X, y, target)]
    args[0] = xp.astype(args[0], xp.float64)
    args[2] = xp.astype(args[2], xp.float64)
    report = {}
    for name, case in CASES.items():
        want = np.asarray(case(X, y, target), dtype=np.float64)
        try:
            with sklearn.config_context(array_api_dispatch=True):
                got = case(*args)
        except Exception as e:  # noqa: BLE001 - reported, the test names it
            report[name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        report[name] = {
            "ember": isinstance(got, ember.Tensor),
            "backend": got.backend.name if isinstance(got, ember.Tensor) else None,
            "max_abs_diff": float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want))),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
