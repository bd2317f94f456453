"""The report of a sweep: metrics plotted against the grid, and the table of runs."""
from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from .document import CSS
from .figures import SWEEP_METRICS, sweep_metric


def system_mtbf(sc) -> float | None:
    """The job's mean time between failures from its random faults (None: none given)."""
    rate = sum(sum(rf.rates(sc)) for rf in sc.random_faults)
    return 1.0 / rate if rate > 0 else None


def checkpoint_advice(df: pd.DataFrame, keys: list[str], sc) -> list[str]:
    """With `training.checkpoint_interval` in the grid: the interval with the best mean goodput,
    beside Young's sqrt(2 C M) and Daly's sqrt(2 C M) - C (C: checkpoint cost, M: the job's MTBF)."""
    key = "training.checkpoint_interval"
    if key not in keys or "goodput" not in df or not df["goodput"].notna().any():
        return []
    by = df.groupby(key)["goodput"].mean()
    best = by.idxmax()
    out = [f"best {key}: {best} (mean goodput {by.max():.4f} over {df['seed'].nunique()} seeds)"]
    m = system_mtbf(sc)
    if m is not None and sc.training is not None:
        from ..training import young_daly
        c = sc.training.checkpoint_cost
        young, daly = young_daly(c, m)
        out.append(f"theory (C = {c:g} s, job MTBF M = {m:,.0f} s): Young {young:,.0f} s, "
                   f"Daly {daly:,.0f} s")
    return out


def build_sweep(df: pd.DataFrame, keys: list[str], out: str | Path, title: str,
                advice: list[str] = (), table: pd.DataFrame | None = None) -> dict[str, Path]:
    """The sweep's report, the answer first; `advice`: its lines (`sweep.best_point`,
    `checkpoint_advice`); `table`: a row per grid point (`sweep.points`), shown before the runs."""
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    metrics = [m for m in SWEEP_METRICS if m in df.columns and df[m].notna().any()]
    figs = {m: sweep_metric(df, keys, m) for m in metrics}
    for m, png in figs.items():
        (out / "figures" / f"sweep_{m}.png").write_bytes(png)
    cols = [*keys, "seed", *metrics]
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
         f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    h += [f"<p><b>{html.escape(a)}</b></p>" for a in advice]          # the answer first
    h.append(f"<p>{len(df)} runs: grid over {', '.join(keys)}, x {df['seed'].nunique()} seeds "
             "(the replications of each grid point).</p>")
    if table is not None:
        h += ["<h2>Each grid point: mean and 95% interval over its seeds</h2>",
              table.to_html(index=False, float_format=lambda v: f"{v:.4g}")]
    for m, png in figs.items():
        h.append(f"<figure id='fig-sweep-{m}'><img alt='{m}' src='data:image/png;base64,"
                 f"{base64.b64encode(png).decode()}'><figcaption>{m}</figcaption></figure>")
    h.append("<h2>Each run</h2>")
    h.append(df[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}"))
    h.append("</body></html>")
    (out / "sweep.html").write_text("\n".join(h))
    m = [f"# {title}", ""]
    m += [f"**{a}**" for a in advice] + ([""] if advice else [])
    m += [f"{len(df)} runs: grid over {', '.join(keys)}, x {df['seed'].nunique()} seeds.", ""]
    if table is not None:
        tc = list(table.columns)
        m += ["## Each grid point", "", "| " + " | ".join(tc) + " |", "|" + "---|" * len(tc)]
        m += ["| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |"
              for row in table.itertuples(index=False)] + [""]
    m += [f"![{x}](figures/sweep_{x}.png)" for x in figs] + ["", "## Each run", ""]
    m += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df[cols].itertuples(index=False):
        m.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |")
    (out / "sweep.md").write_text("\n".join(m) + "\n")
    return {"html": out / "sweep.html", "md": out / "sweep.md"}
