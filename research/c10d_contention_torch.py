"""Count compare-and-set attempts of torch's own c10d rendezvous (DynamicRendezvousHandler).

N handlers (one thread each, one TCPStore client each) join one round at once against a real
TCPStore server; a counting wrapper around each node's backend store counts every store call.
Writes reports/c10d_contention_torch.json (threads of one process) or, with --fork or
--processes (spawned), reports/c10d_contention_torch_processes.json, one row per run.
Usage: python benchmarks/c10d_contention_torch.py [--fork|--processes] [--clock] [--extra-cpu MS]
       [--repeat K] 8 32 128
"""
from __future__ import annotations

import argparse
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
    """Forwards to a real store and counts calls by name (shared counter, thread-safe).

    Once armed, it notes the calling thread's CPU time at the next call: the CPU a join
    spent before its first store call (torch's first `_record`, cold in a new process).
    Only then: a CPU-clock read on every call is a syscall that lets the kernel preempt
    mid-attempt, and it changes the counts several-fold (reports/c10d_contention.md)."""

    def __init__(self, store, counts, lock, clock_every_call=False, burn=0, log=False):
        self._store, self._counts, self._lock = store, counts, lock
        self.armed, self.first_cpu, self.clock = False, None, clock_every_call
        self.burn = burn                  # loop iterations of extra CPU before each CAS
        self.log = [] if log else None    # (call, start, end, pid) by perf_counter: no syscall

    def __getattr__(self, name):
        fn = getattr(self._store, name)

        def call(*a, **k):
            if self.armed:
                self.armed, self.first_cpu = False, time.thread_time()
            elif self.clock:
                time.thread_time()
            if self.burn and name == "compare_set":
                for _ in range(self.burn):    # pure Python: no system call, no preemption point
                    pass
            with self._lock:
                self._counts[name] = self._counts.get(name, 0) + 1
            if self.log is None:
                return fn(*a, **k)
            t0 = time.perf_counter()
            r = fn(*a, **k)
            self.log.append((name, t0, time.perf_counter(), os.getpid()))
            return r
        return call


def measure(n: int, port: int, keep_alive: float = 5.0, join_timeout: float = 120.0) -> dict:
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
            local_addr=f"127.0.0.{i + 2}", timeout=RendezvousTimeout(join=timedelta(seconds=join_timeout)),
            keep_alive_interval=keep_alive))
    init_cas = counts.get("compare_set", 0)          # one sentinel CAS per backend

    def run(i):
        try:
            info = handlers[i].next_rendezvous()
            results[i] = (info.rank, info.world_size)
        except Exception as e:  # noqa: BLE001
            errors.append(type(e).__name__)
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


def _process_node(i, n, port, q, clock=False, burn=0, log=False, ka_attempts=3):
    """One node in a process of its own: join when every node is ready (a barrier), count."""
    import random
    random.seed()          # forked children would share the parent's draws of torch's 0-0.3 s delay
    counts, lock = {}, threading.Lock()
    client = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                           timeout=timedelta(seconds=120), use_libuv=True)
    counting = CountingStore(client, counts, lock, clock, burn, log)
    backend = C10dRendezvousBackend(counting, f"prun{n}")
    handler = DynamicRendezvousHandler.from_backend(
        run_id=f"prun{n}", store=client, backend=backend, min_nodes=n, max_nodes=n,
        local_addr=f"127.0.0.{i + 2}", timeout=RendezvousTimeout(join=timedelta(seconds=120)),
        keep_alive_max_attempt=ka_attempts)
    client.add("bench/ready", 1)
    client.wait(["bench/go"])
    t0, c0 = time.perf_counter(), time.thread_time()
    counting.armed = True
    try:
        info = handler.next_rendezvous()
        res = (info.rank, info.world_size)
    except Exception as e:  # noqa: BLE001
        res = repr(e)
    q.put({"i": i, "result": res, "counts": counts, "wall_s": time.perf_counter() - t0,
           "cpu_s": time.thread_time() - c0,
           "cold_cpu_s": (counting.first_cpu or c0) - c0, "log": counting.log})
    handler._stop_heartbeats()


def burn_iterations(ms: float) -> int:
    """Loop iterations that take `ms` of CPU here (timed once, in this process)."""
    k = 200_000
    t = time.perf_counter()
    for _ in range(k):
        pass
    return int(k * ms * 1e-3 / (time.perf_counter() - t)) if ms > 0 else 0


