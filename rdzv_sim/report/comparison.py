"""The report of `rdzv-sim compare`: the answer first, then a row per variant (means with their
95% intervals, the paired difference from the best), and the lost host-hours by part and by
cause; the tables as Parquet beside it."""
from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from .document import CSS

SHOWN = ["variant", "goodput", "goodput_lo", "goodput_hi", "goodput_vs_best", "ettr", "mttr_s",
         "store_rounds", "in_place_recoveries", "fallbacks_below_min", "fallbacks_mode",
         "fallbacks_iterations", "lost_gpu_h"]


def _cell(v) -> str:
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:,.4g}"
    return str(v)


def _ci(m, lo, hi, signed=False) -> str:
    """A mean and its 95% t-interval (symmetric: its half-width)."""
    f = "{:+.3f}" if signed else "{:.3f}"
    if math.isnan(lo):
        return f.format(m)
    return f"{f.format(m)} ± {(hi - lo) / 2:.3f}"


def rows_to_print(t: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """The comparison a metric a row, a variant a column (narrow enough for 80 columns)."""
    out = []
    metric = "goodput" if "goodput" in t else "running_fraction"
    for m, label in ((metric, f"{metric} (95%)"), ("ettr", "ETTR (95%)")):
        if m in t:
            out.append((label, [_ci(r[m], r[f"{m}_lo"], r[f"{m}_hi"]) for _, r in t.iterrows()]))
    d = f"{metric}_vs_best"
    out.append(("vs best (paired)", [_ci(r[d], r[d + "_lo"], r[d + "_hi"], True) for _, r in t.iterrows()]))
    for c, label in (("mttr_s", "MTTR s"), ("store_rounds", "store rounds"),
                     ("in_place_recoveries", "in place"), ("fallbacks_below_min", "fallbacks, below min"),
                     ("fallbacks_mode", "fallbacks, mode"), ("fallbacks_iterations", "fallbacks, iterations"),
                     ("lost_host_h", "lost host-hours"), ("lost_gpu_h", "lost GPU-hours")):
        if c in t:
            out.append((label, [f"{float(v):,.1f}" if float(v) < 100 else f"{float(v):,.0f}" for v in t[c]]))
    return out


def _md_table(df: pd.DataFrame) -> list[str]:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return out


def sections(result) -> list[tuple[str, pd.DataFrame]]:
    t = result.table
    parts = [c for c in t.columns if c.endswith("_host_h") and not c.startswith("cause:")]
    causes = [c for c in t.columns if c.startswith("cause:")]
    by_part = t[["variant", *parts]].rename(columns=lambda c: c.removesuffix("_host_h"))
    by_cause = t[["variant", *causes]].rename(columns=lambda c: c.removeprefix("cause:").removesuffix("_host_h"))
    return [("Each variant", t[[c for c in SHOWN if c in t.columns]]),
            ("Lost host-hours by part (per run, mean; GPU-hours: x GPUs a host)", by_part),
            ("Lost host-hours by cause (per run, mean)", by_cause)]


def write(result, out, title: str) -> dict[str, Path]:
    """compare.md, compare.html, compare.parquet (a row per variant), runs.parquet (a row
    per run) and scenario.yaml (what was compared), into `out`."""
    import yaml
    out = Path(out)
    result.table.to_parquet(out / "compare.parquet", index=False)
    result.runs.to_parquet(out / "runs.parquet", index=False)
    (out / "scenario.yaml").write_text(yaml.safe_dump(result.given, sort_keys=False))
    intro = (f"{len(result.runs)} runs: {', '.join(result.vary)} varied, each variant on the same "
             f"{len(result.seeds)} seeds ({', '.join(map(str, result.seeds))}), so differences are paired.")
    md = [f"# {title}", "", "## The answer", "", *(f"- {line}" for line in result.lines), "", intro, ""]
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
         f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1><h2>The answer</h2><ul>",
         *(f"<li>{html.escape(line)}</li>" for line in result.lines), "</ul>", f"<p>{html.escape(intro)}</p>"]
    for name, df in sections(result):
        md += [f"## {name}", "", *_md_table(df), ""]
        h += [f"<h2>{html.escape(name)}</h2>", df.to_html(index=False, float_format=lambda v: f"{v:,.4g}")]
    h.append("</body></html>")
    (out / "compare.md").write_text("\n".join(md))
    (out / "compare.html").write_text("\n".join(h))
    return {"md": out / "compare.md", "html": out / "compare.html"}
