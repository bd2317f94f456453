"""c10d contention: compare-and-set attempts when N nodes join one round at once.

The model (rdzv_sim's c10d protocol on 2 shared cores) against torch's own
DynamicRendezvousHandler in one process per node, counted through a wrapper around each node's
store (benchmarks/c10d_contention_torch.py; rerun it with --torch). The model's CPU inputs are
fitted to the counts: each setup's client CPU is measured in the same torch runs (CPU before
the first store call = cold start; the rest per attempt). `--torch` keeps the last batch of torch
runs as the earlier one (reports/c10d_contention_torch_processes_earlier.json) and takes a new
batch, so the model, whose scheduler constants were chosen on one batch, is checked on the
next. Writes reports/c10d_contention.md. Usage: python benchmarks/c10d_contention.py [--torch]
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from rdzv_sim.scenario import load  # noqa: E402
from rdzv_sim.sim.simulation import Simulation  # noqa: E402

FORK_NS = [8, 16, 32, 48, 64, 96, 128, 192, 256]
EXTRA_NS = [48, 64, 96]                        # with 1 and 2 ms more CPU per attempt
SPAWN_NS = [8, 16, 32]
SEEDS = (1, 2, 3, 4)
ISSUE = {8: 31, 32: 282, 128: 3936}          # "measured on torch" in the issue that asked for this


def model(n: int, cpu: dict, seed: int = 1, factory=None) -> int:
    """Total CAS attempts (joins + each handler's sentinel) when n nodes join at once;
    `factory` makes the shared cores (rdzv_sim.models.cpu), e.g. an instrumented scheduler."""
    sc = {"name": f"c10d-contention-{n}", "seed": seed, "duration": 130,
          "cluster": {"nodes": n, "nproc_per_node": 1, "start_spread": 0.0, "cpu": cpu},
          "store": {"host": None}, "shards": {"count": 0},
          "protocol": {"name": "c10d", "min_nodes": n, "max_nodes": n, "join_timeout": 120}}
    sim = Simulation(load(sc), cpu=factory)
    sim.run(None)
    return sim.protocol.attempts() + n          # every handler's, a round formed or not


def measured_cpu(runs: list[dict]) -> dict:
    """The client CPU of these torch runs, as the model's inputs: the cold start per process,
    and per attempt (a poll read counts half: it decodes, it does not encode)."""
    n = sum(r["n"] for r in runs)
    cold = sum(r["cold_cpu_s"] for r in runs)
    work = sum(r["compare_set_total"] - r["n"] + r["get"] / 2 for r in runs)
    per_attempt = (sum(r["client_cpu_s"] for r in runs) - cold) / work
    return {"shared_cores": 2, "cold_start": cold / n, "base": per_attempt / 2, "per_byte": 0.0}


def run_torch() -> None:
    latest = ROOT / "reports" / "c10d_contention_torch_processes.json"
    if latest.exists():
        latest.replace(latest.with_name(latest.stem + "_earlier.json"))
    bench = [sys.executable, str(ROOT / "benchmarks" / "c10d_contention_torch.py")]
    subprocess.run([*bench, "--fork", "--repeat", "3", *map(str, FORK_NS)], check=True)
    subprocess.run([*bench, "--fork", "--clock", "--repeat", "2", "32", "64", "96", "128"], check=True)
    for ms in ("1", "2"):
        subprocess.run([*bench, "--fork", "--extra-cpu", ms, "--repeat", "3", *map(str, EXTRA_NS)],
                       check=True)
    subprocess.run([*bench, "--processes", "--repeat", "2", *map(str, SPAWN_NS)], check=True)


def near(ratio: float) -> bool:
    """Within the issue's band: 25% of torch's mean."""
    return abs(ratio - 1) <= 0.25


def compared(rs: list[dict], got: list[int]) -> tuple[float, str]:
    """Model / torch, and the table cells: torch's runs, their mean, the model's mean [range]."""
    t, m = statistics.mean(r["compare_set_total"] for r in rs), statistics.mean(got)
    return m / t, f"{fmt_runs(rs)} | {t:,.0f} | {m:,.0f} [{min(got):,}-{max(got):,}] | {m / t:.2f}"


def fmt_runs(rs: list[dict]) -> str:
    if not rs:
        return "-"
    return " / ".join(f"{r['compare_set_total']:,}" + ("" if r.get("ranks_ok", True) else " (timed out)")
                      for r in rs)


def main():
    ppath = ROOT / "reports" / "c10d_contention_torch_processes.json"
    if "--torch" in sys.argv or not ppath.exists():
        run_torch()
    batch = json.loads(ppath.read_text())
    runs = batch["runs"]
    epath = ppath.with_name(ppath.stem + "_earlier.json")
    earlier = json.loads(epath.read_text()) if epath.exists() else None
    tpath = ROOT / "reports" / "c10d_contention_torch.json"
    threads = {r["n"]: r for r in json.loads(tpath.read_text())["runs"]} if tpath.exists() else {}

    def of(setup, n, runs=runs):
        return [r for r in runs if r["n"] == n and r.get("start") == setup]

    def compare(runs):
        """(setup, N, torch's runs, the model's counts per seed, its inputs) per measured row."""
        rows = []
        for setup, ns in (("fork", FORK_NS), ("fork+1ms", EXTRA_NS), ("fork+2ms", EXTRA_NS),
                          ("spawn", SPAWN_NS)):
            for n in ns:
                rs = [r for r in of(setup, n, runs) if "cold_cpu_s" in r]   # timed out ones too
                if rs:
                    cpu = measured_cpu(rs)
                    rows.append((setup, n, rs, [model(n, cpu, s) for s in SEEDS], cpu))
        return rows

    rows = compare(runs)
    inputs = {(setup, n): cpu for setup, n, _, _, cpu in rows}
    before = compare(earlier["runs"]) if earlier else []
    sharing = {n: [model(n, {**inputs[("fork", n)], "scheduler": "sharing"}, s) for s in SEEDS[:2]]
               for n in FORK_NS if ("fork", n) in inputs}
    own = {n: model(n, {"shared_cores": 2}) for n in FORK_NS}
    clocked = {}                    # a slice cut as soon as it is used: each store call accounts
    for n in FORK_NS:
        rs = [r for r in of("fork+clock", n) if "cold_cpu_s" in r]
        if rs:
            clocked[n] = [model(n, {**measured_cpu(rs), "tick": 0.0}, s) for s in SEEDS[:2]]

    lines = ["# c10d contention: compare-and-set attempts for N nodes joining at once", "",
             f"Date: {time.strftime('%Y-%m-%d')}. Machine: {platform.machine()}, {os.cpu_count()} cores "
             f"(Linux {platform.release()}), Python {platform.python_version()}, torch 2.13 (CPU). "
             "Regenerate: `python benchmarks/c10d_contention.py --torch` (torch's counts: "
             "benchmarks/c10d_contention_torch.py, a counting wrapper around each node's store).",
             "", "Counts include each handler's sentinel CAS (made when its backend is created). "
             "torch: one process per node, all released at once after a barrier, one TCPStore "
             "server in the parent; `fork` starts them from a process that has imported torch, "
             "`spawn` starts fresh interpreters, `+1ms` / `+2ms` burn that much more CPU before "
             "each CAS (a pure-Python loop: no system call, no new preemption point). The model: the same N on 2 shared cores "
             f"(`cluster.cpu`, the fair scheduler), seeds {SEEDS[0]}-{SEEDS[-1]}; its CPU inputs "
             "are measured in the torch runs of the same row, not fitted to the counts.", "",
             "## The model against torch", "",
             "| start | N | torch, each run | torch mean | model mean [range] | model / torch | "
             "model's inputs: cold start, CPU per attempt |",
             "|---|---:|---|---:|---|---:|---|"]
    verdict = {}
    for setup, n, rs, got, cpu in rows:
        verdict[(setup, n)], cells = compared(rs, got)
        lines.append(f"| {setup} | {n} | {cells} | "
                     f"{cpu['cold_start'] * 1e3:.0f} ms, {cpu['base'] * 2e3:.1f} ms |")
    inside = [f"{s} {n}" for (s, n), v in verdict.items() if near(v)]
    outside = [f"{s} {n} ({v:.2f})" for (s, n), v in verdict.items() if not near(v)]
    lines += ["", f"Within 25% of torch's mean: {', '.join(inside) or 'none'}. "
              f"Outside: {', '.join(outside) or 'none'}.", ""]
    if before:
        lines += ["## The same model against the batch of torch runs before", "",
                  f"Taken {earlier['date']}, before the one above "
                  "(reports/c10d_contention_torch_processes_earlier.json).", "",
                  "| start | N | torch, each run | torch mean | model mean [range] | model / torch |",
                  "|---|---:|---|---:|---|---:|"]
        inside_before = 0
        for setup, n, rs, got, _ in before:
            ratio, cells = compared(rs, got)
            inside_before += near(ratio)
            lines.append(f"| {setup} | {n} | {cells} |")
        lines += ["", f"Within 25%: {inside_before} of {len(before)} rows.", ""]
    lines += [
              "## What else changes the count", "",
              "| N | forked, CPU clock read on every store call | model of that: `tick: 0` | "
              "threads of one process | spawned, earlier runs | model, processor sharing | "
              "model, own CPU per host (5 us) | issue's figure |", "|---:|---|---|---|---|---|---:|---:|"]
    for n in sorted(set(FORK_NS) | {64}):
        sp = [r for r in of("spawn", n) if "cold_cpu_s" not in r]
        sh = sharing.get(n)
        ck = clocked.get(n)
        lines.append(f"| {n} | {fmt_runs(of('fork+clock', n))} | {' / '.join(f'{x:,}' for x in ck) if ck else '-'} | "
                     f"{fmt_runs([threads[n]] if n in threads else [])} | "
                     f"{fmt_runs(sp)} | {' / '.join(f'{x:,}' for x in sh) if sh else '-'} | "
                     f"{own.get(n, '-'):,} | {ISSUE.get(n, '-')} |")
    lines += ["", "## Reading it", "", *READING, ""]
    (ROOT / "reports" / "c10d_contention.md").write_text("\n".join(lines))
    print("\n".join(lines))


READING = [
    "- How the OS schedules the clients decides the count, more than N does. Processor sharing "
    "(every runnable job progressing at once, the model's first CPU) makes contenders compute on "
    "the same stale state and collide in lockstep: ~N^2/2 past a threshold. Linux runs one "
    "process per core at a time from a per-core queue, least CPU first, and a process keeps "
    "its core through a burst (decode, decide, encode) until it blocks or is cut. When it is "
    "cut was measured on torch's storm (reports/c10d_burst_cuts.md, `perf sched`): at the first "
    "250 Hz tick after it has run EEVDF's 1.4 ms slice, or between ticks, past the slice, "
    "when another task wakes. That is the model's default (rdzv_sim/sim/fair_cpu.py); its two "
    "rates (10% of wake-ups take a core at once; 120 cuts per second past the slice) were "
    "chosen from a scan (0 / 5 / 10% x 0 / 60 / 120 per second) against the earlier batch of "
    "runs (second table), inside their measured ranges. The later batch (first table) was "
    "taken after they were fixed.",
    "- Across the two batches the model is within 25% of torch in 29 of 32 rows. The misses: "
    "forked N = 48 of the later batch (torch itself went from 255 to 141 between the batches: "
    "the storm's onset is where torch is least repeatable), and 2 ms more CPU per attempt at "
    "N = 48 and 96 of the later batch (0.60), where the model under-counts in both batches "
    "(0.77 in the earlier). torch's own runs at +2 ms, N = 96 ranged 2,589 to 4,283 today "
    "(perf-traced runs included). Nearby choices of the two rates (5-15%, 60-200 per second) "
    "give 25 to 30 of 32: within seed noise of each other, so the choice is not sharp.",
    "- The scheduler the model had before (a 4 ms slice from each dispatch, 5% of wake-ups "
    "preempting, a 6 ms sleeper credit) matched the earlier batch in 14 of 16 rows and the "
    "later in 13, with misses up to 2.6x (+1 ms, N = 96), because it cut a burst only when "
    "the burst outgrew 4 ms (measured: 58-63% of torch's 3.5 ms bursts are cut, the old model "
    "cut ~8%); the storm set in at a sharp threshold. With the measured law the model's "
    "worst row is 0.60 and its onset is gradual: at N = 96, cold start 28 ms, 926 attempts at "
    "3.9 ms per attempt, 1,486 at 4.2, 1,886 at 5.0 (the old: 1,184 to 3,480 between 3.9 and "
    "4.2). A batch taken earlier while this machine ran slower (cold start 38 ms, 4.1 ms per "
    "attempt, N = 96: torch 910 to 1,863, mean 1,138) the old model missed at 3.29x; the new "
    "one gives 1,352 (1.19).",
    "- Why a failed CAS keeps failing: in torch's storm a client whose CAS failed gets the "
    "reply at once but a core only later (median 13 ms at N = 64, 23 ms at N = 96; 12-22% "
    "within 0.5 ms), and a cut one ~20-80 ms later, so the state it decodes is stale again by "
    "the time it sends. The model's waits agree (reports/c10d_burst_cuts.md).",
    "- A measurement that changes what it measures: reading the thread's CPU clock "
    "(`time.thread_time()`) around every store call makes forked torch's storm several times "
    "larger (first column of the last table). The read is a system call that updates the "
    "scheduler's accounting, so a used-up slice is noticed mid-attempt instead of at the next "
    "tick, and attempts are cut in two. The benchmark reads the clock twice per node only. "
    "The model follows that regime when told a used-up slice is cut at once (`cluster.cpu.tick: "
    "0`, the second column, inputs measured in those runs), closely at N = 32 and 96, at about "
    "0.6 of torch at N = 64 and 128; it cuts at 1.4 ms exactly, where torch is cut at the next "
    "store call after it.",
    "- Spawned nodes pay 3-5x the CPU per attempt of forked ones (measured above; our guess, "
    "not verified: each holds ~190 MB of its own and the caches of 2 cores thrash), and the "
    "model, given that CPU, follows their counts too; at N = 64 one earlier spawned run "
    "livelocked (12,026 attempts, every handler timed out after 120 s), which the model does "
    "not reproduce.",
    "- Where an attempt's client CPU goes: torch's `_record` names its caller with "
    "`get_method_name()` (dynamic_rendezvous.py, lines 52-55), which calls `inspect.stack()` "
    "twice, and every attempt records at least twice; the first call in a process reads "
    "every frame's source file (the cold start, ~25 ms). A torch behaviour that looks like a "
    "bug; the model charges it (a Work op where torch records first), it does not fix it.",
    "- The issue's figures (31, 282, 3,936 at N = 8, 32, 128) fit none of these setups on this "
    "machine: 31 at N = 8 is more than any setup here made, 282 at N = 32 is spawned-like, "
    "3,936 at N = 128 lies between forked and the clock-read regime. The model reproduces a "
    "setup given its measured CPU, which is what it can promise a user: measure your agents' "
    "CPU per attempt, and the model tells you the storm.",
]


if __name__ == "__main__":
    main()
