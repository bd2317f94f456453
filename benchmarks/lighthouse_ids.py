"""What torchft's reused quorum ids cost, and what ids never given twice would save.

torchft 0.2.0 numbers a restarted Lighthouse's quorums from 1 again (`protocol.lighthouse_ids:
restart`); a group whose last id comes again keeps its process group and that quorum's first
step fails after the Manager's timeout (docs/per-step.md, "Losing the Lighthouse"). This runs
`llama3-54d-quorum` and `frontier-100k-quorum` with one Lighthouse restart (3 s, mid-run, the
Managers retrying every 5 s: `quorum_retries: 3` over 20 s) under `restart` and under `unique`,
side by side on the same seed, and reports the capacity each loses to it. Writes
reports/lighthouse_ids.json and .md.
Usage: python benchmarks/lighthouse_ids.py [--jobs 2]
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, in_parallel, run_summary, side_by_side_args, write  # noqa: E402

SCENARIOS = ("llama3-54d-quorum", "frontier-100k-quorum")
IDS = ("restart", "unique")
COLUMNS = ("goodput", "ettr", "steps_committed", "steps_failed", "quorums", "lost_quorum_s",
           "lost_detection_s", "lost_reconfigure_s", "lost_heal_s", "duration")


def sets(scenario: str, ids: str) -> list[str]:
    from rdzv_sim.scenario.load import load
    at = load(scenario).duration / 2          # loaded before the threads start (main)
    return ["--set", "fidelity=aggregate", "--set", f"protocol.lighthouse_ids={ids}", "--set", "protocol.quorum_retries=3",
            "--set", "protocol.quorum_timeout=20",
            "--set", f"faults=[{{kind: lighthouse_crash, at: {at:g}, duration: 3}}]"]


def one(scenario: str, args: list[str], work: Path, ids: str) -> dict:
    import sys
    out = work / f"{scenario}-{ids}"
    cmd = [sys.executable, "-m", "rdzv_sim", "run", scenario, "--long", "--no-report", "--no-progress",
           "--out", str(out), *args]
    r = run_summary(cmd, out, COLUMNS)
    if "error" not in r:
        import pandas as pd
        q = pd.read_parquet(out / "quorums.parquet")
        back = q[q["cause"] == "lighthouse"]
        r["stale_quorums"] = int(q["stale"].sum())
        r["ids_before"] = int(q.loc[q["t"] < float(back["t"].min()), "quorum_id"].max()) if len(back) else None
    return r


def report(r: dict) -> str:
    lines = ["# What reused quorum ids cost after a Lighthouse restart", "",
             f"{r['date']}, {r['machine']}, Python {r['python']}, commit {r.get('commit', '?')}. "
             "`python benchmarks/lighthouse_ids.py`: every case in this one run, side by side, at the "
             "aggregate fidelity. One Lighthouse restart (3 s) halfway through each run; the Managers "
             "retry every 5 s (quorum_retries 3 over 20 s), so training goes on without a restart. "
             "`restart`: torchft 0.2.0 as it ships (a fresh Lighthouse numbers its quorums from 1); "
             "`unique`: ids never given twice.", "",
             "| scenario | ids | goodput | steps committed | steps failed | quorums | lost to quorum calls, h | "
             "sim wall s |", "|---|---|---|---|---|---|---|---|"]
    h = 3600.0
    for name, x in r["cases"].items():
        sc, ids = name.rsplit(" ", 1)
        if "error" in x:
            lines.append(f"| {sc} | {ids} | failed: {x['error'].strip().splitlines()[-1] if x['error'].strip() else ''} |")
            continue
        lines.append(f"| {sc} | {ids} | {x['goodput']:.6f} | {x['steps_committed']} | {x['steps_failed']} | "
                     f"{x['quorums']} | {x['lost_quorum_s'] / h:.2f} | {x['wall_s']} |")
    lines += ["", "## What the fix would save", ""]
    for sc in SCENARIOS:
        a, b = r["cases"].get(f"{sc} restart", {}), r["cases"].get(f"{sc} unique", {})
        if "goodput" not in a or "goodput" not in b:
            continue
        saved = (b["goodput"] - a["goodput"]) * a["duration"] / h
        lines.append(f"- **{sc}**: {saved:.2f} capacity-hours of the whole job ({b['steps_committed'] - a['steps_committed']} "
                     f"steps; {a['stale_quorums']} stale quorums as shipped, {b['stale_quorums']} with unique ids). "
                     f"Its groups' last quorum id before the loss was {a['ids_before']}: the fresh "
                     "Lighthouse's ids 1, 2, ... meet none of them, so no group keeps a process group "
                     "it should not. A reused id bites only when the Lighthouse restarts while the job's "
                     "ids are still small (early in a run, as in validate-quorum-lighthouse, where the "
                     "groups last had id 2): there it costs a failed step and the Manager's timeout "
                     "(60 s by default) of the whole job, and the first retry's lone quorum costs a "
                     "step either way.")
    lines += ["", "With torchft's default of no retries, a Lighthouse restart kills every group's "
              "training process (the quorum call hangs to its timeout and raises), so the ids do not "
              "matter there: the job reloads its checkpoint either way (docs/per-step.md).", ""]
    return "\n".join(lines)


def main() -> None:
    a = side_by_side_args()
    work = Path("runs/lighthouse_ids")
    todo = {(sc, ids): sets(sc, ids) for sc in SCENARIOS for ids in IDS}   # loaded here, not in threads
    results = in_parallel({f"{sc} {ids}": (lambda sc=sc, args=args, ids=ids: one(sc, args, work, ids))
                           for (sc, ids), args in todo.items()}, a.jobs)
    r = environment(cases=results)
    write("lighthouse_ids", r, report(r), folder=Path(a.out))
    print(report(r))


if __name__ == "__main__":
    main()
