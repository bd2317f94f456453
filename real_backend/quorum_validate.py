"""`rdzv-sim validate` for the `quorum` protocol: the simulated Lighthouse against torchft's.

The real side is torchft itself (`torchft_run.py`): its Lighthouse, one Manager per replica
group, gloo. The scenario's crash and restart faults become SIGKILL and restart of a group's
process. Compared, as the issue asks: the quorum's membership in every window between
changes, the survivors' stall when a group dies, the time a recovered group takes to heal
and join, and the survivors' lost steps.
"""
from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time as _time
from importlib.metadata import version
from pathlib import Path

from rdzv_sim.api import run as simulate
from rdzv_sim.training.quorum import replay

from .torchft_run import GroupFault, TorchftRun, available, run_torchft

TOLERANCE = 0.25


def real_config(sc, workdir: Path) -> TorchftRun:
    """The torchft run a scenario describes; ValueError when it cannot be run for real."""
    p = sc.protocol
    if p.name != "quorum":
        raise ValueError(f"the torchft comparison runs the quorum protocol, not {p.name!r}")
    if p.group_size != 1:
        raise ValueError("the real torchft run has one process per replica group: set protocol.group_size: 1")
    if any(f.anchor is not None for f in sc.faults):
        raise ValueError("the torchft comparison times faults in seconds: give `at` a number")
    faults, down = [], {}
    for f in sorted(sc.faults, key=lambda f: f.at):
        if f.kind == "crash":
            down[f.node] = GroupFault(f.node, f.at)
            faults.append(down[f.node])
        elif f.kind == "restart" and f.node in down:
            down.pop(f.node).restart_at = f.at
        elif f.kind == "lighthouse_crash":         # the Lighthouse's own process
            faults.append(GroupFault(None, f.at, f.at + f.duration))
        else:
            raise ValueError(f"the torchft comparison does crash, restart and lighthouse_crash "
                             f"faults, not {f.kind}")
    return TorchftRun(groups=sc.cluster.nodes, duration=sc.duration, step_time=p.step_time,
                      state_mb=p.state_bytes / 2**20, min_replicas=p.min_replicas,
                      min_replica_size=p.min_replica_size,
                      join_timeout=p.quorum_join_timeout, quorum_tick=p.quorum_tick,
                      heartbeat_timeout=p.heartbeat_timeout, quorum_timeout=p.quorum_timeout,
                      quorum_retries=p.quorum_retries, async_quorum=p.async_quorum,
                      sync_every=p.sync_every, timeout=p.timeout, faults=faults, workdir=workdir)


