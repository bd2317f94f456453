"""Does the c10d join storm stall once it outlasts the keep-alive interval? torch's own
handlers (one thread and one TCPStore connection each, one real server) against the model
configured as that setup (one shared core, torch's client CPU per attempt), side by side.

Participants of an open round keep alive by compare-and-set (torch's `_RendezvousJoinOp`); each
such write fails everyone else's pending attempt. When the writes a round needs per keep-alive
interval exceed what one blob can take, the join never completes. Writes reports/c10d_keepalive.json.
Usage: python research/c10d_keepalive.py [N:KEEPALIVE ...]   (default 64:5 64:0.05 128:5 128:0.2)
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")
JOIN_TIMEOUT = 40


def torch_run(n: int, ka: float, port: int) -> dict:
    sys.path.insert(0, str(ROOT / "research"))
    from c10d_contention_torch import measure
    m = measure(n, port, keep_alive=ka, join_timeout=JOIN_TIMEOUT)
    return {"completed": m["ranks_ok"] and not m["errors"], "seconds": m["wall_s"],
            "cas": m["compare_set_join"], "errors": sorted(set(m["errors"]))}


def model_run(n: int, ka: float) -> dict:
    import rdzv_sim
    sc = {"name": f"keepalive-{n}", "seed": 1, "duration": JOIN_TIMEOUT + 20,
          "cluster": {"nodes": n, "nproc_per_node": 1, "start_spread": 0,
                      "cpu": {"shared_cores": 1, "base": 0.0016, "per_byte": 0.0, "cold_start": 0.026}},
          "store": {"host": None}, "shards": {"count": 0},
          "protocol": {"name": "c10d", "min_nodes": n, "max_nodes": n, "last_call_timeout": 1,
                       "keep_alive_interval": ka, "join_timeout": JOIN_TIMEOUT}}
    r = rdzv_sim.run(sc)
    done = len(r.rounds) > 0
    return {"completed": done, "seconds": float(r.rounds.end.iloc[0]) if done else None,
            "store_ops": int(r.summary.store_ops.iloc[0])}


def main():
    cases = [(int(a.split(":")[0]), float(a.split(":")[1])) for a in sys.argv[1:]] or \
        [(64, 5.0), (64, 0.05), (128, 5.0), (128, 0.2)]
    rows = []
    for i, (n, ka) in enumerate(cases):
        rows.append({"n": n, "keep_alive_s": ka, "join_timeout_s": JOIN_TIMEOUT,
                     "torch": torch_run(n, ka, 29800 + i), "model": model_run(n, ka)})
        print(json.dumps(rows[-1]), flush=True)
    import torch
    (ROOT / "reports" / "c10d_keepalive.json").write_text(json.dumps(
        {"torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M"),
         "setup": "threads of one process, one TCPStore connection each, loopback", "rows": rows},
        indent=1) + "\n")


if __name__ == "__main__":
    main()
