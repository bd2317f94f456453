"""`AggregateJob`: the job at round granularity, for long runs of thousands of nodes.

The per-operation `Simulation` runs every node's agent and protocol generator, one store
request at a time (~35 SimPy events per node per round). Here the job is one state machine and
the protocol's `RoundModel` says when its rounds form: the members start workers together, and a
failure, a job-level interruption or a waiting node makes them all leave and enter the next
rendezvous, as the agents would. The faults, the scheduler and the trace tables are the
per-operation ones, and so are the agent's decisions (`rdzv_sim.protocols.agent`: which reasons
use a restart, when an agent is out of them); the cost of a run follows the rounds, not the
store requests.

What it leaves out (`rdzv_sim.scenario.checks` refuses scenarios that need it): pauses,
partitions, store faults, clock skew. A crash while a round forms is taken as a crash of its
first running moments.
"""
from __future__ import annotations

import math

import numpy as np

from ..protocols.agent import out_of_restarts, uses_a_restart
from ..sim.node import SimNode
from ..sim.simulation import Simulation
from ..trace import RunStats
from .hosts import HostCodes, HostList
from .round_model import Formed, round_model_of


class AggregateJob(Simulation):
    def __init__(self, sc):
        super().__init__(sc)
        self.lat = {h: float(self.net.base[h]) for h in self.hosts}
        self.host = HostCodes(self.hosts, self.lat, {h: n.info for h, n in self.nodes.items()},
                              self.trace)
        self.round = 0                    # the store's round (a requeue starts again at 0)
        self.restarts = np.zeros(len(self.host), dtype=np.int64)     # by host code
        self.members = HostList([], [])   # the running (or starting) round's members
        self.is_member = np.zeros(len(self.host), dtype=bool)       # by host code
        self.rank_of = np.full(len(self.host), -1, dtype=np.int64)  # the members' ranks, by code
        self.t_ws = math.inf              # when the members' workers started
        self.leave_at: float | None = None
        self.leave_why = ""
        self.waiting_noticed = False
        self.exited: set[str] = set()     # hosts up whose agent gave up (until requeued)
        self.gen = 0                      # job attempt: callbacks of an earlier one are void
        self.model = round_model_of(sc.protocol.name)(self)

    # --- the fault and scheduler API of Simulation ------------------------------------
    def start(self, node: SimNode, why: str) -> None:
        if node.alive or not self.scheduler.may_start(node, why):
            return
        node.alive = True
        self.exited.discard(node.name)
        node.incarnation += 1
        self.trace.record(self.env.now, node.name, "node_start", detail={"why": why})
        self.restarts[self.host.code[node.name]] = 0
        self.model.enter([node.name], [self.env.now + self.sc.agent.process_start])

    def stop(self, node: SimNode) -> None:
        if not node.alive:
            return
        self.model.gone(node.name, self.env.now)
        self.trace.record(self.env.now, node.name, "agent_stopped", self.round_of(node.name))
        node.alive = False
        self.exited.discard(node.name)
        self._drop(node.name)

    def crash(self, node: SimNode, cause: str, detection: float | None = None) -> None:
        if not node.alive:
            return
        self.model.gone(node.name, self.env.now)
        self.trace.record(self.env.now, node.name, "fault_crash", self.round_of(node.name),
                          detail={"cause": cause})
        node.alive = False
        self.exited.discard(node.name)
        self.scheduler.failed(node)
        was_member = self.is_member[self.host.code[node.name]]
        self._drop(node.name)
        if not was_member or (not self.members and self.model.probes_members):
            return                    # nobody is left to end the round: a waiter's probe will
        if self.env.now < self.t_ws:
            # dead before its workers came up: the others' process-group init (a barrier of
            # the members) waits for it in vain, as sim/pg_init.py has it per operation
            self._leave(self.t_ws + self.sc.agent.collective_timeout, "peer_failed")
        else:
            self._leave(self.env.now + self.notice_delay(cause, detection), "peer_failed")

    def fail_workers(self, node: SimNode) -> None:
        if node.alive and self.is_member[self.host.code[node.name]]:
            self._leave(max(self.env.now, self.t_ws), "workers_failed")

    def fresh_store(self) -> None:
        self.store.restart()
        self.round, self.gen = 0, self.gen + 1
        self._clear_members()
        self.exited = set()
        self.leave_at, self.waiting_noticed, self.t_ws = None, False, math.inf
        self.model.reset()

    def round_of(self, name: str):
        return self.round if self.is_member[self.host.code[name]] else None

    def at(self, t: float, fn) -> None:
        """Call `fn` at simulated time `t`, unless the job started again meanwhile."""
        gen = self.gen
        self.env.timeout(max(0.0, t - self.env.now)).callbacks.append(
            lambda _e: fn() if gen == self.gen else None)

    # --- what a round model tells the job ------------------------------------------------
    def formed(self, f: Formed) -> float:
        """A round formed: its events, its members' workers start together (the process-group
        init waits for the last to know its rank). Returns when they start."""
        tr, r, nn = self.trace, f.round, f.nnodes
        nproc = self.sc.cluster.nproc_per_node
        world = nproc * nn
        tr.record(f.t_closed, f.closer, "round_closed", r, world_size=world,
                  detail={"members": f.listed, "count": nn, "holes": 0})
        ranks, t_rank = np.asarray(f.ranks, np.int64), np.asarray(f.t_rank, np.float64)
        hc = self.host.of(f.members)          # a HostList's own codes, else one lookup a name
        codes = self.host.traced(hc)
        tr.record_many(t_rank, codes, "rank_assigned", r, ranks=ranks, world_size=world,
                       fields={"digest": f.digest, "first_rank": ranks * nproc, "nnodes": nn,
                               "latency": t_rank - np.asarray(f.started, np.float64),
                               "master": f.master})
        a = self.sc.agent
        t_ws = float(t_rank.max()) + a.worker_start + a.worker_start_per_node * nn
        by_rank = np.argsort(ranks, kind="stable")
        tr.record_many(t_ws, codes[by_rank], "workers_started", r, ranks=ranks[by_rank],
                       world_size=world)
        self.model.running(f, t_ws)
        acc = self.runtime.round_ops.setdefault(r + tr.round_offset, [0, 0])
        acc[0] += self.model.ops - f.since[0]
        acc[1] += self.model.bytes - f.since[1]
        self._clear_members()
        self.members = HostList(f.members, hc)
        self.is_member[hc] = True
        self.rank_of[hc] = ranks
        self.t_ws, self.waiting_noticed = t_ws, False
        if f.doomed:                       # the init barrier waits for the dead one in vain
            self._leave(t_ws + a.collective_timeout, "peer_failed")
        return t_ws

    def nodes_waiting(self, seen: float) -> None:
        """A running round's members see at `seen` that a node waits: they leave at their next
        monitor tick after it (the agent's safe point), at least one tick after the start."""
        if not self.members or self.waiting_noticed:
            return
        self.waiting_noticed = True
        mon = self.sc.agent.monitor_interval
        ticks = math.ceil((max(seen, self.t_ws) - self.t_ws) / mon)
        self._leave(self.t_ws + max(1, ticks) * mon, "nodes_waiting")

    def round_ended(self, t: float) -> None:
        """Another agent ended the running round at `t` (an hrw waiter whose probe a dead
        member did not answer): its live members leave then."""
        self._leave(t, "round_ended")

    def gave_up(self, t: float, names: list[str], why: str, reason: str) -> None:
        """torch's RendezvousTimeoutError or RendezvousClosedError: these agents exit."""
        self.trace.record_many(t, names, why, fields={"reason": reason})
        self.trace.record_many(t, names, "agent_exit", fields={"reason": why})
        self.exited.update(names)
        self.model.shut_down(names, t)
        self._requeue_if_none_left()

    # --- the job's state machine -------------------------------------------------------
    def _agents_left(self) -> bool:
        return any(n.alive and n.name not in self.exited for n in self.nodes.values())

    def _requeue_if_none_left(self) -> None:
        if not self._agents_left():
            self.scheduler.requeue("no_agent_left")

    def _drop(self, name: str) -> None:
        c = self.host.code[name]
        if self.is_member[c]:
            self.is_member[c] = False
            self.members.remove(name)

    def _clear_members(self) -> None:
        self.is_member[self.members.codes] = False
        self.rank_of[self.members.codes] = -1
        self.members = HostList([], [])

    def _leave(self, t: float, why: str) -> None:
        """The members leave the round at `t` (the earliest reason wins)."""
        if self.leave_at is not None and self.leave_at <= t:
            return
        self.leave_at, self.leave_why = t, why
        self.at(t, lambda: self._left(t))

    def _left(self, t: float) -> None:
        if self.leave_at != t:
            return                                       # superseded by an earlier leave
        why, r = self.leave_why, self.round
        self.leave_at = None
        # a member that stopped or crashed was dropped then: every member is alive
        members, mc = self.members, self.members.codes
        self.trace.record_many(t, self.host.traced(mc), "round_left", r, ranks=self.rank_of[mc],
                               fields={"reason": why})
        back = self.model.leave(members, t)
        self._clear_members()
        self.t_ws, self.waiting_noticed = math.inf, False
        names, times, out = members, back, []
        if uses_a_restart(why) and members:
            restarts = self.restarts
            restarts[mc] += 1
            # the count only grows: none is out unless the most restarted is
            if out_of_restarts(int(restarts[mc].max()), self.agent_cfg):
                names, times = [], []
                for m, c, tb in zip(members, mc.tolist(), back):
                    if out_of_restarts(int(restarts[c]), self.agent_cfg):
                        self.trace.record(t, m, "agent_exit", detail={"reason": "max_restarts"})
                        self.exited.add(m)
                        self.model.gone(m, t)
                        out.append(m)
                    else:
                        names.append(m)
                        times.append(tb)
        if out:
            self.model.shut_down(out, t)
        self.model.enter(names, times)
        self._requeue_if_none_left()

    # --- running -----------------------------------------------------------------------
    def run(self, progress=None, slices: int = 1000) -> RunStats:
        stats = super().run(progress, slices)
        stats.store_ops, stats.store_bytes = self.model.ops, self.model.bytes
        return stats
