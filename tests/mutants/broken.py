"""Known-bad variants of `hrw` and `static`, each with one realistic bug, registered like any
user protocol (and held to hrw's own invariants where they claim its ranks)."""
from __future__ import annotations

from dataclasses import replace

import rdzv_sim
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.protocols.static import StaticProtocol, StaticSettings
from rdzv_sim.testing.invariants import PROTOCOL_INVARIANTS, register_invariant


class ArrivalRanks(HrwProtocol):
    """Ranks in join order instead of HRW order (what c10d does): ranks change with timing."""
    name = "mutant-arrival-ranks"

    def rank_order(self, names):
        return list(names)


class WrongWorld(HrwProtocol):
    """Tells its workers a world one host smaller than the round (a count that skips a slot)."""
    name = "mutant-wrong-world"

    def rendezvous(self, node):
        result = yield from super().rendezvous(node)
        return replace(result, world_size=result.world_size - node.nproc)


class StaticOffByOne(StaticProtocol):
    """Group rank = node index + 1 on the last node: two nodes share no rank, one is missing."""
    name = "mutant-static-off-by-one"

    def rendezvous(self, node, deadline=None):
        result = yield from super().rendezvous(node, deadline)
        if result.rank == result.nnodes - 1 and result.nnodes > 1:
            return replace(result, rank=0, first_rank=0)
        return result


MUTANTS = {ArrivalRanks.name: (ArrivalRanks, HrwSettings),
           WrongWorld.name: (WrongWorld, HrwSettings),
           StaticOffByOne.name: (StaticOffByOne, StaticSettings)}
for name, (cls, settings) in MUTANTS.items():
    rdzv_sim.register_protocol(name, cls, settings, replace=True)
    if settings is HrwSettings:                  # they claim hrw's promises
        for check in PROTOCOL_INVARIANTS["hrw"]:
            register_invariant(name, check)
