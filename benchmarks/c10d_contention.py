"""c10d contention: compare-and-set attempts when N nodes join one round at once.

The model (rdzv_sim's c10d protocol) against torch's own DynamicRendezvousHandler, counted
through a wrapper around each node's store (benchmarks/c10d_contention_torch.py, run in
threads of one process; rerun it with --torch), and against the figures in the issue.
Writes reports/c10d_contention.md. Usage: python benchmarks/c10d_contention.py [--torch]
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rdzv_sim  # noqa: E402
from rdzv_sim.trace import details  # noqa: E402

NS = [8, 16, 32, 64, 96, 128]
ISSUE = {8: 31, 32: 282, 128: 3936}          # "measured on torch" in the issue that asked for this


def model(n: int, shared_cores: int | None, cpu: dict | None = None) -> int:
    sc = {"name": f"c10d-contention-{n}", "seed": 1, "duration": 120,
          "cluster": {"nodes": n, "nproc_per_node": 1, "start_spread": 0.0,
                      "cpu": {"shared_cores": shared_cores, **(cpu or {})}},
          "store": {"host": None}, "protocol": {"name": "c10d", "min_nodes": n, "max_nodes": n},
          "shards": {"count": 0}}
    ev = rdzv_sim.run(sc).events
    join = sum(d.get("cas_attempts", 0) for d in details(ev[ev.event == "confirmed"]))
    return join + n                              # + each handler's sentinel CAS


GRID = [(c, b) for c in (0.0, 0.06) for b in (2e-4, 5e-4, 1e-3, 2e-3)]   # (cold_start, base)


def main():
    path = ROOT / "reports" / "c10d_contention_torch.json"
    if "--torch" in sys.argv or not path.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "c10d_contention_torch.py"),
                        "8", "16", "32", "64", "128"], check=True)
    torch_runs = {r["n"]: r for r in json.loads(path.read_text())["runs"]}
    ppath = ROOT / "reports" / "c10d_contention_torch_processes.json"
    if "--torch" in sys.argv or not ppath.exists():
        bench = str(ROOT / "benchmarks" / "c10d_contention_torch.py")
        subprocess.run([sys.executable, bench, "--fork", *map(str, NS)], check=True)
        subprocess.run([sys.executable, bench, "--processes", "8", "16", "32", "64"], check=True)
    procs = json.loads(ppath.read_text())["runs"]
    by = {(r["n"], r.get("start", "spawn")): r for r in procs}

    def cell(r):
        if r is None:
            return "-"
        return f"{r['compare_set_total']:,}" + ("" if r.get("ranks_ok", True) else " (all timed out)")
    own = {n: model(n, None) for n in NS}
    grid = {(c, b): {n: model(n, 2, {"base": b, "cold_start": c}) for n in NS} for c, b in GRID}
    fork = {n: by[(n, "fork")]["compare_set_total"] for n in NS if (n, "fork") in by}
    lines = ["# c10d contention: compare-and-set attempts for N nodes joining at once", "",
             f"Date: {time.strftime('%Y-%m-%d')}. Machine: {platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}, torch 2.13 (CPU). Regenerate: "
             "`python benchmarks/c10d_contention.py --torch` (torch's counts: "
             "benchmarks/c10d_contention_torch.py, a counting wrapper around each node's store).",
             "", "Counts include each handler's sentinel CAS (made when its backend is created).",
             "", "## torch's own handler", "",
             "| N | threads of one process | one process per node, forked | one process per node, "
             "spawned | issue's figure |", "|---:|---:|---:|---:|---:|"]
    for n in NS:
        t = torch_runs.get(n)
        lines.append(f"| {n} | {cell(t)} | {cell(by.get((n, 'fork')))} | "
                     f"{cell(by.get((n, 'spawn')))} | {ISSUE.get(n, '-')} |")
    lines += ["", "## The model (hosts share 2 cores; `cluster.cpu.base` = client CPU per "
              "encode/decode, `cold_start` = extra CPU of a process's first)", "",
              "| cold start | base | " + " | ".join(f"N={n}" for n in NS) + " | within 25% of forked torch |",
              "|---|---|" + "---:|" * len(NS) + "---|"]
    for (c, b), vals in grid.items():
        ok = [n for n in NS if n in fork and abs(vals[n] / fork[n] - 1) <= 0.25]
        lines.append(f"| {c * 1e3:g} ms | {b * 1e3:g} ms | " + " | ".join(
            f"{vals[n]:,}" + (f" ({vals[n] / fork[n]:.2f})" if n in fork else "") for n in NS)
            + f" | N = {', '.join(map(str, ok)) or 'none'} |")
    lines.append("| own CPU per host | 5 us | " + " | ".join(f"{own[n]:,}" for n in NS) + " | |")
    lines += ["", "(In brackets: model / forked torch.)", "", "## Reading it", "",
              "- torch's count is not a function of N alone. The same handler at N = 32 made 77 "
              "attempts in forked processes and 312 / 375 in two spawned runs (the issue: 282); at "
              "N = 64, 518 forked against 4,238 and, in a second spawned run, 12,026 with every "
              "handler failing its 120 s join timeout. What differs is the client's CPU per attempt "
              "and how the OS schedules it. Our guess, not measured: forked nodes share their "
              "parent's pages, spawned ones each hold ~190 MB of their own, and 64 of those thrash "
              "the caches of 2 cores, so each attempt takes longer and more of them collide.",
              "- Why an attempt costs the client milliseconds at all: torch's `_record` names its "
              "caller with `get_method_name()` (dynamic_rendezvous.py, lines 52-55), which calls "
              "`inspect.stack()` twice: 0.42 / 0.65 / 1.0 ms here at a stack depth of 5 / 12 / 20, "
              "and every attempt records at least twice (the sync's result, the action). That, not "
              "the pickle of the state (60 us at 1 KB, 2 ms at 47 KB), is most of "
              "`cluster.cpu.base` below 512 nodes. A torch behaviour that looks like a bug; the "
              "model charges it, it does not fix it.",
              "- The spawned N = 64 livelock: participants of a round that is not complete keep "
              "alive by compare-and-set every 5 s (torch stops their heartbeat timer while they "
              "join), so in a storm that outlasts 5 s their keep-alives contend with the joiners'. "
              "The model did not do this (background beats) and now does "
              "(tests/sim/test_c10d_scenarios.py::test_participants_of_an_open_round_keep_alive_by_compare_and_set); "
              "with 2 ms per attempt its N = 128 storm grows to ~19,700 attempts but still "
              "completes: the livelock itself is not reproduced.",
              "- The model's law differs from torch's past ~50 nodes. Processor sharing makes "
              "contenders compute in lockstep: below a threshold nobody collides (~2N), above it "
              "every remaining contender fails once per winner (~N^2/2, plus keep-alives). Forked "
              "torch grows smoothly instead (2.0, 2.2, 2.4, 8.1, 11.2, 11.9 attempts per node at "
              "N = 8 ... 128). A likely cause, not verified: Linux runs a process that just "
              "woke from I/O (its CAS failed) ahead of the ones still computing, so it often "
              "retries before the next winner. No setting of the "
              "grid is within 25% of forked torch at every N; the best ones hold to N = 32.",
              "- So the contention target of the c10d issue stays open. Next: a CPU model with "
              "wake-up preference (a job of a process that just woke from I/O runs ahead of older "
              "ones, time slices for the rest), checked against the forked and spawned counts "
              "above, not fitted to three points.", ""]
    (ROOT / "reports" / "c10d_contention.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
