"""A scenario's scheduled faults as one timeline of timed actions, read by every runtime.

Each fault compiles to a few actions (a partition: `cut`, then `heal`; a pause: `pause`,
then `resume`). The simulator walks each fault's actions in one process; the real launcher
sorts them all by time. `after` is the delay since the fault's previous action (the simulator
sleeps exactly that), `at` the absolute time (the launcher's clock).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Action:
    at: float
    after: float              # seconds since this fault's previous action (or since t = 0)
    kind: str                 # what to do (see `compile_fault`)
    fault: int                # index in the scenario's `faults`
    node: int | None = None
    nodes: tuple[int, ...] | None = None
    rack: int | None = None
    value: float = 0.0        # delay, offset or duration, by kind


def compile_fault(i: int, f) -> list[Action]:
    """The actions of fault `i`: crash, restart, start (a slow join), worker_failure, agent_failure,
    pause/resume, cut/heal (a partition; a flap: one pair per period), slow/unslow, store_crash, store_pause/store_resume,
    rack_crash/rack_restart, clock_skew, straggle/unstraggle, terminate/reclaim, lose/unlose."""
    k = f.kind
    if k == "slow_join":
        return [Action(f.delay, f.delay, "start", i, node=f.node)]
    at = f.at
    one = dict(fault=i, node=getattr(f, "node", None), rack=getattr(f, "rack", None),
               nodes=tuple(f.nodes) if getattr(f, "nodes", None) is not None else None)
    if k == "restart":
        return [Action(at, at, k, value=float(f.new_address), **one)]
    if k in ("crash", "worker_failure", "agent_failure", "store_crash"):
        return [Action(at, at, k, **one)]
    if k == "clock_skew":
        return [Action(at, at, k, value=f.offset, **one)]
    if k == "flap":                                   # cut/heal pairs, every period
        out, last = [], 0.0
        for j in range(math.ceil(f.duration / f.period - 1e-9)):
            start = at + j * f.period
            down = min(f.down, at + f.duration - start)
            out += [Action(start, start - last, "cut", value=down, **one),
                    Action(start + down, down, "heal", value=down, **one)]
            last = start + down
        return out
    if k == "preemption":                             # SIGTERM, then the host goes away
        return [Action(at, at, "terminate", **one),
                Action(at + f.notice, f.notice, "reclaim", **one)]
    if k == "straggler":
        out = [Action(at, at, "straggle", value=f.slowdown, **one)]
        if f.duration is not None:
            out.append(Action(at + f.duration, f.duration, "unstraggle", value=f.slowdown, **one))
        return out
    pairs = {"pause": ("pause", "resume"), "partition": ("cut", "heal"),
             "latency": ("slow", "unslow"), "store_pause": ("store_pause", "store_resume"),
             "loss": ("lose", "unlose")}
    if k in pairs:
        begin, end = pairs[k]
        value = f.delay if k == "latency" else f.rate if k == "loss" else f.duration
        return [Action(at, at, begin, value=value, **one),
                Action(at + f.duration, f.duration, end, value=value, **one)]
    if k == "rack_failure":
        out = [Action(at, at, "rack_crash", **one)]
        if f.repair is not None:
            out.append(Action(at + f.repair, f.repair, "rack_restart", **one))
        return out
    raise ValueError(f"faults[{i}]: no actions for fault kind {k!r}")   # the schema admits no other


def timeline(sc) -> list[list[Action]]:
    """Every scheduled fault's actions, fault by fault, in scenario order."""
    return [compile_fault(i, f) for i, f in enumerate(sc.faults)]


def late_starts(sc) -> dict[int, float]:
    """Nodes whose first start a slow_join delays: node -> delay."""
    return {a.node: a.at for acts in timeline(sc) for a in acts if a.kind == "start"}
