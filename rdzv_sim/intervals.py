"""A mean over seeds and its 95% t-interval: what every comparison over paired seeds reports
(`advise`, `compare`, `sweep`'s grid points)."""
from __future__ import annotations

import math

import numpy as np


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, low, high) of the 95% t-interval (NaN ends with fewer than two values)."""
    from scipy import stats
    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half
