"""A scenario's scheduled faults as one timeline of timed actions, read by every runtime
(each fault model says its own actions: `rdzv_sim.scenario.faults`)."""
from __future__ import annotations

from .faults import Action

__all__ = ["Action", "late_starts", "timeline"]


def timeline(sc) -> list[list[Action]]:
    """Every scheduled fault's actions, fault by fault, in scenario order."""
    return [f.actions(i) for i, f in enumerate(sc.faults)]


def late_starts(sc) -> dict[int, float]:
    """Nodes whose first start a slow_join delays: node -> delay."""
    return {a.node: a.at for acts in timeline(sc) for a in acts if a.kind == "start"}
