"""What recovery in place needs from the GPU stack, measured where it runs: torch's
`shrink_group` (NCCL's ncclCommShrink) and the abort of a hung NCCL collective.

    python -m real_backend.tools.recovery_check [--ranks N]     (also run by gpu_check)

With at least two GPUs, N ranks (one per GPU) init NCCL; the last rank stays out of an
all-reduce, and the others (1) abort their process group from another thread after 1 s and
time how long the hung all-reduce takes to return, then (2) init again and time
`shrink_group([N - 1])` and an all-reduce in the shrunk group. Without two GPUs it says what it
could not run, and checks the CPU's answer: gloo cannot shrink (a TypeError).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import threading
import time
from datetime import timedelta


def _rank(i: int, n: int, ports: list, q) -> None:
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(ports[0]))
    out = {"rank": i}
    try:
        torch.cuda.set_device(i)
        dist.init_process_group("nccl", rank=i, world_size=n, timeout=timedelta(seconds=60),
                                device_id=torch.device("cuda", i))
        x = torch.ones(1, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        if i != n - 1:                                 # (1) a hung all-reduce, aborted
            pg = dist.group.WORLD
            threading.Timer(1.0, lambda: pg.abort()).start()
            t = time.monotonic()
            try:
                dist.all_reduce(x)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - the abort's error is the point
                out["abort_error"] = type(e).__name__
            out["abort_s"] = time.monotonic() - t - 1.0
        else:
            time.sleep(3.0)
        dist.destroy_process_group()
        os.environ["MASTER_PORT"] = str(ports[1])      # (2) a fresh group, shrunk
        dist.init_process_group("nccl", rank=i, world_size=n, timeout=timedelta(seconds=60),
                                device_id=torch.device("cuda", i))
        dist.all_reduce(torch.ones(1, device="cuda"))
        torch.cuda.synchronize()
        if i != n - 1:
            t = time.monotonic()
            g = dist.shrink_group([n - 1])
            out["shrink_s"] = time.monotonic() - t
            y = torch.ones(1, device="cuda")
            dist.all_reduce(y, group=g)
            torch.cuda.synchronize()
            out["shrunk_size"], out["shrunk_sum"] = g.size(), float(y.item())
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {str(e)[:200]}"
    q.put(out)


def _gloo_rank(i: int, ports: list, q) -> None:
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(ports[0]))
    dist.init_process_group("gloo", rank=i, world_size=2, timeout=timedelta(seconds=30))
    if i == 0:
        try:
            dist.shrink_group([1])
            q.put("gloo shrank (unexpected)")
        except (TypeError, ValueError, RuntimeError) as e:
            q.put(f"{type(e).__name__}: {e}")
    dist.destroy_process_group()


def _spawn(target, n: int, *args):
    """`n` spawned ranks running target(i, *args, ports, queue) with two free ports (a group,
    and the fresh one after it): (processes, queue)."""
    from real_backend.ports import free_ports
    ports = free_ports(2)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=target, args=(i, *args, ports, q)) for i in range(n)]
    for p in procs:
        p.start()
    return procs, q


def _reap(procs) -> None:
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.kill()


def gloo_cannot_shrink() -> str:
    """On the CPU: gloo's answer to shrink_group, from two real ranks."""
    procs, q = _spawn(_gloo_rank, 2)
    try:
        return q.get(timeout=60)
    finally:
        _reap(procs)


def main(argv=None) -> int:
    import torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=None)
    a = ap.parse_args(argv)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    n = a.ranks or gpus
    if gpus < 2 or n < 2:
        print(f"recovery check: {gpus} GPU(s): NCCL abort and shrink_group need two; not measured")
        print(f"  gloo and shrink_group: {gloo_cannot_shrink()}")
        return 0
    procs, q = _spawn(_rank, n, n)
    try:
        rows = sorted((q.get(timeout=300) for _ in procs), key=lambda r: r["rank"])
    finally:
        _reap(procs)
    print(f"recovery check: NCCL on {n} GPUs")
    print(f"{'rank':>4} {'abort s':>8} {'shrink s':>9} {'shrunk':>6}  error")
    bad = 0
    for r in rows:
        bad += "error" in r
        print(f"{r['rank']:>4} {r.get('abort_s', float('nan')):8.3f} {r.get('shrink_s', float('nan')):9.3f} "
              f"{r.get('shrunk_size', '-'):>6}  {r.get('error', '')}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
