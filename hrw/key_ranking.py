"""`KeyRanking`: many node sets ranked for one key, each node hashed once.

A job ranks its members for its run id at every round, and the members are mostly the hosts of
the round before: a `Placement` per round hashes every member's id again. Here each node's score
for the key is kept across calls, so a round costs a lookup and a sort.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from . import kernels, spec
from .placement import Placement, _id_bytes


class KeyRanking:
    """The nodes of any set, best first for `key` (unweighted): `Placement(nodes, seed=seed)
    .rank_order(key)`, with each node's score computed the first time the node is seen."""

    __slots__ = ("key", "seed", "_key_hash", "_score")

    def __init__(self, key: Hashable, seed: int = 0):
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        self.key, self.seed = key, int(seed)
        self._key_hash = np.uint64(spec.hash64(key, self.seed))
        self._score: dict = {}

    def __len__(self) -> int:
        """How many nodes have a score kept."""
        return len(self._score)

    def order(self, nodes: Iterable[Hashable]) -> list:
        """`nodes`, best first."""
        nodes = list(nodes)
        if not nodes:
            raise ValueError("KeyRanking.order needs at least one node")
        known = self._score
        try:                                       # a round's hosts are mostly known: one pass
            s = np.fromiter(map(known.__getitem__, nodes), np.uint64, len(nodes))
        except KeyError:
            new = [n for n in dict.fromkeys(nodes) if n not in known]
            s = kernels.fmix64_(kernels.hash_keys(_id_bytes(new), self.seed) ^ self._key_hash)
            known.update(zip(new, s.tolist()))
            s = np.fromiter(map(known.__getitem__, nodes), np.uint64, len(nodes))
        order = np.argsort(~s, kind="stable")
        best = s[order]
        if (best[1:] == best[:-1]).any():
            # a repeated node (refused there) or two ids whose 64-bit hashes collide (equal
            # scores sort next to each other): the placement's exact path decides
            return Placement(nodes, seed=self.seed).rank_order(self.key)
        ids = np.fromiter(nodes, dtype=object, count=len(nodes))   # no Python loop per node
        return ids[order].tolist()
