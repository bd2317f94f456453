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

NS = [8, 16, 32, 64, 128]
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


def main():
    path = ROOT / "reports" / "c10d_contention_torch.json"
    if "--torch" in sys.argv or not path.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "c10d_contention_torch.py"),
                        *map(str, NS)], check=True)
    torch_runs = {r["n"]: r for r in json.loads(path.read_text())["runs"]}
    ppath = ROOT / "reports" / "c10d_contention_torch_processes.json"
    if "--torch" in sys.argv or not ppath.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "c10d_contention_torch.py"),
                        "--processes", "8", "16", "32", "64"], check=True)
    proc_runs = {r["n"]: r for r in json.loads(ppath.read_text())["runs"]}
    rows = []
    for n in NS:
        own, shared = model(n, None), model(n, 2)
        t = torch_runs.get(n, {}).get("compare_set_total")
        tp = proc_runs.get(n, {}).get("compare_set_total")
        rows.append((n, t, tp, ISSUE.get(n), own, shared))
        print(n, t, tp, ISSUE.get(n), own, shared)
    sens = {(b, c): [model(n, 2, {"base": b, "cold_start": c}) for n in NS]
            for b, c in ((5e-6, 0.06), (5e-4, 0.06), (1e-3, 0.06), (2e-3, 0.06))}

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"
    lines = ["# c10d contention: compare-and-set attempts for N nodes joining at once", "",
             f"Date: {time.strftime('%Y-%m-%d')}. Machine: {platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}. Regenerate: `python benchmarks/c10d_contention.py --torch`.",
             "", "Counts include each handler's sentinel CAS (made when its backend is created).",
             "", "| N | torch 2.13, threads | torch 2.13, one process per node | issue's figure | "
             "model, own CPU per host | model, hosts share 2 cores | model(2 cores) / torch processes |",
             "|---|---|---|---|---|---|---|"]
    for n, t, tp, i, own, shared in rows:
        lines.append(f"| {n} | {t if t is not None else '-'} | {tp if tp is not None else '-'} | {i or '-'} | "
                     f"{own} | {shared} | {ratio(shared, tp)} |")
    lines += ["", "Sensitivity of the model (2 shared cores) to the client CPU per encode/decode "
              "(`cluster.cpu.base`) with a 60 ms cold first call (`cluster.cpu.cold_start`):", "",
              "| base | " + " | ".join(f"N={n}" for n in NS) + " |", "|---|" + "---|" * len(NS)]
    for (b, c), vals in sens.items():
        lines.append(f"| {b * 1e3:g} ms | " + " | ".join(str(v) for v in vals) + " |")
    lines += ["", "Reading it:", "",
              "- One process per node (spawned, torch imported, released together by a store "
              "barrier) reproduces the issue's figures on this 2-core machine (N = 32: 312 "
              "against 282), so those were processes. Threads contend far less below N = 64.",
              "- Up to 32 nodes the model matches torch in threads within 10%: joins spread "
              "over torch's random 0-0.3 s delay rarely collide.",
              "- Contention collapses past a threshold in both, when the client work per attempt "
              "(pickle + base64 of the blob, measured at 60 us / 451 us / 2.07 ms for 1 / 12 / 47 KB) "
              "times the number of contenders exceeds the spread. torch in threads collapses earlier "
              "(between 32 and 64) than the model with the measured codec cost (past 64): the GIL hands the CPU over in "
              "5 ms slices, which the model's processor sharing does not reproduce.",
              "- torch's own handler in threads can fail outright: see `errors` and `ranks_ok` in "
              "reports/c10d_contention_torch.json (at N = 128 here every handler hit its 120 s join "
              "timeout while the CAS count kept climbing).",
              "- The model's shared cores are exact processor sharing (rates change as jobs come "
              "and go; they were fixed at each job's start before). With ~1-2 ms of client CPU per "
              "encode/decode it is within 25% of torch's processes at N = 8, 16 and 32, but past "
              "the cascade it contends about twice as much as the issue's N = 128 figure "
              "(~N^2/2 against ~N^2/4: every remaining contender retries once per winner), while "
              "this machine's processes at N = 64 contended more than either law. Round-robin "
              "time slices of 1 or 4 ms instead of processor sharing (tried, not kept) gave the "
              "same ~8,300 at N = 128: the lockstep of processor sharing is not the cause.",
              "- So the model is NOT within 25% of all three of the issue's figures; the target "
              "stays open. Next: count attempts in torch's processes at N = 96 and 128 here (the "
              "N = 64 run took minutes), to know which law this machine follows past the cascade.",
              ""]
    (ROOT / "reports" / "c10d_contention.md").write_text("\n".join(lines))
    print("wrote reports/c10d_contention.md")


if __name__ == "__main__":
    main()
