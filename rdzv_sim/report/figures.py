"""The report's plots, from the trace tables only (so they work for any runtime).

Large clusters are aggregated (counts over time instead of one line per node), so a report of
10,000 nodes stays readable and small.
"""
from __future__ import annotations

import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..trace import label_codes  # noqa: E402
from ..events import Event

PER_NODE_LIMIT = 64          # above this many nodes the timeline is aggregated
DPI = 80


TIME_UNITS = ((120, 1.0, "s"), (7200, 60.0, "min"), (2 * 86400, 3600.0, "h"), (math.inf, 86400.0, "days"))


def time_axis(ax, duration: float, what: str = "time") -> str:
    """Label the x axis (seconds of simulated time) in the unit that fits the run, as the
    report's sentences do (s, min, h, days), with ticks on round numbers of that unit."""
    from matplotlib.ticker import FuncFormatter, MultipleLocator
    _, scale, unit = next(u for u in TIME_UNITS if duration < u[0])
    span_u = max(duration / scale, 1e-9)
    raw = span_u / 8
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    ax.xaxis.set_major_locator(MultipleLocator(step * scale))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / scale:g}"))
    ax.set_xlabel(f"{what} ({unit})")
    return unit


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


SPAN_EVENTS = (Event.NODE_START, Event.WORKERS_STARTED, Event.ROUND_LEFT, Event.FAULT_CRASH, Event.AGENT_EXIT)
_KIND = {"node_start": 0, "workers_started": 1, "round_left": 2, "fault_crash": 3, "agent_exit": 3}


