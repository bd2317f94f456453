"""Fault injection: the scenario's scheduled faults and random failure processes.

Each fault is one SimPy process that sleeps until its time: a fault costs events when it
happens, never while it waits. Random failures draw from per-node generators spawned from
the scenario's seed, so a seed replays exactly whatever order events run in.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np


def scheduled(sim, actions, anchor=None):
    """A SimPy process body walking one scheduled fault's actions (scenario/timeline.py);
    with an `anchor`, its times count from the moment the run meets it."""
    env = sim.env
    state: dict = {}                         # what the fault's first action left for its last
    if anchor is not None:
        yield sim.when(anchor)
    for a in actions:
        if a.after > 0:
            yield env.timeout(a.after)
        apply(sim, a, state)


def apply(sim, a, state: dict) -> None:
    """Do one timeline action to the simulated world."""
    env, k = sim.env, a.kind
    if k == "crash":
        sim.crash(sim.node_at(a.node), "crash")
    elif k in ("restart", "start"):
        node = sim.node_at(a.node)
        if a.value:                          # back under its name, at another address
            node.info = replace(node.info, addr=f"{node.name}.{node.incarnation + 1}")
        sim.start(node, "restart" if k == "restart" else "slow_join")
    elif k == "worker_failure":
        node = sim.node_at(a.node)
        sim.trace.record(env.now, node.name, "fault_worker_failure")
        sim.fail_workers(node)
    elif k == "agent_failure":
        node = sim.node_at(a.node)
        sim.trace.record(env.now, node.name, "fault_agent_failure", node.running_round)
        if node.alive and node.running_round is not None:
            node.signal("agent_failed")     # the agent stops its workers, shuts down, exits
        elif node.alive:
            sim.stop(node)                  # not in a round: it exits at once
    elif k == "pause":
        sim.pause(sim.node_at(a.node), a.value)
    elif k == "resume":
        sim.resume(sim.node_at(a.node))
    elif k == "cut":
        state["group"] = sim.cut(_hosts(sim, a), a.value)
    elif k == "heal":
        sim.heal(state["group"])
    elif k == "slow":
        hosts = state["hosts"] = _hosts(sim, a)
        sim.trace.record(env.now, "network", "fault_latency",
                         detail={"hosts": sorted(hosts), "delay": a.value, "duration": sim.sc.faults[a.fault].duration})
        for h in hosts:
            sim.net.slow(h, a.value)
    elif k == "unslow":
        for h in state["hosts"]:
            sim.net.slow(h, -a.value)
        sim.trace.record(env.now, "network", "latency_healed", detail={"hosts": len(state["hosts"])})
    elif k == "lose":
        hosts = state["hosts"] = _hosts(sim, a)
        f = sim.sc.faults[a.fault]
        sim.trace.record(env.now, "network", "fault_loss",
                         detail={"hosts": sorted(hosts), "rate": f.rate, "rto": f.rto, "duration": f.duration})
        for h in hosts:
            sim.net.set_loss(h, f.rate, f.rto)
    elif k == "unlose":
        for h in state["hosts"]:
            sim.net.set_loss(h, 0.0)
        held = {h: sim.net.held.pop(h, 0) for h in sorted(state["hosts"])}
        sim.trace.record(env.now, "network", "loss_healed", detail={"hosts": len(state["hosts"]), "held": held})
    elif k == "store_crash":
        sim.crash_store("store_crash")
    elif k == "store_pause":
        sim.trace.record(env.now, "store", "fault_store_pause", detail={"duration": a.value})
        sim.store.sigstop()
    elif k == "store_resume":
        sim.store.sigcont()
        sim.trace.record(env.now, "store", "store_resumed")
    elif k == "lighthouse_down":             # the replay of the quorum protocol reads these
        sim.trace.record(env.now, "lighthouse", "fault_lighthouse_crash", detail={"duration": a.value})
    elif k == "lighthouse_up":
        sim.trace.record(env.now, "lighthouse", "lighthouse_restarted")
    elif k == "rack_crash":
        hosts = state["hosts"] = sim.net.hosts_in_rack(f"rack{a.rack}")
        sim.trace.record(env.now, f"rack{a.rack}", "fault_rack_failure", detail={"hosts": len(hosts)})
        for h in hosts:
            sim.crash(sim.nodes[h], "rack_failure")
    elif k == "rack_restart":
        for h in state["hosts"]:
            sim.start(sim.nodes[h], "restart")
    elif k == "terminate":
        node = sim.node_at(a.node)
        sim.trace.record(env.now, node.name, "fault_preemption",
                         detail={"notice": sim.sc.faults[a.fault].notice})
        if node.alive and node.running_round is not None:
            node.signal("terminated")        # the agent stops its workers, leaves, exits
        else:
            sim.stop(node)                   # not in a round: SIGTERM ends the agent at once
    elif k == "reclaim":                     # the host goes, whether its agent left or not
        node = sim.node_at(a.node)
        if node.alive:
            sim.crash(node, "preempted")
        else:
            sim.trace.record(env.now, node.name, "fault_crash", detail={"cause": "preempted"})
    elif k == "straggle":
        node = sim.node_at(a.node)
        node.slowdown = a.value
        sim.trace.record(env.now, node.name, "fault_straggler",
                         detail={"slowdown": a.value, "duration": sim.sc.faults[a.fault].duration})
        sim.scheduler.straggling(node)
    elif k == "unstraggle":
        node = sim.node_at(a.node)
        node.slowdown = 1.0
        sim.trace.record(env.now, node.name, "straggler_healed")
    elif k == "clock_skew":
        node = sim.node_at(a.node)
        node.clock_skew += a.value
        sim.runtime.least_skew = min(sim.runtime.least_skew, node.clock_skew)
        sim.trace.record(env.now, node.name, "fault_clock_skew", detail={"offset": a.value})
    else:                                    # timeline.py makes no other
        raise ValueError(f"unknown fault action {k!r}")


def _hosts(sim, a) -> list[str]:
    """The hosts a partition or latency fault names: its `nodes`, or its `rack`'s."""
    if a.nodes is not None:
        return [sim.node_at(i).name for i in a.nodes]
    return sim.net.hosts_in_rack(f"rack{a.rack}")


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
            if spec.requeue:                 # the scheduler kills the job and queues it again
                sim.trace.record(env.now, "job", "fault_job_interruption", detail={"cause": spec.cause})
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
        _strike(sim, hosts, spec.cause, spec.detection, spec.repair)


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
    sim.trace.record(sim.env.now, "job", "fault_job_interruption", detail={"cause": cause})
    for node in sim.nodes.values():
        sim.fail_workers(node)


def _strike(sim, hosts, cause: str, detection: float | None, repair: float | None) -> None:
    """The hosts crash (their peers notice after `detection`) and come back after `repair`."""
    for node in hosts:
        sim.crash(node, cause, detection)
    if repair is not None:
        sim.env.process(_repair(sim, hosts, repair, cause))


def _repair(sim, hosts, after: float, cause: str):
    yield sim.env.timeout(after)
    for node in hosts:
        if not node.alive:
            sim.start(node, f"repair:{cause}")
