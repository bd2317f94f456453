"""hrw spec v1 scoring in torch (CPU or CUDA), giving exactly the numpy owners.

torch has no uint64 shifts on CPU, so the kernels work in int64: logical right shifts are
arithmetic shifts masked to the low bits, multiplies wrap, and unsigned order is signed
order with the sign bit flipped. Keys are hashed on the host (xxh3 has no torch kernel).
"""
from __future__ import annotations

import numpy as np
import torch

from . import kernels, spec
from .placement import Placement

_MIN = -(1 << 63)


def _signed(c: int) -> int:
    return c - (1 << 64) if c >= 1 << 63 else c


_C1, _C2 = _signed(spec.FMIX_C1), _signed(spec.FMIX_C2)


def _srl(x: torch.Tensor, n: int) -> torch.Tensor:
    """Logical right shift of int64 bit patterns."""
    return (x >> n) & ((1 << (64 - n)) - 1)


def fmix64(x: torch.Tensor) -> torch.Tensor:
    x = x ^ _srl(x, 33)
    x = x * _C1
    x = x ^ _srl(x, 33)
    x = x * _C2
    return x ^ _srl(x, 33)


def neglog2_fixed(s: torch.Tensor) -> torch.Tensor:
    m = s | 1
    neg = m < 0                                           # unsigned >= 2**63: bit 63 is the top
    _, e = torch.frexp(m.to(torch.float64))
    p = (e - 1).to(torch.int64)
    p = torch.where(neg, torch.full_like(p, 63), p)
    p = p - (((m >> p) == 0) & ~neg).to(torch.int64)     # float rounding carried a power up
    mn = m << (63 - p)
    idx = _srl(mn, 63 - spec.LOG_TABLE_BITS) & ((1 << spec.LOG_TABLE_BITS) - 1)
    frac = _srl(mn, 63 - spec.LOG_TABLE_BITS - spec.LOG_INTERP_BITS) & (
        (1 << spec.LOG_INTERP_BITS) - 1)
    table = torch.tensor(spec.LOG2_TABLE, dtype=torch.int64, device=s.device)
    lo = table[idx]
    log = lo + (((table[idx + 1] - lo) * frac) >> spec.LOG_INTERP_BITS)
    return ((64 - p) << spec.LOG_FRAC_BITS) - log


def _as_i64(a: np.ndarray, device) -> torch.Tensor:
    return torch.from_numpy(a.view(np.int64).copy()).to(device)


def owner_indexes(placement: Placement, keys, device: str = "cpu", chunk: int = 1 << 22,
                  key_hashes: np.ndarray | None = None) -> np.ndarray:
    """Indexes into `placement.nodes` of each key's owner, computed by torch on `device`."""
    kh_np = kernels.hash_keys(keys, placement.seed) if key_hashes is None else key_hashes
    nh = _as_i64(placement.node_hashes, device)
    w = None if placement._weights is None else torch.from_numpy(placement._weights).to(device)
    rows = max(1, chunk // len(placement))
    out = []
    for start in range(0, len(kh_np), rows):
        kh = _as_i64(kh_np[start:start + rows], device)
        s = fmix64(kh[:, None] ^ nh[None, :])
        order = s ^ _MIN                                  # unsigned order as signed order
        if w is None:
            out.append(order.argmax(dim=1))
            continue
        prim = w[None, :] / neglog2_fixed(s).to(torch.float64)
        top = prim.max(dim=1, keepdim=True).values
        out.append(torch.where(prim == top, order, torch.full_like(order, _MIN)).argmax(dim=1))
    if not out:
        return np.empty(0, dtype=np.intp)
    return torch.cat(out).cpu().numpy().astype(np.intp)
