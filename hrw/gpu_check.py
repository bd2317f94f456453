"""Check that the torch path gives exactly the numpy owners, on CUDA where there is a GPU.

    python -m hrw.gpu_check [--keys 1000000] [--nodes 1000]

Prints one line per case (device, weighted or not, pairs/s, identical or not) and exits 1 on
any mismatch. Without a GPU it checks torch on the CPU and says so.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import Placement, kernels


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=1000)
    args = ap.parse_args(argv)
    import torch
    from . import torch_path
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if "cuda" not in devices:
        print("no CUDA device: checking the torch path on the CPU only")
    keys = np.arange(args.keys)
    rng = np.random.default_rng(0)
    bad = 0
    for weighted in (False, True):
        w = rng.uniform(0.5, 4.0, args.nodes).tolist() if weighted else None
        p = Placement([f"gpu-node-{i}" for i in range(args.nodes)], w, seed=123)
        kh = kernels.hash_keys(keys, p.seed)
        t0 = time.perf_counter()
        ref = p.owner_indexes(None, key_hashes=kh)
        t_np = time.perf_counter() - t0
        print(f"numpy  weighted={weighted!s:5}  {args.keys * args.nodes / t_np:,.0f} pairs/s")
        for dev in devices:
            torch_path.owner_indexes(p, None, dev, key_hashes=kh[:1000])     # warm-up
            if dev == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            got = torch_path.owner_indexes(p, None, dev, key_hashes=kh)
            dt = time.perf_counter() - t0
            same = np.array_equal(got, ref)
            bad += not same
            print(f"torch-{dev:4} weighted={weighted!s:5}  {args.keys * args.nodes / dt:,.0f} pairs/s  "
                  f"identical={same}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
