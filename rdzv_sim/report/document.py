"""A self-contained HTML report (plots embedded) and its Markdown twin, from saved tables."""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import yaml

from .answer import opening, unit
from .figures import FIGURES, all_figures

CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:14px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}figure{margin:1.5em 0}
img{max-width:100%}figcaption{color:#555;font-size:13px}pre{background:#f7f7f7;padding:1em;overflow:auto}"""


def _fmt(v) -> str:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _summary_rows(summary) -> list[tuple[str, str, str]]:
    row = summary.iloc[0]
    return [(k, _fmt(row[k]), unit(k)) for k in summary.columns if k not in ("schema_version",)]


def described(scenario: dict) -> str:
    """The scenario's description, marked where --set overrides came after it."""
    desc = " ".join(str(scenario.get("description", "")).split())
    over = scenario.get("overridden") or []
    if desc and over:
        desc += (f" [Overridden since it was written: {', '.join(over)}. Where the description says "
                 "otherwise, the overrides ran.]")
    return desc


def build(tables: dict, scenario: dict, out: str | Path) -> dict[str, Path]:
    """Write report.html, report.md and figures/*.png into `out`; return their paths."""
    out = Path(out)
    figs_dir = out / "figures"
    figs_dir.mkdir(parents=True, exist_ok=True)
    nodes = int(scenario.get("cluster", {}).get("nodes", 1))
    duration = float(scenario.get("duration", tables["events"]["t"].max() if len(tables["events"]) else 1))
    figs = all_figures(tables, duration, nodes)
    for name, png in figs.items():
        (figs_dir / f"{name}.png").write_bytes(png)
    title = f"{scenario.get('name', 'run')}: rdzv-sim report"
    desc = described(scenario)
    rows = _summary_rows(tables["summary"])
    first = opening(tables, scenario)
    scen_yaml = yaml.safe_dump(scenario, sort_keys=False)

    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
         f"<style>{CSS}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    if desc:
        h.append(f"<p>{html.escape(desc)}</p>")
    h.append("<h2>In short</h2>")
    h += [f"<p class='answer'>{html.escape(p)}</p>" for p in first]
    h.append("<h2>Figures</h2>")
    for name, caption in FIGURES.items():
        b64 = base64.b64encode(figs[name]).decode()
        h.append(f"<figure id='fig-{name}'><img alt='{name}' src='data:image/png;base64,{b64}'>"
                 f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    h.append("<h2>Summary</h2><table><tr><th>metric</th><th>value</th><th>unit</th></tr>")
    h += [f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td><td>{html.escape(u)}</td></tr>"
          for k, v, u in rows]
    h.append("</table>")
    h.append(f"<h2>Scenario</h2><pre>{html.escape(scen_yaml)}</pre></body></html>")
    (out / "report.html").write_text("\n".join(h))

    m = [f"# {title}", ""]
    if desc:
        m += [desc, ""]
    m += ["## In short", ""]
    for p in first:
        m += [p, ""]
    m += ["## Figures", ""]
    for name, caption in FIGURES.items():
        m += [f"![{caption}](figures/{name}.png)", ""]
    m += ["## Summary", "", "| metric | value | unit |", "|---|---|---|"]
    m += [f"| {k} | {v} | {u} |" for k, v, u in rows]
    m += [""]
    m += ["## Scenario", "", "```yaml", scen_yaml.rstrip(), "```", ""]
    (out / "report.md").write_text("\n".join(m))
    return {"html": out / "report.html", "md": out / "report.md", "figures": figs_dir}


def from_dir(directory: str | Path, out: str | Path | None = None) -> dict[str, Path]:
    """Rebuild the report of a saved run (tables + scenario.yaml) without re-running it."""
    from ..result import load_tables
    d = Path(directory)
    tables = load_tables(d)
    scen = d / "scenario.yaml"
    scenario = yaml.safe_load(scen.read_text()) if scen.exists() else {
        "name": str(tables["summary"]["scenario"].iloc[0]), "duration": float(tables["summary"]["duration"].iloc[0]),
        "cluster": {"nodes": int(tables["summary"]["nodes"].iloc[0])}}
    return build(tables, scenario, out or d)
