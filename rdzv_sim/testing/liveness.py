"""Liveness: once faults stop, the live nodes form a round within a bound computed from the
settings; and round 0, with no fault before it, is prompt (its protocol's close rule plus a
few round trips). The safety invariants are in `invariants.py`."""
from __future__ import annotations

import json

import pandas as pd

from .invariants import Report, Violation, _assigned
from .known import known_for
from ..scenario.faults import met_at
from ..events import Event


def liveness_bound(scenario) -> float:
    """Seconds after the last fault by which a round of the live nodes must have completed."""
    a, s = scenario.agent, scenario.store
    election = 2 * s.election_timeout if s.kind == "replicated" else 0.0    # one, at most
    one_round = (a.collective_timeout + a.monitor_interval + s.op_timeout + a.retry_backoff + election
                 + scenario.protocol.round_time()
                 + a.worker_start + a.worker_start_per_node * scenario.cluster.nodes + 1.0)
    if a.recovery != "in_job":       # an in-place recovery's parts, and a planned re-form
        one_round += a.in_process.stop() + a.in_process.initialize + a.shrink.time + (a.reform_every or 0.0)
    return 2.0 * one_round


def quiet_time(scenario, events: pd.DataFrame | None = None) -> float:
    """When the last scheduled fault (or its end: heal, resume, repair) takes effect. A fault
    timed from an event counts from when the run's `events` met it (never met: it never
    happened; without events: the end of the run)."""
    t = scenario.cluster.start_spread
    for f in scenario.faults:
        if f.anchor is None:
            t = max(t, f.ends())
        elif events is None:
            t = max(t, scenario.duration)
        else:
            met = anchor_time(f.anchor, events)
            if met is not None:
                t = max(t, met + f.ends())
    return t


def anchor_time(anchor, events: pd.DataFrame) -> float | None:
    """When a run's events met `anchor` (rdzv_sim.scenario.faults.After), or None."""
    ev = events[events["event"].isin((Event.RANK_ASSIGNED, Event.ROUND_CLOSED, anchor.watch().want))]
    return met_at(anchor, ((r.t, r.node, r.event, r.round, json.loads(r.detail) if r.detail else None)
                           for r in ev.itertuples(index=False)))


VALUE_BYTES = 512          # a store value per host, generously (c10d's blob: ~220 B per host)
PROMPT_ROUND_TRIPS = 12    # hrw after its close: 8 requests in a row; c10d and static fewer


def round_trip(scenario) -> float:
    """An upper bound on one store request in a run without faults: both ways over the longest
    path, the store serving every host's request ahead of it, and the client's encode/decode."""
    topo, cpu, store = scenario.cluster.topology, scenario.cluster.cpu, scenario.store
    n = scenario.cluster.nodes
    one_way = 2 * (topo.link_latency + topo.spine_latency) * (1 + topo.jitter)
    size = VALUE_BYTES * (n + 1)
    serve = (n + 1) * store.service(size)
    crowd = n / cpu.shared_cores if cpu.shared_cores else 1.0
    client = 2 * (cpu.base + cpu.per_byte * size + cpu.first_of) * max(1.0, crowd)
    commit = store.commit_time if store.kind == "replicated" else 0.0
    return 2 * one_way + serve + client + commit


def rounds_are_prompt(events: pd.DataFrame, scenario,
                      round_trips: int = PROMPT_ROUND_TRIPS) -> list[Violation]:
    """Round 0, with no fault before it, completes by its protocol's close rule (`close_due`
    of the settings: last call, or at once when full) plus a few round trips."""
    if scenario.random_faults:
        return []
    done = _assigned(events)
    done = done[done["round"] == 0]
    if done.empty:
        return []
    ev = events
    joins = ev[(ev["event"] == Event.JOIN) & (ev["round"] == 0) & ev["node"].isin(set(done["node"]))]
    due = scenario.protocol.resolved(scenario.cluster.nodes).close_due(sorted(joins["t"]))
    if due is None:
        return []
    bound = due + round_trips * round_trip(scenario)
    if any(f.anchor is not None or (hasattr(f, "at") and f.start <= bound) for f in scenario.faults):
        return []
    end = float(done["t"].max())
    if end > bound:
        return [Violation("rounds_are_prompt", f"completed at {end:.6g} s, due by {due:.6g} s "
                          f"+ {round_trips} round trips = {bound:.6g} s", 0)]
    return []


