"""The hrw protocol's rank orders on one failure trace: what moves at each interruption.

Runs a bundled scenario (default `llama3-54d`, the 54-day 2,048-host job, at aggregate
fidelity) once per `rank_order` with the same seed, and counts per policy: rounds, members
whose node rank changed, rounds whose rank 0 moved to another host, and the shards moved under
`modulo` placement (shard % world by rank, as DistributedSampler splits data) and under `hrw`
placement (by host name, whatever the ranks). Writes reports/rank_orders.md and .json.
Usage: python benchmarks/rank_orders.py [--scenario NAME] [--set key=value ...]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, write  # noqa: E402

import rdzv_sim

POLICIES = ("hrw", "topology", "stable")
COLUMNS = ("rounds_completed", "ranks_changed", "rank0_moved", "shards_moved_modulo",
           "shards_moved_hrw", "ettr", "goodput")


def measure(scenario: str, sets: list[str]) -> dict:
    out = {}
    for policy in POLICIES:
        sc = rdzv_sim.load_scenario(scenario, [*sets, f"protocol.rank_order={policy}"])
        t = time.perf_counter()
        summary = rdzv_sim.run(sc).tables()["summary"].iloc[0]
        row = {c: (summary[c].item() if hasattr(summary[c], "item") else summary[c])
               for c in COLUMNS if c in summary}
        row["wall_s"] = round(time.perf_counter() - t, 1)
        out[policy] = row
    return out


def report(r: dict) -> str:
    cmd = " ".join(["python benchmarks/rank_orders.py", "--scenario", r["scenario"],
                    *(f"--set {s}" for s in r["sets"])])
    lines = ["# Rank orders: what moves when the members change", "",
             f"{r['date']}, {r['machine']}, Python {r['python']}. "
             f"`{cmd}`, the same seed and failure trace for each policy.", "",
             "| rank_order | rounds | members whose rank changed | rank 0 moved | shards moved, "
             "modulo (by rank) | shards moved, hrw (by name) | ettr | goodput | sim wall s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p, row in r["results"].items():
        lines.append(f"| {p} | {row['rounds_completed']} | {row['ranks_changed']:,} | "
                     f"{row['rank0_moved']} | {row['shards_moved_modulo']:,} | "
                     f"{row['shards_moved_hrw']:,} | {row.get('ettr', float('nan')):.4f} | "
                     f"{row.get('goodput', float('nan')):.4f} | {row['wall_s']} |")
    base, stable = r["results"]["hrw"], r["results"]["stable"]
    lines += ["", "What it says:", "",
              f"- `stable` changed {stable['ranks_changed']:,} ranks where `hrw` changed "
              f"{base['ranks_changed']:,}, and moved rank 0 {stable['rank0_moved']} times where `hrw` "
              f"moved it {base['rank0_moved']} times: with a spare taking a failed host's place the "
              "world keeps its size, the spare takes the hole, and nobody else moves.",
              "- Shards placed by rank (`modulo`) follow the ranks, so they move as the ranks do; "
              "when the world size changes, `shard % world` moves nearly every shard whatever the "
              "order. Shards placed by name (`hrw`) do not depend on the rank order at all.",
              "- The policy costs no time: the closer's two extra store calls under `stable` (a check "
              "and a read of the published order) are not in the aggregate model, and ettr and "
              "goodput are the same for all three."]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="llama3-54d")
    ap.add_argument("--set", dest="sets", action="append", default=None)
    args = ap.parse_args()
    sets = args.sets if args.sets is not None else (
        ["fidelity=aggregate", "shards.policies=[hrw,modulo]"] if args.scenario == "llama3-54d" else [])
    r = environment(scenario=args.scenario, sets=sets, results=measure(args.scenario, sets))
    write("rank_orders", r, report(r))
    print(report(r))


if __name__ == "__main__":
    main()
