"""Each round's ranked members, as codes: what the rank changes and shard placement read."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import distinct, label_codes, runs
from ..events import Event

_NONE = np.zeros(0, dtype=np.int64)


@dataclass
class Ranked:
    """The rank_assigned events by round: each round's nodes (codes into `names`) and their
    node ranks, in rank order; a node once, at its last rank. Codes, not names: a frontier
    round has 10^4 members, and sets of names cost a Python object each."""
    names: np.ndarray                 # node labels (object)
    rounds: dict                      # round -> (codes, ranks)

    def of(self, rnd) -> tuple[np.ndarray, np.ndarray]:
        return self.rounds.get(int(rnd), (_NONE, _NONE))


def ranked_by_round(events: pd.DataFrame) -> Ranked:
    """Every round's nodes that learned their rank in it, in rank order (`Ranked`)."""
    ranked = events.loc[(events["event"] == Event.RANK_ASSIGNED).to_numpy(), ["node", "round", "rank"]]
    codes, names = label_codes(ranked["node"])
    rnd, rank = ranked["round"].to_numpy(dtype=np.int64), ranked["rank"].to_numpy(dtype=np.int64)
    order = np.lexsort((rank, rnd))                       # by round, then rank (stable)
    rnd, rank, codes = rnd[order], rank[order], codes[order].astype(np.int64)
    out = {}
    for a, b in runs(rnd):
        out[int(rnd[a])] = _once(codes[a:b], rank[a:b], len(names))
    return Ranked(names, out)


def ranked_members(codes: np.ndarray, rank: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A round's rank rows (node codes in [0, size), ranks; in event order) as `Ranked` holds
    them: in rank order (stable), a node once."""
    o = np.argsort(rank, kind="stable")
    return _once(codes[o], rank[o], size)


def _once(c: np.ndarray, r: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Rank-ordered rows with a node once: at its first place, with its last rank."""
    if len(distinct(c, size)) < len(c):
        _, first = np.unique(c, return_index=True)
        _, last = np.unique(c[::-1], return_index=True)
        o = np.argsort(first, kind="stable")
        c, r = c[first][o], r[len(c) - 1 - last][o]
    return c, r
