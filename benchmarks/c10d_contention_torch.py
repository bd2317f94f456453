"""Count compare-and-set attempts of torch's own c10d rendezvous (DynamicRendezvousHandler).

N handlers (one thread each, one TCPStore client each) join one round at once against a real
TCPStore server; a counting wrapper around each node's backend store counts every store call.
Writes reports/c10d_contention_torch.json. Usage: python benchmarks/c10d_contention_torch.py 8 32 128
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")

import torch.distributed as dist  # noqa: E402
from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend  # noqa: E402
from torch.distributed.elastic.rendezvous.dynamic_rendezvous import (  # noqa: E402
    DynamicRendezvousHandler, RendezvousTimeout)


class CountingStore:
    """Forwards to a real store and counts calls by name (shared counter, thread-safe)."""

    def __init__(self, store, counts, lock):
        self._store, self._counts, self._lock = store, counts, lock

    def __getattr__(self, name):
        fn = getattr(self._store, name)

        def call(*a, **k):
            with self._lock:
                self._counts[name] = self._counts.get(name, 0) + 1
            return fn(*a, **k)
        return call


def measure(n: int, port: int) -> dict:
    server = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=60), use_libuv=True)
    counts, lock = {}, threading.Lock()
    results, errors = [None] * n, []
    handlers = []
    for i in range(n):
        client = dist.TCPStore("127.0.0.1", server.port, is_master=False,
                               timeout=timedelta(seconds=60), use_libuv=True)
        backend = C10dRendezvousBackend(CountingStore(client, counts, lock), f"run{n}")
        handlers.append(DynamicRendezvousHandler.from_backend(
            run_id=f"run{n}", store=client, backend=backend, min_nodes=n, max_nodes=n,
            local_addr=f"127.0.0.{i + 2}", timeout=RendezvousTimeout(join=timedelta(seconds=120))))
    init_cas = counts.get("compare_set", 0)          # one sentinel CAS per backend

    def run(i):
        try:
            info = handlers[i].next_rendezvous()
            results[i] = (info.rank, info.world_size)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
    t0 = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    for h in handlers:
        h._stop_heartbeats()
    state_bytes = len(server.get(f"torch.rendezvous.run{n}"))
    ranks = sorted(r[0] for r in results if r)
    return {"n": n, "compare_set_total": counts.get("compare_set", 0),
            "compare_set_join": counts.get("compare_set", 0) - init_cas,
            "compare_set_init": init_cas, "get": counts.get("get", 0), "wall_s": wall,
            "state_bytes_base64": state_bytes, "ranks_ok": ranks == list(range(n)), "errors": errors}


if __name__ == "__main__":
    ns = [int(x) for x in sys.argv[1:]] or [8, 32, 128]
    out = []
    for i, n in enumerate(ns):
        r = measure(n, 29700 + i)
        print(json.dumps(r))
        out.append(r)
    path = Path(__file__).resolve().parents[1] / "reports" / "c10d_contention_torch.json"
    path.write_text(json.dumps({"torch": __import__("torch").__version__, "threads": True,
                                "date": time.strftime("%Y-%m-%d"), "runs": out}, indent=1) + "\n")
