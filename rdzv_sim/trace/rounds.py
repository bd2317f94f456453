"""The rounds table, folded over the events a slice at a time (`chunks`): what it keeps is a
round's members and ranks and a few numbers, and each node's latest join, never the rows."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..events import Event
from ..protocols.recovery import IN_PLACE_EVENTS
from .chunks import chunks
from .columns import asof_by, distinct, label_codes, runs
from .details import closed_counts, latencies, parse_details, round_facts
from .ranked import Ranked, ranked_members

JOINS = (Event.JOIN, *IN_PLACE_EVENTS)
COLUMNS = ["round", "start", "end", "latency", "nnodes", "world_size", "members", "consistent", "holes",
           "formed_by", "store_ops", "store_bytes"]
RENDEZVOUS = "rendezvous"                # formed_by of a store round; a world made in place: its event
_NAN = "nan"                            # a missing number, as one key of a set


@dataclass
class _Round:
    """What a round's rank rows said so far, in event order."""
    joined: float = math.inf             # its members' earliest latest join (inf: none)
    first_t: float = math.inf            # its earliest rank (the start without a join)
    end: float = -math.inf
    codes: list = field(default_factory=list)
    ranks: list = field(default_factory=list)
    world_sizes: set = field(default_factory=set)
    digests: set = field(default_factory=set)
    nnodes: set = field(default_factory=set)
    first_nn: object = None              # the first row's nnodes (None: its round's fact)
    without_facts: bool = False          # a row that left digest and nnodes to the round's facts


def consistent(digests: set, nns: set, nnodes: float, members: int, ranks: np.ndarray, world_sizes: set,
               closed: int | None = None) -> bool:
    """A round is consistent when its members agree (one membership digest, one node count,
    one world size) and its ranks are 0..nnodes-1 once each. Ranks not given at all are holes,
    not a disagreement, where the round's closing filled its nnodes seats (`closed`): members
    lost before they learned their rank (the world fails at its first collective and re-forms;
    `holes` counts them). Without a closing on record every rank must be given."""
    n = len(ranks)
    if not (len(digests) == 1 and len(nns) == 1 and len(world_sizes) == 1 and members == n):
        return False
    if holes(nnodes, n, closed) == 0 and nnodes != n:
        return False
    r = np.sort(ranks)
    return bool(n == 0 or (r[0] >= 0 and r[-1] < nnodes and (np.diff(r) > 0).all()))


def holes(nnodes: float, given: int, closed: int | None) -> int:
    """The seats of a round that no member took: its closing filled `closed` seats, its members
    agree it has nnodes, `given` learned their rank (0 where the closing is not on record or
    says otherwise)."""
    return int(nnodes - given) if closed is not None and closed == nnodes and nnodes > given else 0


