"""The aggregate c10d (`fidelity: aggregate`) held to the per-operation model, side by side.

One scenario, both fidelities, the same seeds: N hosts starting over 30 s (min = N - 8, max = N,
torchrun's last call 30 s and keep-alive 5 s x 3), host 1 crashing at 100 s, its peers failing
when their collective times out 30 s later, all re-joining at once. For each N and seed: round
0's latency and compare-and-set attempts, the re-form's (or that it never came), every attempt
of the run, store requests, and each fidelity's wall time. Writes reports/c10d_aggregate.json
and .md. Also:
- at 512 hosts (min 504), where the re-form is on the edge of stalling, which seeds re-form in
  each fidelity (`--edge-seeds`);
- `llama3-54d` (fidelity aggregate) with hrw, with c10d as bundled, and with c10d's settings
  changed (`--llama`): the 54-day job on the same failure trace;
- the bundled `c10d-2048-crash` at 2,048 and 10,000 hosts in both fidelities (`--large`).
Usage: python benchmarks/c10d_aggregate.py [--sizes 64 128 ...] [--seeds 3 4] [--edge-seeds 3 4 5 6 7 8]
                                           [--duration 400] [--llama] [--large]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, write  # noqa: E402


def scenario(n: int, seed: int, duration: float, fidelity: str):
    from rdzv_sim.scenario import load
    return load({"name": f"c10d-{n}-crash", "seed": seed, "duration": duration, "fidelity": fidelity,
                 "cluster": {"nodes": n, "nproc_per_node": 8, "start_spread": 30.0},
                 "store": {"host": None}, "shards": {"count": 0},
                 "protocol": {"name": "c10d", "min_nodes": n - 8, "max_nodes": n, "last_call_timeout": 30},
                 "agent": {"collective_timeout": 30, "worker_start": 5, "monitor_interval": 5},
                 "faults": [{"kind": "crash", "node": 1, "at": 100}]})


def one(n: int, seed: int, duration: float, fidelity: str) -> dict:
    import pandas as pd

    from rdzv_sim.result import build
    from rdzv_sim.trace import details
    sc = scenario(n, seed, duration, fidelity)
    if fidelity == "aggregate":
        from rdzv_sim.aggregate import AggregateJob as Sim
    else:
        from rdzv_sim.sim.simulation import Simulation as Sim
    t0 = time.perf_counter()
    sim = Sim(sc)
    stats = sim.run(None)
    wall = time.perf_counter() - t0
    attempts = sim.model.race.attempts if fidelity == "aggregate" else sim.protocol.attempts()
    r = build(sc, sim.trace, stats, *sim.store_work())
    ev = r.events
    conf = ev[ev.event == "confirmed"]
    cas = pd.Series([d.get("cas_attempts", 0) for d in details(conf)], index=conf.index)
    by_round = {int(k): int(v) for k, v in cas.groupby(conf["round"]).sum().items()}
    rounds = r.rounds
    row = {"n": n, "seed": seed, "fidelity": fidelity, "wall_s": round(wall, 2),
           "attempts": int(attempts), "store_ops": int(stats.store_ops),
           "round0_latency": float(rounds.latency.iloc[0]) if len(rounds) else None,
           "round0_cas": by_round.get(0)}
    row["reform_latency"] = float(rounds.latency.iloc[1]) if len(rounds) > 1 else None
    row["reform_cas"] = by_round.get(1)
    return row


LLAMA = (("hrw", []), ("c10d", ["protocol.name=c10d"]),
         # a 30 s keep-alive lets every storm finish, slowly: stepped write by write, the 54 days
         # would take most of an hour here; the first 8 hours tell the story
         ("c10d, keep-alive 30 s (first 30,000 s)", ["protocol.name=c10d", "protocol.keep_alive_interval=30",
                                                     "duration=30000"]))
LLAMA_KEYS = ("rounds_completed", "goodput", "running_fraction", "interruptions", "rdzv_latency_p50",
              "rdzv_latency_p99", "lost_rendezvous_s", "store_ops", "agents_exited")


LARGE = (("2,048 hosts, torchrun's defaults", []),
         ("2,048, keep-alive 30 s", ["protocol.keep_alive_interval=30"]),
         ("2,048, keep-alive 60 s, join timeout 1 h", ["protocol.keep_alive_interval=60",
                                                        "protocol.join_timeout=3600", "duration=7200"]),
         ("10,000 hosts", ["cluster.nodes=10000", "protocol.max_nodes=10000", "protocol.min_nodes=9750",
                           "cluster.topology.racks=312"]))


def large(label: str, overrides: list[str], fidelity: str) -> dict:
    import rdzv_sim
    t0 = time.perf_counter()
    r = rdzv_sim.run("c10d-2048-crash", [f"fidelity={fidelity}", *overrides])
    ev = r.events
    conf = ev[(ev.event == "confirmed") & (ev["round"] == 0)]
    return {"label": label, "fidelity": fidelity, "wall_s": round(time.perf_counter() - t0, 1),
            "rounds": [[round(float(e), 1), int(k)] for e, k in zip(r.rounds.end, r.rounds.nnodes)],
            "round0_cas": int(sum(json.loads(d)["cas_attempts"] for d in conf.detail)),
            "store_ops": int(r.summary.iloc[0].store_ops),
            "timeouts": int((ev.event == "rendezvous_timeout").sum())}


def large_report(rows: list[dict]) -> list[str]:
    out = ["## The bundled c10d-2048-crash, both fidelities", "",
           "Rounds as (end s, hosts); host 7 crashes at 300 s, noticed at 900 s.", "",
           "| case | rounds (per-op / agg) | round 0 CAS | store requests | ratio | agents timed out | wall s |",
           "|---|---|---|---|---:|---|---|"]
    by = {}
    for r in rows:
        by.setdefault(r["label"], {})[r["fidelity"]] = r
    for label, p in by.items():
        a, b = p["per_operation"], p["aggregate"]
        out.append(f"| {label} | {a['rounds'] or '-'} / {b['rounds'] or '-'} | {a['round0_cas']:,} / {b['round0_cas']:,} "
                   f"| {a['store_ops']:,} / {b['store_ops']:,} | {b['store_ops'] / a['store_ops']:.2f} "
                   f"| {a['timeouts']:,} / {b['timeouts']:,} | {a['wall_s']:.0f} / {b['wall_s']:.1f} |")
    return out + [""]


def llama(label: str, overrides: list[str]) -> dict:
    import rdzv_sim
    t0 = time.perf_counter()
    r = rdzv_sim.run("llama3-54d", ["fidelity=aggregate", *overrides])
    s = r.summary.iloc[0]
    row = {"label": label, "overrides": overrides, "wall_s": round(time.perf_counter() - t0, 1)}
    for k in LLAMA_KEYS:
        row[k] = None if s[k] != s[k] else float(s[k])
    return row


def llama_report(rows: list[dict]) -> list[str]:
    out = ["## llama3-54d: torchrun's c10d against hrw on the same failure trace", "",
           "`rdzv-sim run llama3-54d --set fidelity=aggregate [--set protocol.name=c10d ...]`: 2,048 "
           "hosts and 32 warm spares, 54 days, the Llama 3 interruption mix, seed 54 (the same "
           "faults in every row). Rendezvous time lost: seconds of the 54 days from the members leaving "
           "a round to the next round's last rank (`lost_rendezvous_s`, docs/training.md).", "",
           "| backend | rounds | goodput | running | interruptions | rendezvous p50 / p99 s | "
           "rendezvous time lost s | store requests | agents that gave up | wall s |",
           "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['label']} | {r['rounds_completed']:,.0f} | {r['goodput']:.3f} "
                   f"| {r['running_fraction']:.3f} | {fmt(r['interruptions'])} "
                   f"| {fmt(r['rdzv_latency_p50'], '.1f')} / {fmt(r['rdzv_latency_p99'], '.1f')} "
                   f"| {fmt(r['lost_rendezvous_s'])} | {r['store_ops']:,.0f} | {r['agents_exited']:,.0f} "
                   f"| {r['wall_s']:.0f} |")
    return out + [""]


def edge_report(rows: list[dict]) -> list[str]:
    out = ["## 512 hosts, on the edge", "",
           "min_nodes 504: whether the re-form completes or stalls a few participants short turns "
           "on the order in which the store serves the keep-alives (docs/c10d-at-scale.md). Re-form "
           "in seconds, or - for a stall.", "",
           "| seed | per-operation | aggregate |", "|---:|---|---|"]
    by = {}
    for r in rows:
        by.setdefault(r["seed"], {})[r["fidelity"]] = r
    formed = {"per_operation": 0, "aggregate": 0}
    for seed, p in sorted(by.items()):
        for f in formed:
            formed[f] += p[f]["reform_latency"] is not None
        out.append(f"| {seed} | {fmt(p['per_operation']['reform_latency'], '.1f')} "
                   f"| {fmt(p['aggregate']['reform_latency'], '.1f')} |")
    out += ["", f"Re-formed: per-operation {formed['per_operation']} of {len(by)}, aggregate "
            f"{formed['aggregate']} of {len(by)}.", ""]
    return out


def ratio(a, b):
    return None if a is None or b is None or not b else a / b


def fmt(x, spec=",.0f"):
    return "-" if x is None else format(x, spec)


def report(rows: list[dict], meta: dict, edge=(), llamas=(), larges=()) -> str:
    out = ["# The aggregate c10d against the per-operation model", "",
           f"{meta['date']}, {meta['machine']}, Python {meta['python']}, numpy {meta['numpy']}. "
           "Generated by `python benchmarks/c10d_aggregate.py`.", "",
           "N hosts starting over 30 s (min N - 8, max N, last call 30 s, keep-alive 5 s x 3), host "
           f"1 crashing at 100 s, its peers' collectives failing 30 s later; {meta['duration']:g} s "
           "simulated. Re-form: the round after the crash (- : it had not formed by the end, every "
           "agent still in the storm). Attempts: every compare-and-set of the run but the "
           "backends' sentinels. Ratios: aggregate / per-operation.", "",
           "| N | seed | round 0 s (per-op / agg) | round 0 CAS | re-form s | re-form CAS | all attempts | ratio | store requests | ratio | wall s (per-op / agg) |",
           "|---:|---:|---|---|---|---|---|---:|---|---:|---|"]
    pairs = {}
    for r in rows:
        pairs.setdefault((r["n"], r["seed"]), {})[r["fidelity"]] = r
    worst = {"attempts": 0.0, "latency": 0.0}
    for (n, seed), p in sorted(pairs.items()):
        a, b = p.get("per_operation"), p.get("aggregate")
        if a is None or b is None:
            continue
        ra, ro = ratio(b["attempts"], a["attempts"]), ratio(b["store_ops"], a["store_ops"])
        worst["attempts"] = max(worst["attempts"], abs(ra - 1))
        for k in ("round0_latency", "reform_latency"):
            if a[k] is not None and b[k] is not None:
                worst["latency"] = max(worst["latency"], abs(b[k] / a[k] - 1))
        out.append(f"| {n:,} | {seed} | {fmt(a['round0_latency'], '.2f')} / {fmt(b['round0_latency'], '.2f')} "
                   f"| {fmt(a['round0_cas'])} / {fmt(b['round0_cas'])} "
                   f"| {fmt(a['reform_latency'], '.2f')} / {fmt(b['reform_latency'], '.2f')} "
                   f"| {fmt(a['reform_cas'])} / {fmt(b['reform_cas'])} "
                   f"| {a['attempts']:,} / {b['attempts']:,} | {ra:.3f} "
                   f"| {a['store_ops']:,} / {b['store_ops']:,} | {ro:.2f} "
                   f"| {a['wall_s']:.1f} / {b['wall_s']:.2f} |")
    out += ["", f"Largest difference over these rows: attempts {100 * worst['attempts']:.1f}%, "
            f"round latency {100 * worst['latency']:.1f}%.", ""]
    if edge:
        out += edge_report(list(edge))
    if larges:
        out += large_report(list(larges))
    if llamas:
        out += llama_report(list(llamas))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    ap.add_argument("--seeds", type=int, nargs="+", default=[3, 4])
    ap.add_argument("--duration", type=float, default=400.0)
    ap.add_argument("--edge-seeds", type=int, nargs="*", default=[3, 4, 5, 6, 7, 8])
    ap.add_argument("--llama", action="store_true", help="also llama3-54d with hrw and c10d")
    ap.add_argument("--large", action="store_true", help="also c10d-2048-crash at 2,048 and 10,000 hosts")
    ap.add_argument("--out", default=str(ROOT / "reports" / "c10d_aggregate"))
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        for seed in args.seeds:
            for fid in ("per_operation", "aggregate"):
                rows.append(one(n, seed, args.duration, fid))
                print(json.dumps(rows[-1]), flush=True)
    edge = []
    for seed in args.edge_seeds:
        for fid in ("per_operation", "aggregate"):
            edge.append(one(512, seed, args.duration, fid))
            print(json.dumps(edge[-1]), flush=True)
    larges = []
    for label, o in (LARGE if args.large else ()):
        for fid in ("per_operation", "aggregate"):
            larges.append(large(label, o, fid))
            print(json.dumps(larges[-1]), flush=True)
    llamas = []
    for label, o in (LLAMA if args.llama else ()):
        llamas.append(llama(label, o))
        print(json.dumps(llamas[-1]), flush=True)
    meta = environment(duration=args.duration)
    out = Path(args.out)
    write(out.name, {"meta": meta, "rows": rows, "edge": edge, "large": larges, "llama3_54d": llamas},
          report(rows, meta, edge, llamas, larges), folder=out.parent)
    print(Path(args.out + ".md").read_text())


if __name__ == "__main__":
    main()
