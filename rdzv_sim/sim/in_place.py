"""Recovery in place at either fidelity: what both record, and the per-operation coordinator.

A failure a mode absorbs (`protocols/recovery.py`) makes no store round: the members leave
their round, and the new world is a round of the tables of its own, numbered after it (the
tracer's round offset moves on by one, so the store's round now names the new world). Its
ranks are known `plan.ranked` after the survivors acted, its workers train `plan.start` later.

Per operation, the driver plays the part NVRx's monitor and store barrier (or the survivors'
shrink) play: it tells the recovery machine (`protocols/recovery/machine.py`) each member's
facts, arms the deadline it names, carries out its decision, records the new world, and tells
each agent by a local signal: `in_place` (train on in the new world: the `InPlace` operation
returns it), `left_out` (not in it: rendezvous again, without ending the round), or the failure
itself (the in-job path).
"""
from __future__ import annotations

import numpy as np

from ..events import Event
from ..protocols import recovery
from ..protocols.base import RoundResult, digest
from ..protocols.recovery import Absorb, FallBack, Fault, InJob, Machine, Mode, Plan, Wait
from ..reasons import Reason


def record(trace, t: float, rnd: int, old, old_ranks, new: list[str], plan: Plan, why: str,
           fault: Fault, nproc: int, codes=None, *, later, nodes) -> tuple[float, float]:
    """Record an in-place recovery at `t` of the store's round `rnd`: `old` (names or codes)
    leave it for `why`; `new` (names, or their `codes`) form the next round of the tables.
    The world's ranks and its workers are recorded when they come (`later(t, fn)` calls fn
    then), for the members still up since `t` (`nodes`: name -> node): one lost during the
    restart gets no rank, as a member lost before its rank in a store round. Returns (when
    the ranks are known, when the workers train)."""
    trace.record_many(t, old, Event.ROUND_LEFT, rnd, ranks=np.asarray(old_ranks, np.int64),
                      fields={"reason": why})
    trace.round_offset += 1                            # the store's round names the new world now
    shift = trace.round_offset
    who = np.asarray(new if codes is None else codes)
    nn = len(new)
    ranks = np.arange(nn, dtype=np.int64)
    event = recovery.EVENT[Mode(plan.why)]
    trace.record_many(t, who, event, rnd, fields={"fault": str(fault)})
    t_rank, t_ws = t + plan.ranked, t + plan.ranked + plan.start

    def up() -> np.ndarray:
        return np.fromiter((nodes[n].alive and nodes[n].started_at <= t for n in new), bool, nn)

    def ranked() -> None:
        r, keep = rnd + shift - trace.round_offset, up()
        facts = {"digest": digest(new), "master": new[0], "nnodes": nn}      # once a round
        trace.record(t_rank, new[int(np.argmax(keep))], Event.ROUND_CLOSED, r, world_size=nproc * nn,
                     detail={"members": list(new), "count": nn, "holes": 0, **facts})
        trace.record_many(t_rank, who[keep], Event.RANK_ASSIGNED, r, ranks=ranks[keep], world_size=nproc * nn,
                          fields={"latency": plan.ranked},
                          facts={**facts, "first_rank": ranks[keep] * nproc})   # the round's

    def started() -> None:
        keep = up()
        trace.record_many(t_ws, who[keep], Event.WORKERS_STARTED, rnd + shift - trace.round_offset,
                          ranks=ranks[keep], world_size=nproc * nn)

    later(t_rank, ranked)
    later(t_ws, started)
    return t_rank, t_ws


def fell_back(trace, t: float, rnd: int, fault: Fault, plan: Plan) -> None:
    """Record that the mode does not absorb `fault` (`plan.why`): the job restarts in job."""
    trace.record(t, "job", Event.RECOVERY_FALLBACK, rnd, detail={"fault": str(fault), "why": str(plan.why)})


