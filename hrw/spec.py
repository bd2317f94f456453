"""hrw spec v1: the reference, one key and one node at a time, in plain Python.

Every other path (numpy batches, the incremental `Assignment`, torch on CPU or CUDA)
must give exactly the owners this module gives; the golden vectors pin it down for
ports to other languages. See SPEC.md beside this file for the prose version.
"""
from __future__ import annotations

import numbers
from decimal import Decimal, getcontext

import xxhash

MASK64 = (1 << 64) - 1
FMIX_C1 = 0xFF51AFD7ED558CCD
FMIX_C2 = 0xC4CEB9FE1A85EC53

# Fixed-point -log2: the result is scaled by 2**LOG_FRAC_BITS; log2(1+f) comes from a
# table of 2**LOG_TABLE_BITS + 1 entries, linearly interpolated with LOG_INTERP_BITS more
# mantissa bits. Integer arithmetic only, so owners never depend on a math library.
LOG_FRAC_BITS = 48
LOG_TABLE_BITS = 12
LOG_INTERP_BITS = 16


def to_bytes(value) -> bytes:
    """Canonical bytes of an id or key: str as UTF-8, int as 8-byte little-endian, bytes as is."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bool):
        raise TypeError("bool is not a supported id or key type (use int, str or bytes)")
    if isinstance(value, numbers.Integral):
        v = int(value)
        if not -(1 << 63) <= v <= MASK64:
            raise ValueError(f"int id/key {v} does not fit in 64 bits")
        return (v & MASK64).to_bytes(8, "little")
    raise TypeError(
        f"unsupported id/key type {type(value).__name__}: use str, int or bytes"
    )


def hash64(value, seed: int = 0) -> int:
    """xxh3_64 of the canonical bytes, with the placement's seed."""
    return xxhash.xxh3_64_intdigest(to_bytes(value), seed=seed & MASK64)


def fmix64(k: int) -> int:
    """MurmurHash3's 64-bit finaliser: a bijection that mixes every input bit."""
    k ^= k >> 33
    k = (k * FMIX_C1) & MASK64
    k ^= k >> 33
    k = (k * FMIX_C2) & MASK64
    k ^= k >> 33
    return k


def score(key_hash: int, node_hash: int) -> int:
    """Unweighted HRW score, compared as unsigned 64-bit: higher wins."""
    return fmix64(key_hash ^ node_hash)


def _log2_table() -> tuple[int, ...]:
    """floor(log2(1 + i / 2**TABLE_BITS) * 2**FRAC_BITS), exact via `decimal` (correctly rounded ln)."""
    getcontext().prec = 60
    ln2 = Decimal(2).ln()
    n = 1 << LOG_TABLE_BITS
    scale = Decimal(1 << LOG_FRAC_BITS)
    return tuple(int((Decimal(n + i) / n).ln() / ln2 * scale) for i in range(n + 1))


LOG2_TABLE = _log2_table()


def neglog2_fixed(s: int) -> int:
    """-log2(u) * 2**48 for u = m / 2**64, m = s | 1, in integers only.

    With m = 2**p * (1 + f): -log2(u) = 64 - p - log2(1 + f), and log2(1 + f) is read from
    LOG2_TABLE and interpolated. The result is in (0, 2**54] and never decreases as s falls.
    """
    m = (s | 1) & MASK64
    p = m.bit_length() - 1
    mn = (m << (63 - p)) & MASK64                     # leading one at bit 63
    idx = (mn >> (63 - LOG_TABLE_BITS)) & ((1 << LOG_TABLE_BITS) - 1)
    frac = (mn >> (63 - LOG_TABLE_BITS - LOG_INTERP_BITS)) & ((1 << LOG_INTERP_BITS) - 1)
    lo, hi = LOG2_TABLE[idx], LOG2_TABLE[idx + 1]
    log2_1f = lo + (((hi - lo) * frac) >> LOG_INTERP_BITS)
    return ((64 - p) << LOG_FRAC_BITS) - log2_1f


def weighted_score(s: int, weight: float) -> float:
    """The logarithmic method: weight / -ln(u), up to the constant ln 2, as one IEEE division.

    float(int) and float division are correctly rounded in IEEE 754, so this is the same
    number on every platform and device.
    """
    return float(weight) / float(neglog2_fixed(s))


def sort_key(node_hash: int, node_id) -> tuple[int, bytes]:
    """Canonical node order; a tie in score goes to the node that comes first here."""
    return (node_hash, to_bytes(node_id))


def ranking(key, nodes, weights=None, seed: int = 0) -> list:
    """All nodes, best first, for one key: the reference that every fast path must match."""
    kh = hash64(key, seed)
    rows = []
    for i, node in enumerate(nodes):
        nh = hash64(node, seed)
        s = score(kh, nh)
        primary = s if weights is None else weighted_score(s, weights[i])
        # best first: higher primary, then higher raw score, then smaller (node_hash, id)
        rows.append(((-primary, -s) + sort_key(nh, node), node))
    rows.sort(key=lambda r: r[0])
    return [node for _, node in rows]
