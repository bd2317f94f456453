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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, write  # noqa: E402
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


def simulate_c10d(n: int, base: float, per_byte: float, keep_alive: float, join_timeout: float,
                  seed: int = 1) -> dict:
    """torch's handlers as the many-clients run has them: N nodes released at once, min = max
    = N, on this machine's cores shared, each encode or decode costing `base + per_byte x bytes`."""
    from rdzv_sim.result import build
    from rdzv_sim.scenario import load
    from rdzv_sim.sim.simulation import Simulation
    sc = load({"name": f"many-c10d-{n}", "seed": seed, "duration": join_timeout + 20,
               "include": [str(ROOT / "reports" / "calibration.yaml")],
               "cluster": {"nodes": n, "nproc_per_node": 1, "start_spread": 0.0,
                           "cpu": {"shared_cores": os.cpu_count() or 1, "base": base,
                                   "per_byte": per_byte, "cold_start": 0.0}},
               "agent": {"process_start": 0.0}, "store": {"host": None}, "shards": {"count": 0},
               "protocol": {"name": "c10d", "min_nodes": n, "max_nodes": n, "last_call_timeout": 1,
                            "keep_alive_interval": keep_alive, "join_timeout": join_timeout}})
    sim = Simulation(sc)
    stats = sim.run(None)
    r = build(sc, sim.trace, stats, *sim.store_work())
    done = len(r.rounds) > 0
    cas = sim.protocol.attempts()
    return {"seed": seed, "completed": done, "wall_s": float(r.rounds.end.iloc[0]) if done else None,
            "cas": cas, "gets": int(r.summary.store_ops.iloc[0]) - cas - n}


def c10d_rows(ns, procs: int, keep_alive: float, join_timeout: float, repeat: int,
              seeds: int, saved: dict | None = None) -> list[dict]:
    """Per N: `repeat` torch runs (or those `saved` by an earlier run, N -> runs), then the
    model with their mean client CPU, `seeds` seeds."""
    from real_backend.calibrate import c10d_client_per_byte
    rows = []
    for n in ns:
        runs = list((saved or {}).get(n, []))
        for _ in range(0 if runs else repeat):
            r = run(n, procs, protocol="c10d", keep_alive=keep_alive, join_timeout=join_timeout)
            r["works"] = 2 * r["cas"] + r["gets"]    # a CAS encodes and decodes; a read decodes
            runs.append(r)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)
        per_byte = min(c10d_client_per_byte(n, reps=10) for _ in range(3))   # least disturbed
        base = max(0.0, sum(r["node_cpu_s"] - per_byte * r["coded_bytes"] for r in runs)
                   / max(sum(r["works"] for r in runs), 1))
        model = [simulate_c10d(n, base, per_byte, keep_alive, join_timeout, s + 1) for s in range(seeds)]
        print({"n": n, "base_s": base, "per_byte_s": per_byte, "model": model}, flush=True)
        rows.append({"n": n, "torch": runs, "per_byte_s": per_byte, "base_s": base, "model": model})
    return rows


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _outcomes(runs) -> str:
    return " / ".join(f"{r['wall_s']:.1f} s, {r['cas']:,}" if r["completed"] else
                      f"timed out, {r['cas']:,}" for r in runs)


