"""The runs whose summaries are held fixed while the code is restructured (DEVELOPERS.md:
"behaviour held fixed"): every bundled scenario at its seed (the three largest cut to what the
suite can afford), and llama3-54d as bundled at the aggregate fidelity with hrw and c10d.

    python -m tests.golden.runs          # rewrite summaries.json (say why in the commit)
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).parent
GOLDEN = HERE / "summaries.json"

SMALLER = {"airesim-table1": ["cluster.nodes=64", "protocol.min_nodes=64", "protocol.max_nodes=64",
                              "scheduler.hot_spares=2", "lifecycle.working_pool=70", "lifecycle.spare_pool.hosts=4",
                              "lifecycle.failures.per_host_day=0.1", "duration=864000"],
           "frontier-100k": ["cluster.nodes=64", "cluster.topology.racks=4", "cluster.topology.spines=2",
                             "protocol.min_nodes=60", "protocol.max_nodes=64", "scheduler.hot_spares=2",
                             "duration=86400"],
           "frontier-100k-quorum": ["cluster.nodes=64", "cluster.topology.racks=4", "cluster.topology.spines=2",
                                    "scheduler.hot_spares=2", "duration=86400"],
           "byterobust-9600": ["cluster.nodes=64", "cluster.topology.racks=4", "protocol.min_nodes=60",
                               "protocol.max_nodes=64", "scheduler.hot_spares=2", "duration=604800",
                               "shards.count=1024"],
           "rack-failure": ["cluster.nodes=64", "protocol.min_nodes=32", "protocol.max_nodes=64",
                            "shards.count=4096"],
           "c10d-2048-crash": ["cluster.nodes=64", "cluster.topology.racks=2", "protocol.min_nodes=60",
                               "protocol.max_nodes=64"],
           "llama3-54d": ["cluster.nodes=32", "cluster.topology.racks=4", "protocol.min_nodes=16",
                          "protocol.max_nodes=32", "duration=86400", "shards.count=1024"],
           "llama3-54d-replay": ["cluster.nodes=32", "cluster.topology.racks=4", "protocol.min_nodes=16",
                                 "protocol.max_nodes=32", "duration=86400", "shards.count=1024"],
           "llama3-54d-quorum": ["cluster.nodes=64", "cluster.topology.racks=4", "duration=86400",
                                 "shards.count=1024"]}
EXTRA = {"llama3-54d@aggregate-hrw": ("llama3-54d", ["fidelity=aggregate", "protocol.name=hrw"]),
         "llama3-54d@aggregate-c10d": ("llama3-54d", ["fidelity=aggregate", "protocol.name=c10d"])}


def runs() -> dict[str, tuple[str, list[str]]]:
    from rdzv_sim.scenario import bundled
    out = {name: (name, SMALLER.get(name, [])) for name in sorted(bundled())}
    return out | EXTRA


def summary(result) -> dict:
    """The summary row as plain JSON values, NaN as None; the event counts beside it."""
    row = {k: (None if isinstance(v, float) and math.isnan(v) else v.item() if hasattr(v, "item") else v)
           for k, v in result.summary.iloc[0].to_dict().items()}
    counts = result.events["event"].value_counts()
    row["event_counts"] = {str(k): int(v) for k, v in sorted(counts.items())}
    return row


def compute(key: str) -> dict:
    import rdzv_sim
    name, overrides = runs()[key]
    return summary(rdzv_sim.run(name, overrides))


if __name__ == "__main__":
    keys = sys.argv[1:] or list(runs())
    old = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    for k in keys:
        old[k] = compute(k)
        print(k, flush=True)
    GOLDEN.write_text(json.dumps(dict(sorted(old.items())), indent=1, sort_keys=True) + "\n")
