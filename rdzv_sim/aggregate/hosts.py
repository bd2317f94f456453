"""`HostCodes`: the job's hosts as integer codes, so that a round's work is array work.

A frontier round has 10^4 members; a Python pass over their names costs milliseconds, and a
round made dozens of them. Codes follow the hosts' names in sorted order, so ordering by code
is ordering by name (a round's tie-breaker, and the closed round's member list).
"""
from __future__ import annotations

import numpy as np


class HostList(list):
    """Host names that carry their codes: what the job hands its round model, so that the
    model reads the codes without looking each name up. Still a plain list of names to a
    model that does not know them; a changed copy is a plain list."""

    def __init__(self, names, codes: np.ndarray):
        super().__init__(names)
        self.codes = np.asarray(codes, dtype=np.intp)

    def remove(self, name) -> None:
        i = self.index(name)
        del self[i]
        self.codes = np.delete(self.codes, i)


class HostCodes:
    def __init__(self, names, latency: dict, infos: dict, trace):
        order = sorted(names)
        self.code = {h: i for i, h in enumerate(order)}
        self.names = np.empty(len(order), dtype=object)
        self.names[:] = order
        self.lat = np.array([float(latency[h]) for h in order])
        self.infos = np.empty(len(order), dtype=object)
        self.infos[:] = [infos[h] for h in order]
        self.trace = trace
        self._traced = np.full(len(order), -1, dtype=np.int64)    # code -> the trace's code

    def __len__(self) -> int:
        return len(self.names)

    def of(self, names) -> np.ndarray:
        """The codes of `names` (one pass, none for a `HostList`)."""
        if isinstance(names, HostList) and len(names.codes) == len(names):
            return names.codes
        return np.fromiter(map(self.code.__getitem__, names), np.intp, len(names))

    def named(self, codes: np.ndarray) -> HostList:
        return HostList(self.names[codes].tolist(), codes)

    def traced(self, codes: np.ndarray) -> np.ndarray:
        """The trace's codes of these hosts; hosts it has not seen get theirs in this order,
        as `Tracer.codes(names)` would give them."""
        tc = self._traced[codes]
        if (tc < 0).any():
            self._traced[codes] = self.trace.codes(self.names[codes].tolist())
            tc = self._traced[codes]
        return tc.astype(np.int32)
