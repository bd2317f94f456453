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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")
JOIN_TIMEOUT = 40


def torch_run(n: int, ka: float, port: int) -> dict:
    from datetime import timedelta
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import (DynamicRendezvousHandler,
                                                                         RendezvousTimeout)
    sys.path.insert(0, str(ROOT / "research"))
    from c10d_contention_torch import CountingStore
    server = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=60), use_libuv=True)
    counts, lock = {}, threading.Lock()
    res, errs, hs = [None] * n, [], []
    for i in range(n):
        c = dist.TCPStore("127.0.0.1", server.port, is_master=False, timeout=timedelta(seconds=60),
                          use_libuv=True)
        b = C10dRendezvousBackend(CountingStore(c, counts, lock), f"r{n}")
        hs.append(DynamicRendezvousHandler.from_backend(
            run_id=f"r{n}", store=c, backend=b, min_nodes=n, max_nodes=n, local_addr=f"127.0.0.{i + 2}",
            timeout=RendezvousTimeout(join=timedelta(seconds=JOIN_TIMEOUT)), keep_alive_interval=ka))
    c0 = counts.get("compare_set", 0)

    def run(i):
        try:
            res[i] = hs[i].next_rendezvous().rank
        except Exception as e:  # noqa: BLE001
            errs.append(type(e).__name__)
    t0 = time.perf_counter()
    th = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.perf_counter() - t0
    for h in hs:
        h._stop_heartbeats()
    return {"completed": all(r is not None for r in res), "seconds": wall,
            "cas": counts.get("compare_set", 0) - c0, "errors": sorted(set(errs))}


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
