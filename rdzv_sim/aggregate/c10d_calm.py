"""A stalled c10d race, carried forward instead of stepped.

Past a few hundred agents the race can lock into a cycle in which only keep-alives are written:
every participant's keep-alive comes back, in the store's first-in first-out order, just ahead
of the joiners', and the joiners never win (reports/c10d_aggregate.md shows the per-operation
model doing the same). With a join timeout of a day, stepping that cycle costs minutes of wall
time and tells nothing new. `Calm` watches for it: once nothing but keep-alives has been
written for `CALM` simulated seconds, the race is taken to go on as it did, at the request
rates of the second half of that stretch, until the next thing that can end it: an agent's
join deadline, a dead node's heartbeat expiring, or anything from outside (a crash, a start),
which calls the race at its own time. Carrying forward is a translation in time of every
pending request, timer, read and heartbeat, so the cycle resumes where it was.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

CALM = 300.0          # seconds of keep-alives only before the race is carried forward
MARGIN = 60.0         # stepped again this long before a deadline or an expiry
ABSOLUTE = ("deadline", "expire")   # timers that stay where they are


class Calm:
    def __init__(self, race):
        self.race = race
        self.since = 0.0                  # the last write that was not a keep-alive
        self.mark = None                  # (time, attempts, ops, bytes, per-agent attempts)

    def progress(self, t: float) -> None:
        """Something other than a keep-alive happened at `t`."""
        self.since, self.mark = max(self.since, t), None

    def wrote(self, t: float) -> None:
        """A keep-alive was written at `t`: halfway into a calm stretch, mark the counts."""
        r = self.race
        if self.mark is None and t - self.since >= CALM / 2:
            self.mark = (t, r.attempts, r.ops, r.bytes, r.cas.copy())

    def until(self, now: float) -> float | None:
        """How far the race may be carried forward from `now` (None: not calm, step it)."""
        if self.mark is None or now - self.since < CALM or now <= self.mark[0]:
            return None
        r = self.race
        ends = [r.deadline[i] for i in range(len(r.desc)) if r.op[i]]
        ends += [t for t, _, kind, _, _ in r.timers if kind == "expire"]
        end = min(ends, default=math.inf) - MARGIN
        return end if end > now else None

    def carry(self, now: float, to: float) -> None:
        """Carry the race from `now` to `to` as it went over the marked stretch."""
        r = self.race
        t0, a0, o0, b0, c0 = self.mark
        k = (to - now) / (now - t0)
        da, do, db = (round((x - x0) * k) for x, x0 in ((r.attempts, a0), (r.ops, o0), (r.bytes, b0)))
        dc = np.rint((r.cas - c0) * k).astype(r.cas.dtype)
        r.attempts, r.ops, r.bytes = r.attempts + da, r.ops + do, r.bytes + db
        r.cas += dc
        d = to - now
        fin = r.pend_t < math.inf
        r.pend_t[fin] += d
        r.timers = [(t if kind in ABSOLUTE else t + d, s, kind, i, g) for t, s, kind, i, g in r.timers]
        heapq.heapify(r.timers)
        r.last_sync = [x + d for x in r.last_sync]
        r.hb_start = [x + d for x in r.hb_start]
        r.free_at += d
        r.last_win += d
        hb = r.st.last_heartbeats
        for n in hb:
            if n not in r.dead:
                hb[n] += d
        r._plan = None
        self.since += d                   # still calm; the same stretch, moved along
        self.mark = (t0 + d, a0 + da, o0 + do, b0 + db, c0 + dc)
