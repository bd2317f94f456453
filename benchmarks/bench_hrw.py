"""hrw benchmark: ours against clandestined, PyPI's hrw and uhashring, side by side in one run.

Run `make bench` (or `python benchmarks/bench_hrw.py`). The peers are installed into .peers/
with `pip install --target .peers clandestined hrw uhashring`; PyPI's `hrw` shares our import
name, so it is loaded from there under the name `pypi_hrw`. Results go to
reports/hrw_benchmark.md and .json. Timings are not asserted anywhere.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import xxhash

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, write  # noqa: E402
PEERS = ROOT / ".peers"

from hrw import Assignment, Placement, kernels  # noqa: E402


def load_peers():
    if not (PEERS / "uhashring").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(PEERS),
                        "clandestined==1.1.0", "hrw==0.2.0", "uhashring==2.5"], check=True)
    # the peers live in a folder of their own (PyPI's `hrw` shares our package's name), loaded
    # from their files by name
    return _from(PEERS, "clandestined"), _from(PEERS, "hrw", "pypi_hrw"), _from(PEERS, "uhashring")


def _from(folder: Path, package: str, alias: str | None = None):
    """Import `package` from `folder` (a pip --target folder) as `alias`."""
    base = folder / package
    path = base / "__init__.py" if base.is_dir() else folder / f"{package}.py"
    spec = importlib.util.spec_from_file_location(
        alias or package, path, submodule_search_locations=[str(base)] if base.is_dir() else None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[alias or package] = mod
    spec.loader.exec_module(mod)
    return mod


def rate(fn, n_calls, min_time=0.5):
    """Calls per second of fn(i), repeated until min_time has passed."""
    done, t0 = 0, time.perf_counter()
    while True:
        for i in range(n_calls):
            fn(done + i)
        done += n_calls
        el = time.perf_counter() - t0
        if el >= min_time:
            return done / el


def plain_numpy_hrw(keys, node_hashes):
    """The peer for batch scoring: one full (keys x nodes) matrix, fmix64 in place, argmax."""
    kh = np.fromiter((xxhash.xxh3_64_intdigest(int(k).to_bytes(8, "little")) for k in keys),
                     dtype=np.uint64, count=len(keys))
    s = kh[:, None] ^ node_hashes[None, :]
    t = np.empty_like(s)
    for c in (np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53), None):
        np.right_shift(s, np.uint64(33), out=t)
        np.bitwise_xor(s, t, out=s)
        if c is not None:
            np.multiply(s, c, out=s)
    return s.argmax(axis=1)


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    clandestined, pypi_hrw, uhashring = load_peers()
    res = environment()

    # 1. single-key lookups
    single = {}
    for n in (100, 1000):
        names = [f"node-{i}" for i in range(n)]
        ours = Placement(names, seed=0)
        cl = clandestined.RendezvousHash(nodes=list(names))
        ph_ids = [s.encode() for s in names]
        ring = uhashring.HashRing(nodes=names)
        r = {
            "ours": rate(lambda i: ours.owner(f"k{i}"), 2000),
            "clandestined": rate(lambda i: cl.find_node(f"k{i}"), 20),
            "pypi_hrw": rate(lambda i: pypi_hrw.choose(f"k{i}".encode(), ph_ids, k=1), 20),
            "uhashring": rate(lambda i: ring.get_node(f"k{i}"), 2000),
        }
        single[n] = r
        print(f"single-key lookups/s at {n} nodes: " + ", ".join(f"{k} {v:,.0f}" for k, v in r.items()))
    res["single_key_lookups_per_s"] = single

    # 2. batch scoring throughput, 1e5 keys x 1e3 nodes, both hashing their keys
    keys = np.arange(100_000)
    p = Placement([f"node-{i}" for i in range(1000)], seed=0)
    t_ours = best_of(lambda: p.owner_indexes(keys))
    t_plain = best_of(lambda: plain_numpy_hrw(keys, p.node_hashes))
    assert np.array_equal(p.owner_indexes(keys), plain_numpy_hrw(keys, p.node_hashes))
    pairs = len(keys) * len(p)
    res["batch"] = {"pairs": pairs, "ours_pairs_per_s": pairs / t_ours,
                    "plain_numpy_pairs_per_s": pairs / t_plain, "ratio": t_plain / t_ours}
    print(f"batch: ours {pairs / t_ours:,.0f} pairs/s, plain numpy {pairs / t_plain:,.0f} "
          f"pairs/s, ratio {t_plain / t_ours:.2f}")
    try:
        import torch
        from hrw import torch_path
        torch.set_num_threads(1)
        kh = kernels.hash_keys(keys)
        t_t = best_of(lambda: torch_path.owner_indexes(p, None, "cpu", key_hashes=kh))
        res["batch"]["torch_cpu_1thread_pairs_per_s"] = pairs / t_t
        print(f"batch torch-cpu (1 thread, keys pre-hashed): {pairs / t_t:,.0f} pairs/s")
    except ImportError:
        pass

    # 3. balance and keys moved on one removal, 100 nodes, 20,000 keys
    n, nk = 100, 20_000
    names = [f"node-{i}" for i in range(n)]
    kl = [f"key-{i}" for i in range(nk)]

    def stats(owners_before, owners_after):
        c = np.unique(np.array(owners_before, dtype=object), return_counts=True)[1]
        moved = sum(a != b for a, b in zip(owners_before, owners_after))
        return {"max_over_mean": float(c.max() / (nk / n)), "moved": int(moved),
                "moved_min": int(round(nk / n))}

    bal = {}
    a = Placement(names, seed=0)
    bal["ours"] = stats(list(a.owners(kl)), list(a.without(["node-0"]).owners(kl)))
    cl = clandestined.RendezvousHash(nodes=list(names))
    b1 = [cl.find_node(k) for k in kl]
    cl.remove_node("node-0")
    bal["clandestined"] = stats(b1, [cl.find_node(k) for k in kl])
    ids = [s.encode() for s in names]
    b1 = [pypi_hrw.choose(k.encode(), ids, k=1)[0][0] for k in kl]
    b2 = [pypi_hrw.choose(k.encode(), ids[1:], k=1)[0][0] for k in kl]
    bal["pypi_hrw"] = stats(b1, b2)
    ring = uhashring.HashRing(nodes=list(names))
    b1 = [ring.get_node(k) for k in kl]
    ring.remove_node("node-0")
    bal["uhashring"] = stats(b1, [ring.get_node(k) for k in kl])
    res["balance_and_removal_100_nodes_20k_keys"] = bal
    for k, v in bal.items():
        print(f"balance {k}: {v}")

    # 4. incremental update: 1e6 keys over 1e4 nodes
    t0 = time.perf_counter()
    asg = Assignment(np.arange(1_000_000), Placement(range(10_000), seed=0))
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    ch_rm = asg.remove([1234])
    t_rm = time.perf_counter() - t0
    t0 = time.perf_counter()
    ch_add = asg.add([10_000_001])
    t_add = time.perf_counter() - t0
    ring = uhashring.HashRing(nodes=list(range(10_000)))
    t0 = time.perf_counter()
    ring.remove_node(1234)
    t_ring = time.perf_counter() - t0
    res["incremental_1e6_keys_1e4_nodes"] = {
        "initial_build_s": build, "remove_one_node_s": t_rm, "keys_moved_on_remove": ch_rm.count,
        "add_one_node_s": t_add, "keys_moved_on_add": ch_add.count,
        "full_rescore_s_equivalent": build, "uhashring_remove_one_node_s": t_ring}
    print(f"incremental: build {build:.1f} s, remove {t_rm * 1e3:.1f} ms ({ch_rm.count} moved), "
          f"add {t_add * 1e3:.1f} ms ({ch_add.count} moved); uhashring remove {t_ring * 1e3:.1f} ms")

    write_report(res)


def write_report(res):
    out = ROOT / "reports"
    s = res["single_key_lookups_per_s"]
    b = res["batch"]
    inc = res["incremental_1e6_keys_1e4_nodes"]
    lines = [
        "# hrw benchmark", "",
        f"Date: {res['date']}. Machine: {res['machine']}. One process, peers side by side.",
        "Regenerate: `make bench` (`python benchmarks/bench_hrw.py`).", "",
        "## Single-key lookups per second", "",
        "| nodes | ours | clandestined | PyPI hrw | uhashring | ours / clandestined |",
        "|---|---|---|---|---|---|",
    ]
    for n, r in s.items():
        lines.append(f"| {n} | {r['ours']:,.0f} | {r['clandestined']:,.0f} | {r['pypi_hrw']:,.0f} | "
                     f"{r['uhashring']:,.0f} | {r['ours'] / r['clandestined']:.0f}x |")
    lines += ["", "## Batch scoring, 1e5 keys x 1e3 nodes (keys hashed by both)", "",
              "| implementation | key-node pairs/s | ratio to plain numpy |", "|---|---|---|",
              f"| ours (`Placement.owner_indexes`, chunked) | {b['ours_pairs_per_s']:,.0f} | {b['ratio']:.2f} |",
              f"| plain in-place numpy HRW (full matrix) | {b['plain_numpy_pairs_per_s']:,.0f} | 1.00 |"]
    if "torch_cpu_1thread_pairs_per_s" in b:
        lines.append(f"| ours, torch CPU path, 1 thread | {b['torch_cpu_1thread_pairs_per_s']:,.0f} | "
                     f"{b['torch_cpu_1thread_pairs_per_s'] / b['plain_numpy_pairs_per_s']:.2f} |")
    lines += ["", "## Balance and keys moved when one of 100 nodes leaves (20,000 keys)", "",
              "| library | max/mean load | keys moved | minimum (keys of the leaver, ~K/N) |",
              "|---|---|---|---|"]
    for k, v in res["balance_and_removal_100_nodes_20k_keys"].items():
        lines.append(f"| {k} | {v['max_over_mean']:.2f} | {v['moved']} | {v['moved_min']} |")
    lines += ["", "## Incremental update, 1e6 keys over 1e4 nodes", "",
              "| step | time | keys moved |", "|---|---|---|",
              f"| initial assignment (every pair scored once) | {inc['initial_build_s']:.1f} s | |",
              f"| remove one node (`Assignment.remove`) | {inc['remove_one_node_s'] * 1e3:.1f} ms | {inc['keys_moved_on_remove']} |",
              f"| add one node (`Assignment.add`) | {inc['add_one_node_s'] * 1e3:.1f} ms | {inc['keys_moved_on_add']} |",
              f"| uhashring: remove one node (ring rebuild, no keys tracked) | {inc['uhashring_remove_one_node_s'] * 1e3:.1f} ms | |",
              "", "A full re-score after each change would cost the initial build time again.", ""]
    write("hrw_benchmark", res, "\n".join(lines))
    print(f"wrote {out / 'hrw_benchmark.md'}")


if __name__ == "__main__":
    main()
