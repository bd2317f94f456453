"""Fault injection: the scenario's scheduled faults and random failure processes.

Each fault is one SimPy process that sleeps until its time: a fault costs events when it
happens, never while it waits. Random failures draw from per-node generators spawned from
the scenario's seed, so a seed replays exactly whatever order events run in.
"""
from __future__ import annotations

import math

import numpy as np
from ..events import Event


def scheduled(sim, actions, anchor=None):
    """A SimPy process body walking one scheduled fault's actions (scenario/timeline.py) in
    the simulator's world; with an `anchor`, its times count from the moment the run meets it."""
    env, world = sim.env, sim.world
    state: dict = {}                         # what the fault's first action left for its last
    if anchor is not None:
        yield sim.when(anchor)
    for a in actions:
        if a.after > 0:
            yield env.timeout(a.after)
        world.apply(a, state)


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
    """A Poisson process of `spec.rate(sc)` interruptions a second, each at its scope."""
    env = sim.env
    mean_gap = spec.mean_gap(sim.sc)
    if mean_gap is None:
        return
    while True:
        yield env.timeout(float(rng.exponential(mean_gap)))
        if spec.scope == "job":
            if spec.requeue:                 # the scheduler kills the job and queues it again
                sim.trace.record(env.now, "job", Event.FAULT_JOB_INTERRUPTION, detail={"cause": spec.cause})
                for node in sim.nodes.values():
                    sim.stop(node)
                sim.scheduler.requeue(f"interruption:{spec.cause}")
            else:
                _job_interruption(sim, spec.cause)
            continue
        if spec.scope == "rack":
            racks = sorted({n.rack for n in sim.nodes.values() if n.rack is not None})
            if not racks:
                continue
            rack = racks[int(rng.integers(len(racks)))]
            hosts = [sim.nodes[h] for h in sim.net.hosts_in_rack(rack)]
        else:
            hosts = [sim.node_at(int(rng.integers(len(sim.hosts))))]
        _strike(sim, hosts, spec.cause, spec.detection, spec.repair, spec.device_unusable)


def replay(sim, plan, rng: np.random.Generator):
    """A log's incidents (`rdzv_sim.incidents.replay_plan`), each at its time and scope: a named
    host's on its host, an unnamed one's on a random live host (a log says a host failed, and a
    host that is down cannot)."""
    env = sim.env
    for x in plan.itertuples(index=False):
        if x.time > env.now:
            yield env.timeout(float(x.time) - env.now)
        if x.scope == "job":
            _job_interruption(sim, x.cause)
            continue
        if x.scope == "rack":
            hosts = [sim.nodes[h] for h in sim.net.hosts_in_rack(f"rack{x.target}")]
        elif x.target >= 0:
            hosts = [sim.node_at(int(x.target))]
        else:
            alive = [n for n in sim.nodes.values() if n.alive]
            if not alive:
                continue
            hosts = [alive[int(rng.integers(len(alive)))]]
        _strike(sim, hosts, x.cause, None if np.isnan(x.detection) else float(x.detection),
                None if np.isnan(x.repair) else float(x.repair))


def _job_interruption(sim, cause: str) -> None:
    """Every node's workers fail at once (a software bug, an NCCL watchdog)."""
    sim.trace.record(sim.env.now, "job", Event.FAULT_JOB_INTERRUPTION, detail={"cause": cause})
    for node in sim.nodes.values():
        sim.fail_workers(node)


def _strike(sim, hosts, cause: str, detection: float | None, repair: float | None,
            unusable: bool = False) -> None:
    """The hosts crash (their peers notice after `detection`) and come back after `repair`."""
    for node in hosts:
        sim.crash(node, cause, detection, unusable)
    if repair is not None:
        sim.env.process(_repair(sim, hosts, repair, cause))


def _repair(sim, hosts, after: float, cause: str):
    yield sim.env.timeout(after)
    for node in hosts:
        if not node.alive:
            sim.start(node, f"repair:{cause}")
