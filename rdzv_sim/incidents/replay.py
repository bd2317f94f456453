"""Replaying an incident log: the plan of which incident happens when and where, made before the
run from the log, the scenario's size and a seed, so that the same scenario and seed replay the
same incidents."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .log import read_log

PLAN_COLUMNS = ("time", "scope", "cause", "target", "repair", "detection")   # replay_plan's table


@lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    return read_log(path)


def logged(path: str | Path) -> pd.DataFrame:
    """`read_log`, read once per file version (a sweep's runs and the scenario's checks share
    it). The table is shared: do not change it."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        return read_log(path)                 # its own message: no such file
    return _read(str(path), st.st_mtime_ns, st.st_size)


def _copies(log: pd.DataFrame, ratio: float, span: float, rng: np.random.Generator) -> pd.DataFrame:
    """The log scaled to `ratio` times its hosts: job incidents once; host and rack incidents in
    int(ratio) copies of the log, each after the first shifted round its span by a random offset
    (so a copy keeps the log's bursts), and a last copy thinned to the fraction left over."""
    local = (log["scope"] != "job").to_numpy()
    whole, frac = int(ratio), ratio - int(ratio)
    parts = []
    for copy in range(whole + (frac > 0)):
        keep = local.copy()
        if copy == whole:                                       # the fraction left over
            keep &= rng.random(len(log)) < frac
        if copy == 0:
            keep |= ~local
        part = log[keep].assign(copy=copy)
        if copy > 0 and span > 0:
            part["time"] = (part["time"] + rng.uniform(0, span)) % span
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _targets(names: pd.Series, copies: pd.Series, count: int, rng: np.random.Generator) -> np.ndarray:
    """Each distinct (copy, name) onto its own index of `count` (a seeded permutation; wrapping
    round when there are more names than indices); an unnamed incident: -1."""
    out = np.full(len(names), -1, dtype=np.int64)
    named = (names != "").to_numpy()
    if named.any() and count > 0:
        keys = copies[named].astype(str) + "\t" + names[named]
        codes, _ = pd.factorize(keys, sort=True)
        out[named] = rng.permutation(count)[codes % count]
    return out


def _span(log: pd.DataFrame, spec, duration: float) -> float:
    """The seconds the log watched: as given, else to its last incident (a log of one instant:
    the run's duration)."""
    return spec.span or float(log["time"].max()) or duration


def _ratio(spec, nodes: int) -> float:
    """How many times the log's hosts the job has."""
    return nodes / spec.log_hosts if spec.log_hosts else 1.0


def replay_plan(log: pd.DataFrame, spec, *, nodes: int, racks: int, duration: float,
                rng: np.random.Generator) -> pd.DataFrame:
    """The incidents a run of `duration` seconds meets, by time: `time`, `scope`, `cause`,
    `target` (a host index for node scope, a rack index for rack scope; -1: a random live host
    when it happens), `repair` and `detection` (seconds; NaN: never repaired / as interruptions
    are). `spec` is the scenario's `incident_log` entry; `nodes` the job's hosts, which
    `spec.log_hosts` scales to and named hosts map onto (so the spares' count does not move
    them)."""
    span, ratio = _span(log, spec, duration), _ratio(spec, nodes)
    plan = _copies(log, ratio, span, rng) if ratio != 1.0 else log.assign(copy=0)
    if spec.stretch:
        plan["time"] = plan["time"] * (duration / span)
    plan = plan[plan["time"] < duration].sort_values(["time", "copy"], kind="stable")
    target = np.full(len(plan), -1, dtype=np.int64)
    for scope, count in (("node", nodes), ("rack", racks)):      # named hosts: the job's, not spares
        rows = (plan["scope"] == scope).to_numpy()
        target[rows] = _targets(plan["host"][rows], plan["copy"][rows], count, rng)
    fill = lambda col, default: plan[col].fillna(np.nan if default is None else float(default))
    cols = (plan["time"].to_numpy(float), plan["scope"].to_numpy(), plan["cause"].to_numpy(), target,
            fill("repair_s", spec.repair).to_numpy(float), fill("detection_s", spec.detection).to_numpy(float))
    return pd.DataFrame(dict(zip(PLAN_COLUMNS, cols)))


def replay_rates(log: pd.DataFrame, spec, *, nodes: int, duration: float) -> tuple[float, float]:
    """Incidents a second of the run, (host and rack, job), as `replay_plan` scales them: for
    the estimate before a run and for the job's MTBF beside a checkpoint interval."""
    per = duration if spec.stretch else _span(log, spec, duration)
    job = int((log["scope"] == "job").sum())
    return (len(log) - job) * _ratio(spec, nodes) / per, job / per