class InPlace:
    """The per-operation job's driver of the recovery machine (module doc): it tells the
    machine each member's facts, arms its deadlines, and carries out its decisions."""

    def __init__(self, sim):
        self.sim = sim
        self.cfg = sim.sc.agent
        self.machine = Machine(self.cfg, min_nodes=sim.sc.min_nodes, segment=sim.sc.scheduler.segment)
        self.waiting: dict[str, tuple] = {}             # name -> (t_ws, RoundResult)

    @property
    def on(self) -> bool:
        return self.machine.on

    # --- what the job tells it -----------------------------------------------------------
    def started(self, node, rnd: int, rank: int, size: int) -> None:
        """A member's workers start in a store round of `size` members (StartWorkers)."""
        self.waiting.pop(node.name, None)
        self.machine.started(rnd, node.name, rank, size, self.sim.env.now)

    def trains(self, node, rnd: int) -> None:
        """A member's workers train (its process-group init returned)."""
        self.machine.trains(rnd, node.name, self.sim.env.now)

    def fault(self, rnd: int, fault: Fault, name: str, notice: float) -> bool:
        """A member of `rnd`'s world failed now; its peers act after the mode's detection.
        False: the world does not train yet (its workers start, or it restarts in place):
        the caller takes the in-job path, as the aggregate job does."""
        env = self.sim.env
        d = self.machine.fault(rnd, fault, name, env.now, notice)
        if isinstance(d, InJob):
            return False
        if isinstance(d, Wait) and d.new:
            env.timeout(d.at - env.now).callbacks.append(lambda _e: self._recover(rnd, d.at))
        return True

    def world(self, node):
        """Process body of the `InPlace` operation: wait for the node's restart to finish;
        returns its RoundResult in the new world."""
        t_ws, res = self.waiting[node.name]
        if t_ws > self.sim.env.now:
            yield self.sim.env.timeout(t_ws - self.sim.env.now)
        if self.waiting.get(node.name, (None, None))[1] is res:
            del self.waiting[node.name]
        return res

    # --- the recovery --------------------------------------------------------------------
    def _later(self, t: float, fn) -> None:
        """Call `fn` at t, unless the job was requeued meanwhile (its worlds start again)."""
        def call(_e):
            if self.sim.in_place is self:
                fn()
        self.sim.env.timeout(max(0.0, t - self.sim.env.now)).callbacks.append(call)

    def _recover(self, rnd: int, at: float) -> None:
        sim, nodes = self.sim, self.sim.nodes
        w = self.machine.worlds.get(rnd)
        ranks = dict(w.ranks) if w is not None else {}
        live = [n for n in ranks if nodes[n].alive and nodes[n].running_round == rnd]
        idle = [(h, nodes[h].started_at) for h in sim.hosts
                if h not in ranks and nodes[h].alive and nodes[h].running_round is None
                and nodes[h].process is not None and nodes[h].process.is_alive]
        d = self.machine.due(rnd, at, live, idle)
        if isinstance(d, FallBack):                     # the in-job path: each agent's own failure
            fell_back(sim.trace, sim.env.now, rnd, d.fault, d.plan)
            for n in live:
                nodes[n].signal(Reason.WORKERS_FAILED if n in d.failed else Reason.PEER_FAILED)
        elif isinstance(d, Absorb):
            self._in_place(rnd, d, ranks)

    def _in_place(self, rnd: int, d: Absorb, ranks: dict) -> None:
        sim, nodes = self.sim, self.sim.nodes
        sim.runtime.notices.pop(rnd, None)              # the old communicator's hung collectives are void
        nproc = sim.sc.cluster.nproc_per_node
        new = list(d.new)
        _, t_ws = record(sim.trace, sim.env.now, rnd, list(d.old), [ranks[n] for n in d.old], new, d.plan, d.why,
                         d.fault, nproc, later=self._later, nodes=nodes)
        nn = len(new)
        for n in d.left_out:                            # left out: rendezvous again, the round runs on
            nodes[n].running_round = None
            nodes[n].signal(Reason.LEFT_OUT)
        for i, n in enumerate(new):
            res = RoundResult(rnd, i, nn, nproc * nn, i * nproc, new[0], digest(new))
            self.waiting[n] = (t_ws, res)
            if n in ranks:
                nodes[n].signal(Reason.IN_PLACE)
            else:
                sim.claim(nodes[n], rnd)                # a spare: its agent leaves the rendezvous
