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
import pyarrow as pa

from .events import check

SCHEMA_VERSION = 1
EVENT_COLUMNS = ["t", "node", "event", "round", "rank", "world_size", "detail"]
# a host's steps in a rendezvous that no table reads: what `outputs.events: lean` leaves out
# (its join, which starts a round in the rounds table, its rank, workers and leaving stay)
STEPS = frozenset({"rendezvous_start", "confirmed"})


def _strings(arr):
    """An Arrow string array as the pandas column type plain strings get (pandas 3: Arrow-backed
    `str`, no copy; before: Python objects)."""
    try:
        from pandas.core.arrays.string_arrow import ArrowStringArray
        return ArrowStringArray(arr, dtype=pd.StringDtype("pyarrow", na_value=np.nan))
    except (TypeError, ValueError, ImportError):
        return np.array(arr.to_pylist(), dtype=object)


NA = -(2 ** 63)                     # "no value" in the integer columns of the tracer


def nullable_int32(values: np.ndarray, missing: np.ndarray) -> pd.arrays.IntegerArray:
    """Round, rank and world size as pandas' nullable Int32 (5 bytes a row, not 9: rounds and
    ranks stay far below 2**31 even for a 100,000-GPU job)."""
    v = values.astype(np.int32)
    v[missing] = 0
    return pd.arrays.IntegerArray(v, missing)


def labels_of(codes: np.ndarray, values: list[str]) -> pd.Categorical:
    """A node or event column as a categorical: one small code a row instead of a string (a
    frontier run has 10^7 rows and a few thousand names); compares and groups like strings."""
    order = np.argsort(np.array(values, dtype=object), kind="stable")   # sorted categories:
    remap = np.empty(len(values), dtype=np.int32)                       # sorting by node or
    remap[order] = np.arange(len(values), dtype=np.int32)               # event sorts by name
    small = np.int8 if len(values) < 128 else np.int16 if len(values) < 2 ** 15 else np.int32
    return pd.Categorical.from_codes(remap[codes].astype(small),
                                     pd.Index([values[i] for i in order], dtype="str"))


def label_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A node or event column's codes and labels (object): a categorical's own (a run's
    tables), else factorized in sorted order (a table read from CSV)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), np.asarray(col.cat.categories, dtype=object)
    codes, labels = pd.factorize(col.astype(str), sort=True)
    return codes, np.asarray(labels, dtype=object)


