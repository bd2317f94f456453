"""`Tracer`: what every runtime records events through, kept columnar until the table is built."""
from __future__ import annotations

import json
from array import array
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from ..events import check, check_detail, fields as event_fields
from .columns import NA, labels_of, nullable_int32
from .details import RANK_FIELDS
from .memory import give_back

RANK = "rank_assigned"

# one encoder for every detail (json.dumps with options builds a new encoder per call)
_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def render_details(n: int, fields: dict) -> pa.LargeStringArray:
    """`n` JSON details (sorted keys, no spaces: the encoder's own form) from columns: each field
    one value for all or a numpy array of ints or floats, one a row. Arrow writes the numbers
    (shortest round-trip digits, as repr: `2` where Python writes `2.0`), no Python per row."""
    out = _render(n, fields)
    return pa.repeat(pa.scalar(out, pa.large_string()), n) if isinstance(out, str) else out


def _render(n: int, fields: dict) -> pa.LargeStringArray | str:
    """`render_details`, or the one detail of every row when no field varies."""
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
        return text
    return pc.binary_join_element_wise(*pieces, pa.scalar(text, pa.large_string()),
                                       pa.scalar("", pa.large_string()))


def _strings(arr):
    """An Arrow string array as the pandas column type plain strings get (pandas 3: Arrow-backed
    `str`, no copy; before: Python objects)."""
    try:
        from pandas.core.arrays.string_arrow import ArrowStringArray
        return ArrowStringArray(arr, dtype=pd.StringDtype("pyarrow", na_value=np.nan))
    except (TypeError, ValueError, ImportError):
        return np.array(arr.to_pylist(), dtype=object)


@dataclass
class _Block:
    """Events recorded together: one event, round and world size for all (`record_many`), or
    one a row (single events, flushed), a time, node and rank per row, and their details as
    one Arrow string array, or one string when every row has the same (held once: a round's
    members leave for one reason)."""
    t: np.ndarray
    node: np.ndarray              # int32 codes into Tracer.names
    event: int | np.ndarray
    round: int | np.ndarray       # NA: none
    world_size: int | np.ndarray
    rank: np.ndarray | None       # None: no rank
    detail: pa.Array | str
    # RANK_FIELDS of its rank_assigned rows, in order, as recorded (None: came as text)
    ranked: dict | None = None


