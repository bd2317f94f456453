"""c10d, hrw and static at the scale jobs run: 256 to 10,000 hosts, first rendezvous, one host
crash and the re-rendezvous, every row simulated (per-operation fidelity), each run in a process
of its own for its wall time and peak memory. Writes reports/scale_c10d.json, .md and a figure.

The scenario is `c10d-2048-crash` resized: torchrun's defaults (last call 30 s, join timeout
600 s, keep-alive 5 s x 3, monitor 0.1 s), agents starting over 60 s, host 7 crashing at 300 s,
NCCL's 600 s collective timeout. `static` needs its world whole: the crashed host comes back
when its peers notice (900 s). A run that passes `--budget` seconds of wall time is shown as
such, never dropped or extrapolated.
Usage: python benchmarks/scale_c10d.py [--budget 900] [--sizes 256 1024 ...] [--sweep]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = (256, 1024, 2048, 4096, 10000)
PROTOCOLS = ("c10d", "hrw", "static")
CRASH_AT, NOTICE = 300.0, 600.0
# what people change (torchrun's --rdzv-conf and --monitor-interval), at 2,048 hosts
SWEEP = (("protocol.keep_alive_interval", (5, 30, 60, 120)),
         ("protocol.last_call_timeout", (1, 30, 120)),
         ("protocol.join_timeout", (600, 1800)),
         ("protocol.keep_alive_max_attempt", (3, 10)),
         ("agent.monitor_interval", (0.1, 5)))


def overrides(protocol: str, n: int) -> list[str]:
    o = [f"cluster.nodes={n}", f"protocol.name={protocol}", f"protocol.max_nodes={n}",
         f"cluster.topology.racks={max(1, n // 32)}"]
    if protocol == "static":
        o += [f"protocol.min_nodes={n}", "protocol.join_timeout=600",
              f'faults=[{{"kind": "crash", "node": 7, "at": {CRASH_AT}}}, '
              f'{{"kind": "restart", "node": 7, "at": {CRASH_AT + NOTICE}}}]']
    else:
        o += [f"protocol.min_nodes={max(1, n - max(1, n // 40))}"]
    if protocol == "hrw":
        o += ["protocol.last_call_timeout=30", "protocol.join_timeout=600"]
    return o


def child(protocol: str, n: int, extra: list[str]) -> dict:
    """One run in this process: what the report needs, measured from the tables."""
    import rdzv_sim
    from rdzv_sim.trace import details
    t = time.perf_counter()
    r = rdzv_sim.run("c10d-2048-crash", overrides=overrides(protocol, n) + extra)
    wall = time.perf_counter() - t
    ev, rounds, s = r.events, r.rounds, r.summary.iloc[0]
    out = {"protocol": protocol, "n": n, "extra": extra, "wall_s": wall,
           "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
           "rounds": int(len(rounds)), "agents_exited": int(s.agents_exited),
           "store_ops": int(s.store_ops), "store_bytes": int(s.store_bytes),
           "sim_events": int(s.sim_events)}
    load = r.store_load
    out["busiest_second_ops"] = int(load["ops"].max()) if len(load) else 0
    out["busiest_second_bytes"] = int(load["bytes"].max()) if len(load) else 0
    conf = ev[ev.event == "confirmed"]
    cas = {int(k): sum(d.get("cas_attempts", 0) for d in details(g)) for k, g in conf.groupby("round")}
    out["first_round_s"] = float(rounds.end.iloc[0]) if len(rounds) else None
    out["first_round_cas"] = cas.get(0)
    left = ev[(ev.event == "round_left") & (ev.t > CRASH_AT)]
    after = rounds[rounds.start > CRASH_AT] if len(rounds) else rounds
    if len(left):
        t_notice = float(left.t.min())
        out["detect_s"] = t_notice - CRASH_AT
        if len(after):
            rnd = int(after["round"].iloc[0])
            out["rendezvous_s"] = float(after.end.iloc[0]) - t_notice
            ws = ev[(ev.event == "workers_started") & (ev["round"] == rnd)]
            out["worker_start_s"] = float(ws.t.max()) - float(after.end.iloc[0])
            out["crash_to_training_s"] = float(ws.t.max()) - CRASH_AT
            out["reform_nodes"] = int(after.nnodes.iloc[0])
            out["reform_cas"] = cas.get(rnd)
    timeouts = ev[ev.event == "rendezvous_timeout"]
    out["rendezvous_timeouts"] = int(len(timeouts))
    return out


def run_one(protocol: str, n: int, extra: list[str], budget: float) -> dict:
    cmd = [sys.executable, __file__, "--child", protocol, str(n), json.dumps(extra)]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return {"protocol": protocol, "n": n, "extra": extra, "over_budget": True,
                "wall_s": time.perf_counter() - t}
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        return {"protocol": protocol, "n": n, "extra": extra, "failed": p.stderr[-2000:],
                "wall_s": time.perf_counter() - t}
    return json.loads(line[7:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=float, default=900.0, help="wall seconds per run")
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    ap.add_argument("--protocols", nargs="*", default=list(PROTOCOLS))
    ap.add_argument("--sweep", action="store_true", help="also the settings sweep at 2,048 hosts")
    a = ap.parse_args()
    if a.child:
        res = child(a.child[0], int(a.child[1]), json.loads(a.child[2]))
        print("RESULT " + json.dumps(res), flush=True)
        return
    path = ROOT / "reports" / "scale_c10d.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    rows = []
    for p in a.protocols:
        for n in a.sizes:
            rows.append(run_one(p, n, [], a.budget))
            print(json.dumps(rows[-1]), flush=True)
    sweep = old.get("sweep", [])
    if a.sweep:
        sweep = []
        for key, values in SWEEP:
            for v in values:
                sweep.append(run_one("c10d", 2048, [f"{key}={v}"], a.budget))
                print(json.dumps(sweep[-1]), flush=True)
    import numpy, pandas, simpy
    kept = [r for r in old.get("rows", []) if (r["protocol"], r["n"]) not in {(x["protocol"], x["n"]) for x in rows}]
    out = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, one core per run",
           "date": time.strftime("%Y-%m-%d %H:%M"), "python": platform.python_version(),
           "versions": {"simpy": simpy.__version__, "numpy": numpy.__version__, "pandas": pandas.__version__},
           "budget_s": a.budget, "rows": sorted(kept + rows, key=lambda r: (PROTOCOLS.index(r["protocol"]), r["n"])),
           "sweep": sweep}
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
