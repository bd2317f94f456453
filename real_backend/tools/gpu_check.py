"""Validate `static` and `hrw` for real with NCCL, one rank per GPU, and print a table.

    python -m real_backend.tools.gpu_check [--ranks N] [--timeout S]

Then `recovery_check`: NCCL's abort of a hung collective and `shrink_group`, with two GPUs.
On a machine without GPUs it runs the same check with gloo (2 ranks by default), so it can be
tried anywhere; on a one-GPU machine it is a smoke test at world size 1. It needs only torch,
numpy, xxhash, pydantic and the protocol modules (no pandas or simpy): each rank is a spawned
process running the protocol's generator over a real TCPStore.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from datetime import timedelta
from rdzv_sim.events import Event


def _rank(protocol: str, i: int, n: int, port: int, backend: str, q) -> None:
    from rdzv_sim.ops import Emit, StartWorkers
    from rdzv_sim.protocols import get
    from rdzv_sim.protocols.base import NodeInfo
    from ..runtime import RealRuntime
    from ..workers import GlooWorkers

    events = []
    rt = RealRuntime("127.0.0.1", port, lambda t, op: events.append((t, op)), op_timeout=20,
                     workers=GlooWorkers(f"gpu-{protocol}", 60.0, backend=backend))
    spec = get(protocol)
    quick = {"last_call_timeout": 0.5} if "last_call_timeout" in spec.settings.model_fields else {}
    proto = spec.make(spec.settings(run_id=f"gpu-{protocol}", min_nodes=n, max_nodes=n,
                                    join_timeout=120, **quick))
    node = NodeInfo(f"rank{i}", "127.0.0.1", 1, i)
    t0 = time.monotonic()
    try:
        res = rt.drive(proto.rendezvous(node))
        rdzv_s = time.monotonic() - t0
        rt.execute(StartWorkers(res.round, res.rank, res.nnodes, res.nnodes, res.master))
        pg = [op.detail for _, op in events if isinstance(op, Emit) and op.event == Event.PG_READY]
        failed = [op.detail for _, op in events if isinstance(op, Emit) and op.event == Event.PG_FAILED]
        rt.workers.stop()
        q.put({"protocol": protocol, "rank": res.rank, "world": res.nnodes, "rdzv_s": rdzv_s,
               **(pg[0] if pg else {"allreduce_ok": False, "error": (failed or [{}])[0].get("error")})})
    except Exception as e:  # noqa: BLE001
        q.put({"protocol": protocol, "rank": i, "error": repr(e)[:200], "allreduce_ok": False})


def check(protocol: str, n: int, backend: str, timeout: float) -> list[dict]:
    import torch.distributed as dist
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=timeout), use_libuv=True)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(protocol, i, n, server.port, backend, q)) for i in range(n)]
    for p in procs:
        p.start()
    rows = []
    for _ in procs:
        try:
            rows.append(q.get(timeout=timeout))
        except Exception:  # noqa: BLE001 - a rank hung
            rows.append({"protocol": protocol, "error": "no answer", "allreduce_ok": False})
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    return sorted(rows, key=lambda r: r.get("rank", -1))


def main(argv=None) -> int:
    import torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=180.0)
    args = ap.parse_args(argv)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    backend = "nccl" if gpus else "gloo"
    n = args.ranks or (gpus if gpus else 2)
    print(f"{'NCCL on %d GPU(s)' % gpus if gpus else 'no GPU: gloo on the CPU'}; {n} rank(s)")
    print(f"{'protocol':8} {'rank':>4} {'world':>5} {'rdzv s':>8} {'init s':>8} {'allreduce s':>11}  ok")
    bad = 0
    for protocol in ("static", "hrw"):
        for r in check(protocol, n, backend, args.timeout):
            ok = bool(r.get("allreduce_ok"))
            bad += not ok
            print(f"{r['protocol']:8} {r.get('rank', '?'):>4} {r.get('world', '?'):>5} "
                  f"{r.get('rdzv_s', float('nan')):8.3f} {r.get('init_s', float('nan')):8.3f} "
                  f"{r.get('allreduce_s', float('nan')):11.4f}  {ok}"
                  + (f"  {r['error']}" if r.get("error") else ""))
    from .recovery_check import main as recovery_check
    bad += recovery_check([])                  # NCCL abort and shrink_group (recovery in place)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
