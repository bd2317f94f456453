"""Fault injection: the scenario's scheduled faults and random failure processes.

Each fault is one SimPy process that sleeps until its time: a fault costs events when it
happens, never while it waits. Random failures draw from per-node generators spawned from
the scenario's seed, so a seed replays exactly whatever order events run in.
"""
from __future__ import annotations

import math

import numpy as np


def _at(env, t):
    if t > env.now:
        yield env.timeout(t - env.now)


def scheduled(sim, fault):
    """A SimPy process body applying one scheduled fault from the scenario."""
    env, k = sim.env, fault.kind
    yield from _at(env, getattr(fault, "at", 0.0))
    if k == "crash":
        sim.crash(sim.node_at(fault.node), "crash")
    elif k == "restart":
        sim.start(sim.node_at(fault.node), "restart")
    elif k == "worker_failure":
        node = sim.node_at(fault.node)
        sim.trace.record(env.now, node.name, "fault_worker_failure")
        sim.fail_workers(node)
    elif k == "pause":
        yield from sim.pause(sim.node_at(fault.node), fault.duration)
    elif k == "partition":
        yield from sim.partition(_hosts(sim, fault), fault.duration)
    elif k == "latency":
        hosts = _hosts(sim, fault)
        sim.trace.record(env.now, "network", "fault_latency",
                         detail={"hosts": sorted(hosts), "delay": fault.delay, "duration": fault.duration})
        for h in hosts:
            sim.net.slow(h, fault.delay)
        yield env.timeout(fault.duration)
        for h in hosts:
            sim.net.slow(h, -fault.delay)
        sim.trace.record(env.now, "network", "latency_healed", detail={"hosts": len(hosts)})
    elif k == "store_crash":
        sim.crash_store("store_crash")
    elif k == "store_pause":
        sim.trace.record(env.now, "store", "fault_store_pause", detail={"duration": fault.duration})
        sim.store.pause()
        yield env.timeout(fault.duration)
        sim.store.resume()
        sim.trace.record(env.now, "store", "store_resumed")
    elif k == "rack_failure":
        hosts = sim.net.hosts_in_rack(f"rack{fault.rack}")
        sim.trace.record(env.now, f"rack{fault.rack}", "fault_rack_failure", detail={"hosts": len(hosts)})
        for h in hosts:
            sim.crash(sim.nodes[h], "rack_failure")
        if fault.repair is not None:
            yield env.timeout(fault.repair)
            for h in hosts:
                sim.start(sim.nodes[h], "restart")
    elif k == "clock_skew":
        node = sim.node_at(fault.node)
        node.clock_skew += fault.offset
        sim.trace.record(env.now, node.name, "fault_clock_skew", detail={"offset": fault.offset})
    elif k == "slow_join":
        pass                                 # handled at start-up: the node starts late
    else:                                    # the schema admits nothing else
        raise ValueError(f"unknown fault kind {k!r}")


def _hosts(sim, fault) -> list[str]:
    """The hosts a partition or latency fault names: its `nodes`, or its `rack`'s."""
    if fault.nodes is not None:
        return [sim.node_at(i).name for i in fault.nodes]
    return sim.net.hosts_in_rack(f"rack{fault.rack}")


def time_to_failure(rf, rng: np.random.Generator) -> float:
    if rf.distribution == "exponential" or rf.shape == 1.0:
        return float(rng.exponential(rf.mtbf))
    scale = rf.mtbf / math.gamma(1.0 + 1.0 / rf.shape)       # so that the mean is the MTBF
    return float(scale * rng.weibull(rf.shape))


def random_failures(sim, rf, node, rng: np.random.Generator):
    """One node's failure/repair cycle: a crash after each drawn lifetime, a restart after repair."""
    env = sim.env
    while True:
        yield env.timeout(time_to_failure(rf, rng))
        if node.alive:
            sim.crash(node, "random_failure")
        if rf.repair is None:
            return
        yield env.timeout(rf.repair)
        if not node.alive:
            sim.start(node, "repair")


def interruptions(sim, spec, rng: np.random.Generator):
    """A Poisson process of `spec.count` interruptions over the run, each at its scope."""
    env = sim.env
    if spec.count <= 0:
        return
    mean_gap = (spec.per or sim.sc.duration) / spec.count
    while True:
        yield env.timeout(float(rng.exponential(mean_gap)))
        if spec.scope == "job":
            sim.trace.record(env.now, "job", "fault_job_interruption", detail={"cause": spec.cause})
            if spec.requeue:                 # the scheduler kills the job and queues it again
                for node in sim.nodes.values():
                    sim.stop(node)
                sim.scheduler.requeue(f"interruption:{spec.cause}")
                continue
            for node in sim.nodes.values():
                sim.fail_workers(node)
            continue
        if spec.scope == "rack":
            racks = sorted({n.rack for n in sim.nodes.values() if n.rack is not None})
            if not racks:
                continue
            rack = racks[int(rng.integers(len(racks)))]
            hosts = [sim.nodes[h] for h in sim.net.hosts_in_rack(rack)]
        else:
            hosts = [sim.node_at(int(rng.integers(len(sim.hosts))))]
        for node in hosts:
            sim.crash(node, spec.cause)
        if spec.repair is not None:
            env.process(_repair(sim, hosts, spec.repair, spec.cause))


def _repair(sim, hosts, after: float, cause: str):
    yield sim.env.timeout(after)
    for node in hosts:
        if not node.alive:
            sim.start(node, f"repair:{cause}")
