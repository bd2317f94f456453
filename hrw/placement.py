"""`Placement`: an immutable set of (weighted) nodes that owns keys by HRW."""
from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

from . import kernels, spec


def _check_weights(nodes: Sequence, weights) -> list[float] | None:
    if weights is None:
        return None
    if isinstance(weights, Mapping):
        missing = [n for n in nodes if n not in weights]
        if missing:
            raise ValueError(f"weights has no entry for nodes {missing[:5]}")
        weights = [weights[n] for n in nodes]
    weights = list(weights)
    if len(weights) != len(nodes):
        raise ValueError(f"got {len(weights)} weights for {len(nodes)} nodes")
    for n, w in zip(nodes, weights):
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)):
            raise TypeError(f"weight of node {n!r} must be a number, got {type(w).__name__}")
        if not math.isfinite(w) or w <= 0:
            raise ValueError(f"weight of node {n!r} must be finite and positive, got {w!r}")
    return [float(w) for w in weights]


def _id_bytes(nodes: list) -> list[bytes]:
    return ([n.encode("utf-8") for n in nodes] if all(type(n) is str for n in nodes)
            else [spec.to_bytes(n) for n in nodes])


def _objects(values: list) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def _refuse_duplicates(nodes: list, raw: list) -> None:
    if len(set(raw)) != len(raw):
        seen, dup = set(), []
        for n, b in zip(nodes, raw):
            (dup.append(n) if b in seen else seen.add(b))
        raise ValueError(f"duplicate node ids: {dup[:5]}")