def host_spans(events: pd.DataFrame, end: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """When each host was up (node, t0, t1) and when its workers ran (node, t0, t1, round).

    A host is up from a `node_start` (the first since it was last down) to a crash or its
    agent's exit; its workers run from `workers_started` to the next `round_left`, crash or exit
    (a second start before a stop replaces the first). What is still open ends at `end`. One
    numpy pass over the hosts' events sorted by host, whatever their number."""
    codes, names = label_codes(events["node"])           # the table's own codes: no copy of rows
    ev_codes, ev_names = label_codes(events["event"])
    kind = np.array([_KIND.get(e, -1) for e in ev_names], dtype=np.int8)[ev_codes]
    pos = np.flatnonzero(kind >= 0)                      # the hosts' span events
    codes, kind = codes[pos], kind[pos]
    t = events["t"].to_numpy(dtype=float)[pos]
    rnd = events["round"].array[pos]
    order = np.argsort(codes, kind="stable")             # by host, in event order within one
    if len(order) < 2 ** 31:
        order = order.astype(np.int32)                   # millions: half the bytes of each pick

    def neighbours(sel):
        n_, k_ = codes[sel], kind[sel]
        same = n_[1:] == n_[:-1]
        return k_, np.r_[same, False], np.r_[False, same]

    # workers: a start is closed by the next of its host's run events if that is a stop
    sel = order[kind[order] != 0]
    k_, next_same, _ = neighbours(sel)
    first = np.flatnonzero(k_ == 1)
    nxt = np.minimum(first + 1, max(len(sel) - 1, 0))
    closed = next_same[first] & (k_[nxt] >= 2)
    keep = closed | ~next_same[first]
    i0 = sel[first[keep]]
    run = pd.DataFrame({"node": pd.Categorical.from_codes(codes[i0], names), "t0": t[i0],
                        "t1": np.where(closed[keep], t[sel[nxt[keep]]], end),
                        "round": rnd[i0]})
    del sel, k_, next_same, first, nxt, closed, keep, i0, rnd
    # up: a node_start opens unless its host is up (the row before it is a node_start);
    # a crash or exit closes a host that is up, at the span its first node_start opened
    sel = order[kind[order] != 1]
    sel = sel[kind[sel] != 2]
    k_, next_same, prev_same = neighbours(sel)
    idx = np.arange(len(sel), dtype=sel.dtype)
    prev_start = prev_same & (np.r_[-1, k_[:-1]] == 0)
    opener = np.maximum.accumulate(np.where((k_ == 0) & ~prev_start, idx, -1)) if len(sel) else idx
    shut = np.flatnonzero((k_ == 3) & prev_start)
    still = np.flatnonzero(~next_same & (k_ == 0))
    o = np.concatenate([opener[shut], opener[still]])
    up = pd.DataFrame({"node": pd.Categorical.from_codes(codes[sel[o]], names), "t0": t[sel[o]],
                       "t1": np.concatenate([t[sel[shut]], np.full(len(still), float(end))])})
    return up, run


def intervals(events: pd.DataFrame, end: float):
    """Per node: (start, stop) spans when its host was up, and (start, stop, round) spans when
    its workers ran (`host_spans`, as lists)."""
    up_df, run_df = host_spans(events, end)
    up, run = {}, {}
    for node, t0, t1 in zip(up_df["node"], up_df["t0"], up_df["t1"]):
        up.setdefault(node, []).append((t0, t1))
    for node, t0, t1, r in zip(run_df["node"], run_df["t0"], run_df["t1"], run_df["round"]):
        run.setdefault(node, []).append((t0, t1, r))
    return up, run


def _steps(starts, stops, weights, end: float):
    """Step function of the weights of the open spans; the changes at one instant are summed
    first, so a span that ends where another starts (or one of zero length) makes no spike."""
    if not len(starts):
        return np.array([0.0, end]), np.array([0, 0])
    weights = np.asarray(weights)
    # summed per distinct time by hashing, not by sorting every span's ends: a round's hosts
    # start and leave together, so a frontier run has millions of ends and few distinct times
    at = np.concatenate([np.asarray(starts, dtype=float), np.asarray(stops, dtype=float)])
    by_time = pd.Series(np.concatenate([weights, -weights])).groupby(at, sort=True).sum()
    times, delta = by_time.index.to_numpy(dtype=float), by_time.to_numpy()
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


def _marks(ax, xs, **style) -> None:
    """Vertical lines at `xs` over the whole height: one artist however many."""
    xs = np.asarray(xs, dtype=float)
    if len(xs):
        ax.vlines(xs, 0, 1, transform=ax.get_xaxis_transform(), **style)


def _open_over_time(df: pd.DataFrame, end: float):
    """Step function of how many of `host_spans`' rows are open."""
    return _steps(df["t0"], df["t1"], np.ones(len(df), dtype=np.int64), end)


def timeline(events: pd.DataFrame, rounds: pd.DataFrame, duration: float, nodes: int) -> bytes:
    fig, ax = plt.subplots(figsize=(10, 3.6))
    faults = _faults(events)
    if nodes <= PER_NODE_LIMIT:
        up, run = intervals(events, duration)
        names = sorted(set(up) | set(run) | set(events.loc[events["event"] == Event.NODE_START, "node"]))
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
        up, run = host_spans(events, duration)
        t, c = _open_over_time(up, duration)
        ax.step(t, c, where="post", color="#888888", label="hosts up")
        t, c = _open_over_time(run, duration)
        ax.step(t, c, where="post", color="tab:blue", label="hosts running a round")
        ax.set_ylabel("hosts")
        _marks(ax, faults["t"].unique()[:500], color="red", alpha=0.3, lw=0.8)
    _marks(ax, rounds.get("end", pd.Series(dtype=float)), color="green", alpha=0.25, lw=0.8)
    ax.set_xlim(0, duration)
    time_axis(ax, duration)
    ax.set_title("Timeline: hosts, rounds (green lines: round complete), faults (red)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


LATENCY_SAMPLE = 200_000      # node-rounds a latency histogram reads at most


def latency(events: pd.DataFrame, summary: pd.DataFrame | None = None) -> bytes:
    """The histogram of node latencies; a frontier run has millions, so an evenly spaced
    sample of `LATENCY_SAMPLE` draws it, and its p50 and p99 lines are the summary's (all)."""
    from ..trace.details import latencies
    rows = np.flatnonzero((events["event"] == Event.RANK_ASSIGNED).to_numpy())
    step = -(-len(rows) // LATENCY_SAMPLE) if len(rows) else 1
    mask = np.zeros(len(events), dtype=bool)
    mask[rows[::step]] = True
    lat = latencies(events, mask)
    lat = lat[np.isfinite(lat)]
    whole = {}
    if summary is not None and len(summary):
        whole = {q: float(summary[f"rdzv_latency_p{q}"].iloc[0]) for q in (50, 99)
                 if f"rdzv_latency_p{q}" in summary}
    fig, ax = plt.subplots(figsize=(10, 3))
    if len(lat):
        ax.hist(lat, bins=min(60, max(10, len(lat) // 5)), color="tab:purple")
        for q, style in ((50, "-"), (99, "--")):
            v = whole.get(q, math.nan)
            v = v if math.isfinite(v) else np.percentile(lat, q)
            ax.axvline(v, color="black", ls=style, lw=1, label=f"p{q} = {v:.3g} s")
        ax.legend(fontsize=8)
    sampled = f" (a sample: one in {step} of {len(rows):,})" if step > 1 else ""
    ax.set_xlabel("rendezvous latency per node: join started -> rank known (s)")
    ax.set_ylabel(f"node-rounds{sampled}")
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
    time_axis(ax, duration)
    ax.set_ylabel("store operations/s")
    ax.set_title("Store operations over time (background polling and heartbeats not included)")
    return _png(fig)


BARS_LIMIT = 60               # above this many bars a series is drawn as one filled step


def _bars(ax, x, heights, width: float, bottom=0.0, fill: bool = True, **style) -> None:
    """Bars at `x`, or, when there are many, one step of the same heights (filled, unless
    series overlap): a patch per bar costs matplotlib milliseconds, a long run has thousands."""
    heights = np.asarray(heights, dtype=float)
    if len(heights) <= BARS_LIMIT:
        ax.bar(x, heights, width=width, bottom=bottom, **style)
        return
    x = np.asarray(x, dtype=float)
    edges = np.r_[x - width / 2, x[-1] + width / 2]
    base = np.broadcast_to(np.asarray(bottom, dtype=float), heights.shape)
    ax.stairs(base + heights, edges, baseline=base, fill=fill, **style)


def shards(rounds: pd.DataFrame) -> bytes:
    marks = ("shards_moved_fair_share", "shards_moved_needed")
    cols = [c for c in rounds.columns if c.startswith("shards_moved_") and c not in marks]
    fig, ax = plt.subplots(figsize=(10, 3))
    if len(rounds) and cols:
        x = np.arange(len(rounds))
        w = 0.8 / len(cols)
        for i, c in enumerate(cols):
            _bars(ax, x + i * w, rounds[c], w, fill=len(cols) == 1,
                  label=c.removeprefix("shards_moved_"))
        if "shards_moved_fair_share" in rounds:
            ax.hlines(rounds["shards_moved_fair_share"], x - 0.5 * w, x + 0.8 - 0.5 * w,
                      color="black", lw=2, label="balanced share")
        if "shards_moved_needed" in rounds:
            ax.hlines(rounds["shards_moved_needed"], x - 0.5 * w, x + 0.8 - 0.5 * w, color="tab:red",
                      lw=1.5, ls="--", label="needed (owner left or a newcomer's)")
        if len(rounds) <= BARS_LIMIT:
            ax.set_xticks(x + 0.4 - 0.5 * w, [str(r) for r in rounds["round"]], fontsize=7)
        ax.legend(fontsize=8)
    ax.set_xlabel("round" if len(rounds) <= BARS_LIMIT else "completed round, in order")
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
    time_axis(ax, duration)
    ax.set_ylabel("fraction")
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


PER_INTERRUPTION = 30        # more interruptions than this: a bar per cause, not per interruption


def span_of(t: float) -> str:
    from .answer import span
    return f"at {span(t)}"


def interruptions(table: pd.DataFrame | None) -> bytes:
    """Where the lost time went, per interruption, stacked."""
    fig, ax = plt.subplots(figsize=(10, 3))
    parts = ["detection_s", "rendezvous_s", "restart_in_place_s", "worker_start_s", "checkpoint_load_s",
             "recompute_s", "running_smaller_s"]
    if table is not None and len(table):
        parts = [p for p in parts if p in table.columns]      # (a table saved before a column)
        many = len(table) > PER_INTERRUPTION
        if many:                                   # a long run: each cause's seconds, summed
            by = table.groupby("cause")[parts].sum()
            by = by.loc[by.sum(axis=1).sort_values(ascending=False).index[:PER_INTERRUPTION]]
            labels = [f"{c}\n({n:,})" for c, n in zip(by.index, table["cause"].value_counts()[by.index])]
        else:
            by, labels = table[parts], [f"{c}\n{span_of(t)}" for c, t in zip(table["cause"], table["t"])]
        x = np.arange(len(by))
        bottom = np.zeros(len(by))
        for p in parts:
            v = by[p].to_numpy(dtype=float)
            _bars(ax, x, v, 0.8, bottom=bottom.copy(), label=p.removesuffix("_s").replace("_", " "))
            bottom += v
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_xlabel("cause (interruptions of it), seconds summed" if many
                      else "interruption (cause, when training stopped)")
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
        "latency": latency(ev, tables.get("summary")),
        "store_load": store_load(tables.get("store_load"), duration),
        "shards": shards(rounds),
        "goodput": goodput(ev, rounds, duration, nodes),
        "interruptions": interruptions(tables.get("interruptions")),
    }


def overlay(runs: dict[str, pd.DataFrame], duration: float) -> bytes:
    """Hosts running a round over time, one line per trace (e.g. simulated and real)."""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for (label, ev), colour in zip(runs.items(), ("tab:blue", "tab:red", "tab:green")):
        t, c = _open_over_time(host_spans(ev, duration)[1], duration)
        ax.step(t, c, where="post", color=colour, label=f"{label}: hosts running a round")
        done = ev[ev["event"] == Event.RANK_ASSIGNED].groupby("round")["t"].max()
        ax.scatter(done.values, np.zeros(len(done)) - 0.15, marker="^", color=colour, s=25)
    ax.set_xlim(0, duration)
    unit = time_axis(ax, duration)
    ax.set_xlabel(f"time ({unit})  (triangles: rounds complete)")
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
