"""When each round trained, with whom, and what ended it: read from the events table."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..trace import as_objects, label_codes, runs
from ..trace.chunks import chunks
from ..trace.columns import asof_by
from ..events import Event

# events that end a member's training: it left the round, crashed, paused or its agent exited
STOPS = (Event.ROUND_LEFT, Event.FAULT_CRASH, Event.AGENT_EXIT, Event.FAULT_PAUSE)
COLUMNS = ["round", "t0", "t1", "hosts", "members", "end", "reason", "crashed"]


def _next_stop(node: np.ndarray, t0: np.ndarray, stop_node: np.ndarray, stop_t: np.ndarray) -> np.ndarray:
    """For each (node, t0): the index of its node's first stop at or after t0, -1 if none
    (`asof_by`, forward: of stops tied in time, the first in event order)."""
    return asof_by(node, t0, stop_node, stop_t, forward=True)


def round_spans(events: pd.DataFrame, duration: float, rows: int | None = None) -> pd.DataFrame:
    """One row per round that trained: from its last member's workers starting (`t0`) to its
    first member leaving, crashing, pausing or exiting (`t1`: a hung collective trains
    nothing), its members in rank order, what ended it (`end`: the stop event, or `run_end`;
    `reason`: round_left's reason or the crash's cause) and the members that crashed at `t1`.
    Two folds over the events (`chunks`, about `rows` rows at a time): the rounds' starts,
    then each member's next stop."""
    fold = SpansFold(duration)
    for _, part in chunks(events, rows):
        fold.starts(part)
    for _, part in chunks(events, rows):
        fold.stops(part)
    return fold.table()


_NO_MEMBERS = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0))


@dataclass
class _Span:
    """A round's workers: when the last started, its members (codes) and their ranks."""
    t0: float = -np.inf
    codes: list = field(default_factory=list)
    ranks: list = field(default_factory=list)


