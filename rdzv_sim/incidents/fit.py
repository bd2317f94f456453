"""Fitting an incident log: per cause and scope, the rate (a Poisson process: the exponential
time between incidents, whose maximum-likelihood rate is count / span) and, as a check of that
assumption, a Weibull fitted to the times between incidents and Kolmogorov-Smirnov tests of
both (scipy.stats). A Weibull shape well below 1 says incidents cluster (infant mortality, a
bad batch), above 1 that they wear out; either way a Poisson process misses it."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

DAY = 86400.0


@dataclass
class CauseFit:
    cause: str
    scope: str                     # node, rack or job
    count: int
    span_s: float                  # the window the count is for
    rate_per_day: float            # count / span, per day
    mtbf_s: float                  # span / count: the exponential's mean time between incidents
    rate_low_per_day: float        # the rate's exact (Poisson) 95% interval
    rate_high_per_day: float
    weibull_shape: float | None    # fitted to the gaps (None: fewer than 3 gaps)
    weibull_scale_s: float | None
    ks_p_exponential: float | None  # KS p-value of the gaps against the fitted exponential
    ks_p_weibull: float | None      # ... against the fitted Weibull (both with fitted
    repair_s: float | None          # parameters: optimistic, Lilliefors' caveat)
    detection_s: float | None = None  # median of the log's detection_s (None: not logged)

    def as_row(self) -> dict:
        return asdict(self)


def _poisson_interval(n: int, span_days: float) -> tuple[float, float]:
    from scipy.stats import chi2
    low = 0.0 if n == 0 else chi2.ppf(0.025, 2 * n) / 2
    high = chi2.ppf(0.975, 2 * n + 2) / 2
    return float(low) / span_days, float(high) / span_days


def _median(v: np.ndarray) -> float | None:
    known = v[~np.isnan(v)]
    return float(np.median(known)) if len(known) else None


def _one(cause: str, scope: str, times: np.ndarray, repair: np.ndarray, detection: np.ndarray,
         span: float) -> CauseFit:
    from scipy import stats
    n = len(times)
    gaps = np.diff(np.sort(times))
    gaps = gaps[gaps > 0]                      # simultaneous incidents: one event, many rows
    shape = scale = p_exp = p_wb = None
    if len(gaps) >= 3:
        k, _, lam = stats.weibull_min.fit(gaps, floc=0)
        shape, scale = float(k), float(lam)
        p_exp = float(stats.kstest(gaps, "expon", args=(0, gaps.mean())).pvalue)
        p_wb = float(stats.kstest(gaps, "weibull_min", args=(k, 0, lam)).pvalue)
    lo, hi = _poisson_interval(n, span / DAY)
    return CauseFit(cause, scope, n, span, n / (span / DAY), span / n, lo, hi, shape, scale,
                    p_exp, p_wb, _median(repair), _median(detection))


def fit(log: pd.DataFrame, span: float | None = None) -> list[CauseFit]:
    """One fit per (cause, scope) of a log read by `read_log`, most frequent first. `span`: the
    seconds the log covers (default: from 0 to its last incident)."""
    span = float(log["time"].max()) if span is None else float(span)
    if span <= 0:
        raise ValueError("the log covers no time: give its span (seconds it observed)")
    out = [_one(cause, scope, g["time"].to_numpy(float), g["repair_s"].to_numpy(float),
                g["detection_s"].to_numpy(float), span)
           for (cause, scope), g in log.groupby(["cause", "scope"], sort=True)]
    return sorted(out, key=lambda f: (-f.count, f.cause, f.scope))


def random_faults(fits: list[CauseFit], default_repair: float = 600.0) -> list[dict]:
    """The fits as a scenario's `random_faults` (interruptions at each cause's rate), with the
    cause's median repair and, where the log has it, its median detection."""
    return [{"kind": "interruptions", "cause": f.cause, "count": f.count, "per": f.span_s,
             "scope": f.scope,
             **({} if f.scope == "job" else
                {"repair": f.repair_s if f.repair_s else default_repair,
                 **({"detection": f.detection_s} if f.detection_s else {})})} for f in fits]
