"""The rounds table, the ranks and the training spans are folds over the events a slice at a
time (`rdzv_sim.trace.chunks`): sliced finely they equal what one slice gives, on real runs
and where a member's join, or its stop, falls in another slice than its rank."""
import numpy as np
import pandas as pd
import pytest

from rdzv_sim.api import run
from rdzv_sim.trace import Tracer, events_table
from rdzv_sim.trace.chunks import chunks
from rdzv_sim.trace.rounds import fold_rounds
from rdzv_sim.training import round_spans

RUNS = {"quickstart": [], "store-crash": [], "rack-failure": ["cluster.nodes=16", "protocol.min_nodes=8",
                                                              "protocol.max_nodes=16"],
        "validate-inprocess": [], "validate-quorum": [],
        "frontier-100k": ["cluster.nodes=32", "cluster.topology.racks=2", "protocol.min_nodes=28",
                          "protocol.max_nodes=32", "scheduler.hot_spares=2", "duration=20000",
                          "agent.recovery=shrink"]}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_sliced_finely_the_tables_are_those_of_one_slice(name):
    ev = run(name, RUNS[name]).events
    whole, fine = fold_rounds(ev), fold_rounds(ev, rows=5)
    pd.testing.assert_frame_equal(fine.table(), whole.table())
    a, b = whole.ranked(), fine.ranked()
    assert a.rounds.keys() == b.rounds.keys()
    for r, (codes, ranks) in a.rounds.items():
        assert np.array_equal(codes, b.rounds[r][0]) and np.array_equal(ranks, b.rounds[r][1])
    assert np.array_equal(whole.latencies(), fine.latencies(), equal_nan=True)
    duration = float(ev["t"].max()) + 1
    pd.testing.assert_frame_equal(round_spans(ev, duration, rows=5), round_spans(ev, duration))


def test_rows_tied_in_time_stay_in_one_slice():
    ev = pd.DataFrame({"t": [0.0, 1, 1, 1, 2, 3, 3], "node": pd.Categorical(list("abcabca"))})
    cuts = [(o, len(p)) for o, p in chunks(ev, rows=2)]
    assert cuts == [(0, 4), (4, 3)]                        # (cuts at 2 rows would split t=1, 3)
    assert [len(p) for _, p in chunks(ev)] == [7]


def _events(rows):
    tr = Tracer()
    for t, node, event, rnd, rank in rows:
        tr.record(t, node, event, rnd, rank, 2 if rank is not None else None,
                  {"slot": 1} if event == "join" else None)
    return events_table(tr, "fold", 0)


# two hosts: host a joins long before its rank, b just before; both train, then a crashes
# and b leaves much later (each in a slice of its own when sliced by 2 rows)
ROWS = [(0.0, "a", "join", 0, None), (5.0, "x", "node_start", None, None),
        (6.0, "x", "node_start", None, None), (9.0, "b", "join", 0, None),
        (10.0, "a", "rank_assigned", 0, 0), (10.0, "b", "rank_assigned", 0, 1),
        (11.0, "a", "workers_started", 0, 0), (11.0, "b", "workers_started", 0, 1),
        (20.0, "x", "node_start", None, None), (30.0, "a", "fault_crash", None, None),
        (31.0, "x", "node_start", None, None), (40.0, "b", "round_left", 0, 1)]


def test_a_join_in_an_earlier_slice_starts_its_round():
    ev = _events(ROWS)
    assert [len(p) for _, p in chunks(ev, rows=2)][:3] == [2, 2, 2]   # a's join two slices back
    table = fold_rounds(ev, rows=2).table()
    assert table["start"].tolist() == [0.0]
    near = _events([r for r in ROWS if r[2] != "join" or r[1] != "a"])   # a never joined
    assert fold_rounds(near, rows=2).table()["start"].tolist() == [9.0]


def test_a_stop_in_a_later_slice_ends_its_round():
    ev = _events(ROWS)
    spans = round_spans(ev, 100.0, rows=2)
    assert spans[["round", "t0", "t1", "end"]].values.tolist() == [[0, 11.0, 30.0, "fault_crash"]]
    assert spans["crashed"].tolist() == [("a",)]
    near = _events([r for r in ROWS if r[2] != "fault_crash"])        # a never crashed
    assert round_spans(near, 100.0, rows=2)[["t1", "end"]].values.tolist() == [[40.0, "round_left"]]


def test_rounds_that_train_at_once_each_end_at_their_own_stop():
    """Two replica groups' rounds train side by side: the first ends in one slice, the other
    in a later one (its members wait across slices). Near miss: without its stop it trains
    to the run's end."""
    rows = [(0.0, "a", "join", 0, None), (0.0, "c", "join", 1, None),
            (1.0, "a", "rank_assigned", 0, 0), (1.0, "c", "rank_assigned", 1, 0),
            (2.0, "a", "workers_started", 0, 0), (2.0, "c", "workers_started", 1, 0),
            (5.0, "x", "node_start", None, None), (30.0, "a", "fault_crash", None, None),
            (31.0, "x", "node_start", None, None), (32.0, "x", "node_start", None, None),
            (40.0, "c", "round_left", 1, 0)]
    got = round_spans(_events(rows), 100.0, rows=2)
    assert got[["round", "t1", "end"]].values.tolist() == [[0, 30.0, "fault_crash"], [1, 40.0, "round_left"]]
    near = round_spans(_events(rows[:-1]), 100.0, rows=2)
    assert near[["round", "t1", "end"]].values.tolist() == [[0, 30.0, "fault_crash"], [1, 100.0, "run_end"]]
