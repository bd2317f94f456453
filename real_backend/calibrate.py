"""`rdzv-sim calibrate`: measure this host's real TCPStore and agent start-up, and write them
as a scenario fragment that scenarios `include:`.

Store: the round-trip time of get/set/add/compare_set over loopback for payloads of 16 B to
64 KB (median of many calls, each after a short idle gap, as an agent's calls come), fitted
as rtt = 2 * link + base + per_byte * bytes. The split of the fixed part between the network (link) and the server (base) cannot be seen from one host:
we give the link a quarter of it (documented in the output). Start-up: the time from spawning
a node process to its first store operation (Python, torch and rdzv_sim imports). FirstOf: what
the real runtime spends starting a wait's branches (threads, a second connection), beyond the
store call itself. Client CPU per byte: torch's own pickle + base64 of its c10d state, encoded
and decoded. Replicated store: what a local 3-member etcd cluster adds to each request
(`store.commit_time`), where etcd is installed.
"""
from __future__ import annotations

import multiprocessing as mp
import statistics
import time
from datetime import timedelta

import numpy as np


def _first_op(port, t_spawn, q):
    import torch.distributed as dist  # noqa: F401 - the import is what we time
    import rdzv_sim.protocols.agent  # noqa: F401
    s = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                      timeout=timedelta(seconds=30), use_libuv=True)
    s.set("started", b"1")
    q.put(time.monotonic() - t_spawn)


def _timed(rt, op, reps: int, gap: float) -> float:
    """Median seconds of `op`, each call after `gap` idle: an agent's store calls follow waits,
    and on a VM a thread woken from idle answers far slower than one kept busy, which is what
    a rendezvous sees."""
    ts = []
    for _ in range(reps):
        if gap:
            time.sleep(gap)
        t0 = time.perf_counter()
        rt.execute(op)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def c10d_client_per_byte(nodes: int = 1000, reps: int = 5) -> float:
    """Seconds per byte of torch's own encoding and decoding of its c10d state (pickle + base64
    of `_RendezvousState` with `nodes` participants): the client CPU of one compare-and-set
    attempt, which the simulator charges per agent (`cluster.cpu.per_byte`, per encode or decode)."""
    import base64
    import pickle
    from datetime import datetime, timezone
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import _NodeDesc, _RendezvousState
    st = _RendezvousState()
    now = datetime.now(timezone.utc)
    for i in range(nodes):
        d = _NodeDesc(f"node{i:05d}.cluster", 100000 + i, 0)
        st.participants[d] = i
        st.last_heartbeats[d] = now
    blob = base64.b64encode(pickle.dumps(st))
    t = time.perf_counter()
    for _ in range(reps):
        pickle.loads(base64.b64decode(base64.b64encode(pickle.dumps(st))))
    return (time.perf_counter() - t) / reps / 2 / len(blob)


def etcd_commit(reps: int = 40, gap: float = 0.01, tcpstore_rtt: float = 0.0) -> float | None:
    """What a replicated store adds to a request: the median round trip of set/get/add on a
    local 3-member etcd cluster (through the real runtime and the etcd client), less TCPStore's
    (`store.commit_time`). None where etcd is not installed."""
    from .etcd.cluster import EtcdCluster, available
    if available():
        return None
    from rdzv_sim import ops as O
    from .etcd.store import EtcdStore
    from .runtime import RealRuntime
    with EtcdCluster(3) as c:
        rt = RealRuntime("etcd", 0, lambda t, op: None, op_timeout=30,
                         connect=lambda: EtcdStore(c.endpoints, timeout=30))
        rt.execute(O.Set("k", "x" * 16))
        ts = [_timed(rt, op, reps, gap) for op in (O.Get("k"), O.Add("n", 1),
                                                    O.CompareSet("k", "x" * 16, "x" * 16))]
        rt.close()
    return max(0.0, statistics.median(ts) - tcpstore_rtt)


def measure(reps: int = 60, gap: float = 0.01) -> dict:
    import torch.distributed as dist
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=30), use_libuv=True)
    from rdzv_sim import ops as O
    from .runtime import RealRuntime
    # measured through the real runtime, so its own overhead (deadline threads) is included
    rt = RealRuntime("127.0.0.1", server.port, lambda t, op: None, op_timeout=30)
    sizes = [16, 1024, 16384, 65536]
    rows = []
    for size in sizes:
        payload = "x" * size
        rt.execute(O.Set(f"k{size}", payload))
        for name, op in (("get", O.Get(f"k{size}")), ("set", O.Set(f"s{size}", payload)),
                         ("compare_set", O.CompareSet(f"k{size}", payload, payload))):
            rows.append((name, size, _timed(rt, op, reps, gap)))
    rows.append(("add", 8, _timed(rt, O.Add("counter", 1), reps, gap)))
    # a FirstOf whose store branch answers at once: what starting its branches costs
    get16 = next(t for op, s, t in rows if op == "get" and s == 16)
    first_of = max(0.0, _timed(rt, O.FirstOf(O.Get("k16"), O.Sleep(10.0)), reps, gap) - get16)
    get = [(s, t) for op, s, t in rows if op == "get"]
    per_byte, fixed = np.polyfit([s for s, _ in get], [t for _, t in get], 1)
    ctx = mp.get_context("spawn")                   # three at once, as a launcher starts them
    q = ctx.Queue()
    procs = [ctx.Process(target=_first_op, args=(server.port, time.monotonic(), q)) for _ in range(3)]
    for p in procs:
        p.start()
    starts = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    fixed = max(fixed, 1e-6)
    return {"ops": rows, "fixed_s": float(fixed), "per_byte_s": float(max(per_byte, 0.0)),
            "process_start_s": float(statistics.median(starts)), "first_of_s": float(first_of),
            "client_per_byte_s": c10d_client_per_byte(),
            "etcd_commit_s": etcd_commit(tcpstore_rtt=get16)}


def fragment(m: dict) -> dict:
    """The scenario fragment: what scenarios include."""
    return {"cluster": {"topology": {"link_latency": m["fixed_s"] / 4, "jitter": 0.2},
                        "cpu": {"first_of": round(m.get("first_of_s", 0.0), 6),
                                **({"per_byte": float(f"{m['client_per_byte_s']:.3g}")}
                                   if "client_per_byte_s" in m else {})}},
            "store": {"service_base": m["fixed_s"] / 2, "service_per_byte": m["per_byte_s"],
                      **({"commit_time": round(m["etcd_commit_s"], 6)}
                         if m.get("etcd_commit_s") is not None else {})},
            "agent": {"process_start": round(m["process_start_s"], 3)}}