def c10d_report(rows, meta, keep_alive: float, join_timeout: float) -> None:
    write("many_clients_c10d", {**meta, "keep_alive_s": keep_alive, "join_timeout_s": join_timeout,
                                "rows": rows})
    lines = ["# torch's c10d handlers, many clients on one real TCPStore, against the model", "",
             f"{meta['date']}, {meta['machine']}, Python {meta['python']}, torch {meta['torch']}, "
             f"libuv store in a process of its own; {meta['procs']} client processes, each running "
             f"N/{meta['procs']} of torch's own `DynamicRendezvousHandler`s as threads, every handler "
             "on a TCPStore connection of its own (made, with its backend's sentinel "
             "compare-and-set, before the start). All released at once; min = max = N, "
             f"keep-alive {keep_alive:g} s, join timeout {join_timeout:g} s. "
             "`python benchmarks/many_clients.py --protocol c10d` (`--remodel`: the same torch "
             "runs, the model again" + (f"; last done {meta['modelled']}" if "modelled" in meta else "")
             + ").", "",
             "The model is configured as that setup: N agents on this machine's cores "
             "(`cluster.cpu.shared_cores`, the `fair` scheduler), this host's calibrated store, "
             "and the client CPU measured in the same torch runs: per byte from torch's own "
             "pickle + base64 of its state at N (`c10d_client_per_byte`), per encode or decode "
             "the rest of the CPU of the handlers' own threads (their heartbeat threads and the "
             "processes' other work left out) spread over their encodes and decodes. Nothing is "
             "fitted to the counts or the times.", "",
             "| N | torch, each run: time to form, CAS | torch: formed, mean CAS | client CPU per encode/decode | model, each seed: time, CAS | model: formed, mean CAS | CAS model / torch | time model / torch | within 25% |",
             "|---:|---|---|---:|---|---|---:|---:|---|"]
    for row in rows:
        runs, model = row["torch"], row["model"]
        t_cas, m_cas = _mean([r["cas"] for r in runs]), _mean([m["cas"] for m in model])
        t_done = sum(r["completed"] for r in runs)
        m_done = sum(m["completed"] for m in model)
        t_time = _mean([r["wall_s"] for r in runs if r["completed"]])
        m_time = _mean([m["wall_s"] for m in model if m["completed"]])
        ratio = m_cas / t_cas if t_cas else float("nan")
        tratio = m_time / t_time if t_time and m_time else None
        same = (t_done == len(runs)) == (m_done == len(model)) and (t_done == 0) == (m_done == 0)
        ok = same and abs(ratio - 1) <= 0.25 and (tratio is None or abs(tratio - 1) <= 0.25)
        lines.append(
            f"| {row['n']} | {_outcomes(runs)} | {t_done} of {len(runs)}, {t_cas:,.0f} | "
            f"{1e3 * row['base_s']:.2f} ms + {1e9 * row['per_byte_s']:.0f} ns/byte | "
            f"{_outcomes(model)} | {m_done} of {len(model)}, {m_cas:,.0f} | {ratio:.2f} | "
            f"{'-' if tratio is None else f'{tratio:.2f}'} | {'yes' if ok else 'no'} |")
    lines += ["", "*within 25%*: the same outcome (formed or timed out), the mean CAS attempts "
              "within 25% of torch's and, where both formed, the mean time to form too. A run "
              "that timed out counts the attempts made until the join timeout."]
    (ROOT / "reports" / "many_clients_c10d.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="*")
    ap.add_argument("--procs", type=int, default=None, help="client processes (hrw: 8, c10d: 4)")
    ap.add_argument("--protocol", choices=("hrw", "c10d"), default="hrw")
    ap.add_argument("--keep-alive", type=float, default=5.0, help="c10d: keep_alive_interval (s)")
    ap.add_argument("--join-timeout", type=float, default=60.0, help="c10d: join timeout (s)")
    ap.add_argument("--repeat", type=int, default=3, help="c10d: torch runs per N")
    ap.add_argument("--seeds", type=int, default=3, help="c10d: model seeds per N")
    ap.add_argument("--remodel", action="store_true",
                    help="c10d: keep the torch runs of reports/many_clients_c10d.json, redo the model")
    a = ap.parse_args()
    if a.protocol == "c10d":
        procs = a.procs or 4
        meta = environment(procs=procs)
        saved = None
        if a.remodel:
            old = json.loads((ROOT / "reports" / "many_clients_c10d.json").read_text())
            saved = {row["n"]: row["torch"] for row in old["rows"]}
            meta = {k: old[k] for k in ("machine", "date", "procs", "torch", "python")}
            meta["modelled"] = time.strftime("%Y-%m-%d %H:%M")
            a.keep_alive, a.join_timeout = old["keep_alive_s"], old["join_timeout_s"]
        rows = c10d_rows(a.n or ([*saved] if saved else [64, 128, 256, 512]), procs, a.keep_alive,
                         a.join_timeout, a.repeat, a.seeds, saved)
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
    meta = environment(procs=a.procs)
    write("many_clients", {**meta, "rows": rows})
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
