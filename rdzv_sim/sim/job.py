"""`Job`: what a simulated job is at either fidelity, and the small interface each fills in.

Both fidelities stand on the same world: a SimPy environment, the hosts and their network,
the store, the trace, the scheduler around the job, and the scenario's faults driven through
`SimWorld`. What differs is what a host's agent is: every agent's generator, request by request
(`Simulation`), or the job's rounds as a round model makes them (`aggregate.AggregateJob`). A
fidelity fills in the agent's side of the fault interface (`start`, `stop`, `crash`,
`fail_workers`, `fresh_store`, `store_work`), as a SimPy resource fills in `_do_put` and
`_do_get`; a fault it does not model (`pause`, `cut`, ...) is refused by name, and the
scenario checks refuse it before anything runs.
"""
from __future__ import annotations

import gc
import time
from contextlib import contextmanager

import numpy as np
import simpy

from ..incidents import logged, replay_plan
from ..protocols.base import NodeInfo
from ..protocols.configure import protocol_for
from ..scenario.faults import Act
from ..scenario.schema import Scenario
from ..scenario.timeline import late_starts, timeline
from ..trace import STEPS, RunStats, Tracer
from . import faults, network
from .network import Network
from .node import SimNode
from .replicated import ReplicatedStore
from .cluster import Cluster
from .scheduler import Scheduler
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


