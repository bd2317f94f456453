"""`Cell`: one rendezvous of the aggregate job, its running round and its round model.

Most jobs are one rendezvous of every host, so one cell. A per-step job (`quorum`) is many:
every replica group meets on its own, under its own key prefix, and its rounds are numbered
`first`, `first + step`, ... so that a round number names its group. A cell is the port a
round model sees (`model.job`): the scenario and protocol as its rendezvous reads them, its
hosts as codes, its round, and the three calls back (`formed`, `nodes_waiting`, `gave_up`).
"""
from __future__ import annotations

import math

import numpy as np

from ..protocols import recovery
from ..protocols.agent import out_of_restarts, uses_a_restart
from ..protocols.recovery import Absorb, FallBack, Fault, Ignore, Machine, Over, Wait
from ..reasons import ExitReason, Reason
from ..sim import in_place
from .hosts import HostCodes, HostList
from .round_model import CellSpec, Formed
from ..events import Event
from ..sim.store import LOST as LOST_STORE      # the agents' error, as per operation


class CellTrace:
    """The job's trace with the cell's round numbers (0, 1, ...) written as the job's
    (`to_table`, the cell's `table_round`)."""

    def __init__(self, trace, to_table):
        self._trace, self._to_table = trace, to_table

    def _r(self, rnd):
        return None if rnd is None else self._to_table(rnd)

    def record(self, t, node, event, rnd=None, *args, **kwargs):
        return self._trace.record(t, node, event, self._r(rnd), *args, **kwargs)

    def record_many(self, t, nodes, event, rnd=None, *args, **kwargs):
        return self._trace.record_many(t, nodes, event, self._r(rnd), *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._trace, name)


