"""A tiny elastic training script for torchrun: all-reduce SGD that checkpoints and resumes.

    torchrun ... -m real_backend.tools.train_demo --ckpt-dir DIR --step-log FILE [--steps N] [--step-time S]

Every rank fits the same vector to a target with gradients averaged by all-reduce (gloo on
CPU, NCCL where each rank has a GPU). Rank 0 checkpoints every `--ckpt-every` steps (write to
a temporary file, then rename, so a crash never leaves half a checkpoint); every rank resumes
from the newest one when torchrun restarts it, whatever the new world size. Each rank appends
one JSON line per step to `--step-log` (time, step, rank, world size, host, restart count,
local rank and local world size, and for rank 0 the newest checkpoint it has written), which is
what the elastic test and `benchmarks/torchrun_elastic.py` read. Training stops at `--steps`,
or early when the file `--stop-file` exists: rank 0 reads it and all ranks learn it through the
same all-reduce, so they stop at one step together.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from datetime import timedelta


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ckpt-dir", required=True, help="checkpoint folder (shared by the ranks)")
    ap.add_argument("--step-log", required=True, help="JSON-lines step log (appended)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--step-time", type=float, default=0.05, help="seconds of 'compute' a step")
    ap.add_argument("--ckpt-every", type=int, default=10)
    ap.add_argument("--stop-file", default=None, help="stop early once this file exists")
    ap.add_argument("--pg-timeout", type=float, default=30.0, help="process-group timeout (s)")
    a = ap.parse_args(argv)

    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available() and torch.cuda.device_count() > int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', 0)}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo", timeout=timedelta(seconds=a.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    os.makedirs(a.ckpt_dir, exist_ok=True)
    path = os.path.join(a.ckpt_dir, "ckpt.pt")

    w, step = torch.zeros(8, device=device), 0
    if os.path.exists(path):
        state = torch.load(path, map_location=device, weights_only=True)   # tensors and ints only
        w, step = state["w"].to(device), int(state["step"])
    resumed_from = saved = step
    target = torch.arange(8, dtype=torch.float32, device=device)
    host = os.environ.get("DEMO_NODE") or os.uname().nodename     # the demo names its nodes
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
    log = open(a.step_log, "a", buffering=1)
    while step < a.steps:
        time.sleep(a.step_time)                          # the forward/backward pass
        stop = 1.0 if (rank == 0 and a.stop_file and os.path.exists(a.stop_file)) else 0.0
        buf = torch.cat([w - target, torch.tensor([stop], device=device)])
        dist.all_reduce(buf)                             # a dead peer fails this call
        w -= 0.1 * buf[:-1] / world
        step += 1
        log.write(json.dumps({"t": time.time(), "step": step, "rank": rank, "world": world,
                              "addr": os.environ.get("MASTER_ADDR"), "host": host,
                              "restart": restart, "resumed_from": resumed_from,
                              "ckpt": saved if rank == 0 else None,
                              "local_rank": int(os.environ.get("LOCAL_RANK", 0)),
                              "local_world": int(os.environ.get("LOCAL_WORLD_SIZE", 1)),
                              "loss": float(((w - target) ** 2).sum())}) + "\n")
        if rank == 0 and step % a.ckpt_every == 0:
            tmp = path + f".tmp{os.getpid()}"
            torch.save({"w": w.cpu(), "step": step}, tmp)
            os.replace(tmp, path)
            saved = step
        if buf[-1].item() > 0:
            break
    log.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
