"""Invariants of the agent's recovery modes (`rdzv_sim.protocols.recovery`), read from a run's
events: a world recovered in place only under a mode that does so, a shrunk world holds exactly
the survivors, and the job falls back to an in-job restart only for a reason the tables show.
(No rank given twice and never below min_nodes: `ranks_are_a_permutation` and
`size_within_bounds` hold every round, in-place ones included.)"""
from __future__ import annotations

import json

import pandas as pd

from ..events import Event
from ..protocols.recovery import (ABSORBS, EVENT, IN_PLACE_EVENTS, Fallback, Fault, Mode, gone, out_of_iterations,
                                  world)
from .violations import Violation



def in_place_rounds(events: pd.DataFrame) -> set[int]:
    """Rounds a recovery in place made (no store round, no rendezvous)."""
    rows = events.loc[events["event"].isin(IN_PLACE_EVENTS), "round"].dropna()
    return set(rows.astype(int).tolist())


def _worlds(events: pd.DataFrame) -> dict[int, tuple[float, list[str]]]:
    """round -> (when it began: its ranks given, or its recovery in place; its members in rank order)."""
    ra = events[events["event"] == Event.RANK_ASSIGNED]
    began = events[events["event"].isin(IN_PLACE_EVENTS)].groupby("round")["t"].min().to_dict()
    out = {}
    for rnd, g in ra.groupby("round"):
        g = g.sort_values("rank", kind="stable")
        t = min(float(g["t"].min()), float(began.get(rnd, float("inf"))))
        out[int(rnd)] = (t, g["node"].tolist())
    return out


def _failures(events: pd.DataFrame, members, t0: float, t1: float):
    """(gone, gone with an unusable device, workers failed) among `members` in (t0, t1]: gone
    is crashed, or left the world before t1 (its agent exited: a preemption's notice); workers
    failed once they ran, from t0 on (a worker failure on a host whose workers had not started
    kills none; with no worker_start they start as the ranks are given, at t0)."""
    ev = events[(events["t"] > t0) & (events["t"] <= t1)]
    crash = ev[(ev["event"] == Event.FAULT_CRASH) & ev["node"].isin(members)]
    left = set(ev.loc[(ev["event"] == Event.ROUND_LEFT) & ev["node"].isin(members) & (ev["t"] < t1), "node"])
    unusable = {n for n, d in zip(crash["node"], crash["detail"])
                if isinstance(d, str) and d and json.loads(d).get("unusable")}
    since = events[(events["t"] >= t0) & (events["t"] <= t1)]    # workers may start with the ranks
    ran = since[(since["event"] == Event.WORKERS_STARTED) & since["node"].isin(members)].groupby(
        "node", observed=True)["t"].min().to_dict()
    wf = ev[(ev["event"] == Event.FAULT_WORKER_FAILURE) & ev["node"].isin(members)]
    failed = {n for n, t in zip(wf["node"], wf["t"]) if n in ran and t >= ran[n]}
    if (ev["event"] == Event.FAULT_JOB_INTERRUPTION).any():
        failed |= set(members)
    return set(crash["node"]) | left, unusable, failed


def recovers_as_its_mode_says(tables: dict, scenario) -> list[Violation]:
    ev = tables["events"]
    mode = Mode(scenario.agent.recovery)
    out = []
    allowed = {EVENT[mode]} if mode in EVENT else set()
    for kind in IN_PLACE_EVENTS:
        if kind not in allowed and (ev["event"] == kind).any():
            out.append(Violation("recovers_as_its_mode_says", f"a {kind} under agent.recovery {mode}"))
    if mode is Mode.IN_JOB and (ev["event"] == Event.RECOVERY_FALLBACK).any():
        out.append(Violation("recovers_as_its_mode_says", "a fallback under agent.recovery in_job"))
    return out


def shrunk_world_is_the_survivors(tables: dict, scenario) -> list[Violation]:
    """A shrink's world is its round's members that neither crashed nor failed, in their order;
    a survivor lost while the world shrinks gets no rank in it (its peers find it gone later)."""
    ev = tables["events"]
    shrinks = ev[ev["event"] == Event.SHRINK]
    if shrinks.empty:
        return []
    worlds = _worlds(ev)
    out = []
    for rnd, g in shrinks.groupby("round"):
        rnd, t = int(rnd), float(g["t"].min())
        before = worlds.get(rnd - 1)
        if before is None or rnd not in worlds:
            out.append(Violation("shrunk_world_is_the_survivors", "a shrink without the world before it", rnd))
            continue
        crashed, _, failed = _failures(ev, before[1], before[0], t)
        survivors = list(world(Mode.SHRINK, before[1], crashed, failed, ()))
        ranked = ev.loc[(ev["event"] == Event.RANK_ASSIGNED) & (ev["round"] == rnd), "t"]
        lost = _failures(ev, survivors, t, float(ranked.max()))[0] if len(ranked) else set()
        survivors = [m for m in survivors if m not in lost]
        if worlds[rnd][1] != survivors:
            out.append(Violation("shrunk_world_is_the_survivors",
                                 f"{len(worlds[rnd][1])} members, {len(survivors)} survivors", rnd))
    return out


def falls_back_only_when_due(tables: dict, scenario) -> list[Violation]:
    """A fallback to in-job names a reason the tables bear out: a fault the mode does not
    absorb (in_process: a device left unusable), fewer survivors than min_nodes, or
    in_process's max_iterations restarts in place in a row."""
    ev = tables["events"]
    fb = ev[ev["event"] == Event.RECOVERY_FALLBACK]
    if fb.empty:
        return []
    mode = Mode(scenario.agent.recovery)
    worlds = _worlds(ev)
    made = in_place_rounds(ev)
    out = []
    for t, rnd, d in zip(fb["t"], fb["round"], fb["detail"]):
        rnd, why = int(rnd), json.loads(d)["why"]
        before = worlds.get(rnd)
        if before is None:
            out.append(Violation("falls_back_only_when_due", "a fallback of a round never formed", rnd))
            continue
        crashed, unusable, failed = _failures(ev, before[1], before[0], float(t))
        survivors = [m for m in before[1] if m not in gone(mode, crashed, failed)]
        if why == Fallback.MODE:
            ok = bool(unusable) and Fault.DEVICE_UNUSABLE not in ABSORBS[mode]
        elif why == Fallback.BELOW_MIN:
            # the world the rules make with no spare (the tables do not say which hosts were
            # the world's spares): spares only add to it, so it bounds the one the job made
            least = world(mode, before[1], crashed, failed, (), scenario.scheduler.segment)
            ok = len(least) < scenario.min_nodes or not least
        elif why == Fallback.ITERATIONS:
            k, r = 0, rnd
            while r in made:
                k, r = k + 1, r - 1
            ok = mode is Mode.IN_PROCESS and out_of_iterations(scenario.agent, k)
        else:
            ok = False
        if not ok:
            out.append(Violation("falls_back_only_when_due", f"fell back ({why}) with {len(survivors)} "
                                 f"survivors, {len(unusable)} unusable devices", rnd))
    return out


RECOVERY = (recovers_as_its_mode_says, shrunk_world_is_the_survivors, falls_back_only_when_due)
