"""The tables derived from the events: every runtime's trace is summarised by the same code."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import asof_by, distinct, label_codes, runs, stamp
from .details import rank_details
from .tracer import Tracer


def events_table(rows, scenario: str, seed: int) -> pd.DataFrame:
    """The events table from a Tracer, or from row tuples (t, node, event, round, rank,
    world_size, detail: a dict or its JSON) as the real launcher gathers them, through a
    Tracer too: one schema, one builder."""
    if not isinstance(rows, Tracer):
        tracer = Tracer()
        for t, node, event, rnd, rank, ws, detail in rows:
            if isinstance(detail, str):
                detail = json.loads(detail) if detail else None
            tracer.record(float(t), node, event, _int(rnd), _int(rank), _int(ws), detail)
        rows = tracer
    return stamp(pd.DataFrame(rows.take_columns(), copy=False), scenario, seed)   # in time order


def _int(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else int(x)


def store_load_table(load: dict, bin_s: float, scenario: str, seed: int) -> pd.DataFrame:
    """Store operations and bytes per time bin (only bins with traffic are listed)."""
    keys = sorted(load)
    df = pd.DataFrame({"t": [k * bin_s for k in keys], "bin_s": bin_s,
                       "ops": [load[k][0] for k in keys], "bytes": [load[k][1] for k in keys]})
    return stamp(df, scenario, seed)


JOINS = ("join", "in_process_restart", "shrink")


def rounds_table(events: pd.DataFrame, round_ops: dict | None = None,
                 det: dict | None = None) -> pd.DataFrame:
    """One row per completed round: when, who, how fast, how much store traffic. `det`: the
    events' `rank_details`, when the caller has them already."""
    mask = (events["event"] == "rank_assigned").to_numpy()
    det = rank_details(events) if det is None else det
    # a round starts at its first member's join: each member's latest join before its rank
    # (a join's own round label is the round the node saw when it joined, which for c10d's
    # wait list is the round before the one it ends up in); an in-place recovery (no store
    # round) starts its round as a join does
    at = np.flatnonzero(mask)                                 # the rank rows, in event order
    t_all = events["t"].to_numpy(dtype=float)
    node_all, labels = label_codes(events["node"])
    joined = _latest_join(t_all, node_all, mask, events["event"].isin(JOINS).to_numpy())
    # one slice of numpy arrays a round (a frontier round has 10^4 members: no frame a group)
    rnd_all = events["round"].iloc[at].to_numpy(dtype=np.int64, na_value=-1)
    order = np.argsort(rnd_all, kind="stable")               # by round, in event order within
    rnd_all = rnd_all[order]
    t = t_all[at][order]
    joined = joined[order]
    codes = node_all[at][order]
    names_sorted = pd.Index(labels).is_monotonic_increasing
    rank = events["rank"].iloc[at].to_numpy(dtype=np.int64, na_value=-1)[order]
    ws = events["world_size"].iloc[at].to_numpy(dtype=float, na_value=np.nan)[order]
    digest = np.asarray(det["digest"], dtype=object)[order]
    nn = np.asarray(det["nnodes"])[order]
    rows = []
    for s, e in runs(rnd_all):
        rnd, n = int(rnd_all[s]), e - s
        j = joined[s:e]
        start = float(np.nanmin(j)) if (~np.isnan(j)).any() else float(t[s:e].min())
        end_t = float(t[s:e].max())
        members = distinct(codes[s:e], len(labels))
        names = labels[members].tolist()
        w = ws[s:e]
        w = w[~np.isnan(w)]
        ops, nbytes = (round_ops or {}).get(rnd, (0, 0))
        rows.append({
            "round": rnd,
            "start": start,
            "end": end_t,
            "latency": end_t - start,
            "nnodes": len(members),
            "world_size": int(w.max()),
            "members": ",".join(names if names_sorted else sorted(names)),
            "consistent": bool(len(pd.unique(digest[s:e])) == 1
                               and len(pd.unique(nn[s:e])) == 1
                               and len(members) == n
                               and np.array_equal(np.sort(rank[s:e]), np.arange(n))
                               and nn[s] == n
                               and len(np.unique(w)) == 1),
            "store_ops": int(ops),
            "store_bytes": int(nbytes),
        })
    cols = ["round", "start", "end", "latency", "nnodes", "world_size", "members", "consistent",
            "store_ops", "store_bytes"]
    return pd.DataFrame(rows, columns=cols)


