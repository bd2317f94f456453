"""`Simulation`: a scenario turned into a SimPy world of hosts, a store, a network and faults."""
from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import simpy

from ..protocols.agent import elastic_agent
from ..reasons import Reason
from ..protocols.base import NodeInfo
from ..incidents import logged, replay_plan
from ..protocols.configure import protocol_for
from ..scenario.faults import Act
from ..scenario.schema import Scenario
from ..scenario.timeline import late_starts, timeline
from ..trace import STEPS, RunStats, Tracer
from . import faults, network
from .network import Network
from .node import SimNode
from .scheduler import Scheduler
from .runtime import SimRuntime
from .replicated import ReplicatedStore
from .store import StoreServer
from .world import SimWorld


def _count_events(env: simpy.Environment) -> list:
    """Wrap env.step to count processed events (SimPy keeps no counter of its own)."""
    counter = [0]
    step = env.step

    def counted():
        counter[0] += 1
        step()
    env.step = counted
    return counter


@contextmanager
def quiet_gc():
    """SimPy makes many short-lived objects, and the cyclic collector's scans of a heap of
    live generators can cost more than the simulation itself (reports/sim_speed.md). Collect
    rarely while running; restore after."""
    old = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(200_000, 50, 1000)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


class Simulation:
    def __init__(self, sc: Scenario, cpu=None):
        """`cpu`: a factory of the shared cores (rdzv_sim/models/cpu), for one-machine runs."""
        self.sc = sc
        self.env = env = simpy.Environment()
        self._events = _count_events(env)
        seeds = np.random.SeedSequence(sc.seed).spawn(5)   # the first four as they always were
        rng_net, self.rng_start, rng_faults = (np.random.default_rng(s) for s in seeds[:3])
        n = sc.hosts                                     # the job's nodes and its hot spares
        width = len(str(n - 1))
        hosts = [f"node{i:0{width}d}" for i in range(n)]
        topo = sc.cluster.topology
        if topo.kind == "racks":
            graph = network.racks(hosts, topo.racks, topo.link_latency, topo.spine_latency, topo.spines)
        else:
            graph = network.flat(hosts, topo.link_latency)
        st = sc.store
        if st.kind == "replicated":
            members = [hosts[i] for i in st.hosts] if st.hosts is not None else ["launcher"] * st.replicas
            store_host = members[0]
        else:
            store_host = hosts[st.host] if st.host is not None else "launcher"
        if store_host == "launcher":
            graph.add_node("launcher", level="host")
            graph.add_edge("launcher", "spine0" if topo.kind == "racks" else "switch",
                           latency=topo.link_latency)
        self.net = Network(env, graph, store_host, topo.jitter, rng_net)
        self.trace = Tracer(STEPS if sc.outputs.events == "lean" else ())
        if st.kind == "replicated":             # the store section is the store's service model
            self.store = ReplicatedStore(env, self.net, members, st, st.commit_time,
                                         st.election_timeout, np.random.default_rng(seeds[4]), self.trace)
        else:
            self.store = StoreServer(env, store_host, st, self.trace)
        self.runtime = SimRuntime(env, self.store, self.net, self.trace, sc.agent, sc.cluster.cpu,
                                  rng=np.random.default_rng(seeds[3]), cpu=cpu)
        self.protocol = protocol_for(sc)
        self.agent_cfg = sc.agent
        self.hosts = hosts
        self.nodes = {h: SimNode(NodeInfo(h, h, sc.cluster.nproc_per_node, i), rack=self.net.rack_of(h))
                      for i, h in enumerate(hosts)}
        for n in self.nodes.values():
            n.rounds = self.runtime.rounds
        self.runtime.nodes = self.nodes
        self.scheduler = Scheduler(self)
        self.runtime.load_bin = max(1.0, sc.duration / 2000)
        self.world = SimWorld(self)
        self._schedule(rng_faults)

    # --- set-up --------------------------------------------------------------------
    def node_at(self, index: int) -> SimNode:
        return self.nodes[self.hosts[index]]

    def _schedule(self, rng_faults: np.random.Generator) -> None:
        sc, env = self.sc, self.env
        late = late_starts(sc)
        first = sc.cluster.start_nodes if sc.cluster.start_nodes is not None else sc.cluster.nodes
        offsets = self.rng_start.uniform(0.0, sc.cluster.start_spread, size=sc.hosts)
        for i, h in enumerate(self.hosts):
            if i in late:
                env.process(self._start_at(self.nodes[h], late[i], "slow_join"))
            elif i < first or i >= sc.cluster.nodes:      # hot spares start with the job
                env.process(self._start_at(self.nodes[h], float(offsets[i]), "start"))
        for actions in timeline(sc):
            if actions[0].kind != Act.START:          # slow joins start above, with the others
                env.process(faults.scheduled(self, actions, sc.faults[actions[0].fault].anchor))
        for rf in sc.random_faults:
            if rf.kind == "interruptions":
                env.process(faults.interruptions(
                    self, rf, np.random.default_rng(int(rng_faults.integers(2**63)))))
                continue
            if rf.kind == "incident_log":
                rng = np.random.default_rng(int(rng_faults.integers(2**63)))
                plan = replay_plan(logged(rf.log), rf, nodes=sc.cluster.nodes,
                                   racks=sc.cluster.topology.racks if sc.cluster.topology.kind == "racks" else 0,
                                   duration=sc.duration, rng=rng)
                env.process(faults.replay(self, plan, rng))
                continue
            targets = rf.nodes if rf.nodes is not None else range(sc.hosts)
            rngs = [np.random.default_rng(s) for s in
                    np.random.SeedSequence(int(rng_faults.integers(2**63))).spawn(len(targets))]
            for i, rng in zip(targets, rngs):
                env.process(faults.random_failures(self, rf, self.node_at(i), rng))

    def when(self, anchor) -> simpy.Event:
        """An event that fires when the run meets `anchor` (a fault's `at: {after: ...}`)."""
        met, watch = self.env.event(), anchor.watch()

        def listen(t, node, event, rnd, detail) -> bool:
            if watch.feed(t, node, event, rnd, detail) is None:
                return False
            met.succeed()
            return True
        self.trace.listeners.append(listen)
        return met

    def _start_at(self, node: SimNode, t: float, why: str):
        if t > 0:
            yield self.env.timeout(t)
        self.start(node, why)

    # --- what faults do ------------------------------------------------------------
    def start(self, node: SimNode, why: str) -> None:
        if node.alive or not self.scheduler.may_start(node, why):
            return
        node.alive, node.paused = True, 0
        node.incarnation += 1
        node.running_round = node.ctx_round = None
        node.store = None                                  # a new agent knows the job's store only
        node.pending.clear()
        self.trace.record(self.env.now, node.name, "node_start", detail={"why": why})
        self.store.host_up(node.name)
        info = replace(node.info, pid=1000 + node.incarnation)     # a new agent process
        gen = elastic_agent(info, self.protocol, self.agent_cfg)
        node.process = self.env.process(self._boot(node, gen, node.incarnation))

    def _boot(self, node: SimNode, gen, incarnation: int):
        """The agent process starts (imports, connects), then runs the agent."""
        if self.sc.agent.process_start > 0:
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
        self.trace.record(self.env.now, node.name, "agent_stopped", node.running_round)
        node.alive = False
        self.runtime.node_died(node)
        if node.process is not None and node.process.is_alive:
            node.process.interrupt("stop")
        node.running_round = None

    def crash(self, node: SimNode, cause: str, detection: float | None = None) -> None:
        if not node.alive:
            return
        self.trace.record(self.env.now, node.name, "fault_crash", node.running_round,
                          detail={"cause": cause})
        node.alive = False
        self.scheduler.failed(node)
        self.runtime.node_died(node)
        if node.process is not None and node.process.is_alive:
            node.process.interrupt("crash")
        self.runtime.peers_notice(node.running_round, {node.name}, self.notice_delay(cause, detection))
        node.running_round = None
        self.store.host_down(node.name)         # a store on this host goes (or a member of it)
        self.runtime.host_down(node.name)       # and a failover's store there

    def notice_delay(self, cause: str, detection: float | None = None) -> float:
        """How long a crashed member's peers take to fail: a killed process's connections are
        reset at once; a vanished host's are not (its peers' collectives time out); a fault
        that says how fast it is detected (`detection`) is detected that fast."""
        if detection is not None:
            return detection
        fast = self.sc.agent.peer_crash_detection if cause == "crash" else None
        return self.sc.agent.collective_timeout if fast is None else fast

    def fail_workers(self, node: SimNode) -> None:
        """The node's workers fail (a software bug, a watchdog): its agent restarts them."""
        if node.alive and node.running_round is not None:
            node.signal(Reason.WORKERS_FAILED)

    def fresh_store(self) -> None:
        self.store.restart()
        for st in self.runtime.stores.values():  # a requeued job knows nothing of failovers
            st.crash("requeue")
        self.runtime.stores.clear()

    def crash_store(self, cause: str) -> None:
        self.store.crash(cause)                  # a replicated store: its leader's member

    def pause(self, node: SimNode, duration: float) -> None:
        """SIGSTOP: the node's process stops until `resume` (pauses nest)."""
        env = self.env
        self.trace.record(env.now, node.name, "fault_pause", node.running_round,
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
            self.trace.record(self.env.now, node.name, "node_resumed")

    def cut(self, hosts: list[str], duration: float = float("inf")) -> int:
        """Isolate `hosts` from the rest; collectives across the cut fail if it outlasts them."""
        self.trace.record(self.env.now, "network", "fault_partition",
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
        self.trace.record(self.env.now, "network", "partition_healed", detail={"hosts": hosts})

    # --- running -------------------------------------------------------------------
    def run(self, progress=None, slices: int = 1000) -> RunStats:
        """Run to the scenario's duration; `progress(t, rounds)` is called `slices` times.
        `sim_events` counts the model's events: each slice's stop is two more steps of SimPy's."""
        t0 = time.perf_counter()
        end = self.sc.duration
        with quiet_gc():
            for i in range(1, slices + 1):
                self.env.run(until=end * i / slices)
                if progress is not None:
                    progress(self.env.now, self.trace.max_round + 1)
        return RunStats(duration=end, protocol=self.sc.protocol.name, nodes=self.sc.cluster.nodes,
                        sim_events=self._events[0] - 2 * slices, wall_s=time.perf_counter() - t0,
                        store_ops=self.runtime.total_ops, store_bytes=self.runtime.total_bytes,
                        store_background_util_max=self.store.max_utilization)
