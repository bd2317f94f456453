"""One `hrw` round in aggregate: every node's store operations as numpy batches on one FIFO.

It follows the operations `rdzv_sim.protocols.hrw` makes, phase by phase, for all joiners at
once (the per-operation runtime interleaves them request by request):
  join     compare_set(round) -> add(seq) -> set(n{slot})  (slots in the store's FIFO order)
  watch    every joiner watches `closed` (those below min_nodes also `n{min}`, then `closed`
           again once n{min} is written)
  close    the max_nodes-th joiner at once, else the min_nodes-th after last_call_timeout:
           add(seq, 0), compare_set(closed), check(slots), multi_get(descs), multi_set(assigns)
  confirm  each member watches its assignment, add(ack); the last to ack compare_sets `ready`;
           the others' watch on `ready` wakes: their rank is known.
Approximations (their error against the per-operation model is in reports/sim_speed.md): latency
without jitter, a batch is served in arrival order without interleaving the next phase, no
holes (a joiner that crashes between add and set), a watch is one request.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .queue import Fifo


@dataclass
class Sizes:
    """Request payload bytes (keys and values) of the operations above."""
    key: int = 16
    desc: int = 70
    assign: int = 130


@dataclass
class RoundTiming:
    order: np.ndarray          # joiner indices in slot order (slot = position + 1)
    t_join: np.ndarray         # per joiner: when it knows its slot ("join")
    members: np.ndarray        # joiner indices admitted, in slot order
    late: np.ndarray           # joiner indices beyond the count (they wait for the next round)
    closer: int                # joiner index of the closer
    t_closed: float            # when the round's `closed` key was written
    t_assigned: float          # when the assignments were written
    t_confirm: np.ndarray      # per member (slot order): its ack's reply
    t_rank: np.ndarray         # per member (slot order): rank known


def hrw_round(fifo: Fifo, start: np.ndarray, lat: np.ndarray, min_nodes: int, max_nodes: int,
              last_call: float, sizes: Sizes = Sizes()) -> RoundTiming | None:
    """Timing of a round that the joiners (rendezvous start times `start`, one-way latencies
    `lat`) form; None if fewer than `min_nodes` joined."""
    start = np.asarray(start, dtype=float)
    lat = np.asarray(lat, dtype=float)
    k = sizes.key
    r1 = fifo.serve(start + lat, k + 1) + lat                  # compare_set(round, "", "0")
    d2 = fifo.serve(r1 + lat, k)                               # add(seq, 1): the slot
    t_join = d2 + lat
    order = np.argsort(d2, kind="stable")
    d3 = fifo.serve(t_join + lat, k + sizes.desc)              # set(n{slot}) (fire and forget)
    n = len(order)
    if n < min_nodes:
        return None
    fifo.serve(t_join + lat, k)                                # everyone watches `closed`
    early = order[:min_nodes - 1]
    fifo.serve(t_join[early] + lat[early], k)                  # those below min: n{min} too,
    t_min = d3[order[min_nodes - 1]]                           # and, once it is written,
    fifo.serve(np.maximum(t_min, t_join[early] + lat[early]) + 2 * lat[early], k)   # closed again
    if n >= max_nodes and t_join[order[max_nodes - 1]] <= t_join[order[min_nodes - 1]] + last_call:
        closer = int(order[max_nodes - 1])
        t0 = t_join[closer]
    else:
        closer = int(order[min_nodes - 1])
        t0 = t_join[closer] + last_call
    lc = lat[closer]
    t = fifo.one(t0 + lc, k) + lc                              # add(seq, 0): the count
    count = int(min(max_nodes, np.sum(d2 <= t - lc)))
    t_closed = fifo.one(t + lc, 2 * k)                         # compare_set(closed)
    members = order[:count]
    late = order[count:]
    ml = lat[members]
    others = members != closer
    # the members' watches on their assignments reach the store as the closer reads the
    # slots (they are served, then parked until the assignments exist)
    watch_a = np.full(count, np.inf)
    watch_a[others] = fifo.serve(t_closed + 2 * ml[others], k)
    t = t_closed + lc
    t = fifo.one(t + lc, count * k) + lc                       # check(slots)
    t = fifo.one(t + lc, count * k) + lc                       # multi_get(descriptors)
    t_assigned = fifo.one(t + lc, count * (k + sizes.assign))  # multi_set(assignments)
    watch_a[~others] = fifo.one(t_assigned + 2 * lc, k)        # the closer's, after its reply
    got = np.maximum(watch_a, t_assigned) + ml
    t_confirm = fifo.serve(got + ml, k) + ml                   # add(ack)
    last = int(np.argmax(t_confirm))
    rest = np.arange(count) != last
    watch = np.full(count, np.inf)
    watch[rest] = fifo.serve(t_confirm[rest] + ml[rest], k)   # watch `ready` (parked)
    t_ready = fifo.one(t_confirm[last] + ml[last], 2 * k + 2)  # compare_set(ready, "", "ok")
    watch[last] = fifo.one(t_ready + 2 * ml[last], k)          # its watch, after the CAS reply
    t_rank = np.maximum(watch, t_ready) + ml
    return RoundTiming(order, t_join, members, late, closer, t_closed, t_assigned, t_confirm, t_rank)
