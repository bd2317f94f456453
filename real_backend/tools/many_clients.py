"""Many clients on one real store: a few processes, each running many nodes as threads, every
node on TCPStore connections of its own, so the store sees 256 to 1,024 clients on one machine.

One round with min = max = N (it closes the moment the N-th node joins): this project's `hrw`
on the real runtime, or torch's own c10d (`DynamicRendezvousHandler`, counting its
compare-and-sets, reads and the state bytes its clients encode and decode). Every node
connects before the start signal, so what is timed is the rendezvous, not the handshakes.
It reports the round's wall time (start -> last rank known), store operations and their rate,
and the CPU the store process and the client processes used over that time. A store busy
close to one core (TCPStore's libuv loop is one thread) limited the rate; otherwise the clients
(Python threads under the GIL, on the cores left) did. Usage:
    python -m real_backend.tools.many_clients 256 512 1024 [--procs 4] [--protocol c10d]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import threading
import time

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def _release(conn, node, indices: list[int], go: threading.Event, results: list, wait: float):
    """A client process's end: one thread per node, ready to the parent, all released at the
    shared start instant, their rows sent back; then exit at once."""
    threads = [threading.Thread(target=node, args=(i,), daemon=True) for i in indices]
    for t in threads:
        t.start()
    conn.send(("ready", os.getpid()))
    start_at = conn.recv()                        # a shared monotonic instant
    time.sleep(max(0.0, start_at - time.monotonic()))
    go.set()
    for t in threads:
        t.join(wait)
    conn.send(("done", results))
    conn.close()
    os._exit(0)                                   # abandoned store threads must not block exit


def _client_proc(conn, host: str, port: int, indices: list[int], n: int, run_id: str):
    """One client process: one thread per node; reports (index, t0, t1, rank, digest, ops)."""
    from rdzv_sim.protocols.base import NodeInfo
    from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings

    from ..runtime import RealRuntime

    proto = HrwProtocol(HrwSettings(run_id=run_id, min_nodes=n, max_nodes=n, join_timeout=300,
                                    confirm_timeout=120, last_call_timeout=1, close_grace=30,
                                    hole_grace=0.2))
    go = threading.Event()
    results, lock = [], threading.Lock()
    runtimes = {}
    for i in indices:
        rt = RealRuntime(host, port, lambda *a: None, op_timeout=120.0)
        rt.prepare(spares=2)                      # connect now, not inside the timed round
        runtimes[i] = rt

    def node(i):
        rt = runtimes[i]
        go.wait()
        t0 = time.monotonic()
        try:
            res = rt.drive(proto.rendezvous(NodeInfo(f"n{i:05d}", f"10.0.{i // 256}.{i % 256}", 1, i)))
            out = (i, t0, time.monotonic(), res.rank, res.digest, rt.ops, "")
        except Exception as e:  # noqa: BLE001 - reported to the parent
            out = (i, t0, time.monotonic(), -1, "", rt.ops, repr(e)[:200])
        with lock:
            results.append(out)

    _release(conn, node, indices, go, results, 300)


class CountingStore:
    """A node's TCPStore client as torch's c10d backend sees it, counting what it asks:
    compare-and-sets, reads, and the bytes of the state that the client encodes or decodes
    (a CAS: the desired value and the reply; a read: the reply)."""

    def __init__(self, store):
        self._store, self.cas, self.gets, self.coded = store, 0, 0, 0
        self.counting = False

    def compare_set(self, key, expected, desired):
        out = self._store.compare_set(key, expected, desired)
        if self.counting:
            self.cas += 1
            self.coded += len(desired) + len(out)
        return out

    def get(self, key):
        out = self._store.get(key)
        if self.counting:
            self.gets += 1
            self.coded += len(out)
        return out

    def __getattr__(self, name):
        return getattr(self._store, name)


def _c10d_client_proc(conn, host: str, port: int, indices: list[int], n: int, run_id: str,
                      keep_alive: float, join_timeout: float):
    """One client process running torch's own DynamicRendezvousHandler, one thread and one
    TCPStore connection per node; reports a row per node, as `_client_proc` does."""
    os.environ.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")   # no store per rank 0
    from datetime import timedelta
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import (
        DynamicRendezvousHandler, RendezvousTimeout)
    go = threading.Event()
    results, lock = [], threading.Lock()
    handlers, stores = {}, {}
    for i in indices:
        client = dist.TCPStore(host, port, is_master=False, wait_for_workers=False,
                               timeout=timedelta(seconds=join_timeout + 60), use_libuv=True)
        stores[i] = CountingStore(client)
        backend = C10dRendezvousBackend(stores[i], run_id)          # its sentinel CAS: not counted
        handlers[i] = DynamicRendezvousHandler.from_backend(
            run_id=run_id, store=client, backend=backend, min_nodes=n, max_nodes=n,
            local_addr=f"10.0.{i // 256}.{i % 256}",
            timeout=RendezvousTimeout(join=timedelta(seconds=join_timeout)),
            keep_alive_interval=keep_alive)
        stores[i].counting = True

    def node(i):
        go.wait()
        t0, c0 = time.monotonic(), time.thread_time()
        try:
            rank, err = handlers[i].next_rendezvous().rank, ""
        except Exception as e:  # noqa: BLE001 - reported to the parent
            rank, err = -1, type(e).__name__
        t1, c = time.monotonic(), stores[i]
        # _client_proc's row, then the counts and this node's own thread CPU (decode, decide, encode)
        out = (i, t0, t1, rank, "", c.cas + c.gets, err,
               {"cas": c.cas, "gets": c.gets, "coded_bytes": c.coded, "node_cpu_s": time.thread_time() - c0})
        with lock:
            results.append(out)

    _release(conn, node, indices, go, results, join_timeout + 120)


def run(n: int, procs: int = 4, host: str = "127.0.0.1", protocol: str = "hrw",
        keep_alive: float = 5.0, join_timeout: float = 60.0) -> dict:
    """One round of `n` nodes on one real store: `protocol` "hrw" (this project's, on the real
    runtime) or "c10d" (torch's own DynamicRendezvousHandler, min = max = n)."""
    from ..node import store_main
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    store = ctx.Process(target=store_main, args=(child, host), daemon=True)
    store.start()
    port = parent.recv()
    clients = []
    try:
        for p in range(procs):
            a, b = ctx.Pipe()
            args = (b, host, port, list(range(p, n, procs)), n, f"many-{n}")
            proc = (ctx.Process(target=_client_proc, args=args, daemon=True) if protocol == "hrw" else
                    ctx.Process(target=_c10d_client_proc, args=(*args, keep_alive, join_timeout),
                                daemon=True))
            proc.start()
            clients.append((proc, a))
        pids = [a.recv()[1] for _, a in clients]
        start_at = time.monotonic() + 0.5
        cpu0 = {pid: cpu_seconds(pid) for pid in [store.pid, *pids]}
        for _, a in clients:
            a.send(start_at)
        results = []
        for _, a in clients:
            if not a.poll(400 + join_timeout):
                raise TimeoutError(f"N={n}: a client process did not finish within "
                                   f"{400 + join_timeout:g} s")
            results += a.recv()[1]
        cpu1 = {pid: cpu_seconds(pid) for pid in [store.pid, *pids]}
    finally:
        for proc, _ in clients:
            proc.kill()
        store.kill()
    errors = [r[6] for r in results if r[6]]
    t0, t1 = min(r[1] for r in results), max(r[2] for r in results)
    wall = t1 - t0
    ops = sum(r[5] for r in results)
    store_cpu = cpu1[store.pid] - cpu0[store.pid]
    client_cpu = sum(cpu1[p] - cpu0[p] for p in pids)
    cores = os.cpu_count() or 1
    store_util = store_cpu / wall
    bound = "store" if store_util > 0.8 else "clients"
    out = {"n": n, "procs": procs, "protocol": protocol, "wall_s": wall, "ops": ops, "ops_per_s": ops / wall,
            "store_cpu_util": store_util, "client_cpu_util": client_cpu / wall, "cores": cores,
            "limited_by": bound, "ranks_ok": sorted(r[3] for r in results) == list(range(n)),
            "one_digest": len({r[4] for r in results}) == 1, "errors": errors[:3],
            "latency_p50": sorted(r[2] - r[1] for r in results)[len(results) // 2]}
    if protocol == "c10d":
        out.update({k: sum(r[7][k] for r in results) for k in results[0][7]},
                   completed=not errors and out["ranks_ok"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="Many real clients on one TCPStore (one round).")
    ap.add_argument("n", type=int, nargs="+")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--protocol", choices=("hrw", "c10d"), default="hrw",
                    help="hrw: this project's protocol; c10d: torch's own DynamicRendezvousHandler")
    ap.add_argument("--keep-alive", type=float, default=5.0, help="c10d: keep_alive_interval (s)")
    ap.add_argument("--join-timeout", type=float, default=60.0, help="c10d: the join timeout (s)")
    a = ap.parse_args(argv)
    for n in a.n:
        r = run(n, a.procs, protocol=a.protocol, keep_alive=a.keep_alive, join_timeout=a.join_timeout)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)


if __name__ == "__main__":
    main()
