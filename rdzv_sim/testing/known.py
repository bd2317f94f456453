"""Invariants each protocol is known to break because the real system does too.

An entry names the invariant, why the real protocol breaks it and the source it comes from.
A checker marks matching violations as known; every other violation still fails.
"""
from __future__ import annotations

from dataclasses import replace

# protocol -> {invariant: why (with the torch source it comes from)}
KNOWN: dict[str, dict[str, str]] = {
    "static": {},
    "hrw": {},
    # The c10d model (torchrun's DynamicRendezvousHandler) registers its entries here, e.g.
    # "members_were_alive": "a dead participant stays in a complete round until its keep-alive
    # expires (torch/distributed/elastic/rendezvous/dynamic_rendezvous.py, _RendezvousJoinOp)".
}


def known_for(protocol: str, violations: list) -> list:
    table = KNOWN.get(protocol, {})
    return [replace(v, known=table[v.invariant]) if v.invariant in table else v for v in violations]
