"""The report's plots, from the trace tables only (so they work for any runtime).

Large clusters are aggregated (counts over time instead of one line per node), so a report of
10,000 nodes stays readable and small.
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

PER_NODE_LIMIT = 64          # above this many nodes the timeline is aggregated
DPI = 80


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


SPAN_EVENTS = ("node_start", "workers_started", "round_left", "fault_crash", "agent_exit")


def intervals(events: pd.DataFrame, end: float):
    """Per node: (start, stop) spans when its host was up, and (start, stop, round) spans when
    its workers ran. Row order is event order."""
    up, run = {}, {}
    open_up, open_run = {}, {}
    ev_ = events.loc[events["event"].isin(SPAN_EVENTS).to_numpy()]      # the few that matter,
    cols = (ev_["t"].to_numpy(dtype=float).tolist(), ev_["node"].to_numpy(dtype=object).tolist(),
            ev_["event"].to_numpy(dtype=object).tolist(), ev_["round"].to_numpy(dtype=object).tolist())
    for t, node, ev, rnd in zip(*cols):                                  # as plain Python values
        if ev == "node_start":
            open_up.setdefault(node, t)
        elif ev == "workers_started":
            open_run[node] = (t, rnd)
        elif ev in ("round_left", "fault_crash", "agent_exit"):
            if node in open_run:
                s, r = open_run.pop(node)
                run.setdefault(node, []).append((s, t, r))
            if ev != "round_left" and node in open_up:
                up.setdefault(node, []).append((open_up.pop(node), t))
    for node, s in open_up.items():
        up.setdefault(node, []).append((s, end))
    for node, (s, r) in open_run.items():
        run.setdefault(node, []).append((s, end, r))
    return up, run


def _count_over_time(spans: dict, end: float):
    """Step function of how many spans are open."""
    starts = [s[0] for lst in spans.values() for s in lst]
    stops = [s[1] for lst in spans.values() for s in lst]
    return _steps(starts, stops, np.ones(len(starts), dtype=np.int64), end)


def _steps(starts, stops, weights, end: float):
    """Step function of the weights of the open spans; the changes at one instant are summed
    first, so a span that ends where another starts (or one of zero length) makes no spike."""
    if not len(starts):
        return np.array([0.0, end]), np.array([0, 0])
    times, inverse = np.unique(np.concatenate([np.asarray(starts, dtype=float),
                                               np.asarray(stops, dtype=float)]), return_inverse=True)
    weights = np.asarray(weights)
    delta = np.zeros(len(times), dtype=weights.dtype)
    np.add.at(delta, inverse, np.concatenate([weights, -weights]))
    t = np.concatenate([[0.0], times, [end]])
    c = np.concatenate([[0], np.cumsum(delta), [0]])
    c[-1] = c[-2]
    return t, c


def training_curve(rounds: pd.DataFrame, duration: float, points: int = 400):
    """(t, cumulative goodput, cumulative ettr) from the rounds table's training columns: each
    round's share credited evenly over the time it trained, so both end at the summary's."""
    t = np.linspace(0.0, duration, points)
    g, e = np.zeros_like(t), np.zeros_like(t)
    if "train_s" in rounds:
        done = rounds[rounds["train_end"] > rounds["train_start"]]
        for t0, t1, ettr, good in zip(done["train_start"], done["train_end"], done["ettr"], done["goodput"]):
            frac = np.clip((t - t0) / (t1 - t0), 0.0, 1.0)
            e += frac * ettr * duration
            g += frac * good * duration
    with np.errstate(invalid="ignore", divide="ignore"):
        return t, np.where(t > 0, g / t, 0.0), np.where(t > 0, e / t, 0.0)


def _faults(events: pd.DataFrame) -> pd.DataFrame:
    return events[events["event"].str.startswith("fault_")]


def timeline(events: pd.DataFrame, rounds: pd.DataFrame, duration: float, nodes: int) -> bytes:
    up, run = intervals(events, duration)
    fig, ax = plt.subplots(figsize=(10, 3.6))
    faults = _faults(events)
    if nodes <= PER_NODE_LIMIT:
        names = sorted(set(up) | set(run) | set(events.loc[events["event"] == "node_start", "node"]))
        cmap = plt.get_cmap("tab10")
        for y, name in enumerate(names):
            ax.broken_barh([(s, e - s) for s, e in up.get(name, [])], (y - 0.4, 0.8),
                           facecolors="#dddddd")
            for s, e, r in run.get(name, []):
                ax.broken_barh([(s, e - s)], (y - 0.3, 0.6), facecolors=cmap(int(r) % 10))
        ax.set_yticks(range(len(names)), names, fontsize=7)
        rows = {n: i for i, n in enumerate(names)}
        f_nodes = faults[faults["node"].isin(rows)]
        ax.scatter(f_nodes["t"], [rows[n] for n in f_nodes["node"]], marker="x", color="red",
                   zorder=5, label="fault")
        ax.set_ylabel("host (grey: up; colour: round whose workers run)")
    else:
        t, c = _count_over_time(up, duration)
        ax.step(t, c, where="post", color="#888888", label="hosts up")
        t, c = _count_over_time(run, duration)
        ax.step(t, c, where="post", color="tab:blue", label="hosts running a round")
        ax.set_ylabel("hosts")
        for ft in faults["t"].unique()[:500]:
            ax.axvline(ft, color="red", alpha=0.3, lw=0.8)
    for end in rounds.get("end", pd.Series(dtype=float)):
        ax.axvline(end, color="green", alpha=0.25, lw=0.8)
    ax.set_xlim(0, duration)
    ax.set_xlabel("time (s)")
    ax.set_title("Timeline: hosts, rounds (green lines: round complete), faults (red)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def latency(events: pd.DataFrame) -> bytes:
    ra = events[events["event"] == "rank_assigned"]
    lat = pd.to_numeric(ra["detail"].str.extract(r'"latency":(-?[0-9.eE+-]+|NaN|-?Infinity)', expand=False),
                        errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    lat = lat[np.isfinite(lat)]
    fig, ax = plt.subplots(figsize=(10, 3))
    if len(lat):
        ax.hist(lat, bins=min(60, max(10, len(lat) // 5)), color="tab:purple")
        for q, style in ((50, "-"), (99, "--")):
            v = np.percentile(lat, q)
            ax.axvline(v, color="black", ls=style, lw=1, label=f"p{q} = {v:.3g} s")
        ax.legend(fontsize=8)
    ax.set_xlabel("rendezvous latency per node: join started -> rank known (s)")
    ax.set_ylabel("node-rounds")
    ax.set_title("Rendezvous latency distribution")
    return _png(fig)


def store_load(load: pd.DataFrame | None, duration: float) -> bytes:
    fig, ax = plt.subplots(figsize=(10, 3))
    if load is not None and len(load):
        ax.bar(load["t"], load["ops"] / load["bin_s"], width=load["bin_s"], align="edge",
               color="tab:orange", label="operations/s")
        ax2 = ax.twinx()
        ax2.scatter(load["t"] + load["bin_s"] / 2, load["bytes"] / load["bin_s"] / 1e3, s=6,
                    color="tab:gray", label="kB/s")
        ax2.set_ylabel("kB/s")
    ax.set_xlim(0, duration)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("store operations/s")
    ax.set_title("Store operations over time (background polling and heartbeats not included)")
    return _png(fig)


def shards(rounds: pd.DataFrame) -> bytes:
    marks = ("shards_moved_fair_share", "shards_moved_needed")
    cols = [c for c in rounds.columns if c.startswith("shards_moved_") and c not in marks]
    fig, ax = plt.subplots(figsize=(10, 3))
    if len(rounds) and cols:
        x = np.arange(len(rounds))
        w = 0.8 / len(cols)
        for i, c in enumerate(cols):
            ax.bar(x + i * w, rounds[c], width=w, label=c.removeprefix("shards_moved_"))
        if "shards_moved_fair_share" in rounds:
            ax.hlines(rounds["shards_moved_fair_share"], x - 0.5 * w, x + 0.8 - 0.5 * w,
                      color="black", lw=2, label="balanced share")
        if "shards_moved_needed" in rounds:
            ax.hlines(rounds["shards_moved_needed"], x - 0.5 * w, x + 0.8 - 0.5 * w, color="tab:red",
                      lw=1.5, ls="--", label="needed (owner left or a newcomer's)")
        ax.set_xticks(x + 0.4 - 0.5 * w, [str(r) for r in rounds["round"]], fontsize=7)
        ax.legend(fontsize=8)
    ax.set_xlabel("round")
    ax.set_ylabel("shards moved")
    ax.set_title("Shards moved per round, by placement policy")
    return _png(fig)


def goodput(events: pd.DataFrame, rounds: pd.DataFrame, duration: float, nodes: int) -> bytes:
    """With a training model: cumulative goodput and ETTR (they end at the summary's values);
    always: the share of hosts whose round trains (a hung collective trains nothing)."""
    fig, ax = plt.subplots(figsize=(10, 3))
    if "train_s" in rounds:
        done = rounds[rounds["train_end"] > rounds["train_start"]]
        t, c = _steps(done["train_start"], done["train_end"], done["hosts_used"].to_numpy(np.int64), duration)
        ax.step(t, c / max(1, nodes), where="post", color="tab:green", label="share of hosts training")
        tc, g, e = training_curve(rounds, duration)
        ax.plot(tc, g, color="black", lw=1.2, label=f"goodput (cumulative): {g[-1]:.3f}")
        ax.plot(tc, e, color="tab:blue", lw=1, ls="--", label=f"ettr (cumulative): {e[-1]:.3f}")
        ax.set_title("Training: goodput (capacity-weighted) and ETTR")
    else:
        from ..training.spans import round_spans
        sp = round_spans(events, duration)
        t, c = _steps(sp["t0"], sp["t1"], sp["hosts"].to_numpy(np.int64), duration)
        frac = c / max(1, nodes)
        ax.step(t, frac, where="post", color="tab:green", label="share of hosts training")
        ax.set_title("Training time: hosts whose round trains (no training model in the scenario)")
    ax.set_ylim(0, 1.05)
    ax.set_xlim(0, duration)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("fraction")
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def interruptions(table: pd.DataFrame | None) -> bytes:
    """Where the lost time went, per interruption, stacked."""
    fig, ax = plt.subplots(figsize=(10, 3))
    parts = ["detection_s", "rendezvous_s", "worker_start_s", "checkpoint_load_s", "recompute_s",
             "running_smaller_s"]
    if table is not None and len(table):
        x = np.arange(len(table))
        bottom = np.zeros(len(table))
        for p in parts:
            v = table[p].to_numpy(dtype=float)
            ax.bar(x, v, bottom=bottom, label=p.removesuffix("_s").replace("_", " "), width=0.8)
            bottom += v
        if len(table) <= 30:
            ax.set_xticks(x, [f"{c}\n{t:,.0f} s" for c, t in zip(table["cause"], table["t"])], fontsize=7)
        ax.set_xlabel("interruption (cause, when training stopped)")
        ax.legend(fontsize=7, ncol=3)
    else:
        ax.text(0.5, 0.5, "no interruptions (or no training model)", ha="center", transform=ax.transAxes)
    ax.set_ylabel("seconds lost")
    ax.set_title("Where the time went, per interruption")
    return _png(fig)


FIGURES = {
    "timeline": "Timeline of hosts and rounds",
    "latency": "Rendezvous latency distribution",
    "store_load": "Store operations over time",
    "shards": "Shards moved per round",
    "goodput": "Goodput and ETTR over time",
    "interruptions": "Where the time went, per interruption",
}


def all_figures(tables: dict, duration: float, nodes: int) -> dict[str, bytes]:
    ev, rounds = tables["events"], tables["rounds"]
    return {
        "timeline": timeline(ev, rounds, duration, nodes),
        "latency": latency(ev),
        "store_load": store_load(tables.get("store_load"), duration),
        "shards": shards(rounds),
        "goodput": goodput(ev, rounds, duration, nodes),
        "interruptions": interruptions(tables.get("interruptions")),
    }


def overlay(runs: dict[str, pd.DataFrame], duration: float) -> bytes:
    """Hosts running a round over time, one line per trace (e.g. simulated and real)."""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for (label, ev), colour in zip(runs.items(), ("tab:blue", "tab:red", "tab:green")):
        _, run = intervals(ev, duration)
        t, c = _count_over_time(run, duration)
        ax.step(t, c, where="post", color=colour, label=f"{label}: hosts running a round")
        done = ev[ev["event"] == "rank_assigned"].groupby("round")["t"].max()
        ax.scatter(done.values, np.zeros(len(done)) - 0.15, marker="^", color=colour, s=25)
    ax.set_xlim(0, duration)
    ax.set_xlabel("time (s)  (triangles: rounds complete)")
    ax.set_ylabel("hosts")
    ax.set_title("Simulated and real timelines, overlaid")
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


SWEEP_METRICS = ["rdzv_latency_p50", "rdzv_latency_p99", "round_latency_p50", "store_ops",
                 "store_bytes", "running_fraction", "ettr", "goodput"]


def sweep_metric(df: pd.DataFrame, keys: list[str], metric: str) -> bytes:
    """`metric` against the first grid key; one line per combination of the others (mean and
    range over seeds)."""
    fig, ax = plt.subplots(figsize=(7, 3))
    x = keys[0]
    groups = df.groupby(keys[1:], sort=True) if len(keys) > 1 else [((), df)]
    for label, g in groups:
        agg = g.groupby(x, sort=False)[metric].agg(["mean", "min", "max"])
        try:
            order, numeric = sorted(agg.index, key=float), True
        except ValueError:
            order, numeric = list(agg.index), False
        agg = agg.loc[order]
        xs = [str(v) for v in agg.index]
        name = ", ".join(f"{k}={v}" for k, v in zip(keys[1:], label if isinstance(label, tuple) else (label,)))
        # categories (protocol names, ...) are points, not a line through them
        ax.errorbar(xs, agg["mean"], yerr=[agg["mean"] - agg["min"], agg["max"] - agg["mean"]],
                    marker="o", capsize=3, ls="-" if numeric else "none", label=name or metric)
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} against {x} (mean, range over seeds)")
    if len(keys) > 1:
        ax.legend(fontsize=7)
    return _png(fig)