class RoundsFold:
    """Feed it the events' slices in order (`feed`), then read the rounds table (`table`), each
    round's ranked members (`ranked`) and every rank's latency (`latencies`). A rank row's
    fields it does not carry (digest, nnodes: `outputs.trace: rounds`) are its round's facts,
    read from the round_closed rows wherever they fall."""

    def __init__(self):
        self.rounds: dict[int, _Round] = {}
        self.facts: dict[int, dict] = {}
        self.closed: dict[int, int] = {}              # round -> the seats its closing filled
        self.in_place: dict[int, str] = {}            # rounds a recovery in place made -> its event
        self.last_join: np.ndarray = np.zeros(0)      # by node code: its latest join (NaN: none)
        self.labels: np.ndarray | None = None
        self._latencies: list[np.ndarray] = []

    def feed(self, events: pd.DataFrame) -> None:
        node, labels = label_codes(events["node"])
        if self.labels is None or len(labels) > len(self.labels):
            self.labels = labels
        if len(self.last_join) < len(labels):
            self.last_join = np.concatenate([self.last_join, np.full(len(labels) - len(self.last_join), np.nan)])
        kind = events["event"]
        mask = (kind == Event.RANK_ASSIGNED).to_numpy()
        is_join = kind.isin(JOINS).to_numpy()
        t = events["t"].to_numpy(dtype=float)
        self.facts.update(round_facts(events))
        self.closed.update(closed_counts(events))
        made = events.loc[kind.isin(IN_PLACE_EVENTS), ["round", "event"]].dropna().drop_duplicates("round")
        for rnd, how in zip(made["round"].astype(int), made["event"].astype(str)):
            self.in_place.setdefault(rnd, how)
        if mask.any():
            self._ranks(events, mask, is_join, t, node)
        joins = np.flatnonzero(is_join)
        if len(joins):                                     # each node's last join of the slice
            last = len(joins) - 1 - np.unique(node[joins][::-1], return_index=True)[1]
            self.last_join[node[joins[last]]] = t[joins[last]]

    def _ranks(self, events, mask, is_join, t, node) -> None:
        joined = _latest_join(t, node, mask, is_join)
        at = np.flatnonzero(mask)
        earlier = self.last_join[node[at]]                   # a join in an earlier slice
        joined = np.where(np.isnan(joined), earlier, joined)
        got = parse_details(events["detail"], mask, ("digest", "nnodes"))
        nn = pd.to_numeric(pd.Series(got["nnodes"]), errors="coerce").to_numpy(np.float64, na_value=np.nan)
        digest = got["digest"]
        if digest.dtype != object:                           # no row carried one: NaN, as None
            digest = np.full(len(digest), None, dtype=object)
        rnd = events["round"].iloc[at].to_numpy(dtype=np.int64, na_value=-1)
        lat = latencies(events, mask)
        if self.in_place:                                    # a world made in place met at no store
            lat = lat[~np.isin(rnd, np.fromiter(self.in_place, np.int64, len(self.in_place)))]
        self._latencies.append(lat)
        order = np.argsort(rnd, kind="stable")               # by round, in event order within
        rnd, t, joined, codes = rnd[order], t[at][order], joined[order], node[at][order]
        rank = events["rank"].iloc[at].to_numpy(dtype=np.int32, na_value=-1)[order]
        ws = events["world_size"].iloc[at].to_numpy(dtype=float, na_value=np.nan)[order]
        digest, nn = np.asarray(digest, dtype=object)[order], nn[order]
        for s, e in runs(rnd):
            r = self.rounds.setdefault(int(rnd[s]), _Round())
            j = joined[s:e]
            if (~np.isnan(j)).any():
                r.joined = min(r.joined, float(np.nanmin(j)))
            r.first_t = min(r.first_t, float(t[s:e].min()))
            r.end = max(r.end, float(t[s:e].max()))
            r.codes.append(codes[s:e].copy())                # (not views: the slice's own
            r.ranks.append(rank[s:e].copy())                 # arrays go with the slice)
            w = ws[s:e]
            r.world_sizes.update(np.unique(w[~np.isnan(w)]).tolist())
            missing = np.isnan(nn[s:e])                      # its round's facts fill both
            if len(r.codes) == 1:                            # the round's first row
                r.first_nn = None if missing[0] else float(nn[s])
            r.without_facts |= bool(missing.any())
            r.digests.update(pd.unique(digest[s:e][~missing]).tolist())
            r.nnodes.update(np.unique(nn[s:e][~missing]).tolist())

    def table(self, round_ops: dict | None = None) -> pd.DataFrame:
        labels = self.labels if self.labels is not None else np.zeros(0, dtype=object)
        names_sorted = pd.Index(labels).is_monotonic_increasing
        rows = []
        for rnd in sorted(self.rounds):
            r = self.rounds[rnd]
            if r.codes is None:
                raise RuntimeError("RoundsFold.table after ranked: the members were handed over")
            codes, rank = _one(r.codes), _one(r.ranks)
            r.codes, r.ranks = [codes], [rank]               # (one array a round from now on)
            n = len(codes)
            facts = self.facts.get(rnd, {})
            digests, nns, first_nn = set(r.digests), set(r.nnodes), r.first_nn   # (numbers, no NaN)
            if r.without_facts:
                digests.add(facts.get("digest"))
                nns.add(_key(float(facts.get("nnodes", math.nan))))
            if first_nn is None:
                first_nn = float(facts.get("nnodes", math.nan))
            start = r.joined if r.joined < math.inf else r.first_t
            members = distinct(codes, len(labels))
            names = labels[members].tolist()
            ops, nbytes = (round_ops or {}).get(rnd, (0, 0))
            rows.append({
                "round": rnd,
                "start": start,
                "end": r.end,
                "latency": r.end - start,
                "nnodes": len(members),
                "world_size": int(max(r.world_sizes)),
                "members": ",".join(names if names_sorted else sorted(names)),
                "consistent": consistent(digests, nns, first_nn, len(members), rank, r.world_sizes,
                                         self.closed.get(rnd)),
                "holes": holes(first_nn, n, self.closed.get(rnd)),
                "formed_by": self.in_place.get(rnd, RENDEZVOUS),
                "store_ops": int(ops),
                "store_bytes": int(nbytes),
            })
        return pd.DataFrame(rows, columns=COLUMNS)

    def ranked(self):
        """Every round's ranked members (`Ranked`), handed over: the fold keeps no members
        after it (call `table` first)."""
        out = {}
        for rnd, r in self.rounds.items():
            codes, rank = _one(r.codes).astype(np.int32, copy=False), _one(r.ranks)
            r.codes = r.ranks = None
            out[rnd] = ranked_members(codes, rank, len(self.labels))
        return Ranked(self.labels, out)

    def latencies(self) -> np.ndarray:
        """Every store round's rank rows' latency (NaN: none), in event order: a world a
        recovery in place made is no rendezvous (the summary counts those apart)."""
        return np.concatenate(self._latencies) if self._latencies else np.zeros(0)


def _one(parts: list) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _key(x: float):
    return _NAN if isinstance(x, float) and math.isnan(x) else x


def _latest_join(t: np.ndarray, node: np.ndarray, rank: np.ndarray, join: np.ndarray) -> np.ndarray:
    """For each rank row (mask `rank`, in row order): the time of its node's latest join row
    (mask `join`) at or before it, NaN if none (`asof_by`, backward)."""
    ranked, joins = np.flatnonzero(rank), np.flatnonzero(join)
    i = asof_by(node[ranked], t[ranked], node[joins], t[joins], forward=False)
    return np.where(i >= 0, t[joins[np.maximum(i, 0)]] if len(joins) else np.nan, np.nan)


def fold_rounds(events: pd.DataFrame, rows: int | None = None) -> RoundsFold:
    """`RoundsFold` fed `events` about `rows` rows at a time (None: at once)."""
    fold = RoundsFold()
    for _, part in chunks(events, rows):
        fold.feed(part)
    return fold


def rounds_table(events: pd.DataFrame, round_ops: dict | None = None, det=None) -> pd.DataFrame:
    """One row per completed round: when, who, how fast, how much store traffic. A round starts
    at its first member's join: each member's latest join before its rank (a join's own round
    label is the round the node saw when it joined, which for c10d's wait list is the round
    before the one it ends up in); an in-place recovery (no store round) starts its round as a
    join does. (`det`: accepted as before, no longer needed.)"""
    return fold_rounds(events).table(round_ops)


__all__ = ["JOINS", "RoundsFold", "fold_rounds", "rounds_table"]
