"""Golden vectors of hrw spec v1: `python -m hrw.golden --write` regenerates golden_v1.json.

The file is committed; tests check every path against it, and a port to another language
can check itself against the same file. Typed values are written as {"str": ...},
{"int": ...} or {"hex": ...} (bytes) so that JSON loses nothing.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from . import spec

PATH = Path(__file__).with_name("golden_v1.json")


def encode(v):
    if isinstance(v, str):
        return {"str": v}
    if isinstance(v, bytes):
        return {"hex": v.hex()}
    return {"int": int(v)}


def decode(d):
    (kind, v), = d.items()
    return {"str": str, "int": int, "hex": bytes.fromhex}[kind](v)


def _cases():
    node_sets = {
        "str8": [f"node-{i}" for i in range(8)],
        "int5": [0, 1, 2, 3, -1],
        "mixed": ["a", 7, b"\x00\xff", "héllo", 2**64 - 1],
        "hosts64": [f"10.0.{i // 16}.{i % 16}" for i in range(64)],
    }
    keys = ["", "k", "shard-0", "shard-1", 0, 1, 42, -7, 2**63, b"", b"\x01\x02", "日本"]
    keys += [f"ckpt/{i}" for i in range(20)]
    out = []
    for name, nodes in node_sets.items():
        for seed in (0, 1, 2**64 - 1):
            for weighted in (False, True):
                weights = [1.0 + (i % 5) * 0.75 for i in range(len(nodes))] if weighted else None
                rows = []
                for key in keys:
                    r = spec.ranking(key, nodes, weights, seed)
                    rows.append({"key": encode(key), "owner": encode(r[0]),
                                 "top3": [encode(x) for x in r[:3]]})
                out.append({"name": name, "seed": seed, "nodes": [encode(n) for n in nodes],
                            "weights": weights, "expect": rows})
    return out


def build() -> dict:
    prims = [0, 1, 2, 0xFFFFFFFF, 2**63 - 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF]
    return {
        "spec": "hrw spec v1",
        "hash64": [{"value": encode(v), "seed": s, "hash": spec.hash64(v, s)}
                   for v in ["", "a", "node-1", 0, 1, -1, b"\x00", "日本"] for s in (0, 1, 2**64 - 1)],
        "fmix64": [{"in": x, "out": spec.fmix64(x)} for x in prims],
        "neglog2_fixed": [{"in": x, "out": spec.neglog2_fixed(x)} for x in prims],
        "cases": _cases(),
    }


def load() -> dict:
    return json.loads(PATH.read_text())


if __name__ == "__main__":
    if "--write" in sys.argv:
        PATH.write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {PATH}")
    else:
        print("usage: python -m hrw.golden --write", file=sys.stderr)
        sys.exit(2)
