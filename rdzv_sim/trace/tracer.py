"""`Tracer`: what every runtime records events through, kept columnar until the table is built."""
from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..events import LATENCY, check, check_detail, fields as event_fields
from .columns import NA, labels_of, nullable_int32
from .memory import give_back

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


@dataclass
class _Block:
    """Events recorded together: one event, round and world size for all (`record_many`), or
    one a row (single events, flushed), a time, node and rank per row, a latency (one for all
    or one a row: NaN, none) and the details' codes into `Tracer.details` (one for all where
    every row has the same: a round's members leave for one reason)."""
    t: np.ndarray
    node: np.ndarray              # int32 codes into Tracer.names
    event: int | np.ndarray
    round: int | np.ndarray       # NA: none
    world_size: int | np.ndarray
    rank: np.ndarray | None       # None: no rank
    latency: float | np.ndarray
    detail: int | np.ndarray      # int32 codes into Tracer.details


def _part(b: _Block, m: np.ndarray) -> _Block:
    """The rows of block `b` where `m` holds."""
    def cut(v):
        return v[m] if isinstance(v, np.ndarray) else v
    return _Block(b.t[m], b.node[m], cut(b.event), cut(b.round), cut(b.world_size),
                  None if b.rank is None else b.rank[m], cut(b.latency), cut(b.detail))


