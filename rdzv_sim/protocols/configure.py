"""A scenario's protocol as the sans-IO object every runtime drives (its agent reads `sc.agent`)."""
from __future__ import annotations

from .registry import get


def protocol_for(sc):
    """The scenario's protocol object (the simulated and the real runtime share it)."""
    return get(sc.protocol.name).make(sc.protocol.resolved(sc.cluster.nodes))