def _latest_join(t: np.ndarray, node: np.ndarray, rank: np.ndarray, join: np.ndarray) -> np.ndarray:
    """For each rank row (mask `rank`, in row order): the time of its node's latest join row
    (mask `join`) at or before it, NaN if none (`asof_by`, backward)."""
    ranked, joins = np.flatnonzero(rank), np.flatnonzero(join)
    i = asof_by(node[ranked], t[ranked], node[joins], t[joins], forward=False)
    return np.where(i >= 0, t[joins[np.maximum(i, 0)]] if len(joins) else np.nan, np.nan)


@dataclass
class RunStats:
    duration: float
    protocol: str
    nodes: int
    sim_events: int = 0
    wall_s: float = 0.0
    store_ops: int = 0
    store_bytes: int = 0
    store_background_util_max: float = 0.0


def _pct(values, q) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def running_fraction(spans: pd.DataFrame, duration: float) -> float:
    """Share of the run during which a round trained (an upper bound on ETTR); `spans` is
    `rdzv_sim.training.round_spans` of the run. Rounds that train at once (a per-step job's
    replica groups) count once: the union of their spans."""
    busy, end = 0.0, -math.inf
    for t0, t1 in sorted(zip(spans["t0"], spans["t1"])):
        if t1 > end:
            busy += t1 - max(t0, end)
            end = t1
    return busy / duration if duration > 0 else math.nan


NAN_TRAINING = ("ettr", "goodput", "interruptions", "mtti_s", "mttr_s")


def summary_table(events: pd.DataFrame, rounds: pd.DataFrame, stats: RunStats,
                  scenario: str, seed: int, training: dict | None, spans: pd.DataFrame,
                  det: dict | None = None) -> pd.DataFrame:
    """One row of headline metrics; `training`: the training model's (ettr, goodput, ...);
    `spans`: the run's round spans (`rdzv_sim.training.round_spans`); `det`: the events'
    `rank_details`, when the caller has them already."""
    det = rank_details(events) if det is None else det
    lat = pd.to_numeric(pd.Series(det["latency"]), errors="coerce").dropna().to_numpy()
    exits = events[events["event"] == "agent_exit"]
    row = {
        "protocol": stats.protocol,
        "nodes": stats.nodes,
        "duration": stats.duration,
        "rounds_completed": len(rounds),
        "rdzv_latency_p50": _pct(lat, 50),
        "rdzv_latency_p99": _pct(lat, 99),
        "round_latency_p50": _pct(rounds["latency"], 50) if len(rounds) else math.nan,
        "failures_injected": int(events["event"].str.startswith("fault_").sum()),
        "store_ops": int(stats.store_ops),
        "store_bytes": int(stats.store_bytes),
        "store_background_util_max": round(float(stats.store_background_util_max), 6),
        "agents_exited": int(len(exits)),
        "requeues": int((events["event"] == "job_requeued").sum()),
        "nodes_excluded": int((events["event"] == "node_excluded").sum()),
        "store_lost": bool((events["event"] == "store_lost").any()),
        "store_failovers": int((events["event"] == "store_started").sum()),
        "running_fraction": running_fraction(spans, stats.duration),
        **(training if training is not None else {k: math.nan for k in NAN_TRAINING}),
        "all_rounds_consistent": bool(rounds["consistent"].all()) if len(rounds) else True,
        "sim_events": int(stats.sim_events),
    }
    for c in rounds.columns:
        if c.startswith("shards_moved_") or c in ("ranks_changed", "rank0_moved"):
            row[c] = int(rounds[c].sum())
    return stamp(pd.DataFrame([row]), scenario, seed)
