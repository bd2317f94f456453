"""`AggregateJob`: the job at round granularity, for long runs of thousands of nodes.

The per-operation `Simulation` runs every node's agent and protocol generator, one store
request at a time (~35 SimPy events per node per round). Here the job is one state machine and
the protocol's `RoundModel` says when its rounds form: the members start workers together, and a
failure, a job-level interruption or a waiting node makes them all leave and enter the next
rendezvous, as the agents would. The faults, the scheduler and the trace tables are the
per-operation ones, and so are the agent's decisions (`rdzv_sim.protocols.agent`: which reasons
use a restart, when an agent is out of them); the cost of a run follows the rounds, not the
store requests.

The job is one or more rendezvous (`cell.py`): one for every protocol but a per-step one,
whose replica groups each meet on their own (the round model's `cells`). A host's faults go
to its cell; the job keeps what is the job's: the scheduler, restarts of the whole job, and
whether any agent is left.

What it leaves out (`rdzv_sim.scenario.checks` refuses scenarios that need it): pauses,
partitions, store faults, clock skew. A crash while a round forms is taken as a crash of its
first running moments.
"""
from __future__ import annotations

from ..sim.job import Job
from ..sim.node import SimNode
from .cell import LOST_STORE, Cell
from .round_model import round_model_of
from ..events import Event


class AggregateJob(Job):
    """The job's shared world (`Job`) and its rendezvous (`Cell`s, each with the protocol's
    round model); no agent generators, no per-request runtime."""

    def __init__(self, sc):
        super().__init__(sc)
        self.lat = {h: float(self.net.base[h]) for h in self.hosts}
        self.exited: set[str] = set()     # hosts up whose agent gave up (until requeued)
        self.gen = 0                      # job attempt: callbacks of an earlier one are void
        self.round_ops: dict[int, list] = {}     # round -> [ops, bytes] (the rounds table's)
        model = round_model_of(sc.protocol.name)
        self.cells = [Cell(self, spec) for spec in model.cells(self)]
        self.cell_of = {h: c for c in self.cells for h in c.hosts}
        for c in self.cells:
            c.model = model(c)
        self.schedule()

    @property
    def model(self):
        """The round model of a job that is one rendezvous."""
        if len(self.cells) != 1:
            raise AttributeError("this job is many rendezvous: each cell has its model")
        return self.cells[0].model

    # --- the agents' side of the fault and scheduler interface (`Job`) --------------------
    def start(self, node: SimNode, why: str) -> None:
        if node.alive or not self.scheduler.may_start(node, why):
            return
        node.alive = True
        self.exited.discard(node.name)
        node.incarnation += 1
        node.started_at = self.env.now
        self.trace.record(self.env.now, node.name, Event.NODE_START, detail={"why": why})
        if not self.store.alive:                 # its store died with its host: it exits at once
            self.cell_of[node.name].gave_up(self.env.now + self.sc.agent.process_start, [node.name],
                                            Event.STORE_LOST, LOST_STORE)
            return
        self.cell_of[node.name].enter(node.name, self.env.now + self.sc.agent.process_start)

    def stop(self, node: SimNode) -> None:
        if not node.alive:
            return
        cell = self.cell_of[node.name]
        cell.gone(node.name, self.env.now)
        self.trace.record(self.env.now, node.name, Event.AGENT_STOPPED, self.round_of(node.name))
        node.alive = False
        self.exited.discard(node.name)
        cell.drop(node.name)

    def crash(self, node: SimNode, cause: str, detection: float | None = None, unusable: bool = False) -> None:
        if not node.alive:
            return
        cell = self.cell_of[node.name]
        was_member = cell.gone(node.name, self.env.now)
        self.trace.record(self.env.now, node.name, Event.FAULT_CRASH, self.round_of(node.name),
                          detail={"cause": cause, "unusable": True} if unusable else {"cause": cause})
        node.alive = False
        self.exited.discard(node.name)
        self.scheduler.failed(node)
        cell.drop(node.name)
        if was_member:
            cell.member_died(node.name, self.env.now, self.notice_delay(cause, detection),
                             self.lost(cause, detection, unusable))
        if self.store.alive and self.store.host == node.name:
            self.store.host_down(node.name)      # the job's TCPStore dies with its host
            self.store_died(self.env.now)

    def store_died(self, t: float) -> None:
        """Every agent up loses its store at once and exits (store_lost), as per operation: a
        TCPStore does not come back with its host; a requeued job gets a fresh one."""
        for c in self.cells:
            c.store_lost(t, [h for h in c.hosts if self.nodes[h].alive and h not in self.exited])

    def fail_workers(self, node: SimNode) -> None:
        if node.alive:
            self.cell_of[node.name].workers_failed(node.name, self.env.now)

    def trains(self, node: SimNode) -> bool:
        """A member of a world whose workers started and loaded their checkpoint (the training
        model's load time: a world reloading makes no progress)."""
        cell = self.cell_of[node.name]
        load = self.sc.training.load_time if self.sc.training is not None else 0.0
        return node.alive and bool(cell.is_member[cell.host.code[node.name]]) and self.env.now >= cell.t_ws + load

    def fresh_store(self) -> None:
        self.store.restart()
        self.gen += 1
        self.exited = set()
        for c in self.cells:
            c.reset()

    def round_of(self, name: str):
        cell = self.cell_of[name]
        rnd = cell.round_of(name)
        return None if rnd is None else cell.table_round(rnd)

    def at(self, t: float, fn) -> None:
        """Call `fn` at simulated time `t`, unless the job started again meanwhile."""
        gen = self.gen
        self.env.timeout(max(0.0, t - self.env.now)).callbacks.append(
            lambda _e: fn() if gen == self.gen else None)

    # --- the job's state -----------------------------------------------------------------
    def _agents_left(self) -> bool:
        return any(n.alive and n.name not in self.exited for n in self.nodes.values())

    def requeue_if_none_left(self) -> None:
        if not self._agents_left():
            self.scheduler.requeue("no_agent_left")

    # --- the store's work, for the tables ---------------------------------------------
    def store_work(self) -> tuple[dict, dict, float]:
        """By round (each cell adds a round's as its workers start); no time bins: the round
        models count requests, they do not serve them one by one."""
        return self.round_ops, {}, max(1.0, self.sc.duration / 2000)

    def store_totals(self) -> tuple[int, int]:
        return sum(c.model.ops for c in self.cells), sum(c.model.bytes for c in self.cells)