class Tracer:
    """Collects events as they happen and builds the events table once at the end. Single
    events go to typed arrays; many at once (`record_many`, what the aggregate fidelity writes
    a round at a time) stay numpy blocks. A detail is kept once, as text, and each row holds
    its number (a frontier run records ~10^7 events and a few thousand distinct details: a
    string a row would cost more than the whole simulation)."""

    def __init__(self, leave_out=frozenset(), facts_on_hosts: bool = False):
        self._new_rows()
        self.leave_out = frozenset(leave_out)     # event kinds not kept (listeners see them)
        # a round's facts (`record_many`'s `facts`) on each host's row too (outputs.trace: hosts)
        self.facts_on_hosts = facts_on_hosts
        self.blocks: list[_Block] = []
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.fields: list[frozenset] = []        # each kind's detail fields (`rdzv_sim.events`)
        self.timed: list[bool] = []               # each kind's latency a column (LATENCY)
        self.details: list[str] = [""]           # each distinct detail once ("": none)
        self._name_ix: dict[str, int] = {}
        self._kind_ix: dict[str, int] = {}
        self._detail_ix: dict[str, int] = {"": 0}
        # a requeued job starts on a fresh store at round 0 again; the tables number rounds
        # across requeues (the job's attempts), so this offset is added to every round
        self.round_offset = 0
        # called with each event as it is recorded, until one returns True (a fault that
        # waits for one: rdzv_sim.scenario.faults.After); empty, recording costs nothing more
        self.listeners: list = []
        self.max_round = -1
        self.sink = None                          # a `Spill`: rows before the clock go to disk

    def finished(self, now: float) -> None:
        """The runtime's clock is at `now` and it never records behind it: with a sink, once
        enough rows are held, those before `now` are written out."""
        if self.sink is not None and len(self) >= self.sink.rows:
            self.sink.write(now)

    def _new_rows(self) -> None:
        self.t = array("d")
        self.node = array("i")           # index into self.names
        self.event = array("i")          # index into self.kinds
        self.round = array("q")
        self.rank = array("q")
        self.world_size = array("q")
        self.latency = array("d")
        self.detail = array("i")         # index into self.details

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
            self.timed.append(event in LATENCY)
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
        if self.timed[ev] and detail and "latency" in detail:
            value = detail["latency"]
            self.latency.append(math.nan if value is None else value)
            text = _encode({k: v for k, v in detail.items() if k != "latency"}) if len(detail) > 1 else ""
        else:
            self.latency.append(math.nan)
            text = _encode(detail) if detail else ""
        self.detail.append(self._ix(self._detail_ix, self.details, text))
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

    def record_many(self, t, nodes, event, rnd=None, ranks=None, world_size=None, fields=None,
                    facts=None):
        """One event for many nodes at once. `nodes`: names, or their `codes`; `t`: one time or
        one a node; `fields`: the details as columns (`render_details`); `facts`: fields a
        round's facts give (recorded once on the round's round_closed row by the caller), here
        only with `facts_on_hosts`."""
        n = len(nodes)
        if self.facts_on_hosts and facts is not None:
            fields = {**(fields or {}), **facts}
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
        latency = math.nan
        if self.timed[ev] and fields is not None and "latency" in fields:
            fields = dict(fields)
            value = fields.pop("latency")
            latency = value.astype(np.float64) if isinstance(value, np.ndarray) else float(value)
        detail = self._intern(_render(n, fields)) if fields else 0
        self._flush_rows()
        self.blocks.append(_Block(t, ix, ev, NA if rnd is None else rnd,
                                  NA if world_size is None else world_size,
                                  None if ranks is None else np.asarray(ranks, np.int64),
                                  latency, detail))

    def _intern(self, texts: pa.Array | str) -> int | np.ndarray:
        """The details' numbers (new texts get one): Arrow finds a block's distinct texts, and
        only those pass through Python."""
        if isinstance(texts, str):
            return self._ix(self._detail_ix, self.details, texts)
        import pyarrow.compute as pc
        enc = pc.dictionary_encode(pc.fill_null(texts, ""))
        texts = enc.dictionary.to_pylist()
        known = list(map(self._detail_ix.get, texts))          # (a lookup in C a text)
        for i in (i for i, k in enumerate(known) if k is None):
            known[i] = self._ix(self._detail_ix, self.details, texts[i])
        return np.array(known, np.int32)[enc.indices.to_numpy(zero_copy_only=False)]

    def _flush_rows(self) -> None:
        """The single events recorded so far become a block (keeps the order of recording)."""
        if not len(self.t):
            return
        self.blocks.append(_Block(np.array(self.t, np.float64), np.array(self.node, np.int32),
                                  np.array(self.event, np.int32), np.array(self.round, np.int64),
                                  np.array(self.world_size, np.int64),
                                  np.array(self.rank, np.int64), np.array(self.latency, np.float64),
                                  np.array(self.detail, np.int32)))
        self._new_rows()

    def __len__(self) -> int:
        return len(self.t) + sum(len(b.t) for b in self.blocks)

    @property
    def rows(self) -> list[tuple]:
        """The events as tuples (t, node, event, round, rank, world_size, detail), in the order
        they were recorded, each detail with all its fields (latency too), as a runtime says
        them: what `events_table` takes."""
        self._flush_rows()
        def val(x):
            return None if x == NA else int(x)
        out = []
        for b in self.blocks:
            n = len(b.t)
            col = {c: (getattr(b, c) if isinstance(getattr(b, c), np.ndarray)
                       else np.full(n, getattr(b, c))) for c in ("event", "round", "world_size",
                                                                   "latency", "detail")}
            rank = b.rank if b.rank is not None else np.full(n, NA)
            for i in range(n):
                kind = self.kinds[col["event"][i]]
                det = self.details[col["detail"][i]]
                lat = float(col["latency"][i])
                if not math.isnan(lat):
                    det = _encode({**(json.loads(det) if det else {}), "latency": lat})
                out.append((float(b.t[i]), self.names[b.node[i]], kind, val(col["round"][i]),
                            val(rank[i]), val(col["world_size"][i]), det))
        return out

    def take_columns(self) -> dict:
        """The event columns in time order (stable), emptying the tracer as it goes: a long
        run's trace is large, so each block's part of a column is dropped once it is read,
        and no column passes through a wider type than its own."""
        self._flush_rows()
        blocks, self.blocks = self.blocks, []
        return self._columns(blocks, pandas=True)

    def _columns(self, blocks: list[_Block], pandas: bool) -> dict:
        """`blocks`' rows as columns in time order (stable): pandas' (categoricals, nullable
        ints) or raw (the labels' codes; ints and a missing mask), each block's arrays dropped
        as they are copied."""
        sizes = [len(b.t) for b in blocks]
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
            codes = pick(self._column(blocks, sizes, attr, small if pandas else np.int32))
            return labels_of(codes, values) if pandas else codes

        def ints(attr):
            values, missing = self._ints(blocks, sizes, attr)
            return nullable_int32(pick(values), pick(missing)) if pandas else (pick(values), pick(missing))

        cols = {"t": t, "node": labels("node", self.names), "event": labels("event", self.kinds)}
        for c in ("round", "rank", "world_size"):
            cols[c] = ints(c)
            give_back()
        cols["latency"] = pick(self._column(blocks, sizes, "latency", np.float64))
        cols["detail"] = labels("detail", self.details)
        give_back()
        return cols

    def take_before(self, before: float) -> dict:
        """The rows recorded so far with a time before `before`, as raw columns in time order
        (`_columns`), taken out of the tracer: what a runtime that never records behind its
        clock has finished with."""
        self._flush_rows()
        going, staying = [], []
        for b in self.blocks:
            m = b.t < before
            if m.all():
                going.append(b)
            elif m.any():
                going.append(_part(b, m))
                staying.append(_part(b, ~m))
            else:
                staying.append(b)
        self.blocks = staying
        return self._columns(going, pandas=False)

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