class SpansFold:
    """`round_spans` as two folds: feed every slice to `starts`, then every slice again to
    `stops`, then read `table`. A round ends at its members' first stop at or after its start,
    so the first slice that holds a member's ends it (every later stop is later): what the
    fold holds is each round's members, never the rows."""

    def __init__(self, duration: float):
        self.duration = duration
        self.spans: dict[int, _Span] = {}
        self.labels: np.ndarray | None = None
        self.rows: list[dict] = []
        self._waiting: list[int] | None = None       # rounds not yet started, latest t0 last
        self._pending = _NO_MEMBERS                  # (round, place, node, t0) of open members

    def starts(self, events: pd.DataFrame) -> None:
        is_start = (events["event"] == Event.WORKERS_STARTED).to_numpy()
        if not is_start.any():
            return
        node, labels = label_codes(events["node"])
        if self.labels is None or len(labels) > len(self.labels):
            self.labels = labels
        at = np.flatnonzero(is_start)
        rnd = events["round"].iloc[at].to_numpy(dtype=np.int64, na_value=-1)
        rank = events["rank"].iloc[at].to_numpy(dtype=np.int32, na_value=-1)
        t = events["t"].to_numpy(dtype=float)[at]
        order = np.argsort(rnd, kind="stable")
        rnd, rank, t, who = rnd[order], rank[order], t[order], node[at][order]
        for s, e in runs(rnd):
            sp = self.spans.setdefault(int(rnd[s]), _Span())
            sp.t0 = max(sp.t0, float(t[s:e].max()))      # it trains once its last member does
            sp.codes.append(who[s:e].copy())                 # (not views of the slice's)
            sp.ranks.append(rank[s:e].copy())

    def stops(self, events: pd.DataFrame) -> None:
        if self._waiting is None:                      # the starts are all in: members in rank order
            for sp in self.spans.values():
                codes, ranks = np.concatenate(sp.codes), np.concatenate(sp.ranks)
                sp.codes, sp.ranks = codes[np.argsort(ranks, kind="stable")], None
            self._waiting = sorted(self.spans, key=lambda r: self.spans[r].t0, reverse=True)
        if not len(events):
            return
        t_all = events["t"].to_numpy(dtype=float)
        self._start_waiting(float(t_all[-1]))
        rnd, place, who, t0 = self._pending
        if not len(rnd):
            return
        node_all, _ = label_codes(events["node"])
        ev_codes, kinds = label_codes(events["event"])
        # the stops' details stay in the table (a long run has millions): only those that end
        # a member's training are read
        rows = np.flatnonzero(np.isin(ev_codes, [i for i, k in enumerate(kinds) if k in STOPS]))
        found = _next_stop(who, t0, node_all[rows], t_all[rows])
        hit = np.flatnonzero(found >= 0)
        if not len(hit):
            return
        row = rows[found[hit]]
        stop_t, what = t_all[row], kinds[ev_codes[row]]
        text = as_objects(events["detail"].iloc[row])
        by = np.argsort(rnd[hit], kind="stable")               # a slice of numpy a round
        hit, stop_t, what, text = hit[by], stop_t[by], what[by], text[by]
        ended = []
        for s, e in runs(rnd[hit]):
            r = int(rnd[hit[s]])
            n = len(self.spans[r].codes)
            st, wh, tx = np.full(n, np.nan), np.full(n, None, dtype=object), np.full(n, None, dtype=object)
            at = place[hit[s:e]]
            st[at], wh[at], tx[at] = stop_t[s:e], what[s:e], text[s:e]
            self._close(r, st, wh, tx)
            ended.append(r)
        keep = ~np.isin(rnd, ended)
        self._pending = (rnd[keep], place[keep], who[keep], t0[keep])

    def _start_waiting(self, until: float) -> None:
        """Rounds whose training started by `until` wait for their members' stops."""
        new = []
        while self._waiting and self.spans[self._waiting[-1]].t0 <= until:
            new.append(self._waiting.pop())
        if not new:
            return
        parts = [self._pending]
        for r in new:
            sp = self.spans[r]
            n = len(sp.codes)
            parts.append((np.full(n, r, np.int64), np.arange(n), sp.codes, np.full(n, sp.t0)))
        self._pending = tuple(np.concatenate(c) for c in zip(*parts))

    def _close(self, r: int, st=None, what=None, texts=None) -> None:
        """Round `r`'s row, from its members' first stops (`st`, NaN: none; the stops' kinds
        and details): it trained until the first of them, or the run's end."""
        sp = self.spans.pop(r)
        nodes = self.labels[sp.codes]
        if st is None or np.isnan(st).all() or float(np.nanmin(st)) >= self.duration:
            t1, end, reason, crashed = self.duration, "run_end", "", ()
        else:
            t1 = float(np.nanmin(st))
            first = np.flatnonzero(st == t1).tolist()              # in rank order
            crashed = tuple(nodes[j] for j in first if what[j] == Event.FAULT_CRASH)
            # a crash names the cause; else the first stop's own reason
            pick = next(j for j in first if what[j] == Event.FAULT_CRASH) if crashed else first[0]
            end = str(what[pick])
            text = texts[pick]
            d = json.loads(text) if isinstance(text, str) and text else {}
            reason = str(d.get("cause", d.get("reason", "")))
        if t1 <= sp.t0:
            return
        self.rows.append({"round": r, "t0": sp.t0, "t1": t1, "hosts": len(sp.codes),
                          "members": tuple(nodes.tolist()), "end": end, "reason": reason,
                          "crashed": crashed})

    def table(self) -> pd.DataFrame:
        if self._waiting is None:
            self.stops(pd.DataFrame(columns=["t"]))
        for r in list(self.spans):                     # those none of whose members stopped
            self._close(r)
        self._pending = _NO_MEMBERS
        rows = sorted(self.rows, key=lambda x: x["round"])
        return pd.DataFrame(rows, columns=COLUMNS)