class Job:
    """The shared world of a simulated job (module doc). A subclass builds its agents' side,
    then calls `schedule()` once to put the scenario's starts and faults on the clock."""

    def __init__(self, sc: Scenario):
        self.sc = sc
        self.env = env = simpy.Environment()
        self._events = _count_events(env)
        self.seeds = seeds = np.random.SeedSequence(sc.seed).spawn(6)   # the first four as they always were
        rng_net, self.rng_start, self._rng_faults = (np.random.default_rng(s) for s in seeds[:3])
        n = sc.hosts                                     # the job's nodes and its hot spares
        width = len(str(n - 1))
        hosts = [f"node{i:0{width}d}" for i in range(n)]
        topo = sc.cluster.topology
        if topo.kind == "racks":
            graph = network.racks(hosts, sc.racks, topo.link_latency, topo.spine_latency, topo.spines)
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
        self.trace = Tracer(STEPS if sc.outputs.events == "lean" else (), sc.outputs.trace == "hosts")
        if st.kind == "replicated":             # the store section is the store's service model
            self.store = ReplicatedStore(env, self.net, members, st, st.commit_time,
                                         st.election_timeout, np.random.default_rng(seeds[4]), self.trace)
        else:
            self.store = StoreServer(env, store_host, st, self.trace)
        self.protocol = protocol_for(sc)
        self.agent_cfg = sc.agent
        self.hosts = hosts
        self.nodes = {h: SimNode(NodeInfo(h, h, sc.cluster.nproc_per_node, i), rack=self.net.rack_of(h))
                      for i, h in enumerate(hosts)}
        self.cluster = Cluster(self, np.random.default_rng(seeds[5])) if sc.lifecycle is not None else None
        self.scheduler = Scheduler(self)
        self.world = SimWorld(self)

    # --- what a fidelity fills in --------------------------------------------------------
    def start(self, node: SimNode, why: str) -> None:
        """Start the host's agent (the scheduler may refuse: a drained host)."""
        raise NotImplementedError

    def stop(self, node: SimNode) -> None:
        """The scheduler ends a host's agent (not a failure: nothing is counted against it)."""
        raise NotImplementedError

    def crash(self, node: SimNode, cause: str, detection: float | None = None, unusable: bool = False) -> None:
        """The host is gone (`cause`); its peers notice after `notice_delay`. `unusable`: its
        device is left unusable (an in-process restart cannot absorb it)."""
        raise NotImplementedError

    def fail_workers(self, node: SimNode) -> None:
        """The node's workers fail (a software bug, a watchdog): its agent restarts them."""
        raise NotImplementedError

    def trains(self, node: SimNode) -> bool:
        """Whether the host's workers train now (in a world whose workers started)."""
        raise NotImplementedError

    def fresh_store(self) -> None:
        """The job starts again on a fresh store (a requeue)."""
        raise NotImplementedError

    def store_work(self) -> tuple[dict, dict, float]:
        """The store requests the run made, for its tables: (round -> [ops, bytes], time bin ->
        [ops, bytes], seconds a bin)."""
        raise NotImplementedError

    def store_totals(self) -> tuple[int, int]:
        """Every store request the run made: (ops, bytes)."""
        raise NotImplementedError

    def _refused(self, what: str):
        return NotImplementedError(f"{type(self).__name__} does not model {what} (the scenario checks "
                                   "refuse it before a run)")

    def pause(self, node: SimNode, duration: float) -> None:
        raise self._refused("pauses")

    def resume(self, node: SimNode) -> None:
        raise self._refused("pauses")

    def cut(self, hosts: list[str], duration: float = float("inf")) -> int:
        raise self._refused("partitions")

    def heal(self, group: int) -> None:
        raise self._refused("partitions")

    def crash_store(self, cause: str) -> None:
        raise self._refused("store faults")

    # --- shared ------------------------------------------------------------------------
    def node_at(self, index: int) -> SimNode:
        return self.nodes[self.hosts[index]]

    def notice_delay(self, cause: str, detection: float | None = None) -> float:
        """How long a crashed member's peers take to fail: a killed process's connections are
        reset at once; a vanished host's are not (its peers' collectives time out); a fault
        that says how fast it is detected (`detection`) is detected that fast."""
        if detection is not None:
            return detection
        fast = self.sc.agent.peer_crash_detection if cause == "crash" else None
        return self.sc.agent.collective_timeout if fast is None else fast

    def lost(self, cause: str, detection: float | None, unusable: bool):
        """The recovery fault a crash is: a device left unusable, a process killed on a live
        host (its connections reset: `peer_crash_detection`), or a host that vanished."""
        from ..protocols.recovery import Fault
        if unusable:
            return Fault.DEVICE_UNUSABLE
        if self.cluster is not None and cause in self.cluster.causes:
            return Fault(self.sc.lifecycle.failures.fault)      # as the lifecycle says its failures are
        fast = detection is None and cause == "crash" and self.sc.agent.peer_crash_detection is not None
        return Fault.HOST_LOST if fast else Fault.HOST_VANISHED

    def schedule(self) -> None:
        """Put the hosts' starts and the scenario's faults on the clock."""
        sc, env, rng_faults = self.sc, self.env, self._rng_faults
        late = late_starts(sc)
        first = sc.cluster.start_nodes if sc.cluster.start_nodes is not None else sc.cluster.nodes
        offsets = self.rng_start.uniform(0.0, sc.cluster.start_spread, size=sc.hosts)
        for i, h in enumerate(self.hosts):
            if i in late:
                env.process(self._start_at(self.nodes[h], late[i], "slow_join"))
            elif (i < first or i >= sc.cluster.nodes) and i < sc.started_hosts:   # hot spares start with the job
                env.process(self._start_at(self.nodes[h], float(offsets[i]), "start"))
        for actions in timeline(sc):
            if actions[0].kind != Act.START:          # slow joins start above, with the others
                env.process(faults.scheduled(self, actions, sc.faults[actions[0].fault].anchor))
        if self.cluster is not None:
            self.cluster.start()
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

    def run(self, progress=None, slices: int = 1000) -> RunStats:
        """Run to the scenario's duration; `progress(t, rounds)` is called `slices` times.
        `sim_events` counts the model's events: each slice's stop is two more steps of SimPy's."""
        t0 = time.perf_counter()
        end = self.sc.duration
        with quiet_gc():
            for i in range(1, slices + 1):
                self.env.run(until=end * i / slices)
                self.trace.finished(self.env.now)
                if progress is not None:
                    progress(self.env.now, self.trace.max_round + 1)
        ops, nbytes = self.store_totals()
        return RunStats(duration=end, protocol=self.sc.protocol.name, nodes=self.sc.cluster.nodes,
                        sim_events=self._events[0] - 2 * slices, wall_s=time.perf_counter() - t0,
                        store_ops=ops, store_bytes=nbytes,
                        store_background_util_max=self.store.max_utilization)
