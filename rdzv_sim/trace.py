"""The trace schema shared by every runtime: `events`, `rounds`, `summary` tables.

A runtime only records events; the other tables are derived here from the events (plus the
store counters the runtime kept), so simulated and real runs are summarised identically.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

SCHEMA_VERSION = 1
EVENT_COLUMNS = ["t", "node", "event", "round", "rank", "world_size", "detail"]


class Tracer:
    """Collects events as plain tuples (cheap); builds the DataFrame once at the end."""

    def __init__(self):
        self.rows: list[tuple] = []
        # a requeued job starts on a fresh store at round 0 again; the tables number rounds
        # across requeues (the job's attempts), so this offset is added to every round
        self.round_offset = 0
        self.max_round = -1

    def record(self, t, node, event, rnd=None, rank=None, world_size=None, detail=None):
        if rnd is not None:
            rnd += self.round_offset
            self.max_round = max(self.max_round, rnd)
        self.rows.append((float(t), node, event, rnd, rank, world_size,
                          json.dumps(detail, sort_keys=True, separators=(",", ":")) if detail else ""))


def stamp(df: pd.DataFrame, scenario: str, seed: int) -> pd.DataFrame:
    df.insert(0, "schema_version", SCHEMA_VERSION)
    df.insert(1, "scenario", scenario)
    df.insert(2, "seed", seed)
    return df


def events_table(rows, scenario: str, seed: int) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=EVENT_COLUMNS)
    for c in ("round", "rank", "world_size"):
        df[c] = df[c].astype("Int64")
    df = df.sort_values("t", kind="stable").reset_index(drop=True)
    return stamp(df, scenario, seed)


def store_load_table(load: dict, bin_s: float, scenario: str, seed: int) -> pd.DataFrame:
    """Store operations and bytes per time bin (only bins with traffic are listed)."""
    keys = sorted(load)
    df = pd.DataFrame({"t": [k * bin_s for k in keys], "bin_s": bin_s,
                       "ops": [load[k][0] for k in keys], "bytes": [load[k][1] for k in keys]})
    return stamp(df, scenario, seed)


def details(df: pd.DataFrame) -> list[dict]:
    return [json.loads(d) if d else {} for d in df["detail"]]


def rounds_table(events: pd.DataFrame, round_ops: dict | None = None) -> pd.DataFrame:
    """One row per completed round: when, who, how fast, how much store traffic."""
    ra = events[events["event"] == "rank_assigned"]
    joins = events[events["event"] == "join"]
    rows = []
    for rnd, grp in ra.groupby("round", sort=True):
        rnd = int(rnd)
        det = details(grp)
        started = joins.loc[joins["round"] == rnd, "t"]
        start = float(started.min()) if len(started) else float(grp["t"].min())
        ranks = sorted(int(r) for r in grp["rank"])
        nn = {d["nnodes"] for d in det}
        ops, nbytes = (round_ops or {}).get(rnd, (0, 0))
        rows.append({
            "round": rnd,
            "start": start,
            "end": float(grp["t"].max()),
            "latency": float(grp["t"].max()) - start,
            "nnodes": grp["node"].nunique(),
            "world_size": int(grp["world_size"].max()),
            "members": ",".join(sorted(set(grp["node"]))),
            "consistent": (len({d["digest"] for d in det}) == 1 and len(nn) == 1
                           and not grp["node"].duplicated().any()
                           and ranks == list(range(len(grp))) and nn == {len(grp)}
                           and grp["world_size"].nunique() == 1),
            "store_ops": int(ops),
            "store_bytes": int(nbytes),
        })
    cols = ["round", "start", "end", "latency", "nnodes", "world_size", "members", "consistent",
            "store_ops", "store_bytes"]
    return pd.DataFrame(rows, columns=cols)


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
    checkpoint_interval: float | None = None
    checkpoint_cost: float = 0.0


def _pct(values, q) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def training_spans(events: pd.DataFrame, duration: float) -> list[tuple[float, float]]:
    """(start, stop) of each round's training: from its last member's workers starting to its
    first member leaving, crashing, pausing or exiting (a hung collective trains nothing)."""
    ev = events
    started = ev[ev["event"] == "workers_started"]
    spans = []
    for rnd, g in started.groupby("round"):
        members = set(g["node"])
        t0 = float(g["t"].max())
        stop = ev[(ev["node"].isin(members)) & (ev["t"] >= t0)
                  & (((ev["event"] == "round_left") & (ev["round"] == rnd))
                     | ev["event"].isin(["fault_crash", "agent_exit", "fault_pause"]))]
        t1 = min(float(stop["t"].min()) if len(stop) else duration, duration)
        if t1 > t0:
            spans.append((t0, t1))
    return spans


def goodput(spans, duration: float, interval: float, cost: float) -> float:
    """Useful work / wall time: within each span, only checkpointed work survives the restart
    that ends it (one checkpoint per `interval` of work, each stalling `cost` seconds)."""
    saved = sum(math.floor((t1 - t0) / (interval + cost)) * interval for t0, t1 in spans)
    return saved / duration if duration > 0 else math.nan


def running_fraction(events: pd.DataFrame, duration: float) -> float:
    """Share of the run during which a round trained (an upper bound on goodput)."""
    busy = sum(t1 - t0 for t0, t1 in training_spans(events, duration))
    return busy / duration if duration > 0 else math.nan


def summary_table(events: pd.DataFrame, rounds: pd.DataFrame, stats: RunStats,
                  scenario: str, seed: int) -> pd.DataFrame:
    ra = events[events["event"] == "rank_assigned"]
    lat = [d.get("latency", math.nan) for d in details(ra)]
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
        "running_fraction": running_fraction(events, stats.duration),
        "goodput": (goodput(training_spans(events, stats.duration), stats.duration,
                            stats.checkpoint_interval, stats.checkpoint_cost)
                    if stats.checkpoint_interval else math.nan),
        "all_rounds_consistent": bool(rounds["consistent"].all()) if len(rounds) else True,
        "sim_events": int(stats.sim_events),
    }
    for c in rounds.columns:
        if c.startswith("shards_moved_"):
            row[c] = int(rounds[c].sum())
    return stamp(pd.DataFrame([row]), scenario, seed)
