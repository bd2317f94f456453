"""`next_write` (one numpy pass) against the FIFO server taken one request at a time."""
from __future__ import annotations

import heapq

import numpy as np
from hypothesis import assume, given, settings, strategies as st

from rdzv_sim.aggregate.cas_queue import next_write

S_CAS, S_READ = 0.3, 0.1


def one_at_a_time(arrival, version, is_read, retry, current, free_at, writes):
    heap = [(arrival[i], i, i, version[i], is_read[i]) for i in range(len(arrival)) if arrival[i] < np.inf]
    heapq.heapify(heap)
    seq, free, served = len(arrival), free_at, []
    while heap:
        a, _, i, ver, read = heapq.heappop(heap)
        free = max(a, free) + (S_READ if read else S_CAS)
        if not read and ver == current:
            return i, free, served
        served.append((i, free))
        if (read and not writes[i]) or retry[i] == np.inf:
            continue
        seq += 1
        heapq.heappush(heap, (free + retry[i], seq, i, current, False))
    return -1, free, served


clients = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 40)), st.integers(0, 3), st.booleans(),
                             st.one_of(st.none(), st.integers(1, 30)), st.booleans()), min_size=1, max_size=25)


@settings(max_examples=300, deadline=None)
@given(clients, st.integers(0, 3), st.integers(0, 20))
def test_the_next_write_is_the_fifo_servers(cs, current, free_at):
    # distinct times: arrivals on one grid, retries on another, so no two requests tie
    arrival = np.array([np.inf if a is None else a + i / 1000 for i, (a, *_) in enumerate(cs)])
    version = np.array([v for _, v, *_ in cs])
    is_read = np.array([r for _, _, r, *_ in cs])
    retry = np.array([np.inf if z is None else z + 0.0005 + i / 10**6 for i, (_, _, _, z, _) in enumerate(cs)])
    writes = [w for *_, w in cs]
    w = next_write(arrival, version, is_read, retry, current, free_at + 0.25, S_CAS, S_READ,
                   lambda i, d: writes[i])
    winner, at, served = one_at_a_time(arrival, version, is_read, retry, current, free_at + 0.25, writes)
    assume(len(set(np.round([d for _, d in served] + [at], 9))) == len(served) + 1)
    assert w.winner == winner
    if winner >= 0:                   # who was served first, when, and when the write is
        assert w.served.tolist() == [i for i, _ in served]
        assert np.allclose(w.departures, [d for _, d in served]) and np.isclose(w.at, at)
