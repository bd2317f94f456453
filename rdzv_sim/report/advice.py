"""The report of `rdzv-sim advise`: the answer in sentences, the top candidates, a sensitivity
plot per setting, goodput against what it costs (the Pareto front), and the recommended
scenario, ready to run."""
from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
import pandas as pd

from ..advise import OBJECTIVES, show_value as show

# the settings whose value is a cost a team pays, and that cost in a unit it reads
COSTS = {
    "scheduler.hot_spares": ("warm spares (hosts paid for, idle)", lambda v: v),
    "training.checkpoint_interval": ("checkpoints an hour (storage writes)", lambda v: 3600.0 / v),
}


def pareto_front(cost: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Which points no other beats: none costs no more and gives at least as much, one of the
    two strictly (NaN values are never on the front)."""
    ok = ~np.isnan(value)
    front = np.zeros(len(cost), dtype=bool)
    for i in np.flatnonzero(ok):
        others = ok & (cost <= cost[i]) & (value >= value[i]) & ((cost < cost[i]) | (value > value[i]))
        front[i] = not others.any()
    return front


def fronts(trials: pd.DataFrame, keys: list[str]) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(key, cost's label, cost, on the front) for each searched setting that is a cost."""
    out = []
    for key in keys:
        if key in COSTS and key in trials:
            label, of = COSTS[key]
            cost = of(trials[key].astype(float).to_numpy())
            out.append((key, label, cost, pareto_front(cost, trials["goodput"].to_numpy(float))))
    return out


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _sensitivity(advice, knobs, objective: str) -> bytes:
    import matplotlib.pyplot as plt
    t = advice.trials
    fig, axes = plt.subplots(1, len(knobs), figsize=(4.5 * len(knobs), 3.4), squeeze=False)
    for ax, k in zip(axes[0], knobs):
        x = t[k.key].astype(str) if k.choices else t[k.key].astype(float)
        ax.errorbar(x, t["mean"], yerr=t["sd"], fmt="o", ms=4, alpha=0.7)
        if not k.choices and k.log:
            ax.set_xscale("log")
        ax.axvline(advice.best[k.key] if not k.choices else str(advice.best[k.key]), color="C2",
                   ls="--", lw=1, label="best")
        if k.key == "training.checkpoint_interval" and advice.young_daly:
            young, daly = advice.young_daly
            ax.axvline(young, color="C1", ls=":", lw=1, label=f"Young {young:,.0f} s")
            ax.axvline(daly, color="C4", ls="-.", lw=1, label=f"Daly {daly:,.0f} s")
        ax.set_xlabel(k.key)
        ax.set_ylabel(f"{objective} (mean over seeds, ±1 sd)")
        ax.legend(loc="best", fontsize=8)
    return _png(fig)


def _pareto(advice, found) -> bytes:
    import matplotlib.pyplot as plt
    t = advice.trials
    fig, axes = plt.subplots(1, len(found), figsize=(4.8 * len(found), 3.6), squeeze=False)
    good = t["goodput"].to_numpy(float)
    for ax, (key, label, cost, front) in zip(axes[0], found):
        ax.scatter(cost[~front], good[~front], s=16, color="0.6", label="candidates")
        order = np.argsort(cost[front])
        ax.plot(cost[front][order], good[front][order], "o-", color="C0", ms=5,
                label="the front: no candidate costs less and gives more")
        base = advice.baseline.get(key)
        if base is not None:
            ax.axvline(COSTS[key][1](float(base)), color="C3", ls=":", lw=1, label="current")
        ax.axvline(COSTS[key][1](float(advice.best[key])), color="C2", ls="--", lw=1, label="best")
        ax.set_xlabel(label)
        ax.set_ylabel("goodput (mean over seeds)")
        ax.legend(loc="best", fontsize=7)
    return _png(fig)


def write(advice, out, title: str, objective: str, knobs, elapsed_s: float) -> None:
    """advice.md and advice.html, sensitivity.png, pareto.png (when a searched setting is a
    cost), trials.csv, and recommended.yaml, ready to `rdzv-sim run`; into `out`."""
    import matplotlib
    matplotlib.use("Agg")
    import yaml
    out = Path(out)
    t = advice.trials
    figures = {"sensitivity": _sensitivity(advice, knobs, objective)}
    found = fronts(t, [k.key for k in knobs])
    if found:
        figures["pareto"] = _pareto(advice, found)
    for name, png in figures.items():
        (out / f"{name}.png").write_bytes(png)
    t.to_csv(out / "trials.csv", index=False)
    (out / "recommended.yaml").write_text(yaml.safe_dump(advice.recommended, sort_keys=False))
    (out / "scenario.yaml").write_text(yaml.safe_dump(advice.given, sort_keys=False))
    cols = [k.key for k in knobs] + ["mean", "sd"] + (["goodput"] if objective != "goodput" else [])
    table = [cols] + [[show(r[c]) for c in cols] for _, r in t.head(10).iterrows()]
    intro = (f"Objective: {OBJECTIVES[objective]}. {len(t)} candidates, "
             f"{len([c for c in t.columns if c.startswith('seed_')])} paired seeds each, searched "
             f"with Optuna's TPE sampler in {elapsed_s:,.0f} s.")
    front_lines = []
    for key, label, cost, front in found:
        rows = sorted(zip(cost[front], t["goodput"].to_numpy(float)[front], t[key][front]))
        front_lines.append(f"Goodput against {label}: the candidates no other beats on both, "
                           "cheapest first: " + "; ".join(
                               f"{key} = {show(v.item() if hasattr(v, 'item') else v)} "
                               f"({c:,.3g}): {g:.4f}" for c, g, v in rows) + ".")
    sections = [("The answer", advice.lines, None),
                ("The top candidates", None, table),
                ("What each setting does", [], "sensitivity")]
    if found:
        sections.append(("Goodput against what it costs", front_lines, "pareto"))
    md = [f"# {title}", "", intro, ""]
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
         "<style>body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}</style>"
         f"</head><body><h1>{html.escape(title)}</h1><p>{html.escape(intro)}</p>"]
    for heading, lines, extra in sections:
        md += [f"## {heading}", ""] + [line + "\n" for line in lines or []]
        h += [f"<h2>{html.escape(heading)}</h2>"] + [f"<p>{html.escape(x)}</p>" for x in lines or []]
        if isinstance(extra, list):
            md += ["| " + " | ".join(extra[0]) + " |", "|" + "---|" * len(extra[0])]
            md += ["| " + " | ".join(r) + " |" for r in extra[1:]] + [""]
            h.append("<table>" + "".join(
                "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in r) + "</tr>"
                for tag, r in [("th", extra[0])] + [("td", r) for r in extra[1:]]) + "</table>")
        elif extra:
            md += [f"![{extra}]({extra}.png)", ""]
            h.append(f"<img alt='{extra}' src='data:image/png;base64,"
                     f"{base64.b64encode(figures[extra]).decode()}'>")
    note = "`recommended.yaml` is the scenario with the best settings: `rdzv-sim run recommended.yaml`."
    md += [note, ""]
    h.append("<p><code>recommended.yaml</code> is the scenario with the best settings: "
             "<code>rdzv-sim run recommended.yaml</code>.</p></body></html>")
    (out / "advice.md").write_text("\n".join(md))
    (out / "advice.html").write_text("\n".join(h))