def measure_real(steps: list[dict], cfg: TorchftRun) -> dict:
    """The stall, heal and rejoin of the first kill and restart, from the groups' step records
    (with LocalSGD, `sync_every` > 1: the records of the steps that synced, one a window)."""
    if cfg.sync_every > 1:
        steps = [r for r in steps if r.get("synced")]
    kill = cfg.faults[0]
    if kill.killed is not None:               # when the run did it (an anchored fault's times)
        kill = GroupFault(kill.group, kill.killed, kill.restarted)
    survivors = [g for g in range(cfg.groups) if all(f.group != g for f in cfg.faults)]
    normal = statistics.median(r["t"] - r["t0"] for r in steps if r["committed"] and not r["healed"])
    out = {"step_s": normal}
    stalls, heals, lost, back = [], [], 0, False
    for g in survivors:
        mine = [r for r in steps if r["group"] == g]
        # the longest wait between two commits from the kill until the restart (or 10 s)
        until = kill.restart_at if kill.restart_at is not None else kill.kill_at + 10.0
        commits = [r["t"] for r in mine if r["committed"]]
        pairs = list(zip(commits, commits[1:]))
        gaps = [b - a for a, b in pairs if b > kill.kill_at and a < until]
        # a window of sync_every steps between two commits (one step: the step itself)
        period = (normal if cfg.sync_every == 1 or not pairs
                  else statistics.median(b - a for a, b in pairs))
        if gaps:
            stalls.append(max(gaps) - period)
        lost += sum(1 for r in mine if not r["committed"])
        back |= any(b["step"] < a["step"] for a, b in zip(mine, mine[1:]))
        if kill.restart_at is not None and kill.group is not None:
            # the extra time of the first steps with the recovered group (it heals, then
            # the others wait for its first step)
            joins = [r for r in mine if r["t0"] > kill.restart_at and f"g{kill.group}" in r["replicas"]][:3]
            if joins:
                heals.append(sum(max(0.0, r["t"] - r["t0"] - normal) for r in joins))
    out["stall_s"] = max(stalls) if stalls else float("nan")
    if kill.group is None:                    # the Lighthouse: did the groups live through it
        out["quorum_id_reused"] = reused_ids(steps, cfg.groups, kill)
        out.update(lighthouse_given(steps, kill))
        out["groups_restarted"] = sum(len({r["pid"] for r in steps if r["group"] == g}) > 1
                                      or not any(r["t0"] > (kill.restart_at or kill.kill_at) for r in steps
                                                 if r["group"] == g) for g in range(cfg.groups))
    else:
        out["heal_stall_s"] = max(heals) if heals else float("nan")
    if kill.restart_at is not None and kill.group is not None:
        rejoined = [r for r in steps if r["group"] == kill.group and r["t0"] > kill.restart_at]
        out["rejoin_s"] = (rejoined[0]["q"] - kill.restart_at) if rejoined else float("nan")
        healing = [r for r in rejoined if r["heal"]]
        if not cfg.async_quorum:
            # from the Lighthouse's answer (the step's start in logs that lack it)
            out["heal_s"] = ((healing[0]["q"] - healing[0].get("answered", healing[0]["t0"]))
                             if healing else float("nan"))
        elif healing:
            # async: the heal starts at the Lighthouse's answer, behind the healer's step, and
            # shows only where the rest of that step outlasts nine in ten normal ones; then
            # that rest is the heal (the model's stall is heal - step). Not from the step's
            # start: the healer's call waits there for the others' next step
            def rest(r):
                return r["t"] - r.get("answered", r["t0"])
            usual = statistics.quantiles([rest(r) for r in steps if r["committed"] and not r["healed"]],
                                         n=10)[-1]
            out["heal_s"] = rest(healing[0]) if rest(healing[0]) > usual else float("nan")
    out["survivor_lost_steps"], out["survivor_step_went_back"] = lost, back
    out["windows"] = windows(steps, survivors)
    return out


def reused_ids(steps: list[dict], groups: int, kill: GroupFault) -> list[int]:
    """The groups whose first quorum from the restarted Lighthouse has the id of their last
    from the lost one: torchft 0.2.0's Manager reconfigures only on a new id, so they keep
    the old process group (docs/per-step.md, "Losing the Lighthouse")."""
    back = kill.restart_at if kill.restart_at is not None else kill.kill_at
    out = []
    for g in range(groups):
        mine = [r for r in steps if r["group"] == g]
        before = [r["quorum_id"] for r in mine if r["q"] < kill.kill_at]
        after = [r["quorum_id"] for r in mine if r["q"] > back]
        if before and after and before[-1] == after[0]:
            out.append(g)
    return out


def lighthouse_given(steps: list[dict], kill: GroupFault) -> dict:
    """What a real run's start-up and race decided around a Lighthouse restart, which the
    model draws: the quorum id every group last had before the loss (`last_id`: how many
    quorums process start-up made, torchft numbering from 1), and the group whose retry
    reached the fresh Lighthouse first, alone (`first_retry`; None: none came alone), and for
    each quorum id before the loss the group whose store its process groups were built on
    (`stores`: the store of the id's first answer; later answers of the same id name another
    store, but nobody reconfigures then, so the keys stay where they were written; empty where
    the records name no store, as logs from before the runner kept it)."""
    back = kill.restart_at if kill.restart_at is not None else kill.kill_at
    before = sorted((r for r in steps if r["q"] < kill.kill_at), key=lambda r: r["q"])
    after = sorted((r for r in steps if r["q"] > back), key=lambda r: r["q"])
    out = {"last_id": max(r["quorum_id"] for r in before) if before else None, "first_retry": None,
           "stores": {}}
    if after and len(after[0]["replicas"]) == 1:
        out["first_retry"] = int(after[0]["replicas"][0].lstrip("g"))
    owner = {r["own_store"]: r["group"] for r in steps if r.get("own_store")}
    for r in before:                           # in order of the calls: an id's first answer
        if r["quorum_id"] not in out["stores"] and r.get("store") in owner:
            out["stores"][r["quorum_id"]] = owner[r["store"]]
    return out


