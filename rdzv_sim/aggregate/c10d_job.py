"""`AggregateC10d`: the aggregate job of `job.py` with torchrun's c10d rendezvous.

The job's state machine is the aggregate one (faults, scheduler, restarts, the members leaving a
round together); a rendezvous is `C10dRace`'s: every agent that leaves a round calls
next_rendezvous (the exit op, then the join op) on the one blob, and the round forms when the
race marks it complete and each member has read so. Members start their workers once all have
(their process-group init is a barrier); a node added to the wait list while a round runs
makes the members leave at their next monitor tick after their 1 s cache lets them see it.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..protocols.agent import out_of_restarts, uses_a_restart
from ..protocols.base import digest
from ..protocols.c10d.protocol import CACHE_DURATION
from ..protocols.c10d.state import addr_of, desc
from ..sim.node import SimNode
from ..trace import RunStats
from .jobs import register_aggregate_job
from .c10d_race import C10dRace
from .job import AggregateSimulation


class AggregateC10d(AggregateSimulation):
    def __init__(self, sc):
        super().__init__(sc)
        self.ix = {h: i for i, h in enumerate(self.hosts)}
        self.lat_arr = np.array([self.lat[h] for h in self.hosts])
        self.race_rng = np.random.default_rng(np.random.SeedSequence([sc.seed, 10]))
        self.race = self._new_race()
        self.started: dict[str, float] = {}     # host -> when its rendezvous started
        self.forming: dict[str, tuple] = {}     # host -> (t, rank, nnodes) confirmed, not yet running
        self.expected: set[str] = set()         # the completed round's live members
        self.doomed = False                     # a member died before the workers started
        self.ops_mark = (0, 0)
        self.wake_gen = 0

    def _new_race(self) -> C10dRace:
        sc = self.sc
        descs = [desc(self.nodes[h].info.addr, 1000 + self.nodes[h].incarnation) for h in self.hosts]
        return C10dRace(descs, self.lat_arr, self.protocol.s, sc.protocol.join_timeout,
                        sc.store, sc.cluster.cpu.base,
                        sc.cluster.cpu.per_byte, self.race_rng)

    # --- driving the race -----------------------------------------------------------
    def _wake(self) -> None:
        self.wake_gen += 1
        gen, t = self.wake_gen, self.race.next_time()
        if t < math.inf:
            self._at(t, lambda: self._advance() if gen == self.wake_gen else None)

    def _advance(self) -> None:
        self._catch_up()
        self._wake()

    def _catch_up(self) -> None:
        """The race run to now, what it says handled (before anything outside changes it)."""
        for t, i, what, d in self.race.advance(self.env.now):
            getattr(self, "_on_" + what)(t, self.hosts[i], d)

    # --- the fault and scheduler API ----------------------------------------------------
    def _join(self, name: str, t: float, wake: bool = True) -> None:
        self._catch_up()
        node, i = self.nodes[name], self.ix[name]
        want = desc(node.info.addr, 1000 + node.incarnation)
        if self.race.desc[i] != want:
            self.race.rename(i, want)
        self.started[name] = t
        self.trace.record(t, name, "rendezvous_start", detail={"restarts": self.restarts[name]})
        self.race.enter(i, t)
        if wake:
            self._wake()

    def _gone(self, node: SimNode) -> None:
        name = node.name
        self._catch_up()
        self.race.kill(self.ix[name], self.env.now)
        self.started.pop(name, None)
        self.forming.pop(name, None)
        if name in self.expected:
            self.expected.discard(name)
            self.doomed = True
            self._maybe_run()
        self._wake()

    def stop(self, node: SimNode) -> None:
        if node.alive:
            self._gone(node)
        super().stop(node)

    def crash(self, node: SimNode, cause: str, detection: float | None = None) -> None:
        if node.alive:
            self._gone(node)
        super().crash(node, cause, detection)

    def fresh_store(self) -> None:
        super().fresh_store()
        self.race = self._new_race()
        self.started, self.forming, self.expected, self.doomed = {}, {}, set(), False
        self.ops_mark = (0, 0)
        self._wake()

    def _drop(self, name: str) -> None:
        if name in self.member_set:
            self.member_set.discard(name)
            self.members.remove(name)

    # --- what the race says ---------------------------------------------------------------
    def _on_join(self, t: float, name: str, d: dict) -> None:
        self.trace.record(t, name, "join", d["round"], detail={"slot": d["slot"]})

    def _on_complete(self, t: float, name: str, d: dict) -> None:
        self.expected = {self.hosts[self.race.index[m]] for m in d["members"]
                         if m in self.race.index and self.nodes[self.hosts[self.race.index[m]]].alive}
        self.forming, self.doomed = {}, len(self.expected) < len(d["members"])
        self.round = d["round"]

    def _on_confirmed(self, t: float, name: str, d: dict) -> None:
        self.trace.record(t, name, "confirmed", d["round"], d["rank"],
                          detail={"cas_attempts": d["cas"]})
        self.forming[name] = (t, d["rank"], d["nnodes"])
        self._maybe_run()

    def _on_waiting(self, t: float, name: str, d: dict) -> None:
        if self.members and not self.waiting_noticed:
            self.waiting_noticed = True
            mon = self.sc.agent.monitor_interval
            seen = max(t + CACHE_DURATION + 2 * self.lat[name], self.t_ws)
            self._leave(self.t_ws + max(1, math.ceil((seen - self.t_ws) / mon)) * mon, "nodes_waiting")

    def _on_timeout(self, t: float, name: str, d: dict) -> None:
        self._gave_up(t, name, "rendezvous_timeout", "the join timeout passed")

    def _on_closed(self, t: float, name: str, d: dict) -> None:
        self._gave_up(t, name, "rendezvous_closed", "the rendezvous is closed")

    def _gave_up(self, t: float, name: str, why: str, detail: str) -> None:
        """torch's RendezvousTimeoutError or RendezvousClosedError: the agent exits."""
        self.trace.record(t, name, why, detail={"reason": detail})
        self.trace.record(t, name, "agent_exit", detail={"reason": why})
        self.exited.add(name)
        self.started.pop(name, None)
        if not self._agents_left():
            self.scheduler.requeue("no_agent_left")

    def _maybe_run(self) -> None:
        """Every live member of the completed round has read that it is complete: their
        workers start together (the process-group init waits for the last)."""
        if not self.expected or any(n not in self.forming for n in self.expected):
            return
        sc, tr, r = self.sc, self.trace, self.round
        names = sorted(self.expected, key=lambda n: self.forming[n][1])
        nn = self.forming[names[0]][2]
        nproc = sc.cluster.nproc_per_node
        world = nproc * nn
        ranked = [desc_name for desc_name in sorted(self.race.st.participants,
                                                    key=self.race.st.participants.__getitem__)]
        dg, master = digest(ranked), addr_of(ranked[0]) if ranked else ""
        t_last = max(self.forming[n][0] for n in names)
        rank0 = min(names, key=lambda n: self.forming[n][1])
        tr.record(self.forming[rank0][0], rank0, "round_closed", r, world_size=world,
                  detail={"members": sorted(addr_of(x) for x in ranked), "count": nn, "holes": 0})
        ranks = [self.forming[n][1] for n in names]
        times = [self.forming[n][0] for n in names]
        tr.record_many(times, names, "rank_assigned", r, ranks=ranks, world_size=world,
                       details=[f'{{"digest":"{dg}","first_rank":{k * nproc},"latency":'
                                f'{json.dumps(float(tk - self.started.get(n, tk)))},"master":"{master}","nnodes":{nn}}}'
                                for n, k, tk in zip(names, ranks, times)])
        a = sc.agent
        t_ws = t_last + a.worker_start + a.worker_start_per_node * nn
        tr.record_many([t_ws] * len(names), names, "workers_started", r, ranks=ranks, world_size=world)
        acc = self.runtime.round_ops.setdefault(r + tr.round_offset, [0, 0])
        acc[0] += self.race.ops - self.ops_mark[0]
        acc[1] += self.race.bytes - self.ops_mark[1]
        self.ops_mark = (self.race.ops, self.race.bytes)
        self.members, self.member_set, self.ranked = names, set(names), names
        self.t_ws, self.waiting_noticed = t_ws, False
        self.expected, self.forming = set(), {}
        for n in names:
            self.started.pop(n, None)
        if self.doomed:                   # the init barrier waits for the dead one in vain
            self._leave(t_ws + sc.agent.collective_timeout, "peer_failed")
        if self.race.st.wait_list:
            self._on_waiting(t_last, names[0], {})

    def _left(self, t: float) -> None:
        left = self._round_left(t)
        if left is None:
            return
        why, members = left
        self.members, self.member_set, self.ranked = [], set(), []
        self.t_ws, self.waiting_noticed = math.inf, False
        failure = uses_a_restart(why)
        for m in members:
            if failure:
                self.restarts[m] += 1
                if out_of_restarts(self.restarts[m], self.agent_cfg):
                    self.trace.record(t, m, "agent_exit", detail={"reason": "max_restarts"})
                    self.exited.add(m)
                    self._catch_up()
                    self.race.kill(self.ix[m], t)
                    continue
            self._join(m, t, wake=False)
        self._wake()
        if not self._agents_left():
            self.scheduler.requeue("no_agent_left")

    def run(self, progress=None, slices: int = 100) -> RunStats:
        stats = super().run(progress, slices)
        stats.store_ops, stats.store_bytes = self.race.ops, self.race.bytes
        return stats


register_aggregate_job("c10d", AggregateC10d)
