"""The next write to a compare-and-set register behind a first-in first-out server.

Each client has at most one request pending: a compare-and-set carrying the version it last
saw, or a read. The server takes them in arrival order; a compare-and-set whose version is the
current one writes, every other request is answered with the current state, and its client
comes back `retry` seconds after the answer with that version (a read's client only if it
then writes). The next write is the first request, in arrival order, that carries the current
version: a pending one, or the retry of one served before it. Served in arrival order, the
requests before it are the ones that arrived before it, and their departures are Lindley's
recursion (`queue.departures`): one numpy pass, however many fail first.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .queue import departures

INF = np.inf


@dataclass
class Write:
    arrival: float             # of the winning request (inf: nothing will write)
    winner: int                # its client (-1: none)
    at: float                  # when it is served: the write (or, with no winner, the last read)
    served: np.ndarray         # the clients served before it, in order
    departures: np.ndarray     # ... and when each was served


def next_write(arrival: np.ndarray, version: np.ndarray, is_read: np.ndarray, retry: np.ndarray,
               current: int, free_at: float, s_cas: float, s_read: float, writes_after=None) -> Write:
    """`arrival`, `version`, `is_read`, `retry` per client (arrival inf: nothing pending; retry
    inf: it will not come back). `writes_after(client, departure)`: whether a read's client
    writes after its answer (default: it does)."""
    act = np.flatnonzero(arrival < INF)
    if not act.size:
        return Write(INF, -1, INF, act, act.astype(float))
    order = act[np.argsort(arrival[act], kind="stable")]
    a = arrival[order]
    read = is_read[order]
    dep = departures(a, np.where(read, s_read, s_cas), free_at)
    now = ~read & (version[order] == current)
    cand = np.where(now, a, dep + retry[order])
    while True:
        j = int(np.argmin(cand))
        a_star = float(cand[j])
        if a_star == INF or not read[j] or writes_after is None or writes_after(int(order[j]), float(dep[j])):
            break
        cand[j] = INF                         # a read whose client then waits: no candidate
    if a_star == INF:                         # nobody writes: the requests are just served
        return Write(INF, -1, float(dep[-1]), order, dep)
    k = j if now[j] else int(np.searchsorted(a, a_star, side="left"))
    begin = max(a_star, float(dep[k - 1]) if k > 0 else free_at)
    return Write(a_star, int(order[j]), begin + s_cas, order[:k], dep[:k])
