"""When each round trained, with whom, and what ended it: read from the events table."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..trace import as_objects, runs

# events that end a member's training: it left the round, crashed, paused or its agent exited
STOPS = ("round_left", "fault_crash", "agent_exit", "fault_pause")
COLUMNS = ["round", "t0", "t1", "hosts", "members", "end", "reason", "crashed"]


def round_spans(events: pd.DataFrame, duration: float) -> pd.DataFrame:
    """One row per round that trained: from its last member's workers starting (`t0`) to its
    first member leaving, crashing, pausing or exiting (`t1`: a hung collective trains
    nothing), its members in rank order, what ended it (`end`: the stop event, or `run_end`;
    `reason`: round_left's reason or the crash's cause) and the members that crashed at `t1`.

    One as-of join of (member, round start) against each node's next stop event, so the cost
    follows the number of events, not rounds x events."""
    ev = events
    started = ev.loc[ev["event"] == "workers_started", ["t", "node", "round", "rank"]]
    if started.empty:
        return pd.DataFrame(columns=COLUMNS)
    t0 = started.groupby("round")["t"].transform("max")
    pairs = pd.DataFrame({"node": started["node"].array, "round": started["round"].to_numpy(),
                          "rank": started["rank"].to_numpy(), "t0": t0.to_numpy()})
    pairs = pairs.sort_values("t0", kind="stable")
    # the stops' details stay in the events table (a long run has millions): each row's
    # position is carried, and only the few that end a round are read
    is_stop = ev["event"].isin(STOPS).to_numpy()
    stops = ev.loc[is_stop, ["t", "node", "event"]]
    stops = stops.rename(columns={"t": "stop", "event": "stop_event"})
    stops = stops.assign(key=stops["stop"], row=np.flatnonzero(is_stop)).sort_values("stop", kind="stable")
    m = pd.merge_asof(pairs, stops, left_on="t0", right_on="key", by="node", direction="forward",
                      allow_exact_matches=True)
    # each round's members in rank order, then one pass of numpy per round (no groupby frames)
    m = m.sort_values(["round", "rank"], kind="stable")
    rnd = m["round"].to_numpy(dtype=np.int64)
    t0s = m["t0"].to_numpy(dtype=float)
    stop = m["stop"].to_numpy(dtype=float, na_value=np.nan)
    nodes = as_objects(m["node"])
    what = as_objects(m["stop_event"])
    row = m["row"].to_numpy(dtype=float, na_value=np.nan)
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
