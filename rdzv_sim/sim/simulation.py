"""`Simulation`: the job per operation: every host's agent and protocol generator, one store
request at a time, on the shared world of `Job`."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import simpy

from ..protocols.agent import elastic_agent
from ..protocols.recovery import Fault
from ..reasons import Reason
from ..scenario.schema import Scenario
from .in_place import InPlace
from .job import Job
from .node import SimNode
from .runtime import SimRuntime
from ..events import Event


class Simulation(Job):
    def __init__(self, sc: Scenario, cpu=None):
        """`cpu`: a factory of the shared cores (rdzv_sim/models/cpu), for one-machine runs."""
        super().__init__(sc)
        self.runtime = SimRuntime(self.env, self.store, self.net, self.trace, sc.agent, sc.cluster.cpu,
                                  rng=np.random.default_rng(self.seeds[3]), cpu=cpu)
        for n in self.nodes.values():
            n.rounds = self.runtime.rounds
        self.runtime.nodes = self.nodes
        self.runtime.load_bin = max(1.0, sc.duration / 2000)
        self.in_place = InPlace(self)
        if self.in_place.on:
            self.runtime.in_place = self.in_place
        self.schedule()

    # --- what faults do ------------------------------------------------------------
    def start(self, node: SimNode, why: str) -> None:
        if node.alive or not self.scheduler.may_start(node, why):
            return
        node.alive, node.paused = True, 0
        node.incarnation += 1
        node.started_at = self.env.now
        node.running_round = node.ctx_round = None
        node.store = None                                  # a new agent knows the job's store only
        node.pending.clear()
        self.trace.record(self.env.now, node.name, Event.NODE_START, detail={"why": why})
        self.store.host_up(node.name)
        info = replace(node.info, pid=1000 + node.incarnation)     # a new agent process
        gen = elastic_agent(info, self.protocol, self.agent_cfg)
        node.process = self.env.process(self._boot(node, gen, node.incarnation))

    def claim(self, node: SimNode, rnd: int) -> None:
        """A spare joins an in-place world of round `rnd` (sim/in_place.py): its agent leaves
        the rendezvous and trains (the process stays up: no start-up, no node_start)."""
        node.running_round = rnd
        node.pending.clear()
        self.runtime.node_died(node)            # its rendezvous' keep-alives and polls end
        node.incarnation += 1                   # the old generator's process is void
        if node.process is not None and node.process.is_alive:
            node.process.interrupt("claimed")
        info = replace(node.info, pid=1000 + node.incarnation)
        gen = elastic_agent(info, self.protocol, self.agent_cfg, claimed=True)
        node.process = self.env.process(self._boot(node, gen, node.incarnation, fresh=False))

    def _boot(self, node: SimNode, gen, incarnation: int, fresh: bool = True):
        """The agent process starts (imports, connects), then runs the agent."""
        if fresh and self.sc.agent.process_start > 0:
            try:
                yield self.env.timeout(self.sc.agent.process_start)
            except simpy.Interrupt:
                gen.close()
                return "killed"
        why = yield from self.runtime.drive(node, gen, incarnation)
        if node.incarnation == incarnation:
            self.runtime.node_died(node)           # its keep-alives and polls end with it
            self.runtime.host_down(node.name)      # and a store its process served
            node.process = None
            self.scheduler.agent_ended()
        return why

    def stop(self, node: SimNode) -> None:
        """The scheduler ends a host's agent (not a failure: nothing is counted against it)."""
        if not node.alive:
            return
        self.trace.record(self.env.now, node.name, Event.AGENT_STOPPED, node.running_round)
        node.alive = False
        self.runtime.node_died(node)
        if node.process is not None and node.process.is_alive:
            node.process.interrupt("stop")
        node.running_round = None

    def crash(self, node: SimNode, cause: str, detection: float | None = None, unusable: bool = False) -> None:
        if not node.alive:
            return
        self.trace.record(self.env.now, node.name, Event.FAULT_CRASH, node.running_round,
                          detail={"cause": cause, "unusable": True} if unusable else {"cause": cause})
        node.alive = False
        self.scheduler.failed(node)
        self.runtime.node_died(node)
        if node.process is not None and node.process.is_alive:
            node.process.interrupt("crash")
        notice = self.notice_delay(cause, detection)
        fault = self.lost(cause, detection, unusable)
        if not (self.in_place.on and node.running_round is not None
                and self.in_place.fault(node.running_round, fault, node.name, notice)):
            self.runtime.peers_notice(node.running_round, {node.name}, notice)
        node.running_round = None
        self.store.host_down(node.name)         # a store on this host goes (or a member of it)
        self.runtime.host_down(node.name)       # and a failover's store there

    def fail_workers(self, node: SimNode) -> None:
        """The node's workers fail (a software bug, a watchdog): its agent restarts them."""
        if node.alive and node.running_round is not None:
            if not (self.in_place.on                # the mode's coordinator decides what it does
                    and self.in_place.fault(node.running_round, Fault.WORKERS_FAILED, node.name, 0.0)):
                node.signal(Reason.WORKERS_FAILED)

    def trains(self, node: SimNode) -> bool:
        return node.alive and node.running_round is not None

    def fresh_store(self) -> None:
        self.in_place = InPlace(self)            # a requeued job's worlds start again
        if self.in_place.on:
            self.runtime.in_place = self.in_place
        self.store.restart()
        for st in self.runtime.stores.values():  # a requeued job knows nothing of failovers
            st.crash("requeue")
        self.runtime.stores.clear()

    def crash_store(self, cause: str) -> None:
        self.store.crash(cause)                  # a replicated store: its leader's member

    def pause(self, node: SimNode, duration: float) -> None:
        """SIGSTOP: the node's process stops until `resume` (pauses nest)."""
        env = self.env
        self.trace.record(env.now, node.name, Event.FAULT_PAUSE, node.running_round,
                          detail={"duration": duration})
        if not node.paused:
            node.resumed = env.event()
        node.paused += 1
        if duration >= self.sc.agent.collective_timeout:
            self.runtime.peers_notice(node.running_round, {node.name})

    def resume(self, node: SimNode) -> None:
        node.paused = max(0, node.paused - 1)
        if not node.paused and not node.resumed.triggered:
            node.resumed.succeed()
            self.trace.record(self.env.now, node.name, Event.NODE_RESUMED)

    def cut(self, hosts: list[str], duration: float = float("inf")) -> int:
        """Isolate `hosts` from the rest; collectives across the cut fail if it outlasts them."""
        self.trace.record(self.env.now, "network", Event.FAULT_PARTITION,
                          detail={"hosts": sorted(hosts), "duration": duration})
        group = self.net.cut(hosts)
        self.store.links_changed()
        if duration >= self.sc.agent.collective_timeout:
            cut = set(hosts)
            for rnd in sorted(self.runtime.rounds):
                members = self.runtime.rounds[rnd]
                if members & cut and members - cut:
                    self.runtime.peers_notice(rnd, set())
        return group

    def heal(self, group: int) -> None:
        hosts = sum(1 for g in self.net.isolated.values() if g == group)
        self.net.heal(group)
        self.store.links_changed()
        self.trace.record(self.env.now, "network", Event.PARTITION_HEALED, detail={"hosts": hosts})

    # --- the store's work, for the tables -----------------------------------------
    def store_work(self) -> tuple[dict, dict, float]:
        rt = self.runtime
        return rt.round_ops, rt.load, rt.load_bin

    def store_totals(self) -> tuple[int, int]:
        return self.runtime.total_ops, self.runtime.total_bytes
