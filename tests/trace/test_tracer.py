"""The tracer's columns: a rank's latency is a number column, not text in its detail, and each
distinct detail is held once (the column is a categorical of the texts), in the events table's
time order, whichever way a runtime records them; a real run's rows build the same table."""
import json

import numpy as np
import pandas as pd
import pytest

from rdzv_sim.aggregate import AggregateJob
from rdzv_sim.scenario.load import load
from rdzv_sim.sim.simulation import Simulation
from rdzv_sim.trace import EVENT_COLUMNS, Tracer, events_table, rank_details

from golden.runs import SMALLER        # the golden runs' cuts of the big scenarios (tests/ is on sys.path)


def test_latency_is_a_column_in_time_order_and_not_in_the_detail():
    tr = Tracer()
    tr.record_many([5.0, 1.0], ["b", "a"], "rank_assigned", 0, ranks=[1, 0], world_size=2,
                   fields={"digest": "d0", "nnodes": 2, "latency": np.array([0.5, 0.25])})
    tr.record(3.0, "a", "rank_assigned", 1, rank=0, world_size=1,
              detail={"digest": "d1", "nnodes": 1, "latency": 0.125})
    tr.record(4.0, "a", "round_left", 1, detail={"reason": "peer_failed"})
    events = events_table(tr, "s", 0)
    assert list(events.columns[3:]) == EVENT_COLUMNS
    assert events["t"].tolist() == [1.0, 3.0, 4.0, 5.0]
    np.testing.assert_array_equal(events["latency"], [0.25, 0.125, np.nan, 0.5])
    assert [json.loads(d) for d in events["detail"]] == [
        {"digest": "d0", "nnodes": 2}, {"digest": "d1", "nnodes": 1}, {"reason": "peer_failed"},
        {"digest": "d0", "nnodes": 2}]
    assert list(rank_details(events)["latency"]) == [0.25, 0.125, 0.5]


def test_a_latency_alone_leaves_no_detail():
    tr = Tracer()
    tr.record(1.0, "a", "rank_assigned", 0, rank=0, world_size=1, detail={"latency": 2.0})
    tr.record_many(2.0, ["a", "b"], "rank_assigned", 1, ranks=[0, 1], world_size=2,
                   fields={"latency": 0.5})
    events = events_table(tr, "s", 0)
    assert events["detail"].tolist() == ["", "", ""]
    assert events["latency"].tolist() == [2.0, 0.5, 0.5]


def test_a_field_of_another_event_named_latency_stays_in_its_detail():
    """Only the events `rdzv_sim.events.LATENCY` names keep a field as a column (its near miss:
    a latency fault's own fields are text)."""
    tr = Tracer()
    tr.record(1.0, "a", "fault_latency", detail={"delay": 0.5, "duration": 3.0, "hosts": ["a"]})
    events = events_table(tr, "s", 0)
    assert json.loads(events["detail"].iat[0]) == {"delay": 0.5, "duration": 3.0, "hosts": ["a"]}
    assert np.isnan(events["latency"].iat[0])


def test_each_distinct_detail_is_held_once():
    tr = Tracer()
    for i in range(50):
        tr.record(float(i), f"n{i % 5}", "round_left", 0, detail={"reason": ("a", "b")[i % 2]})
    tr.record_many(np.arange(50.0, 60.0), [f"n{i % 5}" for i in range(10)], "join", 1,
                   fields={"slot": np.arange(10) % 3})
    events = events_table(tr, "s", 0)
    col = events["detail"]
    assert isinstance(col.dtype, pd.CategoricalDtype)
    assert sorted(col.cat.categories) == sorted(['', '{"reason":"a"}', '{"reason":"b"}',
                                                 '{"slot":0}', '{"slot":1}', '{"slot":2}'])
    assert col.iloc[:4].tolist() == ['{"reason":"a"}', '{"reason":"b"}'] * 2
    assert col.iloc[50:53].tolist() == ['{"slot":0}', '{"slot":1}', '{"slot":2}']


def test_the_rows_of_a_real_run_build_the_same_table():
    """`events_table` from row tuples (what the real launcher gathers: details as JSON with
    every field) is the table the tracer builds from the same events."""
    tr = Tracer()
    tr.record_many([2.0, 1.0], ["b", "a"], "rank_assigned", 0, ranks=[1, 0], world_size=4,
                   fields={"latency": np.array([0.5, 0.25])}, facts={"digest": "d", "nnodes": 2})
    tr.record(0.5, "a", "join", 0, detail={"slot": 1})
    rows = tr.rows
    assert rows[0][-1] == '{"latency":0.5}'
    pd.testing.assert_frame_equal(events_table(rows, "s", 0), events_table(tr, "s", 0))


@pytest.mark.parametrize("name, sets", [
    ("quickstart", []),                                              # per operation
    ("llama3-54d", ["fidelity=aggregate", *SMALLER["llama3-54d"]]),  # aggregate: written ahead
])
def test_a_run_read_back_through_its_rows_is_the_same(name, sets):
    sc = load(name, sets)
    sim = AggregateJob(sc) if sc.fidelity == "aggregate" else Simulation(sc)
    sim.run(None)
    rows = sim.trace.rows
    events = events_table(sim.trace, sc.name, sc.seed)
    assert (events["event"] == "rank_assigned").sum() > 3
    # (the values; the tracer's event categories also name the kinds `outputs.events` left out)
    pd.testing.assert_frame_equal(events_table(rows, sc.name, sc.seed), events,
                                  check_categorical=False)


def test_a_table_saved_before_schema_2_reads_its_latency_from_the_detail():
    old = pd.DataFrame({"t": [1.0, 2.0], "node": ["a", "b"], "event": ["rank_assigned", "join"],
                        "round": [0, 0], "detail": ['{"digest":"d","latency":0.75,"nnodes":1}', '{"slot":1}']})
    got = rank_details(old)
    assert list(got["latency"]) == [0.75] and list(got["digest"]) == ["d"] and list(got["nnodes"]) == [1.0]
