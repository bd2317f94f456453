"""The simulator's `in_process` mode against NVRx's in-process restart, for real on gloo.

    python -m real_backend.nvrx.validate [--out reports/validation/validate-inprocess] [--ranks 4]

Three faults of the last rank, each run for real (`run.py`) and simulated on the bundled
`validate-inprocess` scenario with the same timeouts: its workers raise (`worker_failure`), its
process is killed (`crash`, connections reset), its host vanishes (`crash` with no fast
detection: the survivors' collectives hang for the gloo timeout). Compared: the time from the
fault until every survivor trains again, and the world after it. Writes validation.md and
validation.json (machine, date, versions).
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from importlib.metadata import version
from pathlib import Path

from . import available
from .run import run_inprocess
from rdzv_sim.events import Event

SCENARIO = "validate-inprocess"
FAULT_AT = 10.0
CASES = {
    "raise": ([{"kind": "worker_failure", "node": 3, "at": FAULT_AT}], []),
    "kill": ([{"kind": "crash", "node": 3, "at": FAULT_AT}], []),
    "vanish": ([{"kind": "crash", "node": 3, "at": FAULT_AT}], ["agent.peer_crash_detection=null"]),
}


def simulated(case: str) -> dict:
    """The simulated restart of `case`: from the fault until the in-place world trains."""
    from rdzv_sim.api import run
    from rdzv_sim.scenario import load
    faults, sets = CASES[case]
    sc = load(SCENARIO, overrides=sets)
    sc = load({**sc.model_dump(mode="json"), "faults": faults})
    ev = run(sc).events
    made = ev[ev["event"] == Event.IN_PROCESS_RESTART]
    if made.empty:
        return {"latency": None, "world_after": None, "in_place": False}
    rnd = made["round"].iloc[0]
    ws = ev[(ev["event"] == Event.WORKERS_STARTED) & (ev["round"] == rnd)]
    return {"latency": float(ws["t"].max()) - FAULT_AT, "world_after": int(ws["node"].nunique()),
            "in_place": True}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="reports/validation/validate-inprocess")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--work", default="runs/validate-inprocess")
    a = ap.parse_args(argv)
    why = available()
    if why:
        print(f"error: {why}")
        return 2
    from rdzv_sim.scenario import load
    sc = load(SCENARIO)
    ip = sc.agent.in_process
    timeouts = {"soft_timeout": ip.soft_timeout, "hard_timeout": ip.hard_timeout}
    rows = {}
    for case in CASES:
        t = time.perf_counter()
        real = run_inprocess(Path(a.work) / case, case, a.ranks, pg_timeout=sc.agent.collective_timeout,
                             timeouts=timeouts)
        sim = simulated(case)
        err = (sim["latency"] - real.latency) if (real.latency is not None and sim["latency"] is not None) else None
        rows[case] = {"real": {"aborted": real.aborted, "reentered": real.reentered, "latency": real.latency,
                               "world_after": real.world_after, "ok": real.ok, "error": real.error},
                      "sim": sim, "error_s": err, "wall_s": round(time.perf_counter() - t, 1)}
        print(f"{case}: real {real.latency}, simulated {sim['latency']}, world {real.world_after}/{sim['world_after']}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node(),
            "cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
            "torch": version("torch"), "nvidia-resiliency-ext": version("nvidia-resiliency-ext"),
            "ranks": a.ranks, "settings": {"gloo_timeout_s": sc.agent.collective_timeout, **timeouts}}
    (out / "validation.json").write_text(json.dumps({**meta, "cases": rows}, indent=2) + "\n")
    (out / "validation.md").write_text(report(meta, rows))
    bad = [c for c, r in rows.items() if not r["real"]["ok"] or not r["sim"]["in_place"]]
    return 1 if bad else 0


def report(meta: dict, rows: dict) -> str:
    lines = ["# validate-inprocess: the simulator's in_process against NVRx's in-process restart", "",
             f"{meta['date']}, {meta['machine']}, Python {meta['python']}, torch {meta['torch']}, "
             f"nvidia-resiliency-ext {meta['nvidia-resiliency-ext']}. `python -m real_backend.nvrx.validate`: "
             f"{meta['ranks']} ranks on gloo, one process each, on this machine; NVRx's soft and hard "
             f"timeouts {meta['settings']['soft_timeout']:g} s and {meta['settings']['hard_timeout']:g} s, "
             f"gloo's {meta['settings']['gloo_timeout_s']:g} s. The last rank fails at step 20.", "",
             "| fault | real: restart begins, s | real: trains again, s | simulated: trains again, s | "
             "error, s | world after (real / sim) | real ok |", "|---|---|---|---|---|---|---|"]
    for case, r in rows.items():
        re_, si = r["real"], r["sim"]
        f = (lambda v: "-" if v is None else f"{v:.2f}")
        lines.append(f"| {case} | {f(re_['aborted'])} | {f(re_['latency'])} | {f(si['latency'])} | "
                     f"{f(r['error_s'])} | {re_['world_after']} / {si['world_after']} | {re_['ok']}"
                     + (f" ({re_['error']})" if re_['error'] else "") + " |")
    lines += ["", "Times are from the fault. The real restart begins at the first survivor's abort; "
              "it trains again when the last survivor's process group is ready.", "",
              "## Where they differ, and why", "",
              "- **The restart begins a monitor tick after an exception.** NVRx's monitor thread "
              "looks every `monitor_thread_interval` (1 s) for a rank's recorded interruption, so the "
              "survivors abort about 1 s after a rank raises or dies. The model starts the restart at "
              "once and counts `last_call_wait` (1 s) inside it instead.",
              "- **gloo cannot be aborted.** NVRx's abort destroys the process group, but a survivor "
              "already blocked in a gloo collective stays blocked until gloo's own timeout (3 s here), "
              "so on gloo every restart lasts at least that. With NCCL the abort breaks the collective "
              "(ncclCommAbort); that path needs a GPU and is not measured here. The model, written for "
              "NCCL, has no such floor: it is about 1 s short on `raise` and `kill`.",
              "- **The parts after the release are smaller at 4 ranks on one machine** (about 0.5 s for "
              "the iteration barrier, rank assignment and a gloo process group) than the usage guide's "
              "2.5 s at 16k ranks, which the model uses.",
              "- **A vanished host is dropped at the hard timeout.** With the rank and its monitor "
              "process stopped, the survivors' restart waited for the hard timeout before the barrier "
              "let them on without it (40 s here; 90.2 s in an earlier run with the default 90 s), not "
              "for the 30 s heartbeat timeout. The model waits the hard timeout for a vanished host, "
              "from this measurement.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
