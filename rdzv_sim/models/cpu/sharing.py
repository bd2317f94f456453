"""Cores shared by every simulated host (one-machine runs): egalitarian processor sharing.

While k jobs are on `cores` cores, each runs at min(1, cores / k) of a core, and the rates
change whenever a job starts or ends, as an OS scheduler time-slicing runnable processes would
give. One timer at a time: the next completion, rescheduled on every change (a timer made
stale by a change is recognised by its generation and ignored).
"""
from __future__ import annotations

import simpy


class SharedCpu:
    def __init__(self, env: simpy.Environment, cores: int):
        self.env, self.cores = env, cores
        self.jobs: dict[simpy.Event, float] = {}     # done event -> CPU seconds left
        self.last = 0.0
        self.gen = 0

    def _rate(self) -> float:
        return min(1.0, self.cores / len(self.jobs)) if self.jobs else 1.0

    def _advance(self) -> None:
        now = self.env.now
        if self.jobs and now > self.last:
            done = (now - self.last) * self._rate()
            for ev in self.jobs:
                self.jobs[ev] -= done
        self.last = now

    def _reschedule(self) -> None:
        self.gen += 1
        if not self.jobs:
            return
        gen = self.gen
        left = min(self.jobs.values())
        self.env.timeout(max(0.0, left / self._rate())).callbacks.append(
            lambda _e: self._tick() if gen == self.gen else None)

    def _tick(self) -> None:
        self._advance()
        for ev in [ev for ev, left in self.jobs.items() if left <= 1e-12]:
            del self.jobs[ev]
            ev.succeed()
        self._reschedule()

    def run(self, seconds: float, name: str = "") -> simpy.Event:
        """An event that fires once `seconds` of CPU have been given to this job."""
        self._advance()
        ev = self.env.event()
        self.jobs[ev] = seconds
        self._reschedule()
        return ev

    def cancel(self, ev: simpy.Event) -> None:
        """The job's process was killed: it leaves the CPU."""
        if ev in self.jobs:
            self._advance()
            del self.jobs[ev]
            self._reschedule()

