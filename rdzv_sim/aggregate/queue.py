"""The store as an aggregate FIFO queue: a whole batch of requests served in one numpy pass.

A FIFO server's departures follow Lindley's recursion d_i = max(a_i, d_{i-1}) + s_i; unrolled,
d_n = S_n + max_k (a_k - S_{k-1}) with S the running sum of service times, which numpy does
with one cumsum and one running maximum. `Fifo` keeps the server's `free_at` between batches,
so consecutive phases of a round (join, close, confirm) queue behind each other as they would
one request at a time.
"""
from __future__ import annotations

import numpy as np


def departures(arrivals: np.ndarray, service: np.ndarray, free_at: float) -> np.ndarray:
    """Lindley's recursion for requests in arrival order (`arrivals` ascending) with their
    service times, behind a server busy until `free_at`: each request's departure."""
    start = arrivals.copy()
    start[0] = max(start[0], free_at)                  # the queue left by earlier batches
    cum = np.cumsum(service)
    return cum + np.maximum.accumulate(start - (cum - service))      # S_n + max_k (a_k - S_{k-1})


class Fifo:
    """One FIFO server; `serve` takes arrival times (any order) and returns departures."""

    def __init__(self, store):
        self.store = store                 # the scenario's store section: its service model
        self.free_at = 0.0
        self.ops = 0
        self.bytes = 0

    def service(self, nbytes) -> np.ndarray | float:
        return self.store.service(nbytes)

    def serve(self, arrivals: np.ndarray, nbytes) -> np.ndarray:
        """Departure time of each request (in the caller's order); served in arrival order."""
        a = np.asarray(arrivals, dtype=float)
        if a.size == 0:
            return a
        if a.size == 1 and isinstance(nbytes, int):     # a lone request (a frontier round's
            t = max(float(a.flat[0]), self.free_at) + self.service(nbytes)   # joiners come
            self.free_at = t                            # one by one): Lindley's step, as below
            self.ops += 1
            self.bytes += nbytes
            return np.full(a.shape, t)
        order = np.argsort(a, kind="stable")
        if isinstance(nbytes, int):                     # one size for all (the usual batch)
            s = np.full(a.size, self.service(nbytes))
            self.bytes += nbytes * a.size
        else:
            s = np.broadcast_to(np.asarray(self.service(np.asarray(nbytes, dtype=float)), dtype=float),
                                a.shape)[order]
            self.bytes += int(np.sum(np.broadcast_to(np.asarray(nbytes), a.shape)))
        dep_sorted = departures(a[order], s, self.free_at)
        self.free_at = float(dep_sorted[-1])
        self.ops += a.size
        out = np.empty_like(dep_sorted)
        out[order] = dep_sorted
        return out

    def one(self, arrival: float, nbytes: int) -> float:
        """A single request (the closer's)."""
        start = max(arrival, self.free_at)
        self.free_at = start + self.service(nbytes)
        self.ops += 1
        self.bytes += nbytes
        return self.free_at
