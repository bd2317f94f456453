"""When each round trained, with whom, and what ended it: read from the events table."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..trace import label_codes, runs
from ..trace.columns import asof_by

# events that end a member's training: it left the round, crashed, paused or its agent exited
STOPS = ("round_left", "fault_crash", "agent_exit", "fault_pause")
COLUMNS = ["round", "t0", "t1", "hosts", "members", "end", "reason", "crashed"]


def _next_stop(node: np.ndarray, t0: np.ndarray, stop_node: np.ndarray, stop_t: np.ndarray) -> np.ndarray:
    """For each (node, t0): the index of its node's first stop at or after t0, -1 if none
    (`asof_by`, forward: of stops tied in time, the first in event order)."""
    return asof_by(node, t0, stop_node, stop_t, forward=True)


def _round_max(rnd: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Each row's round's largest `t` (a groupby's transform("max"), without its frames)."""
    low = int(rnd.min()) if len(rnd) else 0
    top = np.full(int(rnd.max()) - low + 1 if len(rnd) else 0, -np.inf)
    np.maximum.at(top, rnd - low, t)
    return top[rnd - low]


def round_spans(events: pd.DataFrame, duration: float) -> pd.DataFrame:
    """One row per round that trained: from its last member's workers starting (`t0`) to its
    first member leaving, crashing, pausing or exiting (`t1`: a hung collective trains
    nothing), its members in rank order, what ended it (`end`: the stop event, or `run_end`;
    `reason`: round_left's reason or the crash's cause) and the members that crashed at `t1`.

    One as-of join of (member, round start) against each node's next stop event, so the cost
    follows the number of events, not rounds x events."""
    ev = events
    is_start = (ev["event"] == "workers_started").to_numpy()
    if not is_start.any():
        return pd.DataFrame(columns=COLUMNS)
    node_all, labels = label_codes(ev["node"])
    ev_codes, kinds = label_codes(ev["event"])
    at = np.flatnonzero(is_start)
    del is_start
    rnd = ev["round"].iloc[at].to_numpy(dtype=np.int64, na_value=-1)
    rank = ev["rank"].iloc[at].to_numpy(dtype=np.int32, na_value=-1)
    t_all = ev["t"].to_numpy(dtype=float)
    t0s = _round_max(rnd, t_all[at])               # the round trains once its last member does
    who = node_all[at]
    del at
    # the stops' details stay in the events table (a long run has millions): each row's
    # position is carried, and only the few that end a round are read
    row_all = np.flatnonzero(np.isin(ev_codes, [i for i, k in enumerate(kinds) if k in STOPS]))
    row = _next_stop(who, t0s, node_all[row_all], t_all[row_all])
    if len(row_all):
        found = row >= 0
        row[found] = row_all[row[found]]
    del row_all
    # each round's members in rank order, then one pass of numpy per round (no groupby frames)
    by = np.lexsort((rank, rnd))
    rnd, t0s, row, who = rnd[by], t0s[by], row[by], who[by]
    found = row >= 0
    stop = np.where(found, ev["t"].to_numpy(dtype=float)[np.maximum(row, 0)], np.nan)
    nodes = labels[who]
    what = np.where(found, kinds[ev_codes[np.maximum(row, 0)]], None)
    row = np.where(found, row, np.nan)
    details = ev["detail"]
    rows = []
    for s, e in runs(rnd):
        t0_ = float(t0s[s:e].max())
        st = stop[s:e]
        if np.isnan(st).all() or float(np.nanmin(st)) >= duration:
            t1, end, reason, crashed = duration, "run_end", "", ()
        else:
            t1 = float(np.nanmin(st))
            first = (s + np.flatnonzero(st == t1)).tolist()         # in rank order
            crashed = tuple(nodes[j] for j in first if what[j] == "fault_crash")
            # a crash names the cause; else the first stop's own reason
            pick = next(j for j in first if what[j] == "fault_crash") if crashed else first[0]
            end = str(what[pick])
            text = details.iat[int(row[pick])]
            d = json.loads(text) if isinstance(text, str) and text else {}
            reason = str(d.get("cause", d.get("reason", "")))
        if t1 <= t0_:
            continue
        rows.append({"round": int(rnd[s]), "t0": t0_, "t1": t1, "hosts": e - s,
                     "members": tuple(nodes[s:e].tolist()), "end": end, "reason": reason,
                     "crashed": crashed})
    return pd.DataFrame(rows, columns=COLUMNS)