def windows(steps: list[dict], groups) -> list[str]:
    """The quorums the survivors trained in, in order (their member groups), from the first
    that held every group: before it, who comes first depends on process start-up."""
    return _from_full([",".join(x.lstrip("g") for x in r["replicas"])
                       for r in steps if r["group"] in groups and r["committed"]])


def _from_full(seq: list[str]) -> list[str]:
    full = max(seq, key=lambda m: len(m.split(",")), default="")
    seen = []
    for m in seq[seq.index(full):] if seq else []:
        if not seen or seen[-1] != m:
            seen.append(m)
    return seen


def measure_sim(result, cfg: TorchftRun, given: dict | None = None) -> dict:
    """The same measures on the simulated run's Lighthouse replay; `given`: what the real
    run's start-up and race decided (`lighthouse_given`), which the model would draw."""
    sc = result.scenario
    p = sc.protocol
    lh, life = replay(result.events, result.rounds, sc, **(given or {}))
    kill = cfg.faults[0]
    out = {"step_s": p.step_time + p.quorum_cost}
    fail = next((s for s in lh.segments if s.kind in ("failure", "outage") and s.t1 > kill.kill_at), None)
    # as the real side measures it: the longest any group waited to train again
    back = [next((s.t0 for s in lh.segments if s.kind == "train" and not s.refused and s.t0 >= fail.t1
                  and g in s.groups - s.healing), None)
            for g in range(cfg.groups) if all(f.group != g for f in cfg.faults)] if fail is not None else []
    out["stall_s"] = ((max(back) - fail.t0) if back and None not in back else float("nan"))
    if kill.group is None:
        # the groups lived through it unless a quorum after it restarted from a checkpoint
        out["groups_restarted"] = sum(len(q.groups) for q in lh.quorums
                                      if q.cause == "lighthouse" and q.restart)
    else:
        joined = next((q for q in lh.quorums if kill.restart_at is not None and q.t > kill.restart_at
                       and kill.group in q.joined), None)
        heal = next((s for s in lh.segments if joined is not None and s.kind == "heal" and s.t0 == joined.t), None)
        # no heal segment after the quorum it joined: its heal hid behind a step (async)
        out["heal_stall_s"] = ((heal.t1 - heal.t0) if heal is not None else 0.0) if joined else float("nan")
    if kill.restart_at is not None and kill.group is not None:
        up = next((x.up for x in life if x.group == kill.group and x.up > kill.restart_at), None)
        out["rejoin_s"] = (up + lh.costs.first_call - kill.restart_at) if up is not None else float("nan")
        out["heal_s"] = p.heal_time
    out["survivor_lost_steps"] = sum(1 for s in lh.segments if s.kind == "failure")
    out["survivor_step_went_back"] = any(q.restart for q in lh.quorums[1:])
    # a quorum whose first step failed on a stale process group committed nothing
    out["windows"] = _from_full([",".join(str(g) for g in sorted(q.groups)) for q in lh.quorums
                                 if not q.stale])
    return out


def calibrated(sc, heal_s: float | None):
    """`sc` with its heal bandwidth taken from this machine's own heal (`heal_s`, the real
    run's healing quorum call), and that bandwidth; `sc` and None when the run shows none
    (an asynchronous heal that hid behind its step). The heal's length is the machine's, and moves
    with its load (docs/per-step.md); what is checked is what the others do meanwhile."""
    p = sc.protocol
    if not heal_s or not math.isfinite(heal_s) or heal_s <= 0 or not p.state_bytes:
        return sc, None
    bandwidth = p.state_bytes / p.group_size / heal_s
    return sc.model_copy(update={"protocol": p.model_copy(update={"heal_bandwidth": bandwidth})}), bandwidth


