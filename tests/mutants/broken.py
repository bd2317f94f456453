"""Known-bad variants of `hrw` and `static`, each with one realistic bug, registered like any
user protocol and held to their parent's own invariants."""
from __future__ import annotations

from dataclasses import replace

import rdzv_sim
from rdzv_sim.ops import Emit, Sleep
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.protocols.registry import get
from rdzv_sim.protocols.static import StaticProtocol, StaticSettings
from rdzv_sim.testing.parts import invariants_of


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


class NoConfirm(HrwProtocol):
    """Members take their rank without the confirm barrier: a slot whose host died after it
    joined stays in the round, and its peers start a world that cannot form."""
    name = "mutant-no-confirm"

    def _confirm(self, result):
        yield Emit("confirmed", round=result.round, rank=result.rank)


class PatientCloser(HrwProtocol):
    """The max_nodes-th joiner waits last call before it closes, as if the round were not full:
    nothing is wrong but every full round is late (only a timing property can see it)."""
    name = "mutant-patient-closer"

    def _await_closure(self, rnd, slot, node, deadline):
        if slot == self.cfg.max_nodes:
            yield Sleep(self.cfg.last_call_timeout)
        return (yield from super()._await_closure(rnd, slot, node, deadline))


# name -> (protocol, settings, how the hunt draws faults: `fault_schedules` arguments)
MUTANTS = {ArrivalRanks.name: (ArrivalRanks, HrwSettings, {}),
           WrongWorld.name: (WrongWorld, HrwSettings, {}),
           NoConfirm.name: (NoConfirm, HrwSettings, {}),
           PatientCloser.name: (PatientCloser, HrwSettings, {}),
           StaticOffByOne.name: (StaticOffByOne, StaticSettings, {})}
for name, (cls, settings, _) in MUTANTS.items():            # they claim their parent's promises
    parent = get(cls.__mro__[1].name)                       # and what it can do (per operation)
    rdzv_sim.register_kit(rdzv_sim.Kit(name, cls, settings, replace(parent.caps, fidelities=("per_operation",)),
                                       parts={"invariants": invariants_of(parent.name)}), replace=True)
