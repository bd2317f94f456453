"""Many real clients on one TCPStore (one round of N nodes), against the simulator.

Runs real_backend.tools.many_clients (a few processes, each running many nodes as threads on
connections of their own) and simulates the same round with this host's calibration
(reports/calibration.yaml):
- `hrw` (default): this project's protocol, N = 256, 512, 1,024; reports/many_clients.md, .json;
- `--protocol c10d`: torch's own DynamicRendezvousHandler, N = 64 to 512, against the c10d model
  configured as that setup (the machine's cores shared, the client CPU per encode and decode
  measured in the same run); reports/many_clients_c10d.md, .json.
Usage: python benchmarks/many_clients.py [--procs 8] [--protocol c10d] [N ...]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

import rdzv_sim  # noqa: E402
from real_backend.tools.many_clients import run  # noqa: E402


def simulate(n: int) -> dict:
    sc = {"name": f"many-{n}", "seed": 1, "duration": 60, "include": [str(ROOT / "reports" / "calibration.yaml")],
          "cluster": {"nodes": n, "nproc_per_node": 1, "start_spread": 0.0},
          "agent": {"process_start": 0.0},
          "store": {"host": None}, "shards": {"count": 0},
          "protocol": {"name": "hrw", "min_nodes": n, "max_nodes": n, "hole_grace": 0.2,
                       "close_grace": 30, "confirm_timeout": 120}}
    r = rdzv_sim.run(sc)
    ev = r.events
    ra = ev[ev.event == "rank_assigned"]
    return {"wall_s": float(ra.t.max()), "ops": int(r.rounds.store_ops.iloc[0])}


def simulate_c10d(n: int, base: float, per_byte: float, keep_alive: float, join_timeout: float) -> dict:
    """torch's handlers as the many-clients run has them: N nodes released at once, min = max
    = N, on this machine's cores shared, each encode or decode costing `base + per_byte x bytes`."""
    from rdzv_sim.result import build
    from rdzv_sim.scenario import load
    from rdzv_sim.sim.simulation import Simulation
    sc = load({"name": f"many-c10d-{n}", "seed": 1, "duration": join_timeout + 20,
               "include": [str(ROOT / "reports" / "calibration.yaml")],
               "cluster": {"nodes": n, "nproc_per_node": 1, "start_spread": 0.0,
                           "cpu": {"shared_cores": os.cpu_count() or 1, "base": base,
                                   "per_byte": per_byte, "cold_start": 0.0}},
               "agent": {"process_start": 0.0}, "store": {"host": None}, "shards": {"count": 0},
               "protocol": {"name": "c10d", "min_nodes": n, "max_nodes": n, "last_call_timeout": 1,
                            "keep_alive_interval": keep_alive, "join_timeout": join_timeout}})
    sim = Simulation(sc)
    stats = sim.run(None)
    r = build(sc, sim.trace, stats, sim.runtime.round_ops, sim.runtime.load, sim.runtime.load_bin)
    done = len(r.rounds) > 0
    cas = sim.protocol.attempts()
    return {"completed": done, "wall_s": float(r.rounds.end.iloc[0]) if done else None,
            "cas": cas, "gets": int(r.summary.store_ops.iloc[0]) - cas - n}


def c10d_rows(ns, procs: int, keep_alive: float, join_timeout: float) -> list[dict]:
    from real_backend.calibrate import c10d_client_per_byte
    rows = []
    for n in ns:
        r = run(n, procs, protocol="c10d", keep_alive=keep_alive, join_timeout=join_timeout)
        per_byte = c10d_client_per_byte(n)
        works = 2 * r["cas"] + r["gets"]            # a CAS encodes and decodes; a read decodes
        base = max(0.0, (r["node_cpu_s"] - per_byte * r["coded_bytes"]) / max(works, 1))
        m = simulate_c10d(n, base, per_byte, keep_alive, join_timeout)
        row = {**r, "per_byte_s": per_byte, "base_s": base, "model": m}
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
        rows.append(row)
    return rows


def _outcome(done: bool, secs, join_timeout: float) -> str:
    return f"formed in {secs:.1f} s" if done else f"timed out ({join_timeout:g} s)"


