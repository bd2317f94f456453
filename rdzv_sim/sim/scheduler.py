"""The cluster scheduler around a simulated job: requeueing a dead job, draining bad hosts.

Hot spares need no code here: they are extra hosts started with the job beyond `max_nodes`,
whose agents wait (warm) until a member fails and the next round admits them, exactly as
torchrun's spare nodes do. What the scheduler adds:
- *requeue*: once no agent is left (they exited: max restarts, rendezvous timeout, a lost
  store) or a job-level interruption kills the job, every host that is not drained gets its
  agent started again after `requeue_delay`, on a fresh store (its rounds count from 0
  again; the tables number rounds across attempts);
- *drain*: a host that failed `exclude_after` times is never started again; a straggler at
  least `drain_slower_than` times slower is drained once it has been for `drain_after` s
  (its agent and workers are killed, as a health check cordoning the host does).
"""
from __future__ import annotations
from ..events import Event


class Scheduler:
    def __init__(self, sim):
        self.sim = sim
        self.cfg = sim.sc.scheduler
        self.pending = False                 # a requeue is scheduled
        self.excluded: set[str] = set()

    def failed(self, node) -> None:
        """A host failed (crash of any cause): count it, drain it at the limit."""
        node.failures += 1
        if self.sim.cluster is not None:
            self.sim.cluster.failed(node)
        limit = self.cfg.exclude_after
        if limit is not None and node.failures >= limit and node.name not in self.excluded:
            self.excluded.add(node.name)
            self.sim.trace.record(self.sim.env.now, node.name, Event.NODE_EXCLUDED,
                                  detail={"failures": node.failures})

    def straggling(self, node) -> None:
        """A host became a straggler: drain it later if it is slow enough and still is."""
        limit = self.cfg.drain_slower_than
        if limit is not None and node.slowdown >= limit:
            self.sim.env.process(self._drain_if_slow(node, node.slowdown))

    def _drain_if_slow(self, node, slowdown: float):
        yield self.sim.env.timeout(self.cfg.drain_after)
        if node.slowdown < self.cfg.drain_slower_than or node.name in self.excluded:
            return                           # healed meanwhile, or drained already
        self.excluded.add(node.name)
        self.sim.trace.record(self.sim.env.now, node.name, Event.NODE_EXCLUDED,
                              detail={"why": "straggler", "slowdown": node.slowdown})
        self.sim.crash(node, "drained", self.sim.notice_delay("crash"))

    def may_start(self, node, why: str) -> bool:
        if self.sim.cluster is not None and not self.sim.cluster.may_start(node, why):
            return False                     # the cluster holds it (in repair, idle, retired)
        return why == "start" or node.name not in self.excluded

    def agent_ended(self) -> None:
        """An agent returned: if none is left running, the job is dead; requeue it."""
        if any(n.alive and n.process is not None and n.process.is_alive
               for n in self.sim.nodes.values()):
            return
        self.requeue("no_agent_left")

    def requeue(self, why: str) -> None:
        if self.cfg.requeue_delay is None or self.pending:
            return
        self.pending = True
        self.sim.trace.record(self.sim.env.now, "job", Event.JOB_FAILED, detail={"why": why})
        self.sim.env.process(self._requeue())

    def _requeue(self):
        sim = self.sim
        yield sim.env.timeout(self.cfg.requeue_delay)
        self.pending = False
        sim.trace.record(sim.env.now, "job", Event.JOB_REQUEUED)
        sim.fresh_store()                    # a new job attempt: a fresh store, rounds from 0
        sim.trace.round_offset = sim.trace.max_round + 1
        for node in sim.nodes.values():
            if node.alive:                   # an agent that exited: its host is up, restart it
                sim.stop(node)
            sim.start(node, "requeue")
