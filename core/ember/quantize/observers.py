"""Observers: the range of a layer's input, seen over the calibration batches, as the
largest magnitude to represent (the int8 scale is that / 127).

- ``minmax``: the largest |x| seen (never clips the calibration data);
- ``percentile``: that percentile of |x| (clips rare outliers for a finer step);
- ``mse``: the clipping point minimizing the mean squared quantization error.

>>> import numpy as np
>>> obs = Observer("minmax")
>>> obs.observe(np.array([0.5, -2.0, 1.0]))
>>> obs.amax()
2.0
"""

from __future__ import annotations

from ..contract.rounding import round_codes_np

SAMPLES = 1 << 16  # |x| values kept per batch for percentile and mse


class Observer:
    """Accumulates |x| statistics of one tensor over calibration batches.

    >>> obs = Observer("minmax")
    >>> obs.observe([0.5, -3.0]); obs.observe([2.0])
    >>> obs.amax()
    3.0
    >>> pct = Observer("percentile", percentile=50.0)
    >>> pct.observe([1.0, 2.0, 3.0, 100.0]); pct.amax()  # the median of |x|, not the outlier
    2.5

    Batches of two or more dims also sum each channel (``channel_axis``: a Linear input's
    last axis), for bias correction's ``means``; ``candidates`` are the ranges
    ``Scheme.range_search`` tries:

    >>> import numpy as np
    >>> lin = Observer("mse"); lin.observe(np.array([[1.0, -2.0], [3.0, 4.0]]))
    >>> Observer.channel_axis(np.zeros((2, 2))), lin.means().tolist()
    (1, [2.0, 1.0])
    >>> lin.candidates()[-1]  # the largest value seen comes last
    4.0
    """

    def __init__(self, kind: str = "minmax", percentile: float = 99.99):
        self.kind, self.percentile = kind, percentile
        self.peak = 0.0
        self.low = 0.0  # the least value seen: 0 when never negative (unsigned codes fit)
        self.samples: list = []
        self.sums, self.count = None, 0

    def observe(self, x) -> None:
        """Add the magnitudes of one batch of values (a tensor, array or list; NaN/inf ignored)."""
        import numpy as np

        x = np.asarray(x, dtype=np.float32)
        if x.size and x.ndim >= 2:  # per-channel sums, for bias correction
            axes = tuple(i for i in range(x.ndim) if i != self.channel_axis(x))
            sums = x.sum(axis=axes, dtype=np.float64)
            self.sums = sums if self.sums is None else self.sums + sums
            self.count += x.size // len(sums)
        if x.size:
            self.low = min(self.low, float(np.nanmin(x)))
        a = np.abs(x).ravel()
        a = a[np.isfinite(a)]
        if not a.size:
            return
        self.peak = max(self.peak, float(a.max()))
        if self.kind != "minmax":
            step = max(1, a.size // SAMPLES)  # strided, so calibration is deterministic
            self.samples.append(a[::step])

    @staticmethod
    def channel_axis(x) -> int:
        """Conv inputs (N, C, H, W): axis 1; Linear inputs (..., K): the last."""
        return 1 if x.ndim == 4 else x.ndim - 1

    def means(self):
        """The mean of each channel over the calibration data (float64), or None."""
        return None if self.sums is None else self.sums / max(self.count, 1)

    def candidates(self, levels: int = 127) -> list[float]:
        """Input ranges worth trying (``Scheme.range_search``): the largest value, and with
        samples the MSE clip and the 99.99th and 99.9th percentiles of |x|."""
        import numpy as np

        out = [self.peak]
        if self.samples:
            a = np.concatenate(self.samples)
            out += [_mse_amax(a, self.peak, levels)] + [
                min(self.peak, float(np.percentile(a, p))) for p in (99.99, 99.9)]
        return sorted(set(out))

    def amax(self, levels: int = 127) -> float:
        """The magnitude the code range covers (0 when nothing non-zero was seen); ``levels``
        is the highest code (127, or 255 for unsigned codes: the MSE search depends on it)."""
        import numpy as np

        if self.kind == "minmax" or not self.samples:
            return self.peak
        a = np.concatenate(self.samples)
        if self.kind == "percentile":
            return min(self.peak, float(np.percentile(a, self.percentile)))
        return _mse_amax(a, self.peak, levels)


def _mse_amax(a, peak: float, levels: int) -> float:
    """The clip among 100 candidates in (0, peak] with the least squared error on ``a``."""
    import numpy as np

    if peak <= 0:
        return 0.0
    best, best_err = peak, np.inf
    for c in np.linspace(peak / 100, peak, 100):
        s = c / levels
        err = float(np.mean((round_codes_np(a / s, 0, levels) * s - a) ** 2))
        if err < best_err:
            best, best_err = float(c), err
    return best
