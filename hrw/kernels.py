"""Vectorised numpy kernels of hrw spec v1 (uint64 arithmetic, wrapping multiplies)."""
from __future__ import annotations

import numpy as np
import xxhash

from . import spec

U64 = np.uint64
_C1, _C2 = U64(spec.FMIX_C1), U64(spec.FMIX_C2)
_S33 = U64(33)
_TABLE = np.array(spec.LOG2_TABLE, dtype=np.uint64)
_IDX_SHIFT = U64(63 - spec.LOG_TABLE_BITS)
_IDX_MASK = U64((1 << spec.LOG_TABLE_BITS) - 1)
_FRAC_SHIFT = U64(63 - spec.LOG_TABLE_BITS - spec.LOG_INTERP_BITS)
_FRAC_MASK = U64((1 << spec.LOG_INTERP_BITS) - 1)
_INTERP = U64(spec.LOG_INTERP_BITS)
_FRAC_BITS = U64(spec.LOG_FRAC_BITS)

# Rows of keys per chunk are chosen so that one chunk's score matrix stays in L2.
CHUNK_ELEMENTS = 1 << 15


def hash_keys(keys, seed: int = 0) -> np.ndarray:
    """xxh3_64 of each key's canonical bytes, as uint64. An integer array is hashed in one numpy
    pass (`hash_ints`); strings and bytes one call each to xxhash, without the per-key type
    dispatch."""
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "iu":
        return hash_ints(keys, seed)
    h, sd = xxhash.xxh3_64_intdigest, seed & spec.MASK64
    if isinstance(keys, list) and all(type(k) is bytes for k in keys):
        return np.fromiter((h(k, sd) for k in keys), dtype=np.uint64, count=len(keys))
    if isinstance(keys, list) and all(type(k) is str for k in keys):
        return np.fromiter((h(k.encode("utf-8"), sd) for k in keys), dtype=np.uint64, count=len(keys))
    return np.fromiter((spec.hash64(k, seed) for k in keys), dtype=np.uint64, count=len(keys))


# xxh3_64 of exactly 8 bytes (XXH3_len_4to8 of xxhash's xxh3.h): the 16 bytes of its default
# secret that this length reads, and rrmxmx's constant. tests/hrw/test_spec.py holds it to
# xxhash on every seed class.
_SECRET_8_24 = 0x1CAD21F72C81017C ^ 0xDB979083E96DD4DE
_RRMXMX = U64(0x9FB21C651E98DF25)
_LO32 = U64(0xFFFFFFFF)


def hash_ints(keys: np.ndarray, seed: int = 0) -> np.ndarray:
    """xxh3_64 of each integer's 8 little-endian bytes (`spec.to_bytes`), as uint64."""
    k = np.asarray(keys)
    if k.dtype.kind == "i":
        k = k.astype(np.int64, copy=False).view(np.uint64)
    else:
        k = k.astype(np.uint64, copy=False)
    sd = seed & spec.MASK64
    sd ^= int.from_bytes((sd & 0xFFFFFFFF).to_bytes(4, "little"), "big") << 32
    bitflip = U64((_SECRET_8_24 - sd) & spec.MASK64)
    h = ((k >> U64(32)) + ((k & _LO32) << U64(32))) ^ bitflip
    h ^= ((h << U64(49)) | (h >> U64(15))) ^ ((h << U64(24)) | (h >> U64(40)))
    h *= _RRMXMX
    h ^= (h >> U64(35)) + U64(8)
    h *= _RRMXMX
    return h ^ (h >> U64(28))


def fmix64_(a: np.ndarray, tmp: np.ndarray | None = None) -> np.ndarray:
    """In-place MurmurHash3 fmix64 over a uint64 array; returns `a`."""
    if tmp is None:
        tmp = np.empty_like(a)
    np.right_shift(a, _S33, out=tmp)
    np.bitwise_xor(a, tmp, out=a)
    np.multiply(a, _C1, out=a)
    np.right_shift(a, _S33, out=tmp)
    np.bitwise_xor(a, tmp, out=a)
    np.multiply(a, _C2, out=a)
    np.right_shift(a, _S33, out=tmp)
    np.bitwise_xor(a, tmp, out=a)
    return a


def scores(key_hashes: np.ndarray, node_hashes: np.ndarray) -> np.ndarray:
    """The (keys x nodes) unweighted score matrix."""
    s = np.bitwise_xor(key_hashes[:, None], node_hashes[None, :])
    return fmix64_(s)


def neglog2_fixed(s: np.ndarray) -> np.ndarray:
    """Vectorised `spec.neglog2_fixed`: integers only, uint64 in and out."""
    m = s | U64(1)
    # bit length from the float exponent, corrected where rounding carried into the next power
    _, e = np.frexp(m.astype(np.float64))
    p = (e - 1).astype(np.uint64)
    p -= ((m >> p) == 0).astype(np.uint64)
    mn = m << (U64(63) - p)
    idx = (mn >> _IDX_SHIFT) & _IDX_MASK
    frac = (mn >> _FRAC_SHIFT) & _FRAC_MASK
    lo = _TABLE[idx]
    log = lo + (((_TABLE[idx + U64(1)] - lo) * frac) >> _INTERP)
    return ((U64(64) - p) << _FRAC_BITS) - log


def weighted(s: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """weight / -log2(u) as float64 (one correctly rounded division per pair)."""
    return weights / neglog2_fixed(s).astype(np.float64)


def best(s: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Row-wise winner index: highest (weighted) score, then highest raw score, then column order."""
    if weights is None:
        return s.argmax(axis=1)
    w = weighted(s, weights)
    top = w.max(axis=1, keepdims=True)
    return np.where(w == top, s, U64(0)).argmax(axis=1)


def ranked(s: np.ndarray, weights: np.ndarray | None, k: int, exact_ties: bool) -> np.ndarray:
    """Row-wise indexes of the k best columns, best first."""
    n = s.shape[1]
    if weights is None and not exact_ties:
        inv = ~s                                   # ascending ~s is descending s
        if k < n:
            cand = np.argpartition(inv, k - 1, axis=1)[:, :k]
        else:
            cand = np.broadcast_to(np.arange(n), s.shape)
        order = np.take_along_axis(inv, cand, axis=1).argsort(axis=1, kind="stable")
        return np.take_along_axis(cand, order, axis=1)
    primary = weighted(s, weights) if weights is not None else s
    out = np.empty((s.shape[0], k), dtype=np.intp)
    cols = np.arange(n)
    for r in range(s.shape[0]):                    # exact lexicographic order; rare paths only
        out[r] = np.lexsort((cols, ~s[r], -primary[r] if weights is not None else ~s[r]))[:k]
    return out


def chunked(key_hashes: np.ndarray, node_hashes: np.ndarray, fn) -> list:
    """Apply fn to the score matrix one cache-sized block of keys at a time."""
    rows = max(1, CHUNK_ELEMENTS // max(1, len(node_hashes)))
    s = np.empty((rows, len(node_hashes)), dtype=np.uint64)
    tmp = np.empty_like(s)
    out = []
    for start in range(0, len(key_hashes), rows):
        kh = key_hashes[start:start + rows]
        blk, t = s[: len(kh)], tmp[: len(kh)]
        np.bitwise_xor(kh[:, None], node_hashes[None, :], out=blk)
        out.append(fn(fmix64_(blk, t)))
    return out
