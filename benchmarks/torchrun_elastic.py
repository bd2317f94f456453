"""Real torchrun (hrw vs torch's c10d) against the simulator: the kill-and-grow story.

For each backend, `repeats` real runs of benchmarks/elastic_demo.py (three agents, kill one,
grow back) give the time to recover (kill -> first training step at world size 2) and to grow
(new agent started -> first step at world size 3). The bundled scenario `torchrun-elastic` is
then simulated with the same event times (the kill and the new agent at the moments they
happened for real) and with the two costs the simulator cannot know, taken from the real `hrw`
runs' traces: worker start (rank assigned -> first step) and agent start (process started ->
first rendezvous). Writes reports/torchrun_elastic.md and .json.
Usage: python benchmarks/torchrun_elastic.py [--repeats N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, write  # noqa: E402
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

import rdzv_sim  # noqa: E402
from elastic_demo import run_demo  # noqa: E402

STEP_TIME = 0.05


def _trace(run: dict, name: str) -> list[dict]:
    p = Path(run["dir"]) / f"trace-{name}.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def costs(run: dict) -> tuple[list[float], list[float]]:
    """Worker start (rank assigned -> that node's first step) and agent start, from one hrw run."""
    worker, agent = [], []
    for name, t0 in run["started"].items():
        tr = _trace(run, name)
        starts = [e["wall"] for e in tr if e["event"] == "rendezvous_start"]
        if starts:
            agent.append(starts[0] - t0)
        host = "C" if name == "D" else name          # D runs on C's address, logs as itself
        mine = sorted(x["t"] for x in run["steps"] if x["host"] in (name, host) and x["rank"] >= 0)
        for e in tr:
            if e["event"] == "rank_assigned":
                after = [t for t in mine if t > e["wall"]]
                if after and after[0] - e["wall"] < 30:
                    worker.append(after[0] - e["wall"])
    return worker, agent


def simulate(protocol: str, run: dict, worker_start: float, process_start: float) -> dict:
    crash, restart = run["t_kill"] - run["t_start"], run["t_join"] - run["t_start"]
    r = rdzv_sim.run("torchrun-elastic", [f"protocol.name={protocol}", f"faults.0.at={crash:.3f}",
                                          f"faults.1.at={restart:.3f}", f"agent.worker_start={worker_start:.3f}",
                                          f"agent.process_start={process_start:.3f}",
                                          f"duration={restart + 40:.0f}"])
    ev = r.events
    ws = ev[ev.event == "workers_started"]
    w2 = ws[(ws.world_size == 2) & (ws.t > crash)].t
    w3 = ws[(ws.world_size == 3) & (ws.t > restart)].t
    return {"recover_s": float(w2.min() - crash) if len(w2) else None,
            "grow_s": float(w3.min() - restart) if len(w3) else None,
            "rounds": int(len(r.rounds))}


def err(sim, real):
    return None if sim is None else (sim - real) / real


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    runs = {b: [] for b in ("hrw", "c10d")}
    for i in range(a.repeats):
        for b in runs:
            r = run_demo(b, tempfile.mkdtemp(prefix=f"elastic-{b}-"), step_time=STEP_TIME)
            print(f"{b} #{i}: recover {r['recover_s']:.2f} s, grow {r['grow_s']:.2f} s", flush=True)
            runs[b].append(r)
    w, p = [], []
    for r in runs["hrw"]:
        ww, pp = costs(r)
        w += ww
        p += pp
    worker_start, process_start = statistics.median(w), statistics.median(p)
    rows = []
    for b, rs in runs.items():
        sims = [simulate(b, r, worker_start, process_start) for r in rs]
        for key in ("recover_s", "grow_s"):
            real = statistics.median(r[key] for r in rs)
            sim = statistics.median(s[key] for s in sims if s[key] is not None) if any(
                s[key] is not None for s in sims) else None
            rows.append({"backend": b, "metric": key, "real_median": real,
                         "real_all": [round(r[key], 2) for r in rs], "sim_median": sim,
                         "rel_err": err(sim, real)})
    out = environment(repeats=a.repeats, worker_start_s=worker_start, process_start_s=process_start,
                      rows=rows)
    lines = ["# torchrun elastic demo: hrw vs torch's c10d, real and simulated", "",
             f"{out['date']}, {out['machine']}, torch 2.13 CPU (gloo), {a.repeats} real runs per "
             "backend, run one after the other in one process (`python benchmarks/torchrun_elastic.py`).",
             "", "Three torchrun agents (`--nnodes=2:3`, `--monitor-interval=0.5`, one "
             "`--rdzv-conf` for both: `join_timeout=60,last_call_timeout=2,close_timeout=10,"
             "is_host=false,read_timeout=10`) train `real_backend/tools/train_demo.py`; node C is "
             "SIGKILLed (agent and worker); a new agent starts on C's address once the survivors "
             "train at world size 2. *recover*: kill -> first step at world size 2. *grow*: new "
             "agent started -> first step at world size 3. c10d runs with "
             "`TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1` (without it torch 2.13 cannot grow back).", "",
             f"Simulated: bundled `torchrun-elastic` with the real runs' event times; worker start "
             f"{worker_start:.2f} s and agent start {process_start:.2f} s are the medians measured in "
             "the real hrw runs (rank assigned -> first step; process start -> first rendezvous).", "",
             "| backend | metric | real (median) | real (each run) | simulated | error |",
             "|---|---|---:|---|---:|---:|"]
    for r in rows:
        sim = "-" if r["sim_median"] is None else f"{r['sim_median']:.2f} s"
        e = "-" if r["rel_err"] is None else f"{100 * r['rel_err']:+.0f}%"
        lines.append(f"| {r['backend']} | {r['metric'][:-2]} | {r['real_median']:.2f} s | "
                     f"{', '.join(map(str, r['real_all']))} | {sim} | {e} |")
    lines += ["", "Why c10d recovers slower: the killed node stays a participant of the complete "
              "round until its keep-alive expires (3 x 5 s), so the survivors' rejoin waits for "
              "dead-node removal; hrw starts a fresh round at once (the survivor that rejoins "
              "first ends the old round)."]
    write("torchrun_elastic", out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