def validate_quorum(sc, out: str | Path) -> dict:
    """Simulate `sc`, run it with torchft, compare; writes validation.md and verdict.json."""
    why = available()
    if why:
        raise ValueError(why)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = real_config(sc, Path("runs") / "torchft" / sc.name)    # the groups' logs
    steps, events = run_torchft(cfg)
    real_m = measure_real(steps, cfg)
    sim_sc, bandwidth = calibrated(sc, real_m.get("heal_s"))
    sim = simulate(sim_sc)
    sim.save(out / "sim")
    given = {k: real_m[k] for k in ("last_id", "first_retry", "stores") if k in real_m}
    sim_m = measure_sim(sim, cfg, given)
    verdict = {"protocol": "quorum", "real_side": f"torchft {version('torchft')} (Lighthouse + Manager, gloo)",
               "date": _time.strftime("%Y-%m-%d %H:%M"), "torch": version("torch"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "heal_bandwidth": (f"{bandwidth / 1e6:.0f} MB/s, from this run's heal (the scenario "
                                  f"says {sc.protocol.heal_bandwidth / 1e6:.0f})" if bandwidth
                                  else f"{sc.protocol.heal_bandwidth / 1e6:.0f} MB/s, the scenario's")}
    rows = []
    for k in ("stall_s", "heal_stall_s", "heal_s", "rejoin_s", "step_s"):
        if k not in real_m:
            continue
        r, s = real_m[k], sim_m[k]
        # relative to the real value, or to one step when it is shorter: the real side sees
        # time in steps, so a stall under one step is below what it resolves
        floor = max(abs(r), real_m["step_s"]) if k.endswith("stall_s") else abs(r)
        err = abs(s - r) / floor if floor else float("nan")
        rows.append((k, r, s, err))
        verdict[f"{k}_real"], verdict[f"{k}_sim"], verdict[f"{k}_rel_error"] = r, s, err
    if given:
        # the model draws these; the real run's are given to it, and said
        verdict["given_to_the_model"] = given
    verdict["windows_real"], verdict["windows_sim"] = real_m["windows"], sim_m["windows"]
    verdict["same_windows"] = real_m["windows"] == sim_m["windows"]
    if "quorum_id_reused" in real_m:
        verdict["quorum_id_reused_real"] = real_m["quorum_id_reused"]
    if "groups_restarted" in real_m:
        verdict["groups_restarted_real"] = real_m["groups_restarted"]
        verdict["groups_restarted_sim"] = sim_m["groups_restarted"]
    verdict["survivor_lost_steps_real"] = real_m["survivor_lost_steps"]
    verdict["survivor_step_went_back_real"] = real_m["survivor_step_went_back"]
    checked = [e for k, _, _, e in rows if k in ("stall_s", "heal_stall_s")]
    verdict["passed"] = bool(verdict["same_windows"] and all(e <= TOLERANCE for e in checked)
                             and not real_m["survivor_step_went_back"]
                             and real_m.get("groups_restarted") == sim_m.get("groups_restarted"))
    lines = [f"# Validation of {sc.name}: simulated quorum vs torchft", "",
             f"{verdict['date']}, {verdict['machine']}, torch {verdict['torch']}. "
             f"{cfg.groups} replica groups (one process each, gloo on CPU), torchft's own Lighthouse; "
             f"rebuild: `rdzv-sim validate {sc.name}`. Checked within {TOLERANCE:.0%} (of the real "
             "value, or of one step when it is shorter): the survivors' stall when a group dies (or "
             "the Lighthouse) and their stall while the recovered group heals; the quorum windows "
             "must match. The heal's own length is this machine's: the simulation takes its "
             "bandwidth from the real run's heal (`heal_s` matches by construction; with the "
             "asynchronous quorum the heal is the rest of the healer's first step after the "
             "Lighthouse's answer, when it outlasts a normal one, and the scenario's bandwidth "
             "stays when it does not).", "", "| measure | real | simulated | error |", "|---|---|---|---|"]
    lines += [f"| {k} | {r:.3f} | {s:.3f} | {e:.0%} |" for k, r, s, e in rows]
    lines += ["", "| check | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in verdict.items() if not k.endswith(("_real", "_sim", "_error"))]
    lines += [f"| windows (real) | {' -> '.join(real_m['windows'])} |",
              f"| windows (simulated) | {' -> '.join(sim_m['windows'])} |",
              f"| survivors' uncommitted steps (real) | {real_m['survivor_lost_steps']} |"]
    if "quorum_id_reused" in real_m:
        lines += [f"| groups given their old quorum id by the restarted Lighthouse (real; torchft "
                  f"0.2.0 keeps their old process group) | {real_m['quorum_id_reused'] or 'none'} |"]
    lines += [""]
    (out / "validation.md").write_text("\n".join(lines))
    (out / "verdict.json").write_text(json.dumps(verdict, indent=1, default=str) + "\n")
    (out / "steps.json").write_text(json.dumps({"steps": steps, "events": events}))
    return verdict
