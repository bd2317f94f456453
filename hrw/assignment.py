"""`Assignment`: the owners of a fixed set of keys, updated incrementally as nodes change.

Removing a node re-scores only the keys it owned; adding one scores each key once against
the newcomer and compares with the stored winner. Nothing rescores every key-node pair.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from . import kernels
from .placement import Placement


@dataclass(frozen=True)
class Change:
    """What one update did: which keys moved (indexes into the key list)."""

    moved: np.ndarray

    @property
    def count(self) -> int:
        return int(len(self.moved))


class Assignment:
    """Owners of `keys` under a `Placement`, kept current through `update`, `add`, `remove`."""

    def __init__(self, keys, placement: Placement):
        self.keys = keys
        self.placement = placement
        self._kh = kernels.hash_keys(keys, placement.seed)
        self._recompute_all()

    def _recompute_all(self) -> None:
        p = self.placement
        idx = p.owner_indexes(None, key_hashes=self._kh)
        self._owner = p.node_hashes[idx]                       # owner identified by node hash
        self._raw = self._raw_scores(self._owner)
        self._prim = self._primary(self._raw, p, idx)

    def _raw_scores(self, node_hashes, rows=slice(None)) -> np.ndarray:
        return kernels.fmix64_(np.bitwise_xor(self._kh[rows], node_hashes))

    @staticmethod
    def _primary(raw: np.ndarray, p: Placement, idx: np.ndarray) -> np.ndarray | None:
        if p._weights is None:
            return None
        return kernels.weighted(raw, p._weights[idx])

    # --- reading -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._kh)

    def owner_indexes(self) -> np.ndarray:
        """Indexes into `placement.nodes` of each key's owner."""
        return np.searchsorted(self.placement.node_hashes, self._owner)

    def owners(self) -> np.ndarray:
        return self.placement._ids_arr[self.owner_indexes()]

    def owner_hashes(self) -> np.ndarray:
        """Each key's owner as its node hash (uint64): cheap to compare across placements."""
        return self._owner.copy()

    def load(self) -> dict:
        """Keys owned by each node (every node listed, zero included)."""
        counts = np.bincount(self.owner_indexes(), minlength=len(self.placement))
        return dict(zip(self.placement.nodes, counts.tolist()))

    # --- changing ------------------------------------------------------------------
    def update(self, new: Placement) -> Change:
        """Move to `new`: removals re-score their keys, additions challenge every key once."""
        old = self.placement
        if new.seed != old.seed:
            raise ValueError("an Assignment cannot change its placement's seed")
        before = self._owner.copy()
        self.placement = new
        if (self._reweighted(old, new) or new._exact_ties
                or (old._weights is None) != (new._weights is None)):
            self._recompute_all()          # weights of staying nodes changed: no shortcut
        else:
            # who left and who came, by node hash (owners are kept as hashes); without exact
            # ties each hash is there once, and the sorted hashes need no unique pass
            once = not old._exact_ties
            self._apply_removals(np.setdiff1d(old.node_hashes, new.node_hashes, assume_unique=once))
            self._apply_additions(new, np.setdiff1d(new.node_hashes, old.node_hashes,
                                                    assume_unique=once))
        return Change(moved=np.flatnonzero(before != self._owner))

    @staticmethod
    def _reweighted(old: Placement, new: Placement) -> bool:
        if old._given is None and new._given is None:
            return False
        ow, nw = old.weights or {}, new.weights or {}
        return any(ow.get(n, 1.0) != nw.get(n, 1.0) for n in set(old.nodes) & set(new.nodes))

    def remove(self, nodes: Iterable) -> Change:
        return self.update(self.placement.without(nodes))

    def add(self, nodes: Iterable, weights=None) -> Change:
        return self.update(self.placement.with_nodes(nodes, weights))

    def _apply_removals(self, gone_h: np.ndarray) -> None:
        if not len(gone_h):
            return
        rows = np.flatnonzero(np.isin(self._owner, gone_h))
        if len(rows) == 0:
            return
        new = self.placement
        idx = new.owner_indexes(None, key_hashes=self._kh[rows])
        self._owner[rows] = new.node_hashes[idx]
        self._raw[rows] = self._raw_scores(self._owner[rows], rows)
        if self._prim is not None:
            self._prim[rows] = kernels.weighted(self._raw[rows], new._weights[idx])

    def _apply_additions(self, new: Placement, added_h: np.ndarray) -> None:
        if self._prim is None and len(added_h) > 1:
            self._challenge(added_h)
            return
        for h in added_h:                  # in canonical order (by hash)
            i = int(np.searchsorted(new.node_hashes, h))
            raw = self._raw_scores(h)
            if self._prim is None:
                win = (raw > self._raw) | ((raw == self._raw) & (h < self._owner))
            else:
                prim = kernels.weighted(raw, new._weights[i])
                win = (prim > self._prim) | ((prim == self._prim) & (
                    (raw > self._raw) | ((raw == self._raw) & (h < self._owner))))
                self._prim[win] = prim[win]
            self._owner[win] = h
            self._raw[win] = raw[win]

    def _challenge(self, added_h: np.ndarray) -> None:
        """Unweighted: every key's best newcomer (one score block a cache-sized run of keys),
        then one challenge of its owner. The same as the newcomers one at a time: a key's raw
        scores are equal only for equal node hashes, so the best of all wins either way."""
        def best(s):
            j = s.argmax(axis=1)           # ties: the first, the smaller hash (sorted)
            return j, s[np.arange(len(s)), j]
        parts = kernels.chunked(self._kh, added_h, best)
        j = np.concatenate([p[0] for p in parts])
        raw = np.concatenate([p[1] for p in parts])
        h = added_h[j]
        win = (raw > self._raw) | ((raw == self._raw) & (h < self._owner))
        self._owner[win] = h[win]
        self._raw[win] = raw[win]
