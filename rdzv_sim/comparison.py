"""Compare variants of one scenario over the same seeds: which wins, by how much, and why.

`compare(scenario, {"agent.recovery": ["in_job", "in_process", "shrink"]}, seeds=5)` runs every
variant on the same seeds (the same fault trace for each seed), so differences are paired: each
variant's goodput, ETTR and MTTR get a mean and a 95% t-interval over the seeds, and each
variant's difference from the best a paired 95% interval. Where the time went is summed by
part (detection, rendezvous, restart in place, ...) and by cause, in capacity-hours (host-hours)
and GPU-hours. The answer comes first, with the caveats of each recovery mode.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .intervals import t_interval
from .report.caveats import CAVEATS
from .sweep import run_specs

METRICS = ("goodput", "ettr", "mttr_s")          # each with its mean and interval
HIGHER_IS_BETTER = {"goodput": True, "ettr": True, "mttr_s": False}
COUNTS = ("store_rounds", "in_place_recoveries", "fallbacks_mode", "fallbacks_below_min",
          "fallbacks_iterations", "interruptions")

def parse_vary(items: list[str]) -> dict[str, list[str]]:
    """["agent.recovery=in_job,shrink"] -> {"agent.recovery": ["in_job", "shrink"]}."""
    out = {}
    for item in items:
        key, eq, values = item.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not eq or not key.strip():
            raise ValueError(f"--vary {item!r}: expected key.path=v1,v2,...")
        if len(vals) < 2 and not out:
            raise ValueError(f"--vary {item!r}: give at least two values to compare")
        out[key.strip()] = vals
    return out


def run_variant(scenario, spec: dict) -> dict:
    """One run: its summary row, and its lost seconds by cause (top level: pools ship it)."""
    from .api import run
    r = run(scenario, spec["overrides"], spec["seed"])
    row = r.summary.iloc[0].to_dict()
    row.update(spec["params"], seed=spec["seed"], wall_s=r.wall_s)
    inter = r.interruptions
    if inter is not None and len(inter):
        parts = [c for c in inter.columns if c.endswith("_s") and c not in ("t",)]
        lost = inter[parts].sum(axis=1)
        for cause, s in lost.groupby(inter["cause"].astype(str)).sum().items():
            row[f"cause:{cause}"] = float(s)
    return row


@dataclass
class Comparison:
    """`table`: a row per variant; `runs`: a row per run; `lines`: the answer, first line first."""
    vary: dict
    seeds: list
    table: pd.DataFrame
    runs: pd.DataFrame
    lines: list = field(default_factory=list)
    best: str = ""
    given: dict | None = None             # the scenario compared, as a dict


def _label(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) if len(params) > 1 else str(next(iter(params.values())))


def compare(scenario, vary: dict, seeds: int = 5, overrides=(), workers: int | None = None,
            dask_address: str | None = None, progress=None) -> Comparison:
    """Run each variant of `vary` (key -> values, their product) on the same `seeds` seeds."""
    from .scenario.load import load
    if seeds < 2:
        raise ValueError("compare needs at least 2 seeds (a confidence interval needs two)")
    if not vary:
        raise ValueError("give at least one key.path=v1,v2,... to vary")
    sc = load(scenario, list(overrides))
    keys = list(vary)
    combos = [dict(zip(keys, c)) for c in itertools.product(*(vary[k] for k in keys))]
    for c in combos:                                  # a bad value fails now, once, by name
        load(sc, [f"{k}={v}" for k, v in c.items()])
    seed_list = [sc.seed + i for i in range(seeds)]
    specs = [{"overrides": [f"{k}={v}" for k, v in c.items()], "params": c, "seed": s}
             for c in combos for s in seed_list]
    rows = run_specs(sc.model_dump(mode="json"), specs, workers, dask_address, progress, fn=run_variant)
    runs = pd.DataFrame(rows)
    runs.insert(0, "variant", [_label(s["params"]) for s in specs])
    out = _summarise(vary, seed_list, runs, sc.cluster.nproc_per_node)
    out.given = sc.model_dump(mode="json")
    return out


def _summarise(vary: dict, seeds: list, runs: pd.DataFrame, gpus: int) -> Comparison:
    variants = list(dict.fromkeys(runs["variant"]))
    by = {v: runs[runs["variant"] == v].sort_values("seed") for v in variants}
    metric = "goodput" if runs["goodput"].notna().all() else "running_fraction"
    means = {v: float(by[v][metric].mean()) for v in variants}
    best = max(variants, key=means.get)
    lost_parts = [c for c in runs.columns if c.startswith("lost_") and c.endswith("_s")]
    causes = sorted(c for c in runs.columns if c.startswith("cause:"))
    rows = []
    for v in variants:
        g = by[v]
        row = {"variant": v, "seeds": len(g)}
        for m in (metric, *(x for x in METRICS if x != metric)):
            if m not in g or not g[m].notna().any():
                continue
            mean, lo, hi = t_interval(g[m].to_numpy(dtype=float))
            row |= {m: mean, f"{m}_lo": lo, f"{m}_hi": hi}
        d, dlo, dhi = t_interval(g[metric].to_numpy(dtype=float) - by[best][metric].to_numpy(dtype=float))
        row |= {f"{metric}_vs_best": d, f"{metric}_vs_best_lo": dlo, f"{metric}_vs_best_hi": dhi}
        for c in COUNTS:
            if c in g:
                row[c] = float(g[c].mean())
        hosts = g["nodes"].astype(float)
        for c in lost_parts:                          # wall seconds x hosts: capacity-hours
            row[f"{c[5:-2]}_host_h"] = float((g[c] * hosts).mean() / 3600)
        for c in causes:
            row[f"{c}_host_h"] = float((g[c].fillna(0.0) * hosts).mean() / 3600)
        row["lost_host_h"] = float(sum(row[f"{c[5:-2]}_host_h"] for c in lost_parts))
        row["lost_gpu_h"] = row["lost_host_h"] * gpus
        rows.append(row)
    table = pd.DataFrame(rows)
    out = Comparison(vary, seeds, table, runs, best=best)
    out.lines = _answer(table, metric, best, vary, lost_parts)
    return out


def _fmt_interval(m, lo, hi, signed=False) -> str:
    f = "{:+.4f}" if signed else "{:.4f}"
    if math.isnan(lo):
        return f.format(m)
    return f"{f.format(m)} (95% {f.format(lo)} to {f.format(hi)})"


def _answer(table: pd.DataFrame, metric: str, best: str, vary: dict, lost_parts: list) -> list[str]:
    t = table.set_index("variant")
    b = t.loc[best]
    others = [v for v in t.index if v != best]
    beats = []
    for v in others:
        r = t.loc[v]
        d, lo, hi = -r[f"{metric}_vs_best"], -r[f"{metric}_vs_best_hi"], -r[f"{metric}_vs_best_lo"]
        sure = "" if math.isnan(lo) else (" (not sure: the interval spans 0)" if lo <= 0 else "")
        beats.append(f"{v} by {_fmt_interval(d, lo, hi, signed=True)}{sure}")
    n = int(b["seeds"])
    lines = [f"{best} wins on {metric}: {_fmt_interval(b[metric], b[metric + '_lo'], b[metric + '_hi'])} "
             f"over {n} paired seeds; it beats {'; '.join(beats)}."]
    # why: the parts where the others lost most beside the best (capacity-hours)
    for v in others:
        r = t.loc[v]
        diffs = {c[5:-2]: r[f"{c[5:-2]}_host_h"] - b[f"{c[5:-2]}_host_h"] for c in lost_parts}
        worse = sorted(((k, x) for k, x in diffs.items() if x > 0), key=lambda kv: -kv[1])[:2]
        better = sorted(((k, -x) for k, x in diffs.items() if x < 0), key=lambda kv: -kv[1])[:1]
        why = ", ".join(f"{k.replace('_', ' ')} +{x:,.0f}" for k, x in worse) or "nothing in particular"
        gain = (f"; it saves {better[0][0].replace('_', ' ')} {better[0][1]:,.0f}" if better else "")
        lines.append(f"Why, against {v}: {v} loses more host-hours to {why}{gain} (per run, mean).")
    for key, values in vary.items():
        if key == "agent.recovery":
            lines += [CAVEATS[m] for m in values if m in CAVEATS]
    return lines
