"""The tables derived from the events: every runtime's trace is summarised by the same code."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..events import Event
from ..protocols.recovery import Fallback
from ..cluster.rules import BAD_HOST, HOST_FAILURE
from .columns import stamp
from .details import parse_details, rank_details
from .rounds import JOINS, RENDEZVOUS, rounds_table  # noqa: F401  (where they were)
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


def _pct(values, q, mine: bool = False) -> float:
    """The q-th percentile (`mine`: values the caller's own, partitioned in place)."""
    return float(np.percentile(values, q, overwrite_input=mine)) if len(values) else math.nan


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


def store_rounds(rounds: pd.DataFrame) -> pd.Series:
    """Which rounds met at the store (a rendezvous), not made by a recovery in place."""
    if "formed_by" not in rounds.columns:                 # (a table of before the column)
        return pd.Series(True, index=rounds.index)
    return rounds["formed_by"] == RENDEZVOUS


def recoveries(events: pd.DataFrame, rounds: pd.DataFrame, mode: str) -> dict:
    """How the run's worlds formed: the recovery mode, store rounds (a rendezvous), worlds a
    recovery in place made (no rendezvous), and the failures it did not absorb, by why."""
    met = int(store_rounds(rounds).sum())
    fb = events.loc[events["event"] == Event.RECOVERY_FALLBACK, "detail"]
    why = pd.Series([json.loads(d).get("why") for d in fb], dtype=object).value_counts()
    return {"recovery": str(mode), "store_rounds": met, "in_place_recoveries": int(len(rounds) - met),
            **{f"fallbacks_{f.value}": int(why.get(f.value, 0)) for f in Fallback}}


def lifecycle_counts(events: pd.DataFrame) -> dict:
    """What the cluster around the job did: its hosts' failures (those of bad hosts' badness
    apart), host selections, preemptions, repairs (and those that did not work), retirements,
    failures pinned on nobody or on the wrong host."""
    kind = events["event"]
    crash = (kind == Event.FAULT_CRASH).to_numpy()
    cause = pd.Series(parse_details(events["detail"], crash, ("cause",))["cause"], dtype=object)
    repaired = (kind == Event.HOST_REPAIRED).to_numpy()
    fixed = parse_details(events["detail"], repaired, ("fixed",))["fixed"]
    return {"host_failures": int(cause.isin([HOST_FAILURE, BAD_HOST]).sum()),
            "systematic_failures": int((cause == BAD_HOST).sum()),
            "host_selections": int((kind == Event.HOSTS_SELECTED).sum()),
            "preemptions": int((kind == Event.HOST_PREEMPTED).sum()),
            "repairs": int(repaired.sum()),
            "repairs_failed": int(sum(1 for f in fixed if f is False or f == 0)),
            "hosts_retired": int((kind == Event.HOST_RETIRED).sum()),
            "undiagnosed": int((kind == Event.HOST_UNDIAGNOSED).sum()),
            "misdiagnosed": int((kind == Event.HOST_MISDIAGNOSED).sum())}


def summary_table(events: pd.DataFrame, rounds: pd.DataFrame, stats: RunStats,
                  scenario: str, seed: int, training: dict | None, spans: pd.DataFrame,
                  det: dict | None = None, recovery: str = "in_job", lifecycle: bool = False) -> pd.DataFrame:
    """One row of headline metrics; `training`: the training model's (ettr, goodput, ...);
    `spans`: the run's round spans (`rdzv_sim.training.round_spans`); `det`: the events'
    `rank_details`, when the caller has them already (the rounds fold's: the store rounds'
    rank rows only, a world made in place being no rendezvous); `recovery`: the agent's mode."""
    det = rank_details(events) if det is None else det
    lat = np.asarray(det["latency"])
    lat = (lat[~np.isnan(lat)] if lat.dtype.kind == "f"       # (one copy: a row per host and round)
           else pd.to_numeric(pd.Series(lat), errors="coerce").dropna().to_numpy())
    exits = events[events["event"] == Event.AGENT_EXIT]
    row = {
        "protocol": stats.protocol,
        "nodes": stats.nodes,
        "duration": stats.duration,
        "rounds_completed": len(rounds),
        "rdzv_latency_p50": _pct(lat, 50, mine=True),
        "rdzv_latency_p99": _pct(lat, 99, mine=True),
        "round_latency_p50": _pct(rounds.loc[store_rounds(rounds), "latency"], 50),
        "failures_injected": int(events["event"].str.startswith("fault_").sum()),
        "store_ops": int(stats.store_ops),
        "store_bytes": int(stats.store_bytes),
        "store_background_util_max": round(float(stats.store_background_util_max), 6),
        "agents_exited": int(len(exits)),
        "requeues": int((events["event"] == Event.JOB_REQUEUED).sum()),
        "nodes_excluded": int((events["event"] == Event.NODE_EXCLUDED).sum()),
        "store_lost": bool((events["event"] == Event.STORE_LOST).any()),
        "store_failovers": int((events["event"] == Event.STORE_STARTED).sum()),
        **recoveries(events, rounds, recovery),
        "running_fraction": running_fraction(spans, stats.duration),
        **(training if training is not None else {k: math.nan for k in NAN_TRAINING}),
        **(lifecycle_counts(events) if lifecycle else {}),
        "all_rounds_consistent": bool(rounds["consistent"].all()) if len(rounds) else True,
        "sim_events": int(stats.sim_events),
    }
    for c in rounds.columns:
        if c.startswith("shards_moved_") or c in ("ranks_changed", "rank0_moved"):
            row[c] = int(rounds[c].sum())
    return stamp(pd.DataFrame([row]), scenario, seed)
