"""Progress lines for a run whose stderr is not a terminal (a CI log, `2> file`, a notebook's
captured output): a line at most every `every` seconds of wall time, each saying how far the
simulation is, how many rounds it has begun, the wall time so far and an estimate of the rest,
so that a long run is never silent. A terminal gets rich's bar instead (cli.py)."""
from __future__ import annotations

import sys
import time


def _clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class ProgressLines:
    """`progress(t, rounds)` for `rdzv_sim.run`: writes to `stream` at most every `every` s."""

    def __init__(self, name: str, duration: float, stream=None, every: float = 5.0):
        self.name, self.duration, self.every = name, duration, every
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = self.last = time.perf_counter()

    def __call__(self, t: float, rounds: int) -> None:
        now = time.perf_counter()
        done = t >= self.duration
        if now - self.last < self.every and not done:
            return
        self.last = now
        wall = now - self.t0
        frac = t / self.duration if self.duration else 1.0
        rest = f", about {_clock(wall / frac - wall)} left" if 0 < frac < 1 else ""
        self.line(f"{t:,.0f} of {self.duration:,.0f} simulated s ({frac:.0%}), {rounds:,} rounds, "
                  f"{_clock(wall)} wall{rest}")
        if done:
            self.line("simulated; building the tables (rounds, goodput, placement)")

    def line(self, text: str) -> None:
        print(f"{self.name}: {text}", file=self.stream, flush=True)


class RunsDone:
    """`progress(done, total)` for a sweep or a comparison: a line when a run ends, at most
    every `every` s (and always the last), with the wall time so far and an estimate of the rest."""

    def __init__(self, name: str, stream=None, every: float = 5.0):
        self.name, self.every = name, every
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.perf_counter()
        self.last = -float("inf")

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - self.last < self.every and done < total:
            return
        self.last = now
        wall = now - self.t0
        rest = f", about {_clock(wall / done * (total - done))} left" if 0 < done < total else ""
        print(f"{self.name}: {done:,} of {total:,} runs done, {_clock(wall)} wall{rest}",
              file=self.stream, flush=True)