class Cell:
    def __init__(self, job, spec: CellSpec):
        self.job, self.sc, self.protocol = job, spec.sc, spec.protocol
        self.first, self.step = spec.first, spec.step
        self.hosts = list(spec.hosts)
        self.trace = (job.trace if (spec.first, spec.step) == (0, 1)
                      else CellTrace(job.trace, self.table_round))
        self.host = HostCodes(self.hosts, job.lat, {h: job.nodes[h].info for h in self.hosts}, job.trace)
        n = len(self.host)
        self.round = 0                    # the store's round (a requeue starts again at 0)
        self.restarts = np.zeros(n, dtype=np.int64)     # by host code
        self.members = HostList([], [])   # the running (or starting) round's members
        self.is_member = np.zeros(n, dtype=bool)       # by host code
        self.rank_of = np.full(n, -1, dtype=np.int64)  # the members' ranks, by code
        self.t_ws = math.inf              # when the members' workers started
        self.leave_at: float | None = None
        self.leave_why = ""
        self.waiting_noticed = False
        self.model = None                 # set by the job once every cell exists
        # recovery in place: the machine decides (protocols/recovery/machine.py), the cell drives it
        self.recovery = self._machine()
        self.world = None                 # the running world's store round (the machine's key)
        self.t_met = 0.0                  # when its workers started (planned re-forms count from it)

    # --- what the job shares -------------------------------------------------------------
    @property
    def env(self):
        return self.job.env

    @property
    def nodes(self):
        return self.job.nodes

    @property
    def lat(self):
        return self.job.lat

    def at(self, t: float, fn) -> None:
        self.job.at(t, fn)

    def table_round(self, rnd: int) -> int:
        """The job's number of this cell's round `rnd`."""
        return self.first + rnd * self.step

    def round_of(self, name: str):
        return self.round if self.is_member[self.host.code[name]] else None

    # --- what the job tells it -------------------------------------------------------------
    def enter(self, name: str, t: float) -> None:
        """`name`'s agent starts (again) and enters the rendezvous at t: its restarts from 0."""
        self.restarts[self.host.code[name]] = 0
        self.model.enter([name], [t])

    def gone(self, name: str, t: float) -> bool:
        """`name`'s agent is gone at t (the job drops it after its own records): whether it
        was a member of the running round."""
        self.model.gone(name, t)
        return bool(self.is_member[self.host.code[name]])

    def member_died(self, name: str, t: float, notice: float, fault: Fault = Fault.HOST_VANISHED) -> None:
        """A member died at t, its peers notice `notice` seconds later."""
        if not self.members and self.model.probes_members:
            return                    # nobody is left to end the round: a waiter's probe will
        if self._fault(fault, name, t, notice):
            return                    # the mode's: the world recovers in place, or ends first
        if t < self.t_ws:
            # dead before its workers came up: the others' process-group init (a barrier of
            # the members) waits for it in vain, as sim/pg_init.py has it per operation
            self.leave(self.t_ws + self.job.sc.agent.collective_timeout, Reason.PEER_FAILED)
        else:
            self.leave(t + notice, Reason.PEER_FAILED)

    def workers_failed(self, name: str, t: float) -> None:
        if self.is_member[self.host.code[name]]:
            if not self._fault(Fault.WORKERS_FAILED, name, t, 0.0):
                self.leave(max(t, self.t_ws), Reason.WORKERS_FAILED)

    def reset(self) -> None:
        self.round = 0
        self._clear_members()
        self.leave_at, self.waiting_noticed, self.t_ws = None, False, math.inf
        self.recovery, self.world, self.t_met = self._machine(), None, 0.0
        self.model.reset()

    # --- what a round model tells the job ------------------------------------------------
    def formed(self, f: Formed) -> float:
        """A round formed: its events, its members' workers start together (the process-group
        init waits for the last to know its rank). Returns when they start."""
        tr, r, nn = self.trace, f.round, f.nnodes
        nproc = self.job.sc.cluster.nproc_per_node
        world = nproc * nn
        facts = {"digest": f.digest, "master": f.master, "nnodes": nn}     # once a round
        tr.record(f.t_closed, f.closer, Event.ROUND_CLOSED, r, world_size=world,
                  detail={"members": f.listed, "count": nn, "holes": 0, **facts})
        ranks, t_rank = np.asarray(f.ranks, np.int64), np.asarray(f.t_rank, np.float64)
        hc = self.host.of(f.members)          # a HostList's own codes, else one lookup a name
        codes = self.host.traced(hc)
        tr.record_many(t_rank, codes, Event.RANK_ASSIGNED, r, ranks=ranks, world_size=world,
                       fields={"latency": t_rank - np.asarray(f.started, np.float64)},
                       facts={**facts, "first_rank": ranks * nproc})    # given by the round's
        a = self.job.sc.agent
        t_ws = float(t_rank.max()) + a.worker_start + a.worker_start_per_node * nn
        by_rank = np.argsort(ranks, kind="stable")
        tr.record_many(t_ws, codes[by_rank], Event.WORKERS_STARTED, r, ranks=ranks[by_rank],
                       world_size=world)
        self.model.running(f, t_ws)
        key = self.table_round(r) + self.job.trace.round_offset
        acc = self.job.round_ops.setdefault(key, [0, 0])
        acc[0] += self.model.ops - f.since[0]
        acc[1] += self.model.bytes - f.since[1]
        self._clear_members()
        self.members = HostList(f.members, hc)
        self.is_member[hc] = True
        self.rank_of[hc] = ranks
        self.t_ws, self.waiting_noticed = t_ws, False
        self.world, self.t_met = r, t_ws
        self.recovery.formed(r, [m for _, m in sorted(zip(f.ranks, f.members))], float(t_rank.min()), t_ws)
        if f.doomed:                       # the init barrier waits for the dead one in vain
            self.leave(t_ws + a.collective_timeout, Reason.PEER_FAILED)
        return t_ws

    def nodes_waiting(self, seen: float) -> None:
        """A running round's members see at `seen` that a node waits: they leave at their next
        monitor tick after it (the agent's safe point), at least one tick after the start."""
        if not self.members or self.waiting_noticed:
            return
        at = recovery.reform_at(self.job.sc.agent, self.t_met, seen)
        if at is None:
            return                        # they wait for the next failure not absorbed in place
        self.waiting_noticed = True
        mon = self.job.sc.agent.monitor_interval
        ticks = math.ceil((max(at, self.t_ws) - self.t_ws) / mon)
        self.leave(self.t_ws + max(1, ticks) * mon, Reason.NODES_WAITING)

    def round_ended(self, t: float | None) -> None:
        """Another agent ends the running round at `t` (an hrw waiter whose probe a dead
        member did not answer): its live members leave then. None: that agent died first, and
        its end is void."""
        if t is None:
            if self.leave_at is not None and self.leave_why == Reason.ROUND_ENDED:
                self.leave_at = None
                self.recovery.ending(self.world, None)
            return
        self.leave(t, Reason.ROUND_ENDED)

    def gave_up(self, t: float, names: list[str], why: str, reason: str) -> None:
        """torch's RendezvousTimeoutError or RendezvousClosedError: these agents exit."""
        self.job.trace.record_many(t, names, why, fields={"reason": reason})
        self.job.trace.record_many(t, names, Event.AGENT_EXIT, fields={"reason": why})
        self.job.exited.update(names)
        self.model.shut_down(names, t)
        self.job.requeue_if_none_left()

    def store_lost(self, t: float, names: list[str]) -> None:
        """The job's store died at t: the running round is over (no leave, no recovery: its
        members exit with everyone else), and `names`, every agent up, exit store_lost."""
        self.leave_at = None
        self.recovery.ended(self.world)
        self._clear_members()
        self.t_ws, self.waiting_noticed = math.inf, False
        if names:
            self.gave_up(t, names, Event.STORE_LOST, LOST_STORE)

    # --- the round's state machine -------------------------------------------------------
    def drop(self, name: str) -> None:
        c = self.host.code[name]
        if self.is_member[c]:
            self.is_member[c] = False
            self.members.remove(name)

    def _clear_members(self) -> None:
        self.is_member[self.members.codes] = False
        self.rank_of[self.members.codes] = -1
        self.members = HostList([], [])

    def leave(self, t: float, why: str) -> None:
        """The members leave the round at `t` (the earliest reason wins)."""
        if self.leave_at is not None and self.leave_at <= t:
            return
        self.recovery.ending(self.world, t)              # faults due after: the round ends first
        self.leave_at, self.leave_why = t, why
        self.at(t, lambda: self._left(t))

    def _left(self, t: float) -> None:
        if self.leave_at != t:
            return                                       # superseded by an earlier leave
        why, r, job = self.leave_why, self.round, self.job
        self.leave_at = None
        self.recovery.ended(self.world)                  # the round is over: nothing to recover
        if not self.members and self.model.probes_members and why != Reason.ROUND_ENDED:
            return          # every member died before it noticed: a waiter's probe ends the round
        # a member that stopped or crashed was dropped then: every member is alive
        members, mc = self.members, self.members.codes
        self.trace.record_many(t, self.host.traced(mc), Event.ROUND_LEFT, r, ranks=self.rank_of[mc],
                               fields={"reason": why})
        back = self.model.leave(members, t)
        self._clear_members()
        self.t_ws, self.waiting_noticed = math.inf, False
        names, times, out = members, back, []
        if uses_a_restart(why) and members:
            restarts = self.restarts
            restarts[mc] += 1
            # the count only grows: none is out unless the most restarted is
            if out_of_restarts(int(restarts[mc].max()), job.agent_cfg):
                names, times = [], []
                for m, c, tb in zip(members, mc.tolist(), back):
                    if out_of_restarts(int(restarts[c]), job.agent_cfg):
                        job.trace.record(t, m, Event.AGENT_EXIT, detail={"reason": ExitReason.MAX_RESTARTS})
                        job.exited.add(m)
                        self.model.gone(m, t)
                        out.append(m)
                    else:
                        names.append(m)
                        times.append(tb)
        if out:
            self.model.shut_down(out, t)
        self.model.enter(names, times)
        job.requeue_if_none_left()

    # --- recovery in place (protocols/recovery/machine.py decides) ----------------------------
    def _machine(self) -> Machine:
        return Machine(self.job.sc.agent, min_nodes=self.sc.min_nodes, segment=self.job.sc.scheduler.segment)

    def _idle(self) -> list[str]:
        """The cell's live agents that are not members (waiting in the rendezvous), by name."""
        job = self.job
        return [h for h in self.hosts if job.nodes[h].alive and h not in job.exited
                and not self.is_member[self.host.code[h]]]

    def _fault(self, fault: Fault, name: str, t: float, notice: float) -> bool:
        """A member's fault at t, told to the machine: False when it is the in-job path's."""
        d = self.recovery.fault(self.world, fault, name, t, notice)
        if isinstance(d, Wait) and d.new:
            self.at(d.at, lambda: self._recover(d.at))
        return isinstance(d, (Wait, Ignore))

    def _recover(self, t: float) -> None:
        idle = [(h, self.job.nodes[h].started_at) for h in self._idle()]
        d = self.recovery.due(self.world, t, self.members, idle)
        if isinstance(d, FallBack):
            in_place.fell_back(self.trace, t, self.round, d.fault, d.plan)
            self.leave(t, d.why)
        elif isinstance(d, Over):
            self.leave(t, d.why)
        elif isinstance(d, Absorb):
            self._in_place(t, d)

    def _in_place(self, t: float, d: Absorb) -> None:
        """The world goes on without a store round (`sim/in_place.py`): the new world is a
        round of the tables of its own; members left out, and the spares not taken, wait in
        the rendezvous."""
        job, mc = self.job, self.members.codes
        new = list(d.new)
        for name in d.taken:                           # a spare leaves the rendezvous for it
            self.model.gone(name, t)
        hc = self.host.of(new)
        _, t_ws = in_place.record(self.trace, t, self.round, self.host.traced(mc), self.rank_of[mc], new,
                                  d.plan, d.why, d.fault, job.sc.cluster.nproc_per_node, self.host.traced(hc),
                                  later=self.at, nodes=job.nodes)
        self.leave_at = None                           # a leave planned for the old world is void
        self._clear_members()
        self.members = HostList(new, hc)
        self.is_member[hc] = True
        self.rank_of[hc] = np.arange(len(new), dtype=np.int64)
        self.t_ws, self.waiting_noticed = t_ws, False
        self.model.regrouped(self.members, t_ws)
        if d.left_out:                                 # left out: rendezvous again
            self.model.enter(list(d.left_out), [t] * len(d.left_out))
        if job.sc.agent.reform_every is not None and self._idle():
            self.nodes_waiting(t)
