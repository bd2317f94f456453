"""Sweeps: a grid of scenario overrides x seeds, run in parallel, one table with a row per run.

Runs on a local process pool by default, or on an existing Dask cluster given its scheduler
address (`dask.distributed`, the `dask` extra). Every run is an ordinary `rdzv_sim.run` with
`--set`-style overrides, so any field of the scenario can be swept.
"""
from __future__ import annotations

import itertools
import os
from concurrent.futures import ProcessPoolExecutor, as_completed

import pandas as pd


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """["protocol.name=hrw,c10d", "cluster.nodes=8,16"] -> {"protocol.name": ["hrw", "c10d"], ...}"""
    grid = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--grid {item!r}: expected key.path=v1,v2,...")
        k, v = item.split("=", 1)
        values = [x.strip() for x in v.split(",") if x.strip()]
        if not values:
            raise ValueError(f"--grid {item!r}: no values")
        grid[k.strip()] = values
    return grid


def plan(grid: dict, seeds: int, base_seed: int = 0) -> list[dict]:
    keys = list(grid)
    runs = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        for s in range(seeds):
            runs.append({"overrides": [f"{k}={v}" for k, v in zip(keys, combo)],
                         "params": dict(zip(keys, combo)), "seed": base_seed + s})
    return runs


def run_one(scenario, spec: dict) -> dict:
    """One run of the sweep (top level, so that process pools and Dask can ship it)."""
    from .api import run
    r = run(scenario, spec["overrides"], spec["seed"])
    row = r.summary.iloc[0].to_dict()
    row.update(spec["params"])
    row["seed"] = spec["seed"]
    row["wall_s"] = r.wall_s
    return row


def run_specs(data: dict, specs: list[dict], workers: int | None = None,
              dask_address: str | None = None, progress=None, fn=None) -> list[dict]:
    """Each spec's row (`fn`, a top-level function of (scenario, spec); default `run_one`: its
    summary row), in order, on a local process pool or a Dask cluster; `progress(done, total)`
    after each run."""
    fn = fn or run_one
    rows: list[dict | None] = [None] * len(specs)
    if dask_address:
        from dask.distributed import Client, as_completed as dask_completed
        with Client(dask_address) as client:
            futs = {client.submit(fn, data, s, pure=False): i for i, s in enumerate(specs)}
            for n, fut in enumerate(dask_completed(futs), 1):
                rows[futs[fut]] = fut.result()
                if progress:
                    progress(n, len(specs))
    else:
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
            futs = {pool.submit(fn, data, s): i for i, s in enumerate(specs)}
            for n, fut in enumerate(as_completed(futs), 1):
                rows[futs[fut]] = fut.result()
                if progress:
                    progress(n, len(specs))
    return rows


def sweep(scenario, grid: dict, seeds: int = 1, workers: int | None = None,
          dask_address: str | None = None, progress=None) -> pd.DataFrame:
    """Run the grid x seeds; `progress(done, total)` after each run. Rows in plan order."""
    from .scenario.load import load
    sc = load(scenario)                       # fail early, once, on a bad scenario
    for spec in plan(grid, 1)[:1] + plan(grid, 1)[-1:]:
        load(sc, spec["overrides"])           # ... and on a bad grid value
    specs = plan(grid, seeds, sc.seed)
    rows = run_specs(sc.model_dump(mode="json"), specs, workers, dask_address, progress)
    df = pd.DataFrame(rows)
    front = [*grid, "seed"]
    return df[front + [c for c in df.columns if c not in front]]


POINT_METRICS = ("goodput", "ettr", "running_fraction", "mttr_s", "rdzv_latency_p50", "store_ops")


def points(df: pd.DataFrame, keys: list[str], metrics=POINT_METRICS) -> pd.DataFrame:
    """A row per grid point: its seeds (the replications) and, for each metric, the mean and
    its 95% t-interval over them (`_lo`, `_hi`; NaN with one seed)."""
    from .intervals import t_interval
    rows = []
    for values, g in df.groupby(keys, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        row = dict(zip(keys, values)) | {"seeds": len(g)}
        for m in metrics:
            if m in g and g[m].notna().any():
                mean, lo, hi = t_interval(g[m].dropna().to_numpy(dtype=float))
                row |= {m: mean, f"{m}_lo": lo, f"{m}_hi": hi}
        rows.append(row)
    return pd.DataFrame(rows)


def best_point(table: pd.DataFrame, keys: list[str]) -> str | None:
    """The answer a sweep opens with: the grid point with the best mean goodput (or running
    fraction), with its interval, and how far the runner-up is."""
    metric = next((m for m in ("goodput", "running_fraction") if m in table and table[m].notna().any()), None)
    if metric is None or not len(table):
        return None
    t = table.sort_values(metric, ascending=False)
    top = t.iloc[0]
    name = ", ".join(f"{k}={top[k]}" for k in keys)
    ci = "" if pd.isna(top[f"{metric}_lo"]) else f" (95% {top[metric + '_lo']:.4f} to {top[metric + '_hi']:.4f})"
    text = f"best {metric}: {name}, {top[metric]:.4f}{ci} over {int(top['seeds'])} seeds"
    if len(t) > 1:
        nxt = t.iloc[1]
        text += (f"; next {', '.join(f'{k}={nxt[k]}' for k in keys)}, {nxt[metric]:.4f}"
                 " (for a paired difference: rdzv-sim compare)")
    return text
