"""The report of a sweep: metrics plotted against the grid, and the table of runs."""
from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from .document import CSS
from .figures import SWEEP_METRICS, sweep_metric


def build_sweep(df: pd.DataFrame, keys: list[str], out: str | Path, title: str) -> dict[str, Path]:
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    metrics = [m for m in SWEEP_METRICS if m in df.columns and df[m].notna().any()]
    figs = {m: sweep_metric(df, keys, m) for m in metrics}
    for m, png in figs.items():
        (out / "figures" / f"sweep_{m}.png").write_bytes(png)
    cols = [*keys, "seed", *metrics]
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
         f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
         f"<p>{len(df)} runs: grid over {', '.join(keys)}, x {df['seed'].nunique()} seeds.</p>"]
    for m, png in figs.items():
        h.append(f"<figure id='fig-sweep-{m}'><img alt='{m}' src='data:image/png;base64,"
                 f"{base64.b64encode(png).decode()}'><figcaption>{m}</figcaption></figure>")
    h.append(df[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}"))
    h.append("</body></html>")
    (out / "sweep.html").write_text("\n".join(h))
    m = [f"# {title}", "", f"{len(df)} runs: grid over {', '.join(keys)}.", ""]
    m += [f"![{x}](figures/sweep_{x}.png)" for x in figs] + [""]
    m += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df[cols].itertuples(index=False):
        m.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |")
    (out / "sweep.md").write_text("\n".join(m) + "\n")
    return {"html": out / "sweep.html", "md": out / "sweep.md"}
