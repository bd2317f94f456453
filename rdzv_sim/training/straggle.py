"""How much stragglers slow a round: every synchronous step waits for its slowest member, so
a round trains at 1 / (the largest slowdown among its members) while one straggles."""
from __future__ import annotations

import json
import math

import pandas as pd
from ..events import Event


def straggles(events: pd.DataFrame) -> dict[str, list[tuple[float, float, float]]]:
    """host -> [(start, end, slowdown)] from `fault_straggler` and `straggler_healed` events."""
    out: dict[str, list[tuple[float, float, float]]] = {}
    ev = events[events["event"].isin((Event.FAULT_STRAGGLER, Event.STRAGGLER_HEALED))]
    open_: dict[str, tuple[float, float]] = {}
    for t, node, e, det in zip(ev["t"], ev["node"], ev["event"], ev["detail"]):
        if node in open_:                           # a new straggle or its heal ends the last
            start, k = open_.pop(node)
            out.setdefault(node, []).append((start, float(t), k))
        if e == Event.FAULT_STRAGGLER:
            open_[node] = (float(t), float(json.loads(det)["slowdown"]))
    for node, (start, k) in open_.items():
        out.setdefault(node, []).append((start, math.inf, k))
    return out


def span_rate(members, t0: float, t1: float, slow: dict) -> float:
    """The mean rate of a round's training over [t0, t1] (1: no straggler among its members)."""
    if t1 <= t0 or not slow:
        return 1.0
    pieces = [(max(a, t0), min(b, t1), k) for m in members for a, b, k in slow.get(m, ())
              if a < t1 and b > t0]
    if not pieces:
        return 1.0
    cuts = sorted({t0, t1, *(a for a, _, _ in pieces), *(b for _, b, _ in pieces)})
    worked = 0.0
    for a, b in zip(cuts, cuts[1:]):
        k = max((s for lo, hi, s in pieces if lo <= a and hi >= b), default=1.0)
        worked += (b - a) / k
    return worked / (t1 - t0)
