"""The trace schema shared by every runtime: `events`, `rounds`, `summary` tables.

A runtime only records events; the other tables are derived here from the events (plus the
store counters the runtime kept), so simulated and real runs are summarised identically.
"""
from __future__ import annotations

import json
import math
from array import array
from itertools import accumulate
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from .events import check

SCHEMA_VERSION = 1
EVENT_COLUMNS = ["t", "node", "event", "round", "rank", "world_size", "detail"]


def _strings(arr):
    """An Arrow string array as the pandas column type plain strings get (pandas 3: Arrow-backed
    `str`, no copy; before: Python objects)."""
    try:
        from pandas.core.arrays.string_arrow import ArrowStringArray
        return ArrowStringArray(arr, dtype=pd.StringDtype("pyarrow", na_value=np.nan))
    except (TypeError, ValueError, ImportError):
        return np.array(arr.to_pylist(), dtype=object)


NA = -(2 ** 63)                     # "no value" in the integer columns of the tracer
# one encoder for every detail (json.dumps with options builds a new encoder per call)
_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


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
        # details as one UTF-8 buffer and end offsets (Arrow's layout: no object per row)
        self.detail_buf = bytearray()
        self.detail_end = array("q")
        self.names: list[str] = []
        self.kinds: list[str] = []
        self._name_ix: dict[str, int] = {}
        self._kind_ix: dict[str, int] = {}
        # a requeued job starts on a fresh store at round 0 again; the tables number rounds
        # across requeues (the job's attempts), so this offset is added to every round
        self.round_offset = 0
        # called with each event as it is recorded, until one returns True (a fault that
        # waits for one: rdzv_sim.scenario.faults.After); empty, recording costs nothing more
        self.listeners: list = []
        self.max_round = -1

    def _ix(self, table: dict, values: list, key: str) -> int:
        i = table.get(key)
        if i is None:
            i = table[key] = len(values)
            values.append(key)
        return i

    def _event(self, event) -> int:
        i = self._kind_ix.get(event)
        if i is None:
            event = check(event)                  # once per name: an unknown one is refused
            i = self._ix(self._kind_ix, self.kinds, event)
        return i

    def record(self, t, node, event, rnd=None, rank=None, world_size=None, detail=None):
        ev = self._event(event)                   # first: a refused event writes nothing
        if rnd is not None:
            rnd += self.round_offset
            if rnd > self.max_round:
                self.max_round = rnd
        self.t.append(t)
        self.node.append(self._ix(self._name_ix, self.names, node))
        self.event.append(ev)
        self.round.append(NA if rnd is None else rnd)
        self.rank.append(NA if rank is None else rank)
        self.world_size.append(NA if world_size is None else world_size)
        if detail:
            self.detail_buf += _encode(detail).encode()
        self.detail_end.append(len(self.detail_buf))
        if self.listeners:
            self.listeners = [f for f in self.listeners if not f(t, node, event, rnd, detail)]

    def record_many(self, t, nodes, event, rnd=None, ranks=None, world_size=None, details=None):
        """One event for many nodes at once (`details`: JSON strings, already encoded)."""
        n = len(nodes)
        ev = self._event(event)
        if rnd is not None:
            rnd += self.round_offset
            self.max_round = max(self.max_round, rnd)
        known = self._name_ix
        try:
            ix = [known[x] for x in nodes]
        except KeyError:
            ix = [self._ix(known, self.names, x) for x in nodes]
        self.t.extend(t)
        self.node.extend(ix)
        self.event.extend([ev] * n)
        self.round.extend([NA if rnd is None else rnd] * n)
        self.rank.extend([NA] * n if ranks is None else ranks)
        self.world_size.extend([NA if world_size is None else world_size] * n)
        buf, ends = self.detail_buf, self.detail_end
        if details is None:
            ends.extend([len(buf)] * n)
        else:
            encoded = [d.encode() for d in details]
            start = len(buf)
            ends.extend([start + e for e in accumulate(map(len, encoded))])
            buf += b"".join(encoded)

    def __len__(self) -> int:
        return len(self.t)

    @property
    def rows(self) -> list[tuple]:
        """The events as tuples (t, node, event, round, rank, world_size, detail)."""
        def val(x):
            return None if x == NA else x
        def detail(i):
            return self.detail_buf[self.detail_end[i - 1] if i else 0:self.detail_end[i]].decode()
        return [(self.t[i], self.names[self.node[i]], self.kinds[self.event[i]], val(self.round[i]),
                 val(self.rank[i]), val(self.world_size[i]), detail(i)) for i in range(len(self))]

    def take_columns(self) -> dict:
        """The event columns in time order (stable), emptying the tracer as it goes: a long
        run's trace is large, it should not be held twice while the table is built."""
        t = np.array(self.t, dtype=np.float64)
        self.t = array("d")
        order = None
        if len(t) > 1 and not (np.diff(t) >= 0).all():   # the aggregate model writes ahead
            order = np.argsort(t, kind="stable")
            t = t[order]

        def ints(name):
            v = np.array(getattr(self, name), dtype=np.int64)
            setattr(self, name, array("q"))
            if order is not None:
                v = v[order]
            mask = v == NA
            v[mask] = 0
            return pd.arrays.IntegerArray(v, mask)

        def labels(name, values):
            codes = np.array(getattr(self, name), dtype=np.int32)
            setattr(self, name, array("i"))
            if order is not None:
                codes = codes[order]
            return _strings(pa.array(values, pa.large_string()).take(pa.array(codes)))

        cols = {"t": t}
        cols["node"] = labels("node", self.names)
        cols["event"] = labels("event", self.kinds)
        for c in ("round", "rank", "world_size"):
            cols[c] = ints(c)
        # the details: the buffer and its offsets are an Arrow string array as they are
        offsets = np.empty(len(self.detail_end) + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1:] = np.frombuffer(self.detail_end, dtype=np.int64) if len(self.detail_end) else []
        data = pa.py_buffer(self.detail_buf)         # no copy: Arrow keeps the bytearray
        self.detail_buf, self.detail_end = bytearray(), array("q")
        detail = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), data)
        if order is not None:
            detail = detail.take(pa.array(order))
        cols["detail"] = _strings(detail)
        return cols


