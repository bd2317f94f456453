"""What a report opens with: a few sentences with numbers and units (what happened, what it
cost, against what), and the unit of every summary column."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..events import Event, NAMES
from ..trace.details import parse_details

# the unit of each summary column not said by its name (_s: seconds, _bytes: bytes)
UNITS = {
    "nodes": "hosts", "duration": "s", "rounds_completed": "rounds", "rdzv_latency_p50": "s",
    "rdzv_latency_p99": "s", "round_latency_p50": "s", "failures_injected": "faults",
    "store_ops": "operations", "store_background_util_max": "fraction", "agents_exited": "agents",
    "requeues": "requeues", "nodes_excluded": "hosts", "store_failovers": "store starts",
    "running_fraction": "fraction", "ettr": "fraction", "goodput": "fraction",
    "interruptions": "count", "sim_events": "events", "ranks_changed": "hosts",
    "rank0_moved": "rounds", "store_rounds": "rounds", "in_place_recoveries": "rounds",
    "fallbacks_mode": "fallbacks", "fallbacks_below_min": "fallbacks", "fallbacks_iterations": "fallbacks",
    "steps_attempted": "steps", "steps_committed": "steps",
    "steps_failed": "steps", "step_efficiency": "fraction", "groups_per_step": "groups",
}


def unit(column: str) -> str:
    """The unit of a summary column (the CLI's table and the report's)."""
    if column in UNITS:
        return UNITS[column]
    if column.startswith("shards_moved_"):
        return "shards"
    if column.endswith("_bytes"):
        return "bytes"
    return "s" if column.endswith("_s") else ""


def span(seconds: float) -> str:
    """A duration a person reads at a glance: 42.0 s, 7.5 min, 3.2 h, 54 days."""
    s = abs(seconds)
    if s < 120:
        return f"{seconds:.1f} s"
    if s < 7200:
        return f"{seconds / 60:.1f} min"
    if s < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _first_fault(events: pd.DataFrame, rounds: pd.DataFrame, per_step: bool = False) -> str | None:
    faults = [n for n in NAMES if n.startswith("fault_")]
    ev = events.loc[events["event"].isin(faults), ["t", "node", "event", "detail"]]
    if ev.empty:
        return None
    t0, node, kind = float(ev["t"].iloc[0]), str(ev["node"].iloc[0]), str(ev["event"].iloc[0])[6:]
    out = [f"The first fault: {node} {kind.replace('_', ' ')} at t = {t0:,.1f} s."]
    left = events["t"].to_numpy()[((events["event"] == Event.ROUND_LEFT) & (events["t"] >= t0)).to_numpy()]
    before = rounds[rounds["end"] <= t0]
    after = rounds[rounds["end"] > t0]
    how = after["formed_by"].iloc[0] if len(after) and "formed_by" in after.columns else "rendezvous"
    if len(left):
        t1 = float(left[0])
        who = ("Its survivors acted on it" if how != "rendezvous" else
               "Its replica group left its round" if per_step else "The round's members left it")
        out.append(f"{who} at {t1:,.1f} s ({span(t1 - t0)} later).")
    if len(after):
        r = after.iloc[0]
        later = span(float(r["end"]) - t0)
        if how == Event.IN_PROCESS_RESTART:
            out.append(f"The world restarted in place (in-process, no rendezvous) at {float(r['end']):,.1f} s "
                       f"with {int(r['nnodes'])} hosts ({later} after the fault; the restart took "
                       f"{span(float(r['latency']))}).")
        elif how == Event.SHRINK:
            out.append(f"The world shrank to {int(r['nnodes'])} hosts at {float(r['end']):,.1f} s "
                       f"({later} after the fault; the shrink took {span(float(r['latency']))}, no "
                       "rendezvous), training on from memory.")
        elif per_step:
            out.append(f"The other groups trained on; a group's round formed again at {float(r['end']):,.1f} s "
                       f"with {int(r['nnodes'])} hosts ({later} after the fault).")
        else:
            out.append(f"A round formed again at {float(r['end']):,.1f} s with {int(r['nnodes'])} hosts "
                       f"({later} after the fault; its rendezvous took {span(float(r['latency']))}).")
        if len(before) and not per_step:          # (a group's size is not the job's)
            size = int(before["nnodes"].iloc[-1])
            back = after[after["nnodes"] >= size]
            if int(r["nnodes"]) < size and len(back):
                tb = float(back["end"].iloc[0])
                out.append(f"It grew back to {size} hosts at {tb:,.1f} s.")
            elif int(r["nnodes"]) < size:
                out.append(f"It did not grow back to {size} hosts before the run ended.")
    else:
        out.append("No round formed after it.")
    more = len(ev) - 1
    if more:
        kinds = ev["event"].iloc[1:].astype(str).str[6:].value_counts()
        listed = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in kinds.items())
        out.append(f"{more} more fault{'s' if more > 1 else ''} followed ({listed}).")
    return " ".join(out)


MODES = {"in_job": "in-job restarts (every failure a rendezvous)",
         "in_process": "in-process restarts (NVRx: the survivors restart in place, spares fill in)",
         "shrink": "communicator shrink (the survivors drop the dead ranks and train on)"}


def _recovery(s: pd.Series) -> str:
    if "groups_per_step" in s.index:
        return (" with per-step fault tolerance (torchft's quorum: a replica group that fails drops "
                "out, the others train on)")
    mode = s.get("recovery")
    return f" with {MODES[mode]}" if isinstance(mode, str) and mode in MODES else ""


def _formed(s: pd.Series) -> str:
    n = int(s["rounds_completed"])
    if "in_place_recoveries" not in s.index or s.get("recovery") in (None, "in_job"):
        return f"{n:,} rounds formed"
    made, met = int(s["in_place_recoveries"]), int(s["store_rounds"])
    falls = {c[len("fallbacks_"):].replace("_", " "): int(s[c]) for c in s.index
             if c.startswith("fallbacks_") and int(s[c])}
    fell = (", ".join(f"{v:,} {k}" for k, v in falls.items())) if falls else "none"
    return (f"{met:,} store round{'s' if met != 1 else ''} (a rendezvous each) and {made:,} "
            f"recover{'ies' if made != 1 else 'y'} in place; fallbacks to an in-job restart: {fell}")


def _cost(s: pd.Series, duration: float) -> str:
    ettr = float(s.get("ettr", math.nan))
    if math.isnan(ettr):
        return (f"Some round trained during {float(s['running_fraction']):.1%} of the run "
                "(an upper bound: the scenario has no training model, so no ETTR or goodput).")
    lost = {c[5:-2].replace("_", " "): float(s[c]) for c in s.index
            if c.startswith("lost_") and c.endswith("_s") and float(s[c]) > 0}
    top = sorted(lost.items(), key=lambda kv: -kv[1])[:3]
    where = "; ".join(f"{k} {span(v)} ({v / duration:.1%})" for k, v in top)
    text = (f"Training kept {ettr:.1%} of the run's time (ETTR) and reached a goodput of "
            f"{float(s['goodput']):.1%} of full-size training.")
    return text + (f" The most time went to: {where}." if where else "")


def _theory(s: pd.Series, scenario: dict) -> str | None:
    """Young's checkpoint interval, sqrt(2 C M), beside the run's own (synchronous only: C is
    the stall a checkpoint costs)."""
    tr = scenario.get("training") or {}
    m, n = float(s.get("mtti_s", math.nan)), s.get("interruptions", 0)
    if not tr or tr.get("checkpoint", "sync") != "sync" or math.isnan(m) or not n:
        return None
    c, interval = float(tr.get("checkpoint_cost", 60.0)), float(tr.get("checkpoint_interval", 1800.0))
    if c <= 0:
        return None
    from ..training import young_daly
    young, _ = young_daly(c, m)
    return (f"Against theory: with one interruption every {span(m)} and a {span(c)} checkpoint, "
            f"Young's interval is {span(young)}; this run checkpoints every {span(interval)}.")


# the setting that keeps a job going past each reason its agents exit for
TO_CHANGE = {"max_restarts": "agent.max_restarts", "rendezvous_timeout": "protocol.join_timeout",
             "too_many_failed_rounds": "agent.max_restarts", "store_lost": "store.host (a launcher's store) "
             "or a protocol that fails over", "store_timeout": "store.op_timeout",
             "no_quorum": "the store's replicas", "rendezvous_closed": "protocol.min_nodes"}
STARTS = (Event.WORKERS_STARTED, Event.JOB_REQUEUED, Event.IN_PROCESS_RESTART, Event.SHRINK)   # the job runs
LIFE = (Event.NODE_START, Event.AGENT_EXIT, Event.FAULT_CRASH, Event.AGENT_STOPPED)   # an agent's last word


def stopped(events: pd.DataFrame, duration: float, scenario: dict) -> str | None:
    """Why the job stopped for good, if it did: every agent exited and nothing started after
    the last of them, with the time, the reasons and the setting to change."""
    kind = events["event"]
    exits = events[kind == Event.AGENT_EXIT]
    if not len(exits):
        return None
    ran = events.loc[kind.isin(STARTS), "t"]
    last_ran = float(ran.max()) if len(ran) else -math.inf
    after = exits[exits["t"] >= last_ran]
    if not len(after):
        return None
    life = events[kind.isin(LIFE)].drop_duplicates("node", keep="last")
    if (life["event"] == Event.NODE_START).any():
        return None                        # some agent still runs (its workers may be stuck)
    last = float(after["t"].iloc[0]) if len(after) else float(exits["t"].max())
    exits = after
    reasons = pd.Series(parse_details(exits["detail"], np.ones(len(exits), bool), ("reason",))["reason"],
                        dtype=object).fillna("?").value_counts()
    said = ", ".join(f"{r} ({n:,})" for r, n in reasons.items())
    change = sorted({TO_CHANGE.get(r, "scheduler.requeue_delay") for r in reasons.index})
    requeue = (scenario.get("scheduler") or {}).get("requeue_delay") is None
    return (f"The job stopped for good at t = {last:,.0f} s ({last / duration:.1%} of the run): every agent "
            f"exited ({said}), and nothing ran for the last {span(duration - last)}. To keep it going, change "
            f"{' or '.join(change)}" + (", or requeue a dead job (scheduler.requeue_delay)." if requeue else "."))


def opening(tables: dict, scenario: dict) -> list[str]:
    """The report's first paragraphs, from the saved tables and the scenario."""
    s = tables["summary"].iloc[0]
    duration = float(s["duration"])
    nproc = int((scenario.get("cluster") or {}).get("nproc_per_node", 1))
    gpus = f" x {nproc} GPUs" if nproc > 1 else ""
    out = [f"{int(s['nodes']):,} hosts{gpus}, the {s['protocol']} protocol, {span(duration)} "
           f"simulated{_recovery(s)}: {_formed(s)}; a host's rendezvous took "
           f"{span(float(s['rdzv_latency_p50']))} at the median and "
           f"{span(float(s['rdzv_latency_p99']))} at the 99th percentile."
           if not math.isnan(float(s["rdzv_latency_p50"])) else
           f"{int(s['nodes']):,} hosts{gpus}, the {s['protocol']} protocol, {span(duration)} "
           "simulated: no round formed."]
    per_step = "groups_per_step" in s.index
    if tables["events"] is not None:            # (a streamed run's are on disk)
        fault = _first_fault(tables["events"], tables["rounds"], per_step)
        out.append(fault or "No fault was injected.")
        end = stopped(tables["events"], duration, scenario)
        if end:
            out.append(end)
    if per_step:
        p = scenario.get("protocol") or {}
        groups = int(s["nodes"]) // int(p.get("group_size") or 1)
        out.append(f"The job trained on through its failures: {float(s['groups_per_step']):.1f} of "
                   f"{groups:,} replica groups a step on average, {float(s['step_efficiency']):.1%} of "
                   "the steps it attempted committed.")
    out.append(_cost(s, duration))
    theory = _theory(s, scenario)
    if theory:
        out.append(theory)
    return out