def setup_name(method: str, clock: bool = False, extra_ms: float = 0.0, ka_attempts: int = 3) -> str:
    """How a run's setup is named in the report: fork, spawn, fork+clock, fork+1ms, fork+ka100..."""
    return (method + ("+clock" if clock else "") + (f"+{extra_ms:g}ms" if extra_ms else "")
            + (f"+ka{ka_attempts}" if ka_attempts != 3 else ""))


def measure_processes(n: int, method: str = "spawn", clock: bool = False, extra_ms: float = 0.0,
                      log: bool = False, ka_attempts: int = 3) -> dict:
    """One OS process per node (torch imported before the start line), released at once.

    `spawn` imports torch in every process (~190 MB private each: N = 64 at most in 24 GB);
    `fork` starts the nodes from this process before its server thread exists, so they share
    its pages (N = 128 fits)."""
    import multiprocessing as mp
    import socket
    with socket.socket() as sk:                       # a free port, for a server made after the fork
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    ctx = mp.get_context(method)
    q = ctx.Queue()
    burn = burn_iterations(extra_ms)
    procs = [ctx.Process(target=_process_node, args=(i, n, port, q, clock, burn, log, ka_attempts))
             for i in range(n)]
    for p in procs:
        p.start()
    server = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=300), use_libuv=True)
    while int(server.add("bench/ready", 0)) < n:
        time.sleep(0.2)
    server.set("bench/go", b"1")
    rows = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    cas = sum(r["counts"].get("compare_set", 0) for r in rows)
    ok = sorted(r["result"][0] for r in rows if isinstance(r["result"], tuple)) == list(range(n))
    out = {"n": n, "start": setup_name(method, clock, extra_ms, ka_attempts), "compare_set_total": cas,
            "get": sum(r["counts"].get("get", 0) for r in rows),
            "client_cpu_s": sum(r["cpu_s"] for r in rows),
            "cold_cpu_s": sum(r["cold_cpu_s"] for r in rows),
            "wall_s": max(r["wall_s"] for r in rows), "ranks_ok": ok,
            "errors": [r["result"] for r in rows if not isinstance(r["result"], tuple)]}
    if log:
        out["logs"] = [r["log"] for r in rows]
    return out


def main():
    ap = argparse.ArgumentParser(description="torch's own c10d handlers joining at once, counted")
    ap.add_argument("ns", nargs="*", type=int, default=[8, 32, 128], help="numbers of nodes")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--fork", action="store_true", help="one forked process per node")
    how.add_argument("--processes", action="store_true", help="one spawned process per node")
    ap.add_argument("--clock", action="store_true",
                    help="read the CPU clock on every store call (see CountingStore)")
    ap.add_argument("--extra-cpu", type=float, default=0.0, metavar="MS",
                    help="burn MS of CPU before each CAS")
    ap.add_argument("--repeat", type=int, default=1, metavar="K", help="runs per N")
    ap.add_argument("--keep-alive-attempts", type=int, default=3, metavar="K",
                    help="keep_alive_max_attempt: missed beats before a node looks dead")
    a = ap.parse_args()
    processes, method = a.fork or a.processes, "fork" if a.fork else "spawn"
    name = "c10d_contention_torch_processes.json" if processes else "c10d_contention_torch.json"
    path = Path(__file__).resolve().parents[1] / "reports" / name
    # runs are kept per (N, setup): new runs replace that setup's old ones, not the others
    setup = setup_name(method, a.clock, a.extra_cpu, a.keep_alive_attempts) if processes else None
    old = json.loads(path.read_text())["runs"] if path.exists() else []
    out = [r for r in old if not (r["n"] in a.ns and r.get("start", "spawn" if processes else None) == setup)]
    for i, n in enumerate(a.ns):
        for _ in range(a.repeat):
            r = (measure_processes(n, method, a.clock, a.extra_cpu, ka_attempts=a.keep_alive_attempts)
                 if processes else measure(n, 29700 + i))
            print(json.dumps(r), flush=True)
            out.append(r)
    out.sort(key=lambda r: (r["n"], str(r.get("start"))))
    path.write_text(json.dumps({"torch": __import__("torch").__version__, "threads": not processes,
                                "date": time.strftime("%Y-%m-%d"), "runs": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