def stamp(df: pd.DataFrame, scenario: str, seed: int) -> pd.DataFrame:
    df.insert(0, "schema_version", SCHEMA_VERSION)
    # one value on every row: a categorical holds it once (a long run has ~10^7 rows)
    df.insert(1, "scenario", pd.Categorical.from_codes(np.zeros(len(df), np.int8), [scenario])
              if len(df) > 1000 else scenario)
    df.insert(2, "seed", seed)
    return df


def events_table(rows, scenario: str, seed: int) -> pd.DataFrame:
    """The events table from a Tracer (columnar) or from row tuples (the real launcher)."""
    if isinstance(rows, Tracer):
        return stamp(pd.DataFrame(rows.take_columns()), scenario, seed)   # in time order
    df = pd.DataFrame(rows, columns=EVENT_COLUMNS)
    for name in df["event"].unique():
        check(name)
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


class _rows_of:
    """The rows of `column` where `mask` holds, sliced lazily (a 10^6-row subset of a string
    column need not be copied whole to be parsed)."""

    def __init__(self, column: pd.Series, mask: np.ndarray):
        self.column, self.pos = column, np.flatnonzero(mask)

    def __len__(self) -> int:
        return len(self.pos)

    def __getitem__(self, sl: slice) -> list:
        return self.column.iloc[self.pos[sl]].tolist()


def parse_details(texts, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    """`fields` of many events' JSON details as arrays (missing: None/NaN), parsed by pyarrow's
    reader a slice at a time: faster than json.loads per row, and little memory on long runs."""
    import io

    import pyarrow.json as pj
    out: dict[str, list] = {f: [] for f in fields}
    step = 1 << 17
    for i in range(0, len(texts), step):
        chunk = "\n".join(t if t else "{}" for t in texts[i:i + step]).encode()
        table = pj.read_json(io.BytesIO(chunk))
        n = table.num_rows
        for f in fields:
            col = (table.column(f).to_numpy(zero_copy_only=False) if f in table.column_names
                   else np.full(n, None, dtype=object))
            out[f].append(col)
    return {f: (np.concatenate(v) if v else np.zeros(0, dtype=object)) for f, v in out.items()}


def rounds_table(events: pd.DataFrame, round_ops: dict | None = None) -> pd.DataFrame:
    """One row per completed round: when, who, how fast, how much store traffic."""
    mask = (events["event"] == "rank_assigned").to_numpy()
    ra = events.loc[mask, ["t", "node", "round", "rank", "world_size"]]
    det = parse_details(_rows_of(events["detail"], mask), ("digest", "nnodes"))
    ra = ra.assign(_digest=det["digest"], _nn=det["nnodes"])
    # a round starts at its first member's join: each member's latest join before its rank
    # (a join's own round label is the round the node saw when it joined, which for c10d's
    # wait list is the round before the one it ends up in)
    rows = []
    if len(ra):
        joins = events.loc[events["event"] == "join", ["t", "node"]].astype({"t": float})
        ra = pd.merge_asof(ra.astype({"t": float}).reset_index().sort_values("t"),
                           joins.assign(_joined=joins["t"]).sort_values("t"),
                           on="t", by="node", direction="backward").set_index("index").sort_index()
    for rnd, grp in ra.groupby("round", sort=True):
        rnd = int(rnd)
        start = float(grp["_joined"].min()) if grp["_joined"].notna().any() else float(grp["t"].min())
        ranks = np.sort(grp["rank"].to_numpy(dtype=np.int64))
        nodes = grp["node"].tolist()
        ops, nbytes = (round_ops or {}).get(rnd, (0, 0))
        end_t = float(grp["t"].max())
        rows.append({
            "round": rnd,
            "start": start,
            "end": end_t,
            "latency": end_t - start,
            "nnodes": len(set(nodes)),
            "world_size": int(grp["world_size"].max()),
            "members": ",".join(sorted(set(nodes))),
            "consistent": bool(grp["_digest"].nunique(dropna=False) == 1
                               and grp["_nn"].nunique(dropna=False) == 1
                               and len(set(nodes)) == len(nodes)
                               and np.array_equal(ranks, np.arange(len(grp)))
                               and grp["_nn"].iloc[0] == len(grp)
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
                  scenario: str, seed: int, training: dict | None, spans: pd.DataFrame) -> pd.DataFrame:
    """One row of headline metrics; `training`: the training model's (ettr, goodput, ...);
    `spans`: the run's round spans (`rdzv_sim.training.round_spans`)."""
    mask = (events["event"] == "rank_assigned").to_numpy()
    lat = pd.to_numeric(pd.Series(parse_details(_rows_of(events["detail"], mask), ("latency",))["latency"]),
                        errors="coerce").dropna().to_numpy()
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
