"""`AggregateSimulation`: the job at round granularity, for long runs of thousands of nodes.

The per-operation `Simulation` runs every node's agent and protocol generator, one store
request at a time (~35 SimPy events per node per round). Here the job is one state machine:
a round's joiners go through `hrw_round` (their store operations as numpy batches on one
FIFO), its members start workers together, and a failure, a job-level interruption or a
waiting node makes them all leave and join the next round, as the agents would. The faults,
the scheduler and the trace tables are the per-operation ones, and so are the agent's decisions
(`rdzv_sim.protocols.agent`: which reasons use a restart, when an agent is out of them); the
cost of a run follows the rounds (numpy over N per round), not the store requests.

What it leaves out (see `rdzv_sim.scenario.checks`, which refuses scenarios that need them):
pauses, partitions, store faults, clock skew; protocols other than `hrw`. A crash while a
round forms is taken as a crash of its first running moments.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..protocols.agent import out_of_restarts, uses_a_restart
from ..protocols.base import digest
from ..sim.node import SimNode
from ..sim.simulation import Simulation
from ..trace import RunStats
from .jobs import register_aggregate_job
from .hrw_round import Sizes, hrw_round
from .queue import Fifo


class AggregateSimulation(Simulation):
    def __init__(self, sc):
        super().__init__(sc)
        self.fifo = Fifo(sc.store)
        self.lat = {h: float(self.net.base[h]) for h in self.hosts}
        self.round = 0                    # the store's round (a requeue starts again at 0)
        self.published: list[str] | None = None    # the store's rank order (rank_order=stable)
        self.joiners: dict[str, float] = {}        # name -> when its rendezvous starts
        self.restarts: dict[str, int] = {h: 0 for h in self.hosts}
        self.members: list[str] = []      # the running (or starting) round's members
        self.t_ws = math.inf              # when the members' workers started
        self.leave_at: float | None = None
        self.leave_why = ""
        self.member_set: set[str] = set()
        self.plan = 0                     # the latest closure plan (earlier ones are void)
        self.waiting_noticed = False
        self.ranked: list[str] = []       # the members in rank order
        self.exited: set[str] = set()     # hosts up whose agent gave up (until requeued)
        self.sizes_of: dict[int, tuple] = {}   # round -> (joined, members): what clean-up deletes
        self.gen = 0                      # job attempt: callbacks of an earlier one are void
        self.sizes = Sizes(key=len(f"{self.protocol.prefix}r0/") + 4,
                           desc=len(self.nodes[self.hosts[0]].info.encode()) + 8)

    # --- the fault and scheduler API of Simulation ------------------------------------
    def start(self, node: SimNode, why: str) -> None:
        if node.alive or not self.scheduler.may_start(node, why):
            return
        node.alive = True
        self.exited.discard(node.name)
        node.incarnation += 1
        self.trace.record(self.env.now, node.name, "node_start", detail={"why": why})
        self.restarts[node.name] = 0
        self._join(node.name, self.env.now + self.sc.agent.process_start)

    def stop(self, node: SimNode) -> None:
        if not node.alive:
            return
        self.trace.record(self.env.now, node.name, "agent_stopped",
                          self.round_of(node.name))
        node.alive = False
        self.exited.discard(node.name)
        self._drop(node.name)

    def crash(self, node: SimNode, cause: str, detection: float | None = None) -> None:
        if not node.alive:
            return
        self.trace.record(self.env.now, node.name, "fault_crash", self.round_of(node.name),
                          detail={"cause": cause})
        node.alive = False
        self.exited.discard(node.name)
        self.scheduler.failed(node)
        was_member = node.name in self.member_set
        self._drop(node.name)
        if was_member:
            self._leave(max(self.env.now + self.notice_delay(cause, detection), self.t_ws), "peer_failed")

    def fail_workers(self, node: SimNode) -> None:
        if node.alive and node.name in self.member_set:
            self._leave(max(self.env.now, self.t_ws), "workers_failed")

    def fresh_store(self) -> None:
        self.store.restart()
        self.round, self.gen, self.published = 0, self.gen + 1, None
        self.fifo.free_at = self.env.now
        self.members, self.member_set, self.ranked, self.joiners = [], set(), [], {}
        self.exited, self.sizes_of = set(), {}
        self.leave_at, self.waiting_noticed, self.t_ws = None, False, math.inf

    def _agents_left(self) -> bool:
        return any(n.alive and n.name not in self.exited for n in self.nodes.values())

    def round_of(self, name: str):
        return self.round if name in self.member_set else None

    # --- the job's state machine -------------------------------------------------------
    def _drop(self, name: str) -> None:
        self.joiners.pop(name, None)
        if name in self.member_set:
            self.member_set.discard(name)
            self.members.remove(name)

    def _join(self, name: str, t: float) -> None:
        """`name` starts a rendezvous at `t`: into the forming round, or it waits."""
        self.joiners[name] = t
        if self.members:
            self._late([name], t)
        else:
            self._plan()

    def _plan(self) -> None:
        """When the forming round closes: at once with max_nodes joiners, else the min_nodes-th
        joiner's last call; with fewer, at the join timeout (a newcomer plans again)."""
        sc = self.sc
        starts = sorted(self.joiners.values())
        if not starts:
            return
        n = len(starts)
        if n >= sc.max_nodes:
            t = starts[sc.max_nodes - 1]
        elif n >= sc.min_nodes:
            t = starts[sc.min_nodes - 1] + sc.protocol.last_call_timeout
        else:
            t = starts[0] + sc.protocol.join_timeout
        self.plan += 1
        token = self.plan
        self._at(t, lambda: self._form() if token == self.plan else None)

    def _at(self, t: float, fn) -> None:
        gen = self.gen
        self.env.timeout(max(0.0, t - self.env.now)).callbacks.append(
            lambda _e: fn() if gen == self.gen else None)

    def _late(self, names: list[str], t: float) -> None:
        """Joiners of a round that is closed: they wait; a round not full restarts for them at
        the members' next monitor tick (after their workers started)."""
        r, k = self.round, len(self.members)
        n = len(names)
        self.trace.record_many([t] * n, names, "join", r,
                               details=[f'{{"slot":{k + 1 + i}}}' for i in range(n)])
        self.trace.record_many([t] * n, names, "waiting", r,
                               details=[f'{{"slot":{k + 1 + i},"waiting":{i + 1}}}' for i in range(n)])
        if len(self.members) < self.sc.max_nodes and not self.waiting_noticed:
            self.waiting_noticed = True
            mon = self.sc.agent.monitor_interval
            seen = max(t + 2 * self.lat[names[0]], self.t_ws)
            ticks = math.ceil((seen - self.t_ws) / mon)
            self._leave(self.t_ws + max(1, ticks) * mon, "nodes_waiting")

    def _leave(self, t: float, why: str) -> None:
        """The members leave the round at `t` (the earliest reason wins)."""
        if self.leave_at is not None and self.leave_at <= t:
            return
        self.leave_at, self.leave_why = t, why
        self._at(t, lambda: self._left(t))

    def _round_left(self, t: float) -> tuple[str, list[str]] | None:
        """The leave due at `t`, if no earlier one superseded it: why, and the live members,
        whose leaving is recorded."""
        if self.leave_at != t:
            return None
        why, r = self.leave_why, self.round
        self.leave_at = None
        members = [m for m in self.members if self.nodes[m].alive]
        rank = {m: i for i, m in enumerate(self.ranked)}
        self.trace.record_many([t] * len(members), members, "round_left", r,
                               ranks=[rank[m] for m in members],
                               details=[f'{{"reason":"{why}"}}'] * len(members))
        return why, members

    def _left(self, t: float) -> None:
        left = self._round_left(t)
        if left is None:
            return                                       # superseded by an earlier leave
        why, members = left
        failure = uses_a_restart(why)
        lat = np.array([self.lat[m] for m in members])
        # end_round: compare_set(round, r, r+1) by every member, then set(end)
        back = self.fifo.serve(t + lat, self.sizes.key + 4) + lat
        self.fifo.serve(back + lat, self.sizes.key + 8)
        self.members, self.member_set, self.ranked = [], set(), []
        self.t_ws, self.waiting_noticed = math.inf, False
        self.round += 1
        exited = []
        for m, tb in zip(members, back.tolist()):
            if failure:
                self.restarts[m] += 1
                if out_of_restarts(self.restarts[m], self.agent_cfg):
                    exited.append(m)
                    continue
            self.joiners[m] = tb
        for m in exited:
            self.trace.record(t, m, "agent_exit", detail={"reason": "max_restarts"})
            self.exited.add(m)
        left = set(members)
        for name, ts in self.joiners.items():          # the waiting: `end` woke them
            if name not in left:
                self.joiners[name] = max(ts, t + 2 * self.lat[name])
        if self.joiners:
            self._plan()
        elif not self._agents_left():
            self.scheduler.requeue("no_agent_left")

    def _form(self) -> None:
        """The forming round closes: its timing, its events, its members' workers start."""
        now = self.env.now
        sc, tr = self.sc, self.trace
        names = sorted(self.joiners, key=lambda n: (self.joiners[n], n))
        if not names:
            return
        starts = np.array([self.joiners[n] for n in names])
        lat = np.array([self.lat[n] for n in names])
        saved = (self.fifo.free_at, self.fifo.ops, self.fifo.bytes)
        rt = hrw_round(self.fifo, starts, lat, sc.min_nodes, sc.max_nodes,
                       sc.protocol.last_call_timeout, self.sizes)
        if rt is None:                                   # too few joined in time: they give up
            self.fifo.free_at, self.fifo.ops, self.fifo.bytes = saved
            k = len(names)
            tr.record_many([now] * k, names, "rendezvous_timeout",
                           details=['{"reason":"fewer than min_nodes joined in time"}'] * k)
            tr.record_many([now] * k, names, "agent_exit", details=['{"reason":"rendezvous_timeout"}'] * k)
            self.exited.update(names)
            self.joiners.clear()
            self.scheduler.requeue("no_agent_left")
            return
        r = self.round
        tr.record_many(starts.tolist(), names, "rendezvous_start",
                       details=[f'{{"restarts":{self.restarts[n]}}}' for n in names])
        order_ix = rt.order.tolist()
        tr.record_many(rt.t_join[rt.order].tolist(), [names[j] for j in order_ix], "join", r,
                       details=[f'{{"slot":{s + 1}}}' for s in range(len(order_ix))])
        member_names = [names[j] for j in rt.members.tolist()]
        order = self.protocol.ranks([self.nodes[n].info for n in member_names], self.published)
        if self.protocol.publishes_order:
            self.published = order
        nproc = sc.cluster.nproc_per_node
        world, nn = nproc * len(order), len(order)
        tr.record(rt.t_assigned, names[rt.closer], "round_closed", r, world_size=world,
                  detail={"members": sorted(member_names), "count": nn, "holes": 0})
        rank = {m: i for i, m in enumerate(order)}
        ranks = [rank[n] for n in member_names]
        tr.record_many(rt.t_confirm.tolist(), member_names, "confirmed", r, ranks=ranks)
        dg, master = digest(member_names), order[0]
        t_rank = rt.t_rank.tolist()
        tr.record_many(t_rank, member_names, "rank_assigned", r, ranks=ranks, world_size=world,
                       details=[f'{{"digest":"{dg}","first_rank":{k * nproc},"latency":'
                                f'{json.dumps(tk - self.joiners[n])},"master":"{master}",'
                                f'"nnodes":{nn}}}' for n, k, tk in zip(member_names, ranks, t_rank)])
        a = sc.agent
        t_ws = float(rt.t_rank.max()) + a.worker_start + a.worker_start_per_node * nn
        tr.record_many([t_ws] * nn, order, "workers_started", r, ranks=list(range(nn)), world_size=world)
        # running, each member watches `end` and `probe1` (and `waiting` while not full)
        ml = lat[rt.members]
        for _ in range(2 if nn >= sc.max_nodes else 3):
            self.fifo.serve(t_ws + ml, self.sizes.key)
        self.sizes_of[r] = (len(order_ix), nn)
        old = self.sizes_of.pop(r - 2, None)                 # rank 0 deletes round r-2's keys:
        if old is not None:                                  # check, get, 2 adds, the deletes
            lr = self.lat[order[0]]
            ops = 4 + len(self.protocol.round_keys(r - 2, *old, probes=0))
            self.fifo.serve(t_ws + lr + np.arange(ops) * (2 * lr + self.fifo.store.service_base), self.sizes.key)
        acc = self.runtime.round_ops.setdefault(r + tr.round_offset, [0, 0])
        acc[0] += self.fifo.ops - saved[1]
        acc[1] += self.fifo.bytes - saved[2]
        self.members, self.member_set, self.t_ws, self.ranked = member_names, set(member_names), t_ws, order
        for n in member_names:
            del self.joiners[n]
        late = [names[j] for j in rt.late.tolist()]
        if late:
            self._late(late, float(rt.t_closed))

    # --- running -----------------------------------------------------------------------
    def run(self, progress=None, slices: int = 100) -> RunStats:
        stats = super().run(progress, slices)
        stats.store_ops, stats.store_bytes = self.fifo.ops, self.fifo.bytes
        return stats


register_aggregate_job("hrw", AggregateSimulation)
