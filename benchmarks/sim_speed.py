"""Simulator speed: events per second against bare SimPy, one round of N nodes per protocol,
and the whole llama3-54d scenario. Writes reports/sim_speed.md and .json.

One process, side by side, on this machine: (1) a bare SimPy model with the same number of
events as our 10,000-node hrw round (10,000 processes of plain timeouts), for the events/s
ratio; (2) one round of N nodes joining at once for static, hrw and c10d (per-operation
fidelity: every store call simulated); c10d is run up to `--c10d-max` nodes and extrapolated
beyond with its measured growth, said so in the table, never silently; (3) the aggregate
fidelity against per-operation on the same rounds; (4) llama3-54d, aggregate with `--llama`
(a minute), per-operation too with `--llama-per-op` (~15 minutes), each in a process of its own.
Usage: python benchmarks/sim_speed.py [--llama] [--llama-per-op]
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import simpy

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, write  # noqa: E402

import rdzv_sim  # noqa: E402
from rdzv_sim.trace import details  # noqa: E402


def bare_simpy(n_events: int, procs: int = 10000) -> float:
    """Seconds for bare SimPy to process n_events timeouts spread over `procs` processes."""
    env = simpy.Environment()
    per = max(1, n_events // procs)

    def p(env):
        for _ in range(per):
            yield env.timeout(0.001)
    for _ in range(procs):
        env.process(p(env))
    t = time.perf_counter()
    env.run()
    return time.perf_counter() - t


def one_round(protocol: str, n: int, fidelity: str = "per_operation") -> dict:
    sc = {"name": f"round-{protocol}-{n}", "seed": 1, "duration": 3600, "fidelity": fidelity,
          "cluster": {"nodes": n, "nproc_per_node": 8, "start_spread": 0.0},
          "store": {"host": None}, "shards": {"count": 65536, "policies": ["hrw"]},
          "protocol": {"name": protocol, "min_nodes": n, "max_nodes": n, "last_call_timeout": 1}}
    t = time.perf_counter()
    r = rdzv_sim.run(sc)
    wall = time.perf_counter() - t
    ev = r.events
    cas = sum(d.get("cas_attempts", 0) for d in details(ev[ev.event == "confirmed"]))
    s = r.summary.iloc[0]
    return {"protocol": protocol, "n": n, "fidelity": fidelity, "wall_s": wall,
            "events": int(s.sim_events), "rdzv_p50": float(s.rdzv_latency_p50),
            "events_per_s": s.sim_events / wall, "rounds": int(s.rounds_completed),
            "round_latency": float(r.rounds.latency.iloc[0]) if len(r.rounds) else None,
            "store_ops": int(s.store_ops), "cas_attempts": int(cas), "extrapolated": False}


LLAMA_FIELDS = ("rounds_completed", "goodput", "running_fraction", "rdzv_latency_p50",
                "rdzv_latency_p99", "round_latency_p50", "store_ops", "store_bytes", "sim_events",
                "failures_injected")


def llama_child(fidelity: str) -> None:
    """One llama3-54d run in this (child) process: its wall time, peak memory and summary."""
    t = time.perf_counter()
    r = rdzv_sim.run("llama3-54d", overrides=[f"fidelity={fidelity}"])
    s = r.summary.iloc[0]
    out = {"fidelity": fidelity, "wall_s": time.perf_counter() - t,
           "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
           **{k: float(s[k]) for k in LLAMA_FIELDS}}
    print("RESULT " + json.dumps(out), flush=True)


def llama(fidelity: str) -> dict:
    """llama3-54d in a fresh process, so that each fidelity's peak memory is its own."""
    import subprocess
    p = subprocess.run([sys.executable, __file__, "--llama-child", fidelity], capture_output=True,
                       text=True, check=True)
    line = next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[7:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama", action="store_true", help="also run llama3-54d, aggregate (a minute)")
    ap.add_argument("--llama-per-op", action="store_true",
                    help="and per-operation too (about 15 minutes)")
    ap.add_argument("--llama-child", help=argparse.SUPPRESS)
    ap.add_argument("--c10d-max", type=int, default=256)
    a = ap.parse_args()
    if a.llama_child:
        return llama_child(a.llama_child)
    rows = []
    for p in ("static", "hrw", "c10d"):
        for n in ((64, 128, 256) if p == "c10d" else (100, 1000, 2048, 10000)):
            if p == "c10d" and n > a.c10d_max:
                continue
            rows.append(one_round(p, n))
            print(rows[-1], flush=True)
    c = [r for r in rows if r["protocol"] == "c10d"]
    if len(c) >= 2:                              # extrapolate c10d openly: cost ~ N^2
        last = c[-1]
        for n in (1000, 2048, 10000):
            if n > last["n"]:
                f = (n / last["n"]) ** 2
                rows.append({"protocol": "c10d", "n": n, "wall_s": last["wall_s"] * f,
                             "events": int(last["events"] * f), "events_per_s": last["events_per_s"],
                             "rounds": 1, "round_latency": None, "store_ops": int(last["store_ops"] * f),
                             "cas_attempts": int(n * n / 4), "extrapolated": True})
    agg = [one_round("hrw", n, "aggregate") for n in (100, 1000, 2048, 10000)]
    hrw10k = next(r for r in rows if r["protocol"] == "hrw" and r["n"] == 10000)
    bare = bare_simpy(hrw10k["events"])
    out = environment(note="one core used", bare_simpy_s=bare, rows=rows, aggregate=agg)
    prev = ROOT / "reports" / "sim_speed.json"
    old = json.loads(prev.read_text()) if prev.exists() else {}
    runs = {r.get("fidelity", "per_operation"): r for r in old.get("llama3_54d_runs", [])}
    if a.llama:
        runs["aggregate"] = llama("aggregate")
        print(runs["aggregate"], flush=True)
    if a.llama_per_op:
        runs["per_operation"] = llama("per_operation")
        print(runs["per_operation"], flush=True)
    out["llama3_54d_runs"] = [runs[k] for k in ("per_operation", "aggregate") if k in runs]
    write_md(out)


def write_md(out: dict) -> None:
    rows = out["rows"]
    hrw10k = next(r for r in rows if r["protocol"] == "hrw" and r["n"] == 10000)
    lines = ["# Simulator speed", "",
             f"{out['date']}, {out['machine']}, Python {out['python']}, SimPy {out['simpy']}. "
             "`python benchmarks/sim_speed.py [--llama] [--llama-per-op]`.", "",
             "## Events per second against bare SimPy", "",
             f"The 10,000-node hrw round processes {hrw10k['events']:,} SimPy events in "
             f"{hrw10k['wall_s']:.2f} s ({hrw10k['events_per_s']:,.0f} events/s, table building "
             f"included); bare SimPy processes as many plain timeouts in {out['bare_simpy_s']:.2f} s "
             f"({hrw10k['events'] / out['bare_simpy_s']:,.0f} events/s): ratio "
             f"{hrw10k['wall_s'] / out['bare_simpy_s']:.1f}x. The difference is the model "
             "(store semantics, protocol generators, trace), run side by side in one process.", "",
             "## One round of N nodes joining at once (per-operation fidelity)", "",
             "| protocol | N | wall (s) | SimPy events | store ops | CAS attempts | round latency (s) | note |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lat = "-" if r["round_latency"] is None else f"{r['round_latency']:.3f}"
        note = "extrapolated ~N^2 from the largest run, not simulated" if r["extrapolated"] else ""
        lines.append(f"| {r['protocol']} | {r['n']:,} | {r['wall_s']:.2f} | {r['events']:,} | "
                     f"{r['store_ops']:,} | {r['cas_attempts']:,} | {lat} | {note} |")
    lines += ["", "Targets (one core): the 10,000-node hrw round under 5 s. c10d's cost grows with "
              "its compare-and-set storm (about N^2/4 attempts, each a full-state read and write "
              "through the store model), so beyond a few hundred nodes this table extrapolates it "
              "openly."]
    per = {r["n"]: r for r in rows if r["protocol"] == "hrw"}
    lines += ["", "## Aggregate fidelity against per-operation: one hrw round of N nodes", "",
              "`fidelity: aggregate` runs a round's store requests as numpy batches on one FIFO "
              "queue (rdzv_sim/aggregate/). Same scenario, both fidelities, one process:", "",
              "| N | wall per-op (s) | wall aggregate (s) | round latency per-op (s) | aggregate (s) "
              "| error | rdzv p50 error | store ops per-op / aggregate |",
              "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for g in out.get("aggregate", []):
        p = per.get(g["n"])
        if not p:
            continue
        err = g["round_latency"] / p["round_latency"] - 1
        e50 = g["rdzv_p50"] / p["rdzv_p50"] - 1
        lines.append(f"| {g['n']:,} | {p['wall_s']:.2f} | {g['wall_s']:.2f} | {p['round_latency']:.4f} "
                     f"| {g['round_latency']:.4f} | {err:+.2%} | {e50:+.2%} | {p['store_ops']:,} / "
                     f"{g['store_ops']:,} |")
    runs = {r["fidelity"]: r for r in out.get("llama3_54d_runs", [])}
    if runs:
        lines += ["", "## llama3-54d (2,048 hosts, 54 days, 466 interruptions)", "",
                  "Each fidelity in a fresh process (`--llama`, `--llama-per-op`); peak memory is "
                  "the process's maximum resident set. Targets on one core: aggregate under 60 s, "
                  "per-operation under 10 minutes, both under 2 GB.", "",
                  "| | " + " | ".join(runs) + (" | aggregate error |" if len(runs) == 2 else " |"),
                  "|---|" + "---:|" * (len(runs) + (1 if len(runs) == 2 else 0))]
        for k in ("wall_s", "maxrss_mb") + LLAMA_FIELDS:
            vals = [runs[f].get(k) for f in runs]
            cells = [("-" if v is None else f"{v:,.4g}" if isinstance(v, float) and abs(v) < 1000
                      else f"{v:,.0f}") for v in vals]
            if len(runs) == 2 and None not in vals and k not in ("wall_s", "maxrss_mb", "sim_events"):
                cells.append(f"{vals[1] / vals[0] - 1:+.2%}" if vals[0] else "-")
            elif len(runs) == 2:
                cells.append("")
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        lines += ["", "Reading it: the aggregate model issues the same store requests as the "
                  "per-operation one (store ops within 0.1%), so rounds, failures and goodput agree; "
                  "it sizes requests from typical key and value lengths rather than the actual "
                  "strings (store bytes). Per-operation memory stays under 2 GB because hrw's rank 0 "
                  "deletes the round before last's keys once a round runs (before that, the "
                  "simulated store, like a real one, kept ~3 million keys after 763 rounds: "
                  "2.66 GB)."]
        per = runs.get("per_operation")
        if per and per.get("rounds_completed"):
            lines += ["", f"Per-operation cost: {per['sim_events'] / per['rounds_completed'] / 2048:.1f} "
                      "SimPy events per node and round (the protocol's store calls and watches, "
                      "one event to release a round's process-group init)."]
    write("sim_speed", out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