def runs(keys: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of equal values in sorted `keys`: a numpy slice a group, where a
    pandas groupby builds a frame each (a frontier round has 10^4 members)."""
    cuts = (np.flatnonzero(np.diff(keys)) + 1).tolist()
    return list(zip([0, *cuts], [*cuts, len(keys)])) if len(keys) else []


# one encoder for every detail (json.dumps with options builds a new encoder per call)
_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def render_details(n: int, fields: dict) -> pa.LargeStringArray:
    """`n` JSON details (sorted keys, no spaces: the encoder's own form) from columns: each field
    one value for all or a numpy array of ints or floats, one a row. Arrow writes the numbers
    (shortest round-trip digits, as repr: `2` where Python writes `2.0`), no Python per row."""
    import pyarrow.compute as pc
    pieces, text = [], ""
    for i, key in enumerate(sorted(fields)):
        value = fields[key]
        text += ("{" if i == 0 else ",") + _encode(key) + ":"
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise ValueError(f"detail {key!r}: not a finite number (JSON has none)")
            pieces += [pa.scalar(text, pa.large_string()), pc.cast(pa.array(value), pa.large_string())]
            text = ""
        else:
            text += _encode(value)
    text += "}"
    if not pieces:
        return pa.repeat(pa.scalar(text, pa.large_string()), n)
    return pc.binary_join_element_wise(*pieces, pa.scalar(text, pa.large_string()),
                                       pa.scalar("", pa.large_string()))


@dataclass
class _Block:
    """Events recorded together: one event, round and world size for all (`record_many`), or
    one a row (single events, flushed), a time, node and rank per row, and their details as
    one Arrow string array."""
    t: np.ndarray
    node: np.ndarray              # int32 codes into Tracer.names
    event: int | np.ndarray
    round: int | np.ndarray       # NA: none
    world_size: int | np.ndarray
    rank: np.ndarray | None       # None: no rank
    detail: pa.Array


class Tracer:
    """Collects events as they happen and builds the events table once at the end. Single
    events go to typed arrays; many at once (`record_many`, what the aggregate fidelity writes
    a round at a time) stay numpy and Arrow blocks: a frontier run records ~10^7 events, and a
    Python object or string per row would cost more than the whole simulation."""

    def __init__(self, leave_out=frozenset()):
        self._new_rows()
        self.leave_out = frozenset(leave_out)     # event kinds not kept (listeners see them)
        self.blocks: list[_Block] = []
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

    def _new_rows(self) -> None:
        self.t = array("d")
        self.node = array("i")           # index into self.names
        self.event = array("i")          # index into self.kinds
        self.round = array("q")
        self.rank = array("q")
        self.world_size = array("q")
        # details as one UTF-8 buffer and end offsets (Arrow's layout: no object per row)
        self.detail_buf = bytearray()
        self.detail_end = array("q")

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
        if event in self.leave_out:
            self._tell(t, node, event, rnd, detail)
            return
        self.t.append(t)
        self.node.append(self._ix(self._name_ix, self.names, node))
        self.event.append(ev)
        self.round.append(NA if rnd is None else rnd)
        self.rank.append(NA if rank is None else rank)
        self.world_size.append(NA if world_size is None else world_size)
        if detail:
            self.detail_buf += _encode(detail).encode()
        self.detail_end.append(len(self.detail_buf))
        self._tell(t, node, event, rnd, detail)

    def _tell(self, t, node, event, rnd, detail) -> None:
        """The listeners hear every single event, kept or not, until one says it is done."""
        if self.listeners:
            self.listeners = [f for f in self.listeners if not f(t, node, event, rnd, detail)]

    def codes(self, nodes) -> np.ndarray:
        """The nodes' numbers in this trace (new names get one): what `record_many` takes in
        place of names, when a caller records the same nodes several times."""
        known = self._name_ix
        try:
            return np.fromiter(map(known.__getitem__, nodes), np.int32, len(nodes))
        except KeyError:
            return np.array([self._ix(known, self.names, x) for x in nodes], np.int32)

    def record_many(self, t, nodes, event, rnd=None, ranks=None, world_size=None, details=None,
                    fields=None):
        """One event for many nodes at once. `nodes`: names, or their `codes`; `t`: one time or
        one a node; `details`: JSON strings, already encoded, or `fields`: the details as
        columns (`render_details`)."""
        n = len(nodes)
        ev = self._event(event)
        if rnd is not None:
            rnd += self.round_offset
            self.max_round = max(self.max_round, rnd)
        if event in self.leave_out:
            return
        ix = (nodes if isinstance(nodes, np.ndarray) and nodes.dtype.kind in "iu"
              else self.codes(nodes))
        t = np.full(n, t, np.float64) if np.ndim(t) == 0 else np.asarray(t, np.float64)
        if fields is not None:
            detail = render_details(n, fields)
        elif details is not None:
            detail = pa.array(details, pa.large_string())
        else:
            detail = pa.repeat(pa.scalar("", pa.large_string()), n)
        self._flush_rows()
        self.blocks.append(_Block(t, ix, ev, NA if rnd is None else rnd,
                                  NA if world_size is None else world_size,
                                  None if ranks is None else np.asarray(ranks, np.int64), detail))

    def _flush_rows(self) -> None:
        """The single events recorded so far become a block (keeps the order of recording)."""
        if not len(self.t):
            return
        offsets = np.empty(len(self.detail_end) + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1:] = np.frombuffer(self.detail_end, dtype=np.int64)
        detail = pa.LargeStringArray.from_buffers(len(self.t), pa.py_buffer(offsets),
                                                  pa.py_buffer(self.detail_buf))   # no copy
        self.blocks.append(_Block(np.array(self.t, np.float64), np.array(self.node, np.int32),
                                  np.array(self.event, np.int32), np.array(self.round, np.int64),
                                  np.array(self.world_size, np.int64),
                                  np.array(self.rank, np.int64), detail))
        self._new_rows()

    def __len__(self) -> int:
        return len(self.t) + sum(len(b.t) for b in self.blocks)

    @property
    def rows(self) -> list[tuple]:
        """The events as tuples (t, node, event, round, rank, world_size, detail), in the order
        they were recorded."""
        self._flush_rows()
        def val(x):
            return None if x == NA else int(x)
        out = []
        for b in self.blocks:
            n = len(b.t)
            col = {c: (getattr(b, c) if isinstance(getattr(b, c), np.ndarray)
                       else np.full(n, getattr(b, c))) for c in ("event", "round", "world_size")}
            rank = b.rank if b.rank is not None else np.full(n, NA)
            det = b.detail.to_pylist()
            out += [(float(b.t[i]), self.names[b.node[i]], self.kinds[col["event"][i]],
                     val(col["round"][i]), val(rank[i]), val(col["world_size"][i]), det[i])
                    for i in range(n)]
        return out

    def take_columns(self) -> dict:
        """The event columns in time order (stable), emptying the tracer as it goes: a long
        run's trace is large, it should not be held twice while the table is built."""
        self._flush_rows()
        blocks, self.blocks = self.blocks, []
        sizes = [len(b.t) for b in blocks]

        def column(get, dtype):
            parts = [np.broadcast_to(np.asarray(get(b), dtype), (k,)) for b, k in zip(blocks, sizes)]
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        t = column(lambda b: b.t, np.float64)
        order = None
        if len(t) > 1 and not (np.diff(t) >= 0).all():   # the aggregate model writes ahead
            order = np.argsort(t, kind="stable")
            t = t[order]

        def pick(v):
            return v if order is None else v[order]

        def ints(get):
            v = pick(column(lambda b: NA if get(b) is None else get(b), np.int64))
            return nullable_int32(v, v == NA)

        cols = {"t": t,
                "node": labels_of(pick(column(lambda b: b.node, np.int32)), self.names),
                "event": labels_of(pick(column(lambda b: b.event, np.int32)), self.kinds),
                "round": ints(lambda b: b.round), "rank": ints(lambda b: b.rank),
                "world_size": ints(lambda b: b.world_size)}
        detail = pa.chunked_array([b.detail for b in blocks], pa.large_string())
        del blocks
        detail = detail.combine_chunks() if detail.num_chunks else pa.array([], pa.large_string())
        if order is not None:
            detail = detail.take(pa.array(order))
        cols["detail"] = _strings(detail)
        return cols


def stamp(df: pd.DataFrame, scenario: str, seed: int) -> pd.DataFrame:
    # one value on every row: a long table (~10^7 rows) holds it once, as a categorical
    def same(value):
        if len(df) <= 1000:
            return value
        return pd.Categorical.from_codes(np.zeros(len(df), np.int8), [value])
    df.insert(0, "schema_version", same(SCHEMA_VERSION))
    df.insert(1, "scenario", same(scenario))
    df.insert(2, "seed", same(seed))
    return df


def events_table(rows, scenario: str, seed: int) -> pd.DataFrame:
    """The events table from a Tracer (columnar) or from row tuples (the real launcher)."""
    if isinstance(rows, Tracer):
        return stamp(pd.DataFrame(rows.take_columns()), scenario, seed)   # in time order
    df = pd.DataFrame(rows, columns=EVENT_COLUMNS)
    for name in df["event"].unique():
        check(name)
    df = df.sort_values("t", kind="stable").reset_index(drop=True)
    for c in ("node", "event"):                  # the same dtypes as a simulated run's
        codes, values = pd.factorize(df[c].astype(str), sort=True)
        df[c] = labels_of(codes, list(values))
    for c in ("round", "rank", "world_size"):
        v = pd.to_numeric(df[c]).astype("Float64")
        df[c] = nullable_int32(v.fillna(0).to_numpy(np.int64), v.isna().to_numpy())
    return stamp(df, scenario, seed)


def store_load_table(load: dict, bin_s: float, scenario: str, seed: int) -> pd.DataFrame:
    """Store operations and bytes per time bin (only bins with traffic are listed)."""
    keys = sorted(load)
    df = pd.DataFrame({"t": [k * bin_s for k in keys], "bin_s": bin_s,
                       "ops": [load[k][0] for k in keys], "bytes": [load[k][1] for k in keys]})
    return stamp(df, scenario, seed)


def details(df: pd.DataFrame) -> list[dict]:
    return [json.loads(d) if d else {} for d in df["detail"]]


def parse_details(column: pd.Series, mask: np.ndarray, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    """`fields` of the JSON details of the rows where `mask` holds, as arrays (missing: None or
    NaN). pyarrow's reader parses them a slice at a time, fed straight from the Arrow column
    (no Python string per row): faster than json.loads, and little memory on long runs."""
    import io

    import pyarrow.compute as pc
    import pyarrow.json as pj
    try:
        texts = pa.array(column.array)
    except (TypeError, pa.ArrowInvalid):              # an object column (a table read from CSV)
        texts = pa.array(column.fillna("").astype(str).tolist(), pa.large_string())
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    texts = texts.filter(pa.array(np.asarray(mask, dtype=bool)))
    out: dict[str, list] = {f: [] for f in fields}
    step = 1 << 17
    for i in range(0, len(texts), step):
        chunk = texts.slice(i, step)
        chunk = pc.if_else(pc.or_kleene(pc.is_null(chunk), pc.equal(chunk, "")), "{}", chunk)
        lines = pc.binary_join_element_wise(chunk, pa.scalar("", chunk.type),
                                            pa.scalar("\n", chunk.type))
        wide = pa.types.is_large_string(lines.type)
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
        offsets = offsets[lines.offset:lines.offset + len(lines) + 1]
        data = memoryview(lines.buffers()[2])[int(offsets[0]):int(offsets[-1])]
        table = pj.read_json(io.BytesIO(data))
        n = table.num_rows
        for f in fields:
            col = (table.column(f).to_numpy(zero_copy_only=False) if f in table.column_names
                   else np.full(n, None, dtype=object))
            out[f].append(col)
    return {f: (np.concatenate(v) if v else np.zeros(0, dtype=object)) for f, v in out.items()}


RANK_FIELDS = ("digest", "nnodes", "latency")     # what the tables read of rank_assigned


def rank_details(events: pd.DataFrame) -> dict[str, np.ndarray]:
    """The fields of every rank_assigned event's detail the tables read, parsed once."""
    return parse_details(events["detail"], (events["event"] == "rank_assigned").to_numpy(),
                         RANK_FIELDS)


def rounds_table(events: pd.DataFrame, round_ops: dict | None = None,
                 det: dict | None = None) -> pd.DataFrame:
    """One row per completed round: when, who, how fast, how much store traffic. `det`: the
    events' `rank_details`, when the caller has them already."""
    mask = (events["event"] == "rank_assigned").to_numpy()
    ra = events.loc[mask, ["t", "node", "round", "rank", "world_size"]]
    det = rank_details(events) if det is None else det
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
    # one slice of numpy arrays a round (a frontier round has 10^4 members: no frame a group)
    rnd_all = ra["round"].to_numpy(dtype=np.int64) if len(ra) else np.zeros(0, np.int64)
    order = np.argsort(rnd_all, kind="stable")               # by round, in event order within
    rnd_all = rnd_all[order]
    t = ra["t"].to_numpy(dtype=float)[order]
    joined = (ra["_joined"].to_numpy(dtype=float, na_value=np.nan)[order] if "_joined" in ra
              else np.full(len(t), np.nan))
    codes, labels = label_codes(ra["node"])
    codes = codes[order]
    names_sorted = pd.Index(labels).is_monotonic_increasing
    rank = ra["rank"].to_numpy(dtype=np.int64)[order] if len(ra) else np.zeros(0, np.int64)
    ws = ra["world_size"].to_numpy(dtype=float, na_value=np.nan)[order]
    digest = np.asarray(ra["_digest"].to_numpy(), dtype=object)[order]
    nn = np.asarray(ra["_nn"].to_numpy())[order]
    for s, e in runs(rnd_all):
        rnd, n = int(rnd_all[s]), e - s
        j = joined[s:e]
        start = float(np.nanmin(j)) if (~np.isnan(j)).any() else float(t[s:e].min())
        end_t = float(t[s:e].max())
        members = np.unique(codes[s:e])
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