def c10d_report(rows, meta, keep_alive: float, join_timeout: float) -> None:
    (ROOT / "reports" / "many_clients_c10d.json").write_text(json.dumps(
        {**meta, "keep_alive_s": keep_alive, "join_timeout_s": join_timeout, "rows": rows}, indent=1))
    lines = ["# torch's c10d handlers, many clients on one real TCPStore, against the model", "",
             f"{meta['date']}, {meta['machine']}, torch {meta['torch']}, libuv store in a process of "
             f"its own; {meta['procs']} client processes, each running N/{meta['procs']} of torch's "
             "own `DynamicRendezvousHandler`s as threads, every handler on a TCPStore connection of "
             "its own (made, with its backend's sentinel compare-and-set, before the start). All "
             f"released at once; min = max = N, keep-alive {keep_alive:g} s, join timeout "
             f"{join_timeout:g} s. `python benchmarks/many_clients.py --protocol c10d`.", "",
             "The model is configured as that setup: N agents on this machine's cores "
             "(`cluster.cpu.shared_cores`, the `fair` scheduler), this host's calibrated store, "
             "and the client CPU measured in the same torch run: per byte from torch's own "
             "pickle + base64 of its state at N (`c10d_client_per_byte`), per encode or decode "
             "the rest of the CPU of the handlers' own threads (their heartbeat threads and "
             "the processes' other work left out) spread over their encodes and decodes. "
             "Nothing is fitted to the counts or the times.", "",
             "| N | torch | torch CAS | torch reads | client CPU per encode/decode | model | model CAS | model reads | CAS model / torch | time model / torch | within 25% |",
             "|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        m = r["model"]
        ratio = m["cas"] / r["cas"] if r["cas"] else float("nan")
        both_done = r["completed"] and m["completed"]
        tratio = m["wall_s"] / r["wall_s"] if both_done else None
        ok = (r["completed"] == m["completed"] and abs(ratio - 1) <= 0.25
              and (tratio is None or abs(tratio - 1) <= 0.25))
        lines.append(
            f"| {r['n']} | {_outcome(r['completed'], r['wall_s'], join_timeout)} | {r['cas']:,} | "
            f"{r['gets']:,} | {1e3 * r['base_s']:.2f} ms + {1e9 * r['per_byte_s']:.0f} ns/byte | "
            f"{_outcome(m['completed'], m['wall_s'], join_timeout)} | {m['cas']:,} | {m['gets']:,} | "
            f"{ratio:.2f} | {'-' if tratio is None else f'{tratio:.2f}'} | {'yes' if ok else 'no'} |")
    lines += ["", "*within 25%*: the same outcome, CAS attempts within 25% of torch's and, where "
              "both formed, the time to form too. A row that timed out compares the attempts "
              "made until the join timeout."]
    (ROOT / "reports" / "many_clients_c10d.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="*")
    ap.add_argument("--procs", type=int, default=None, help="client processes (hrw: 8, c10d: 4)")
    ap.add_argument("--protocol", choices=("hrw", "c10d"), default="hrw")
    ap.add_argument("--keep-alive", type=float, default=5.0, help="c10d: keep_alive_interval (s)")
    ap.add_argument("--join-timeout", type=float, default=60.0, help="c10d: join timeout (s)")
    a = ap.parse_args()
    if a.protocol == "c10d":
        import torch
        procs = a.procs or 4
        rows = c10d_rows(a.n or [64, 128, 256, 512], procs, a.keep_alive, a.join_timeout)
        meta = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
                "date": time.strftime("%Y-%m-%d %H:%M"), "procs": procs,
                "torch": torch.__version__, "python": platform.python_version()}
        c10d_report(rows, meta, a.keep_alive, a.join_timeout)
        return
    a.n, a.procs = a.n or [256, 512, 1024], a.procs or 8
    rows = []
    for n in a.n:
        r = run(n, a.procs)
        s = simulate(n)
        r["sim_wall_s"], r["sim_ops"] = s["wall_s"], s["ops"]
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)
        rows.append(r)
    meta = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
            "date": time.strftime("%Y-%m-%d %H:%M"), "procs": a.procs}
    (ROOT / "reports" / "many_clients.json").write_text(json.dumps({**meta, "rows": rows}, indent=1))
    lines = ["# Many clients on one real TCPStore", "",
             f"{meta['date']}, {meta['machine']}, torch 2.13 CPU, libuv store in a process of its "
             f"own; {a.procs} client processes, each running N/{a.procs} nodes as threads, every "
             "node on TCPStore connections of its own (made before the start). One `hrw` round, "
             "min = max = N, run side by side with the simulator (this host's "
             "`reports/calibration.yaml`). `python benchmarks/many_clients.py`.", "",
             "| N | real round (s) | simulated (s) | store ops | sim ops | ops/s | store CPU | clients CPU | limited by | ranks ok |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['wall_s']:.2f} | {r['sim_wall_s']:.3f} | {r['ops']} | {r['sim_ops']} | "
                     f"{r['ops_per_s']:.0f} | {100 * r['store_cpu_util']:.0f}% | "
                     f"{100 * r['client_cpu_util']:.0f}% of {r['cores']} cores | {r['limited_by']} | "
                     f"{r['ranks_ok'] and r['one_digest']} |")
    lines += ["", "*store CPU*: the store process's CPU time over the round's wall time (its libuv loop "
              "is one thread: near 100% would mean the store limits the rate). *clients CPU*: all "
              "client processes together. Here the clients (Python threads of the protocol and the "
              "runtime's deadline threads, on 2 cores) saturate the machine while the store is "
              "mostly idle: the rate is the clients', so the real store's limit lies above it.",
              "", "The simulator models the store's service time only, not the clients' CPU, so it "
              "predicts the round the store alone would allow; the gap is the clients' overhead.",
              "", "Found on the way: now and then a TCPStore client takes 5 s to construct (one takes "
              "half a millisecond): torch resolves the peer's name (getnameinfo), and on a "
              "machine whose DNS resolver does not answer that waits out the resolver's 5 s "
              "timeout. The runtime makes its connections one at a time and keeps them "
              "(`RealRuntime.prepare`)."]
    (ROOT / "reports" / "many_clients.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