def check_liveness(tables: dict, scenario, slack: float = 1.0, prompt: bool = True) -> Report:
    """Once faults stop and >= min_nodes are up, the live nodes form a round within the bound;
    and round 0 before any fault is prompt (`rounds_are_prompt`, the simulator's timing: pass
    prompt=False on real traces).

    The bound comes from the settings (`liveness_bound`); `slack` multiplies it (use generous
    slack on real traces). Scenarios that lose the store are exempt (the job ends instead)
    unless its agents fail over to a successor's store and none exits for the loss.
    """
    ev = tables["events"]
    if scenario.random_faults or store_ended_job(ev) or leaderless(ev):
        return Report()
    prompt = rounds_are_prompt(ev, scenario) if prompt else []
    t_quiet = quiet_time(scenario, ev)
    deadline = t_quiet + slack * liveness_bound(scenario)
    if deadline > scenario.duration:
        return Report([Violation("liveness", f"run too short to judge: needs {deadline:.1f} s")])
    # a mode that recovers in place without planned re-forms leaves hosts that came back
    # waiting for the next failure it cannot absorb: its world need only be live and big enough
    everyone = scenario.agent.recovery == "in_job" or scenario.agent.reform_every is not None
    report = converged(ev, deadline, scenario.min_nodes, scenario.max_nodes, everyone)
    return Report(known_for(scenario.protocol.name, prompt + report.violations, scenario))


def store_ended_job(events: pd.DataFrame) -> bool:
    """The store was lost and some agent exited for it (no failover, or none left to try)."""
    if not (events["event"] == Event.STORE_LOST).any():
        return False
    exits = events[events["event"] == Event.AGENT_EXIT]["detail"].astype(str)
    return bool(exits.str.contains('"store_').any()) or not (events["event"] == Event.STORE_FAILOVER).any()


def leaderless(events: pd.DataFrame) -> bool:
    """A replicated store that lost its leader and never elected another (no majority left)."""
    ev = events[events["event"].isin((Event.STORE_LEADER_LOST, Event.STORE_LEADER_ELECTED))]
    return bool(len(ev)) and ev["event"].iloc[-1] == Event.STORE_LEADER_LOST


def alive_nodes(events: pd.DataFrame) -> set:
    """Hosts whose agent is running at the end of `events`."""
    up: dict[str, bool] = {}
    for node, e in zip(events["node"], events["event"]):
        if e == Event.NODE_START:
            up[node] = True
        elif e in (Event.FAULT_CRASH, Event.AGENT_EXIT, Event.AGENT_STOPPED):
            up[node] = False
    return {n for n, u in up.items() if u}


def converged(events: pd.DataFrame, deadline: float, min_nodes: int, max_nodes: int,
              everyone: bool = True) -> Report:
    """By `deadline`, the last completed round holds the live nodes (up to max_nodes; not
    `everyone`: at least min_nodes of them)."""
    alive = alive_nodes(events)
    if len(alive) < min_nodes:
        return Report()
    done = _assigned(events[events["t"] <= deadline])
    if done.empty:
        return Report([Violation("liveness", f"no round completed by {deadline:.1f} s")])
    last = done[done["round"] == done["round"].max()]
    members = set(last["node"])
    want = min(len(alive), max_nodes)
    if not (members <= alive and (len(members) == want if everyone else min_nodes <= len(members) <= want)):
        return Report([Violation(
            "liveness", f"by {deadline:.1f} s the last round {int(last['round'].iloc[0])} has "
            f"{sorted(members)}, expected {want} of the live nodes {sorted(alive)}")])
    return Report()
