"""Stop-the-world against per-step fault tolerance at about 100K GPUs, beside FT-HSDP.

Runs `frontier-100k` (hrw, stop-the-world) and `frontier-100k-quorum` (the same week, failures
and seed under torchft's rules, 768 replica groups of 16 hosts) side by side, each in a
process of its own, and sets their ETTR and goodput beside what Meta's FT-HSDP paper (arXiv
2602.00277) states: at O(100K) GPUs, effective training time 44% with a 10-minute stall a
failure (synchronous), 80% with 3 minutes (FT-HSDP). Nothing is fitted to those figures: the
scenarios' parts are set from their own sources (their descriptions) and the stall is what
they add up to. Writes reports/ft_hsdp.json and .md.
Usage: python benchmarks/ft_hsdp.py [--jobs 2]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, in_parallel, run_summary, side_by_side_args, write  # noqa: E402

CASES = {"stop-the-world (frontier-100k)": "frontier-100k",
         "per-step quorum (frontier-100k-quorum)": "frontier-100k-quorum"}
PAPER = {"stop-the-world (frontier-100k)": {"ett": 0.44, "stall_min": 10.0},
         "per-step quorum (frontier-100k-quorum)": {"ett": 0.80, "stall_min": 3.0}}
COLUMNS = ("ettr", "goodput", "interruptions", "absorbed", "full_restarts", "mttr_s",
           "steps_committed", "steps_failed", "lost_detection_s", "lost_rendezvous_s",
           "lost_worker_start_s", "lost_checkpoint_load_s", "lost_recompute_s",
           "lost_running_smaller_s", "lost_heal_s", "lost_reconfigure_s", "lost_quorum_s")


def one(name: str, scenario: str, work: Path) -> dict:
    out = work / scenario
    cmd = [sys.executable, "-m", "rdzv_sim", "run", scenario, "--long", "--no-report", "--no-progress",
           "--out", str(out)]
    return run_summary(cmd, out, COLUMNS)


def stall_min(x: dict, duration: float) -> float:
    """The job's capacity lost per interruption, in minutes of the whole job."""
    lost = (1.0 - x["ettr"]) * duration
    return lost / max(1, x["interruptions"]) / 60.0


def report(r: dict) -> str:
    d = r["duration"]
    lines = ["# Per-step fault tolerance at about 100K GPUs, beside FT-HSDP", "",
             f"{r['date']}, {r['machine']}, Python {r['python']}, commit {r.get('commit', '?')}. "
             "`python benchmarks/ft_hsdp.py`: both scenarios run side by side in this one run, at the "
             "aggregate fidelity (quorum's error against per-operation: docs/fidelities.md).", "",
             "| case | ETTR | goodput | interruptions | absorbed | capacity lost a failure, min | "
             "paper: ETT | paper: stall, min | sim wall s | RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, x in r["cases"].items():
        if "error" in x:
            lines.append(f"| {name} | failed: {x['error'].strip().splitlines()[-1] if x['error'].strip() else ''} |")
            continue
        p = PAPER[name]
        lines.append(f"| {name} | {x['ettr']:.3f} | {x['goodput']:.3f} | {x['interruptions']} | "
                     f"{x.get('absorbed', 0)} | {stall_min(x, d):.1f} | {p['ett']:.2f} | {p['stall_min']:.0f} | "
                     f"{x['wall_s']} | {x['max_rss_mb']} |")
    ok = {n: x for n, x in r["cases"].items() if "error" not in x}
    lines += ["", "## What is set, what is assumed", "",
              "- Set from sources: 98,304 GPUs (12,288 hosts x 8) for a week; one interruption every "
              "18.7 minutes (Meta's RSC study, arXiv 2410.21680, at this size); both runs see the same "
              "failures (same seed).",
              "- Assumed (the scenarios' descriptions, docs/per-step.md): 30 s detection, one host per "
              "interruption, repaired in an hour, 64 spares; a stop-the-world restart of 60 s + 0.05 s a "
              "host; asynchronous checkpoints every 10 minutes; per step: replica groups of 16 hosts, a "
              "6 s step, 6.48 TB of state a replica healed at 25 GB/s a host, 5 s to configure a new "
              "quorum, torchft 0.2.0's Lighthouse rules and 60 s timeout for a vanished host.",
              "- Not taken from the paper: its stall figures. Each stall here is what the parts add up "
              "to; nothing was fitted to 44% or 80%.", ""]
    if len(ok) == 2:
        stw, per = ok["stop-the-world (frontier-100k)"], ok["per-step quorum (frontier-100k-quorum)"]
        lines += ["## The gap, and why", "",
                  f"- **Stop-the-world**: ETTR {stw['ettr']:.3f} against the paper's 0.44. Each failure "
                  f"costs the job {stall_min(stw, d):.1f} minutes here (detection, the last call, an "
                  "11-minute restart at 12,288 hosts, and the work since the last checkpoint), more than "
                  "the paper's 10, so a lower ETTR follows from the same failure rate.",
                  f"- **Per-step**: ETTR {per['ettr']:.3f} against the paper's 0.80. Here a failure costs "
                  f"the job {stall_min(per, d):.1f} minutes of its capacity: the survivors lose the "
                  "step in flight and wait for the Lighthouse to drop the dead group (seconds), the "
                  "failed group's 16 hosts are out until it is back and healed, and only job-wide "
                  "faults restart from the checkpoint. The paper's 3 minutes a failure is a job-wide "
                  "stall: FTAR's reconfiguration of the all-reduce across about 6,000 replicas, the "
                  "catch-up of a recovering replica, and the host-side costs of its control plane at "
                  "that size. The model has none of these as a cost that grows with the job: its "
                  "reconfiguration is a fixed 5 s and its Lighthouse decides in one tick. That is the "
                  "mechanism of the gap: the model's per-step stall is torchft's protocol on an ideal "
                  "collective layer, the paper's is a measured system's.",
                  "- What would close it, without fitting: a reconfiguration cost measured against the "
                  "number of replicas (torchft's process-group reconfigure on NCCL, on a GPU machine), "
                  "and the paper's own breakdown of its 3 minutes, which the abstract does not give.", ""]
    return "\n".join(lines)


def main() -> None:
    a = side_by_side_args()
    work = Path("runs/ft_hsdp")
    results = in_parallel({n: (lambda n=n, s=s: one(n, s, work)) for n, s in CASES.items()}, a.jobs)
    from rdzv_sim.scenario.load import load
    r = environment(duration=load("frontier-100k").duration, cases=results, paper=PAPER)
    write("ft_hsdp", r, report(r), folder=Path(a.out))
    print(report(r))


if __name__ == "__main__":
    main()
