"""SIGTERM to one torchrun agent, for real: does the job go on, and how soon?

A graceful exit (Slurm cancelling a step, Kubernetes deleting a pod) sends the agent SIGTERM.
Reports against older torch (pytorch/pytorch#67742) say the agent then shuts the rendezvous
down and the healthy peers die with RendezvousClosedError. For `hrw` and torch's `c10d`, three
agents train `train_demo` (`--nnodes=2:3`); agent C gets SIGTERM; we time the first step at
world size 2, check that A and B still train 5 s later, then stop the job and read the exit
codes. Writes reports/sigterm.md and .json.
Usage: python benchmarks/sigterm.py [--repeats N]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

from real_backend.tools.elastic_demo import ADDRS, Demo, _steps  # noqa: E402


def one(backend: str) -> dict:
    d = Demo(backend, tempfile.mkdtemp(prefix=f"sigterm-{backend}-"), timeout=90)
    try:
        d.start_store()
        for name, addr in zip("ABC", ADDRS):
            d.start_agent(name, addr)
        d.until("10 steps at world 3", lambda s: sum(x["world"] == 3 and x["rank"] == 0 for x in s) >= 10)
        t = time.time()
        d.agents["C"].send_signal(signal.SIGTERM)
        rc_c = d.agents["C"].wait(timeout=60)
        out = {"backend": backend, "sigterm_rc": rc_c, "agent_exit_s": time.time() - t}
        out["recover_s"] = None
        deadline = time.time() + 90                  # C is gone on purpose: wait here, not in until()
        while time.time() < deadline and any(d.agents[n].poll() is None for n in "AB"):
            w2 = [x["t"] for x in _steps(d.log) if x["world"] == 2 and x["rank"] == 0 and x["t"] > t]
            if len(w2) >= 5:
                out["recover_s"] = min(w2) - t
                break
            time.sleep(0.1)
        time.sleep(5)
        later = [x for x in _steps(d.log) if x["t"] > time.time() - 2]
        out["still_training"] = bool(later)
        out["peers_alive"] = all(d.agents[n].poll() is None for n in "AB")
        d.stop.touch()
        rcs = {}
        for n in "AB":
            try:
                rcs[n] = d.agents[n].wait(timeout=60)
            except subprocess.TimeoutExpired:
                rcs[n] = None
        out["exit_codes"] = rcs
        out["closed_error"] = any("RendezvousClosedError" in (d.dir / f"agent-{n}.log").read_text(errors="replace")
                                  for n in "AB")
        return out
    finally:
        d.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    rows = []
    for i in range(a.repeats):
        for b in ("hrw", "c10d"):
            rows.append(one(b))
            print(json.dumps(rows[-1]), flush=True)
    import torch
    out = {"machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores",
           "date": time.strftime("%Y-%m-%d %H:%M"), "python": platform.python_version(),
           "torch": torch.__version__, "repeats": a.repeats, "rows": rows}
    (ROOT / "reports" / "sigterm.json").write_text(json.dumps(out, indent=1) + "\n")
    L = ["# SIGTERM to one torchrun agent: does the job go on?", "",
         f"{out['date']}, {out['machine']}, Python {out['python']}, torch {out['torch']} (gloo). "
         f"`python benchmarks/sigterm.py --repeats {a.repeats}`: for each backend, three agents "
         "(`--nnodes=2:3`, `--monitor-interval=0.5`, the elastic demo's `--rdzv-conf`) train "
         "`train_demo`; agent C gets SIGTERM once the job trains at world size 3.", "",
         "| backend | C's exit code | back at world 2 after (s, median) | each run | A and B train on | A and B exit codes after the stop | RendezvousClosedError |",
         "|---|---|---:|---|---|---|---|"]
    for b in ("hrw", "c10d"):
        rs = [r for r in rows if r["backend"] == b]
        rec = [r["recover_s"] for r in rs if r["recover_s"] is not None]
        med = f"{statistics.median(rec):.2f}" if rec else "never"
        each = ", ".join("-" if r["recover_s"] is None else f"{r['recover_s']:.2f}" for r in rs)
        L.append(f"| {b} | {', '.join(str(r['sigterm_rc']) for r in rs)} | {med} | {each} | "
                 f"{'yes' if all(r['still_training'] and r['peers_alive'] for r in rs) else 'no'} | "
                 f"{'; '.join(str(r['exit_codes']) for r in rs)} | "
                 f"{'yes' if any(r['closed_error'] for r in rs) else 'no'} |")
    L += ["", "torch 2.13's `launch_agent` (torch/distributed/launcher/api.py) does not call the "
          "rendezvous handler's `shutdown()` when the agent dies of a signal, so a SIGTERM no "
          "longer closes a c10d rendezvous for everyone; what still does is an agent leaving by any "
          "other exception (out of restarts, a rendezvous timeout), which calls `shutdown()` and "
          "with c10d closes the run. hrw's `shutdown()` never closes it (a job ends when its "
          "workers finish)."]
    (ROOT / "reports" / "sigterm.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