class Tracer:
    """Collects events as they happen and builds the events table once at the end. Single
    events go to typed arrays; many at once (`record_many`, what the aggregate fidelity writes
    a round at a time) stay numpy and Arrow blocks: a frontier run records ~10^7 events, and a
    Python object or string per row would cost more than the whole simulation."""

    def __init__(self, leave_out=frozenset(), facts_on_hosts: bool = False):
        self._new_rows()
        self.leave_out = frozenset(leave_out)     # event kinds not kept (listeners see them)
        # a round's facts (`record_many`'s `facts`) on each host's row too (outputs.trace: hosts)
        self.facts_on_hosts = facts_on_hosts
        self.blocks: list[_Block] = []
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.fields: list[frozenset] = []        # each kind's detail fields (`rdzv_sim.events`)
        self._name_ix: dict[str, int] = {}
        self._kind_ix: dict[str, int] = {}
        # a requeued job starts on a fresh store at round 0 again; the tables number rounds
        # across requeues (the job's attempts), so this offset is added to every round
        self.round_offset = 0
        # called with each event as it is recorded, until one returns True (a fault that
        # waits for one: rdzv_sim.scenario.faults.After); empty, recording costs nothing more
        self.listeners: list = []
        self.max_round = -1
        # the tables read a few fields of every rank_assigned detail: kept as values when
        # recorded, so a run's tables need not parse millions of details back
        # (`rank_fields`, set by take_columns; None where some came as text)
        self.rank_fields: dict[str, np.ndarray] | None = None

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
        self.ranked: dict[str, list] = {f: [] for f in RANK_FIELDS}

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
            self.fields.append(event_fields(event))
        return i

    def record(self, t, node, event, rnd=None, rank=None, world_size=None, detail=None):
        ev = self._event(event)                   # first: a refused event writes nothing
        if detail and not detail.keys() <= self.fields[ev]:
            check_detail(self.kinds[ev], detail)  # refused, with the event's fields named
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
        if event == RANK:
            for f, v in self.ranked.items():
                v.append(detail.get(f) if detail else None)
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
                    fields=None, facts=None):
        """One event for many nodes at once. `nodes`: names, or their `codes`; `t`: one time or
        one a node; `details`: JSON strings, already encoded, or `fields`: the details as
        columns (`render_details`); `facts`: fields the same for all, recorded once on the
        round's round_closed row by the caller, and here only with `facts_on_hosts`."""
        n = len(nodes)
        every = fields if facts is None else {**fields, **facts}
        if self.facts_on_hosts:
            fields = every
        ev = self._event(event)
        if fields is not None and not fields.keys() <= self.fields[ev]:
            check_detail(self.kinds[ev], fields)
        if rnd is not None:
            rnd += self.round_offset
            self.max_round = max(self.max_round, rnd)
        if event in self.leave_out:
            return
        ix = (nodes if isinstance(nodes, np.ndarray) and nodes.dtype.kind in "iu"
              else self.codes(nodes))
        t = np.full(n, t, np.float64) if np.ndim(t) == 0 else np.asarray(t, np.float64)
        ranked = None
        if fields is not None:
            detail = _render(n, fields)
            if event == RANK:
                ranked = {f: _values(every.get(f), n) for f in RANK_FIELDS}
        elif details is not None:
            detail = pa.array(details, pa.large_string())
        else:
            detail = ""
        self._flush_rows()
        self.blocks.append(_Block(t, ix, ev, NA if rnd is None else rnd,
                                  NA if world_size is None else world_size,
                                  None if ranks is None else np.asarray(ranks, np.int64), detail,
                                  ranked))

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
                                  np.array(self.rank, np.int64), detail,
                                  {f: _values(v, len(v)) for f, v in self.ranked.items()}))
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
            det = [b.detail] * n if isinstance(b.detail, str) else b.detail.to_pylist()
            out += [(float(b.t[i]), self.names[b.node[i]], self.kinds[col["event"][i]],
                     val(col["round"][i]), val(rank[i]), val(col["world_size"][i]), det[i])
                    for i in range(n)]
        return out

    def take_columns(self) -> dict:
        """The event columns in time order (stable), emptying the tracer as it goes: a long
        run's trace is large, so each block's part of a column is dropped once it is read,
        and no column passes through a wider type than its own. Sets `rank_fields` to the
        rank_assigned rows' RANK_FIELDS in that order."""
        self._flush_rows()
        blocks, self.blocks = self.blocks, []
        sizes = [len(b.t) for b in blocks]
        self.rank_fields = self._ranked(blocks)
        t = self._column(blocks, sizes, "t", np.float64)
        order = None
        if len(t) > 1 and not (t[1:] >= t[:-1]).all():   # the aggregate model writes ahead
            order = np.argsort(t, kind="stable")
            if len(t) < 2 ** 31:
                order = order.astype(np.int32)           # held through every column: half
            t = t[order]

        def pick(v):
            return v if order is None else v[order]

        def labels(attr, values):
            small = np.int8 if len(values) < 128 else np.int16 if len(values) < 2 ** 15 else np.int32
            return labels_of(pick(self._column(blocks, sizes, attr, small)), values)

        def ints(attr):
            values, missing = self._ints(blocks, sizes, attr)
            return nullable_int32(pick(values), pick(missing))

        # the details first (their sort holds two copies: the fewer other columns then, the
        # better), then the narrow ones, each block's part freed and its pages given back
        detail = _strings(self._details(blocks, sizes, order))
        give_back()
        cols = {"t": t, "node": labels("node", self.names), "event": labels("event", self.kinds)}
        give_back()
        for c in ("round", "rank", "world_size"):
            cols[c] = ints(c)
            give_back()
        cols["detail"] = detail
        return cols

    @staticmethod
    def _column(blocks, sizes, attr, dtype) -> np.ndarray:
        """`attr` of every block in recording order (a block's one value broadcast), each
        block's own array dropped once copied."""
        out = np.empty(sum(sizes), dtype)
        i = 0
        for b, k in zip(blocks, sizes):
            out[i:i + k] = getattr(b, attr)
            setattr(b, attr, None)
            i += k
        return out

    @staticmethod
    def _ints(blocks, sizes, attr) -> tuple[np.ndarray, np.ndarray]:
        """An integer column as int32 values and a missing mask (NA or None: missing)."""
        values, missing = np.empty(sum(sizes), np.int32), np.empty(sum(sizes), bool)
        i = 0
        for b, k in zip(blocks, sizes):
            v = getattr(b, attr)
            if v is None or np.ndim(v) == 0:
                gone = v is None or v == NA
                values[i:i + k], missing[i:i + k] = 0 if gone else v, gone
            else:
                gone = v == NA
                values[i:i + k], missing[i:i + k] = np.where(gone, 0, v), gone
            setattr(b, attr, None)
            i += k
        return values, missing

    @staticmethod
    def _details(blocks, sizes, order) -> pa.LargeStringArray:
        """The detail column in `order`: the blocks' distinct pieces (a block's array, or its
        one string, once for all the blocks that share it) gathered by row. The pieces are
        freed as they are combined; what is sorted is int32 positions, not strings."""
        pieces, shared = [], {}
        at = np.empty(sum(sizes), np.int32 if sum(sizes) < 2 ** 30 else np.int64)
        i = n = 0
        for b, k in zip(blocks, sizes):
            if isinstance(b.detail, str):
                if b.detail not in shared:
                    shared[b.detail] = len(shared)
                at[i:i + k] = -1 - shared[b.detail]        # placed after the arrays, below
            else:
                at[i:i + k] = np.arange(n, n + k)
                pieces.append(b.detail)
                n += k
            b.detail = None
            i += k
        at[at < 0] = n - 1 - at[at < 0]
        pieces.append(pa.array(list(shared), pa.large_string()))
        table = pa.chunked_array(pieces, pa.large_string())
        del pieces
        table = table.combine_chunks()
        give_back()                           # the pieces' pages, before the rows are put in order
        if order is None and n == len(at):      # in order already, no detail shared
            return table
        return table.take(pa.array(at if order is None else at[order]))

    def _ranked(self, blocks) -> dict | None:
        """The blocks' rank_assigned fields in the table's order: the global sort is stable,
        so among themselves the rank rows keep the order a stable sort of their own times
        gives."""
        code = self._kind_ix.get(RANK)
        times, got = [], {f: [] for f in RANK_FIELDS}
        for b in blocks if code is not None else ():
            is_rank = b.event == code
            if not np.any(is_rank):
                continue
            if b.ranked is None:
                return None
            times.append(b.t if np.ndim(is_rank) == 0 else b.t[is_rank])
            for f in RANK_FIELDS:
                got[f].append(b.ranked[f])
        if not times:
            return {f: np.zeros(0, float if f != "digest" else object) for f in RANK_FIELDS}
        at = np.argsort(np.concatenate(times), kind="stable")
        return {f: np.concatenate(v)[at] for f, v in got.items()}


def _values(value, n: int) -> np.ndarray:
    """A field's values for `n` rows: numbers as floats (NaN: none), anything else as objects."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        return value.astype(np.float64)
    if isinstance(value, list):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return np.array(value, np.float64)
        return np.fromiter(value, dtype=object, count=len(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return np.full(n, value, np.float64)
    return np.full(n, value, dtype=object)
