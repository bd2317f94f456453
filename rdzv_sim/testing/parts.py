"""A protocol's testing parts, read from its kit: its settings strategy, its own invariants,
what it is known to break (`rdzv_sim.Kit`'s `settings_strategy`, `invariants` and `known`), so a
protocol from any package is property-tested with its own promises and no edit inside rdzv_sim.
"""
from __future__ import annotations

from ..protocols.registry import part

INVARIANTS, KNOWN, STRATEGY = "invariants", "known", "settings_strategy"


def invariants_of(protocol: str) -> list:
    """Each `check(tables, scenario) -> list[Violation]` the protocol promises beyond the
    common ones."""
    checks = list(part(protocol, INVARIANTS, ()))
    bad = [c for c in checks if not callable(c)]
    if bad:
        raise TypeError(f"protocol {protocol!r}: its invariants part holds {bad[0]!r}, not a "
                        "check(tables, scenario) -> list[Violation]")
    return checks


def known_of(protocol: str) -> list:
    """Each `Known` violation of the protocol that the real system shares."""
    from .known import Known
    known = list(part(protocol, KNOWN, ()))
    bad = [k for k in known if not isinstance(k, Known)]
    if bad:
        raise TypeError(f"protocol {protocol!r}: its known part holds {bad[0]!r}, not a rdzv_sim.testing.Known")
    return known


def settings_strategy_of(protocol: str):
    return part(protocol, STRATEGY)
