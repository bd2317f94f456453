"""`Shortlist`: the owners of a fixed set of keys for any subset of a fixed set of nodes.

A job's rounds are mostly the same hosts: a host or a rack leaves, a spare comes. Each key's
`depth` best nodes of every host the job has are scored once; a round's owner of a key is the
first of them that is in the round, found with one array lookup a key. Keys whose shortlist
holds no member of the subset (a large part of the job gone) are scored against the subset.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable

import numpy as np

from . import kernels
from .placement import Placement


class Shortlist:
    """Owners of `keys` (unweighted) under `Placement(subset, seed=seed)` for any `subset` of
    `nodes`, given as a mask over `nodes` in canonical order (`self.nodes`)."""

    def __init__(self, keys, nodes: Iterable[Hashable], seed: int = 0, depth: int = 8):
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
            raise ValueError(f"depth must be a positive int, got {depth!r}")
        self.universe = Placement(nodes, seed=seed)
        self._kh = kernels.hash_keys(keys, seed)
        self._hashes = self.universe.node_hashes
        n = len(self.universe)
        self.depth = min(int(depth), n)
        if self.universe._exact_ties:
            # two ids with one 64-bit hash: their scores tie, and only the exact order of the
            # whole placement ranks them; every query scores its subset
            self._top = np.empty((len(self._kh), 0), dtype=np.int32)
            return
        d = self.depth

        def top(s: np.ndarray) -> np.ndarray:
            inv = ~s                               # ascending ~s is descending s
            cand = (np.argpartition(inv, d - 1, axis=1)[:, :d] if d < n
                    else np.broadcast_to(np.arange(n), s.shape))
            order = np.take_along_axis(inv, cand, axis=1).argsort(axis=1)
            return np.take_along_axis(cand, order, axis=1).astype(np.int32)
        parts = kernels.chunked(self._kh, self._hashes, top) if len(self._kh) else []
        self._top = np.concatenate(parts) if parts else np.empty((0, d), dtype=np.int32)

    @property
    def nodes(self) -> tuple:
        """Every node, in canonical order: what a mask's positions mean."""
        return self.universe.nodes

    def mask(self, subset: Iterable[Hashable]) -> np.ndarray:
        """The mask of `subset` over `nodes`."""
        on = np.zeros(len(self.universe), dtype=bool)
        on[[self.universe.index_of(n) for n in subset]] = True
        return on

    def owner_indexes(self, present: np.ndarray) -> np.ndarray:
        """Each key's owner among the nodes `present` marks (a bool mask over `nodes`), as an
        index into `nodes`."""
        present = np.asarray(present, dtype=bool)
        if present.shape != (len(self.universe),):
            raise ValueError(f"present must be a bool mask of {len(self.universe)} nodes, "
                             f"got shape {present.shape}")
        if not present.any():
            raise ValueError("present marks no node: a placement needs at least one")
        k = len(self._kh)
        out = np.full(k, -1, dtype=np.intp)
        rows = np.arange(k)
        for j in range(self._top.shape[1]):
            c = self._top[rows, j]
            hit = present[c]
            out[rows[hit]] = c[hit]
            rows = rows[~hit]
            if not len(rows):
                return out
        if len(rows):                              # shortlist exhausted: score the subset
            cols = np.flatnonzero(present)
            parts = kernels.chunked(self._kh[rows], self._hashes[cols], lambda s: s.argmax(axis=1))
            out[rows] = cols[np.concatenate(parts)]
        return out

    def owners(self, subset: Iterable[Hashable]) -> np.ndarray:
        """Each key's owner among `subset` (ids)."""
        return self.universe._ids_arr[self.owner_indexes(self.mask(subset))]
