"""Replications of one scenario over seeds (its seed, +1, ...): a given number, or as many as
it takes for the 95% t-interval of one figure to come within a relative target of its mean
(AIReSim's adaptive replications: at least `least` runs, at most `most`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from .intervals import t_interval

LEAST, MOST = 3, 200


@dataclass
class Replications:
    metric: str
    target: float | None          # the relative half-width asked for (None: a fixed count)
    summaries: pd.DataFrame       # one summary row a seed, in seed order
    mean: float
    low: float
    high: float

    @property
    def relative(self) -> float:
        """The interval's half-width over its mean (NaN with fewer than two seeds)."""
        return (self.high - self.low) / 2 / abs(self.mean) if self.mean else math.nan

    @property
    def met(self) -> bool:
        return self.target is not None and self.relative <= self.target

    def line(self) -> str:
        n = len(self.summaries)
        ci = (f"95% interval {self.low:.4f} to {self.high:.4f} (+/- {self.relative:.2%})"
              if not math.isnan(self.low) else "no interval from one seed")
        tail = ""
        if self.target is not None:
            tail = (f"; within the {self.target:.1%} target" if self.met
                    else f"; NOT within the {self.target:.1%} target after {n} seeds (the most it runs)")
        return f"{self.metric} {self.mean:.4f} over {n} seeds, {ci}{tail}"


def replicate(sc, seeds: int | None, target: float | None, metric: str, run=None,
              least: int = LEAST, most: int = MOST, progress=None) -> Replications:
    """Run `sc` on `seeds` seeds, or (None) until `metric`'s interval is within `target` of
    its mean (at least `least` seeds, at most `most`)."""
    if run is None:
        from .api import run
    if seeds is None and (target is None or not target > 0):
        raise ValueError("replications until an interval is narrow enough need a target > 0 (--ci 0.05)")
    rows = []
    count = seeds if seeds is not None else most
    for i in range(count):
        s = run(sc.model_copy(update={"seed": sc.seed + i})).summary
        if metric not in s.columns:
            raise ValueError(f"the summary has no {metric!r}: choose one of {', '.join(s.columns)}")
        rows.append(s.iloc[0])
        if progress is not None:
            progress(i + 1)
        if seeds is None and i + 1 >= least:
            mean, low, high = t_interval(pd.DataFrame(rows)[metric].to_numpy(float))
            if mean and (high - low) / 2 / abs(mean) <= target:
                break
    table = pd.DataFrame(rows).reset_index(drop=True)
    mean, low, high = t_interval(table[metric].to_numpy(float))
    return Replications(metric, target, table, mean, low, high)


__all__ = ["Replications", "replicate"]