class Placement:
    """Nodes (str, int or bytes ids), optional weights and a seed; answers who owns a key.

    Nodes are kept in the spec's canonical order (node hash, then id bytes), so the result
    never depends on the order they were given in.
    """

    __slots__ = ("seed", "_ids_arr", "_raw_arr", "_nodes_t", "_hashes", "_given", "_weights",
                 "_index_map", "_exact_ties")

    def __init__(self, nodes: Iterable[Hashable], weights=None, seed: int = 0):
        nodes = list(nodes)
        if not nodes:
            raise ValueError("Placement needs at least one node")
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        ws = _check_weights(nodes, weights)
        raw = _id_bytes(nodes)
        _refuse_duplicates(nodes, raw)
        self._setup(_objects(nodes), _objects(raw), kernels.hash_keys(raw, seed),
                    None if ws is None else np.array(ws), int(seed))

    def _setup(self, ids: np.ndarray, raw: np.ndarray, hashes: np.ndarray, ws: np.ndarray | None,
               seed: int) -> None:
        """Nodes whose id bytes and hashes are known (checked, no repeats), put in canonical
        order: what a new placement and one derived from another (`with_nodes`, `without`:
        only the new nodes hashed) share. Ids and bytes are object arrays: deriving a
        placement of 10^4 nodes moves pointers, with no Python per node."""
        order = np.argsort(hashes, kind="stable")
        ranked = hashes[order]
        self._exact_ties = bool((ranked[1:] == ranked[:-1]).any())   # 64-bit collision:
        if self._exact_ties:                                        # sort exactly
            order = np.array(sorted(range(len(ids)), key=lambda i: (int(hashes[i]), raw[i])),
                             dtype=np.intp)
        self.seed = seed
        self._ids_arr = ids[order]
        self._raw_arr = raw[order]
        self._nodes_t = None            # the ids as a tuple, built when first asked
        self._hashes = ranked if not self._exact_ties else hashes[order]
        self._given = None if ws is None else ws[order]
        # equal weights own exactly as unweighted (spec), so they take the faster path
        self._weights = (None if ws is None or (len(ws) and (ws == ws[0]).all())
                         else self._given)
        self._index_map = None          # built when first asked: most placements never are

    # --- introspection -------------------------------------------------------------
    @property
    def nodes(self) -> tuple:
        """Node ids in canonical order."""
        if self._nodes_t is None:
            self._nodes_t = tuple(self._ids_arr.tolist())
        return self._nodes_t

    @property
    def node_hashes(self) -> np.ndarray:
        return self._hashes

    @property
    def weights(self) -> dict | None:
        return None if self._given is None else dict(zip(self.nodes, self._given.tolist()))

    def __len__(self) -> int:
        return len(self._ids_arr)

    @property
    def _index(self) -> dict:
        """Canonical id bytes -> position in canonical order."""
        if self._index_map is None:
            self._index_map = {b: j for j, b in enumerate(self._raw_arr.tolist())}
        return self._index_map

    def __contains__(self, node) -> bool:
        try:
            return spec.to_bytes(node) in self._index
        except (TypeError, ValueError):
            return False

    def __repr__(self) -> str:
        kind = "weighted" if self._weights is not None else "uniform"
        return f"Placement({len(self)} nodes, {kind}, seed={self.seed})"

    def index_of(self, node) -> int:
        try:
            return self._index[spec.to_bytes(node)]
        except KeyError:
            raise KeyError(f"node {node!r} is not in this placement") from None

    def _check_k(self, k: int) -> int:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"k must be an int, got {type(k).__name__}")
        if not 1 <= k <= len(self):
            raise ValueError(f"k={k} must be between 1 and the node count {len(self)}")
        return int(k)

    # --- one key -------------------------------------------------------------------
    def _row(self, key) -> np.ndarray:
        s = np.bitwise_xor(self._hashes, np.uint64(spec.hash64(key, self.seed)))
        return kernels.fmix64_(s)[None, :]

    def owner(self, key):
        """The node that owns `key`."""
        return self._ids_arr[int(kernels.best(self._row(key), self._weights)[0])]

    def top_k(self, key, k: int, *, domains: Mapping | None = None) -> list:
        """The k best nodes for `key`, best first (replicas: the first is the owner).

        With `domains` (node -> failure domain, see `hrw.failure_domains`), at most one node
        per domain: nodes are taken in score order, skipping any whose domain is taken.
        """
        k = self._check_k(k)
        if domains is None:
            idx = kernels.ranked(self._row(key), self._weights, k, self._exact_ties)[0]
            return self._ids_arr[idx].tolist()
        return self._spread(key, k, domains)

    def _spread(self, key, k: int, domains: Mapping) -> list:
        missing = [n for n in self.nodes if n not in domains]
        if missing:
            raise ValueError(f"domains has no entry for nodes {missing[:5]}")
        n_domains = len({domains[n] for n in self.nodes})
        if k > n_domains:
            raise ValueError(f"k={k} replicas cannot be spread over {n_domains} failure domains")
        chosen, used = [], set()
        for node in self.rank_order(key):
            d = domains[node]
            if d not in used:
                used.add(d)
                chosen.append(node)
                if len(chosen) == k:
                    break
        return chosen

    def rank_order(self, key) -> list:
        """Every node, best first: a permutation that depends on the key and the node set only."""
        n = len(self)
        idx = kernels.ranked(self._row(key), self._weights, n, self._exact_ties)[0]
        return self._ids_arr[idx].tolist()

    def elect(self, key):
        """A leader for `key` (its owner): every caller with the same nodes agrees."""
        return self.owner(key)

    # --- many keys -----------------------------------------------------------------
    def owner_indexes(self, keys, k: int = 1, *, key_hashes: np.ndarray | None = None) -> np.ndarray:
        """Indexes into `nodes` of each key's owner (shape (K,)) or k best (shape (K, k))."""
        k = self._check_k(k)
        kh = kernels.hash_keys(keys, self.seed) if key_hashes is None else key_hashes
        if len(kh) == 0:
            return np.empty((0,) if k == 1 else (0, k), dtype=np.intp)
        if k == 1:
            parts = kernels.chunked(kh, self._hashes, lambda s: kernels.best(s, self._weights))
        else:
            parts = kernels.chunked(
                kh, self._hashes, lambda s: kernels.ranked(s, self._weights, k, self._exact_ties)
            )
        return np.concatenate(parts)

    def owners(self, keys, k: int = 1) -> np.ndarray:
        """Owner ids of many keys (vectorised, chunked): shape (K,) for k=1, else (K, k)."""
        return self._ids_arr[self.owner_indexes(keys, k)]

    # --- changes -------------------------------------------------------------------
    def with_nodes(self, nodes: Iterable, weights=None) -> "Placement":
        """A new placement with `nodes` added (weights required if this one is weighted); only
        the new nodes are hashed."""
        nodes = list(nodes)
        new_w = _check_weights(nodes, weights)
        if self._given is not None and new_w is None:
            raise ValueError("this placement is weighted: give weights for the new nodes")
        raw = _id_bytes(nodes)
        _refuse_duplicates(nodes, raw)
        hashes = kernels.hash_keys(raw, self.seed)
        if np.isin(hashes, self._hashes).any():          # equal ids hash equally
            dup = [n for n, b in zip(nodes, raw) if b in self._index]
            if dup:
                raise ValueError(f"duplicate node ids: {dup[:5]}")
        ws = None
        if self._given is not None or new_w is not None:
            old_w = self._given if self._given is not None else np.ones(len(self))
            ws = np.concatenate([old_w, np.array(new_w, dtype=float)])
        return self._derived(np.concatenate([self._ids_arr, _objects(nodes)]),
                             np.concatenate([self._raw_arr, _objects(raw)]),
                             np.concatenate([self._hashes, hashes]), ws)

    def without(self, nodes: Iterable) -> "Placement":
        """A new placement with `nodes` removed; only they are hashed (to find them)."""
        nodes = list(nodes)
        raw = _id_bytes(nodes)
        # found by hash (no index of every node built), checked by id bytes
        pos = np.minimum(np.searchsorted(self._hashes, kernels.hash_keys(raw, self.seed)),
                         len(self) - 1).tolist()
        keep = np.ones(len(self), dtype=bool)
        keep[[i if self._raw_arr[i] == b else self.index_of(n)
              for n, b, i in zip(nodes, raw, pos)]] = False
        if not keep.any():
            raise ValueError("cannot remove every node of a placement")
        return self._derived(self._ids_arr[keep], self._raw_arr[keep], self._hashes[keep],
                             None if self._given is None else self._given[keep])

    def _derived(self, ids: np.ndarray, raw: np.ndarray, hashes: np.ndarray, ws) -> "Placement":
        p = Placement.__new__(Placement)
        p._setup(ids, raw, hashes, ws, self.seed)
        return p

    def moved(self, other: "Placement", keys) -> np.ndarray:
        """Boolean mask of the keys whose owner differs between this placement and `other`."""
        if other.seed != self.seed:
            raise ValueError("placements with different seeds are not comparable")
        kh = kernels.hash_keys(keys, self.seed)
        a = self._ids_arr[self.owner_indexes(keys, key_hashes=kh)]
        b = other._ids_arr[other.owner_indexes(keys, key_hashes=kh)]
        return a != b
