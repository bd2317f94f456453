"""How much of one span of training survives, by checkpoint kind.

A span of `length` seconds first loads a checkpoint (none before the job's first span), then
trains in cycles of `interval` seconds of work and one checkpoint stall of `cost` seconds:

- `sync`: the stall is the whole write; a failure loses the work since the last stall ended.
- `async`: the stall is a snapshot; the write goes on in the background for `persist_time`; a
  failure loses the work since the last checkpoint whose write had finished.
- `in_memory`: the stall is a snapshot into a peer's memory, and every `persist_every`-th is
  also written as `async` does; after a failure the job restarts from the last snapshot when
  the peer that holds each lost host's copy survived, else from the last written one.

The run's own end loses nothing: the work done so far is what the run did.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SpanWork:
    load: float        # seconds loading a checkpoint before training
    stalls: float      # seconds of checkpoint stalls
    progress: float    # seconds of training (forward progress, kept or not)
    saved: float       # seconds of training whose work survived
    lost: float        # seconds of training recomputed later (progress - saved)


def _persisted(n: int, avail: float, cycle: float, persist: float, every: int = 1) -> int:
    """How many of the first n checkpoints (every `every`-th one written) were written by `avail`."""
    if n <= 0:
        return 0
    k = n if persist <= 0 else min(n, math.floor(max(0.0, avail - persist) / cycle + 1e-12))
    return (k // every) * every


def span_work(length: float, training, *, first: bool, final: bool, from_peer: bool = False,
              peer_ok: bool = False) -> SpanWork:
    """The work of one span. `first`: the job's first (nothing to load); `final`: cut by the
    run's end; `from_peer`: it restarts from a peer's in-memory copy (its load is
    `peer_load_time`); `peer_ok`: the failure that ends it leaves every copy with a live peer."""
    interval, cost = training.checkpoint_interval, training.checkpoint_cost
    load = 0.0 if first else (training.peer_load_time if from_peer else training.load_time)
    load = min(load, length)
    avail = length - load
    cycle = interval + cost
    n = math.floor(avail / cycle + 1e-12)
    rest = avail - n * cycle
    stalls = n * cost + max(0.0, rest - interval)
    progress = avail - stalls
    kind = training.checkpoint
    if final:
        saved = progress
    elif kind == "sync":
        saved = n * interval
    elif kind == "async":
        saved = _persisted(n, avail, cycle, training.persist_time) * interval
    elif peer_ok:                                     # in_memory, and the copies survived
        saved = n * interval
    else:
        saved = _persisted(n, avail, cycle, training.persist_time, training.persist_every) * interval
    return SpanWork(load, stalls, progress, saved, progress - saved)


def young_daly(cost: float, mtbf: float) -> tuple[float, float]:
    """The checkpoint interval theory gives for synchronous checkpoints of `cost` seconds and
    a job that fails every `mtbf` seconds: Young's sqrt(2 C M) and Daly's sqrt(2 C M) - C."""
    young = math.sqrt(2 * cost * mtbf)
    return young, young - cost
