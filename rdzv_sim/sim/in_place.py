"""Recovery in place at either fidelity: what both record, and the per-operation coordinator.

A failure a mode absorbs (`protocols/recovery.py`) makes no store round: the members leave
their round, and the new world is a round of the tables of its own, numbered after it (the
tracer's round offset moves on by one, so the store's round now names the new world). Its
ranks are known `plan.ranked` after the survivors acted, its workers train `plan.start` later.

Per operation, the coordinator plays the part NVRx's monitor and store barrier (or the
survivors' shrink) play: it gathers a running world's faults until the mode's detection, asks
the policy, records the new world, and tells each agent by a local signal: `in_place` (train
on in the new world: the `InPlace` operation returns it), `left_out` (not in it: rendezvous
again, without ending the round), or the failure itself (the in-job path).
"""
from __future__ import annotations

import numpy as np
import simpy

from ..protocols import recovery
from ..protocols.base import RoundResult, digest
from ..protocols.recovery import Fault, Mode, Plan
from ..reasons import Reason


def record(trace, t: float, rnd: int, old, old_ranks, new: list[str], plan: Plan, why: str,
           fault: Fault, nproc: int, codes=None, *, later, nodes) -> tuple[float, float]:
    """Record an in-place recovery at `t` of the store's round `rnd`: `old` (names or codes)
    leave it for `why`; `new` (names, or their `codes`) form the next round of the tables.
    The world's ranks and its workers are recorded when they come (`later(t, fn)` calls fn
    then), for the members still up since `t` (`nodes`: name -> node): one lost during the
    restart gets no rank, as a member lost before its rank in a store round. Returns (when
    the ranks are known, when the workers train)."""
    trace.record_many(t, old, "round_left", rnd, ranks=np.asarray(old_ranks, np.int64),
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
        trace.record(t_rank, new[int(np.argmax(keep))], "round_closed", r, world_size=nproc * nn,
                     detail={"members": list(new), "count": nn, "holes": 0, **facts})
        trace.record_many(t_rank, who[keep], "rank_assigned", r, ranks=ranks[keep], world_size=nproc * nn,
                          fields={"latency": plan.ranked},
                          facts={**facts, "first_rank": ranks[keep] * nproc})   # the round's

    def started() -> None:
        keep = up()
        trace.record_many(t_ws, who[keep], "workers_started", rnd + shift - trace.round_offset,
                          ranks=ranks[keep], world_size=nproc * nn)

    later(t_rank, ranked)
    later(t_ws, started)
    return t_rank, t_ws


def fell_back(trace, t: float, rnd: int, fault: Fault, plan: Plan) -> None:
    """Record that the mode does not absorb `fault` (`plan.why`): the job restarts in job."""
    trace.record(t, "job", "recovery_fallback", rnd, detail={"fault": str(fault), "why": str(plan.why)})


def worst(faults) -> Fault:
    """The fault a recovery answers for: the worst of those gathered (Fault's order)."""
    return min(faults, key=list(Fault).index)


def decide(cfg, faults: list, members: list, spares: list, *, min_nodes: int, segment: int,
           iteration: int, gone=()):
    """The policy's answer to the faults a world gathered (both fidelities ask it): (the plan,
    the fault it answers for, why the members leave their round, the members whose workers
    failed). `members`: the world before the faults in rank order, the lost ones included;
    `gone`: members lost with no fault of their own on record (they left)."""
    lost = {n for f, n in faults if f is not Fault.WORKERS_FAILED} | set(gone)
    failed = {n for f, n in faults if f is Fault.WORKERS_FAILED} - lost
    fault = worst(f for f, _ in faults)
    p = recovery.plan(cfg, fault, members, lost, failed, spares, min_nodes=min_nodes, segment=segment,
                      iteration=iteration)
    why = Reason.WORKERS_FAILED if fault is Fault.WORKERS_FAILED else Reason.PEER_FAILED
    return p, fault, why, failed


def spare(node, formed: float) -> bool:
    """A live idle host is one of the running world's inactive ranks (a spare the mode may
    take) when its agent was up before the world's store round formed: a host back from
    repair since is not in that world, and waits for the next re-form."""
    return node.alive and node.started_at <= formed


class InPlace:
    """The per-operation job's in-place recoveries (module doc)."""

    def __init__(self, sim):
        self.sim = sim
        self.cfg = sim.sc.agent
        self.mode = Mode(self.cfg.recovery)
        self.worlds: dict[int, dict[str, int]] = {}     # store round -> {member: rank}
        self.size: dict[int, int] = {}                  # store round -> its members
        self.ready: dict[int, set] = {}                 # store round -> members whose workers train
        self.t_ws: dict[int, float] = {}                # store round -> when an in-place world trains
        self.formed: dict[int, float] = {}              # store round -> when its world formed
        self.iteration: dict[int, int] = {}             # store round -> in-place restarts
        self.faults: dict[int, list] = {}               # store round -> [(Fault, name)]
        self.due: dict[int, float] = {}                 # store round -> when its faults are acted on
        self.waiting: dict[str, tuple] = {}             # name -> (t_ws, RoundResult)

    @property
    def on(self) -> bool:
        return self.mode is not Mode.IN_JOB

    # --- what the job tells it -----------------------------------------------------------
    def started(self, node, rnd: int, rank: int, size: int) -> None:
        """A member's workers start in a store round of `size` members (StartWorkers)."""
        self.waiting.pop(node.name, None)
        w = self.worlds.get(rnd)
        if w is None:
            w = self.worlds[rnd] = {}
            self.formed[rnd] = self.sim.env.now
            self.iteration[rnd], self.size[rnd], self.ready[rnd] = 0, size, set()
            self.t_ws.pop(rnd, None)
            for old in [k for k in self.worlds if k < rnd]:
                self._forget(old)
        w[node.name] = rank

    def trains(self, node, rnd: int) -> None:
        """A member's workers train (its process-group init returned)."""
        if rnd in self.ready:
            self.ready[rnd].add(node.name)

    def fault(self, rnd: int, fault: Fault, name: str, notice: float) -> bool:
        """A member of `rnd`'s world failed now; its peers act after the mode's detection.
        False: the world does not train yet (its workers start, or it restarts in place):
        the caller takes the in-job path, as the aggregate job does."""
        env = self.sim.env
        if rnd not in self.worlds:
            return False
        if rnd in self.t_ws:
            if env.now < self.t_ws[rnd]:
                return False
        elif len(self.ready.get(rnd, ())) < self.size.get(rnd, 0):
            return False
        self.faults.setdefault(rnd, []).append((fault, name))
        at = env.now + recovery.detection(self.cfg, fault, notice)
        if rnd in self.due and self.due[rnd] <= at:
            return True
        self.due[rnd] = at
        env.timeout(at - env.now).callbacks.append(lambda _e: self._recover(rnd, at))
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

    def _forget(self, rnd: int) -> None:
        for d in (self.worlds, self.formed, self.iteration, self.faults, self.due, self.size,
                  self.ready, self.t_ws):
            d.pop(rnd, None)

    def _recover(self, rnd: int, at: float) -> None:
        if self.due.get(rnd) != at:
            return
        del self.due[rnd]
        faults = self.faults.pop(rnd, [])
        sim, nodes = self.sim, self.sim.nodes
        ranks = self.worlds.get(rnd, {})
        live = [n for n in ranks if nodes[n].alive and nodes[n].running_round == rnd]
        if not faults or not live:
            return
        formed = self.formed.get(rnd, 0.0)
        pool = [h for h in sim.hosts if h not in ranks and nodes[h].running_round is None
                and nodes[h].process is not None and nodes[h].process.is_alive and spare(nodes[h], formed)]
        p, fault, why, failed = decide(self.cfg, faults, sorted(ranks, key=ranks.get), pool,
                                       min_nodes=sim.sc.min_nodes, segment=sim.sc.scheduler.segment,
                                       iteration=self.iteration.get(rnd, 0),
                                       gone=[n for n in ranks if n not in live])
        if not p.absorbed:                              # the in-job path: each agent's own failure
            fell_back(sim.trace, sim.env.now, rnd, fault, p)
            for n in live:
                nodes[n].signal(Reason.WORKERS_FAILED if n in failed else Reason.PEER_FAILED)
            return
        old = sorted(live, key=ranks.get)
        sim.runtime.notices.pop(rnd, None)              # the old communicator's hung collectives are void
        nproc = sim.sc.cluster.nproc_per_node
        new = list(p.members)
        t_rank, t_ws = record(sim.trace, sim.env.now, rnd, old, [ranks[n] for n in old], new, p, why,
                              fault, nproc, later=self._later, nodes=nodes)
        nn = len(new)
        self.worlds[rnd] = {n: i for i, n in enumerate(new)}
        self.t_ws[rnd] = t_ws
        self.iteration[rnd] = self.iteration.get(rnd, 0) + 1
        keep = set(new)
        for n in old:
            if n not in keep:                           # left out: rendezvous again, the round runs on
                nodes[n].running_round = None
                nodes[n].signal(Reason.LEFT_OUT)
        for i, n in enumerate(new):
            res = RoundResult(rnd, i, nn, nproc * nn, i * nproc, new[0], digest(new))
            self.waiting[n] = (t_ws, res)
            if n in ranks:
                nodes[n].signal(Reason.IN_PLACE)
            else:
                sim.claim(nodes[n], rnd)                # a spare: its agent leaves the rendezvous
