"""The trace schema shared by every runtime: `events`, `rounds`, `summary` tables.

A runtime only records events; the other tables are derived here from the events (plus the
store counters the runtime kept), so simulated and real runs are summarised identically.
"""
from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass

import numpy as np
import pandas as pd

SCHEMA_VERSION = 1
EVENT_COLUMNS = ["t", "node", "event", "round", "rank", "world_size", "detail"]


NA = -(2 ** 63)                     # "no value" in the integer columns of the tracer


class Tracer:
    """Collects events column by column in typed arrays (a 54-day, 2,048-node run records
    ~10^7 events: ~40 bytes each here, ~300 as tuples); builds the DataFrame once at the end."""

    def __init__(self):
        self.t = array("d")
        self.node = array("i")           # index into self.names
        self.event = array("i")          # index into self.kinds
        self.round = array("q")
        self.rank = array("q")
        self.world_size = array("q")
        self.detail: list[str] = []
        self.names: list[str] = []
        self.kinds: list[str] = []
        self._name_ix: dict[str, int] = {}
        self._kind_ix: dict[str, int] = {}
        # a requeued job starts on a fresh store at round 0 again; the tables number rounds
        # across requeues (the job's attempts), so this offset is added to every round
        self.round_offset = 0
        self.max_round = -1

    def _ix(self, table: dict, values: list, key: str) -> int:
        i = table.get(key)
        if i is None:
            i = table[key] = len(values)
            values.append(key)
        return i

    def record(self, t, node, event, rnd=None, rank=None, world_size=None, detail=None):
        if rnd is not None:
            rnd += self.round_offset
            if rnd > self.max_round:
                self.max_round = rnd
        self.t.append(t)
        self.node.append(self._ix(self._name_ix, self.names, node))
        self.event.append(self._ix(self._kind_ix, self.kinds, event))
        self.round.append(NA if rnd is None else rnd)
        self.rank.append(NA if rank is None else rank)
        self.world_size.append(NA if world_size is None else world_size)
        self.detail.append(json.dumps(detail, sort_keys=True, separators=(",", ":")) if detail else "")

    def __len__(self) -> int:
        return len(self.t)

    @property
    def rows(self) -> list[tuple]:
        """The events as tuples (t, node, event, round, rank, world_size, detail)."""
        def val(x):
            return None if x == NA else x
        return [(self.t[i], self.names[self.node[i]], self.kinds[self.event[i]], val(self.round[i]),
                 val(self.rank[i]), val(self.world_size[i]), self.detail[i]) for i in range(len(self))]

    def columns(self) -> dict:
        """The event columns as arrays (no per-row Python objects but the details)."""
        def ints(a):
            v = np.frombuffer(a, dtype=np.int64) if len(a) else np.zeros(0, np.int64)
            mask = v == NA
            return pd.arrays.IntegerArray(np.where(mask, 0, v), mask)
        return {
            "t": np.frombuffer(self.t, dtype=np.float64) if len(self.t) else np.zeros(0),
            "node": np.array(self.names, dtype=object)[np.frombuffer(self.node, dtype=np.int32)]
            if len(self.node) else np.zeros(0, dtype=object),
            "event": np.array(self.kinds, dtype=object)[np.frombuffer(self.event, dtype=np.int32)]
            if len(self.event) else np.zeros(0, dtype=object),
            "round": ints(self.round), "rank": ints(self.rank), "world_size": ints(self.world_size),
            "detail": np.array(self.detail, dtype=object) if self.detail else np.zeros(0, dtype=object),
        }


def stamp(df: pd.DataFrame, scenario: str, seed: int) -> pd.DataFrame:
    df.insert(0, "schema_version", SCHEMA_VERSION)
    df.insert(1, "scenario", scenario)
    df.insert(2, "seed", seed)
    return df


def events_table(rows, scenario: str, seed: int) -> pd.DataFrame:
    """The events table from a Tracer (columnar) or from row tuples (the real launcher)."""
    if isinstance(rows, Tracer):
        df = pd.DataFrame(rows.columns())
    else:
        df = pd.DataFrame(rows, columns=EVENT_COLUMNS)
        for c in ("round", "rank", "world_size"):
            df[c] = df[c].astype("Int64")
    t = df["t"].to_numpy()
    if len(t) > 1 and not (np.diff(t) >= 0).all():      # a simulation records in time order
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


STOPS = ("round_left", "fault_crash", "agent_exit", "fault_pause")


def training_spans(events: pd.DataFrame, duration: float) -> list[tuple[float, float]]:
    """(start, stop) of each round's training: from its last member's workers starting to its
    first member leaving, crashing, pausing or exiting (a hung collective trains nothing).

    One as-of join of (member, round start) against each node's next stop event, so the cost
    follows the number of events, not rounds x events. A member's first stop after its round
    started is that round's `round_left` or a fault: it left every earlier round before."""
    ev = events
    started = ev.loc[ev["event"] == "workers_started", ["t", "node", "round"]]
    if started.empty:
        return []
    t0 = started.groupby("round")["t"].transform("max")
    pairs = pd.DataFrame({"node": started["node"].to_numpy(), "round": started["round"].to_numpy(),
                          "t0": t0.to_numpy()}).sort_values("t0", kind="stable")
    stops = ev.loc[ev["event"].isin(STOPS), ["t", "node"]].rename(columns={"t": "stop"})
    stops = stops.assign(key=stops["stop"]).sort_values("stop", kind="stable")
    m = pd.merge_asof(pairs, stops, left_on="t0", right_on="key", by="node", direction="forward",
                      allow_exact_matches=True)
    per_round = m.groupby("round", sort=True).agg(t0=("t0", "max"), stop=("stop", "min"))
    spans = []
    for t0_, stop in zip(per_round["t0"], per_round["stop"]):
        t1 = min(duration if pd.isna(stop) else float(stop), duration)
        if t1 > t0_:
            spans.append((float(t0_), t1))
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
    lat = [json.loads(d).get("latency", math.nan) if d else math.nan for d in ra["detail"]]
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
