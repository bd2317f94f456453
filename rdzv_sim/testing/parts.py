"""A protocol's testing parts: its settings strategy, its own invariants, what it is known to break.

Each is registered here by name, like the protocol itself, so a protocol from any package is
property-tested with its own promises and no edit inside rdzv_sim.
"""
from __future__ import annotations

from typing import Callable

from ..protocols.registry import add_part, part, register_part

INVARIANTS, KNOWN, STRATEGY = "invariants", "known", "settings_strategy"


def register_invariant(protocol: str, check: Callable) -> None:
    """Add `check(tables, scenario) -> list[Violation]` to what `check_safety` runs for the
    protocol named `protocol` (its own promises beyond the common ones)."""
    if not callable(check):
        raise TypeError(f"register_invariant({protocol!r}, ...): the check must be callable "
                        "as check(tables, scenario) -> list[Violation]")
    add_part(protocol, INVARIANTS, check)


def register_known(protocol: str, *known) -> None:
    """Mark violations of `protocol` that the real system shares (`Known` entries): the checkers
    report them as known instead of failing."""
    for k in known:
        add_part(protocol, KNOWN, k)


def register_settings_strategy(protocol: str, strategy: Callable, *, replace: bool = False) -> None:
    """`strategy(nodes)` returns a Hypothesis strategy of `protocol:` settings dicts; what
    `protocol_settings` / `scenarios(protocol=...)` draw instead of the generic ones."""
    register_part(protocol, STRATEGY, strategy, replace=replace)


def invariants_of(protocol: str) -> list:
    return list(part(protocol, INVARIANTS, ()))


def known_of(protocol: str) -> list:
    return list(part(protocol, KNOWN, ()))


def settings_strategy_of(protocol: str):
    return part(protocol, STRATEGY)
