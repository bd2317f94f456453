"""A protocol's testing parts, read from its kit: its settings strategy, its own invariants,
what it is known to break (`rdzv_sim.Kit`'s `settings_strategy`, `invariants` and `known`), so a
protocol from any package is property-tested with its own promises and no edit inside rdzv_sim.
"""
from __future__ import annotations

from ..protocols.registry import get

INVARIANTS, KNOWN, STRATEGY = "invariants", "known", "settings_strategy"


def invariants_of(protocol: str) -> list:
    """Each `check(tables, scenario) -> list[Violation]` the protocol promises beyond the
    common ones."""
    checks = list(get(protocol).part(INVARIANTS, ()))
    bad = [c for c in checks if not callable(c)]
    if bad:
        raise TypeError(f"protocol {protocol!r}: its invariants part holds {bad[0]!r}, not a "
                        "check(tables, scenario) -> list[Violation]")
    return checks


def settings_strategy_of(protocol: str):
    return get(protocol).part(STRATEGY)
