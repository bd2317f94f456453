"""The tracer keeps what the tables read of each rank_assigned detail (digest, nnodes, latency)
as values, in the events table's order: the same values parsing the table's details gives,
at both fidelities, so a frontier run's tables need not parse millions of details back."""
import numpy as np
import pandas as pd
import pytest

from rdzv_sim.aggregate import AggregateJob
from rdzv_sim.scenario.load import load
from rdzv_sim.sim.simulation import Simulation
from rdzv_sim.trace import RANK_FIELDS, Tracer, events_table, rank_details

from golden.runs import SMALLER        # the golden runs' cuts of the big scenarios (tests/ is on sys.path)


@pytest.mark.parametrize("name, sets", [
    ("quickstart", []),                                              # per operation
    ("rack-failure", []),                                            # per operation, many rounds
    ("llama3-54d", ["fidelity=aggregate", *SMALLER["llama3-54d"]]),  # aggregate: written ahead
])
def test_the_kept_fields_are_the_details_parsed(name, sets):
    sc = load(name, sets)
    sim = AggregateJob(sc) if sc.fidelity == "aggregate" else Simulation(sc)
    sim.run(None)
    events = events_table(sim.trace, sc.name, sc.seed)
    kept, parsed = sim.trace.rank_fields, rank_details(events)
    assert (events["event"] == "rank_assigned").sum() == len(kept["latency"]) > 3
    assert list(kept["digest"]) == list(parsed["digest"])
    for f in ("nnodes", "latency"):
        np.testing.assert_array_equal(pd.to_numeric(pd.Series(kept[f])).to_numpy(float),
                                      pd.to_numeric(pd.Series(parsed[f])).to_numpy(float))


def test_rows_out_of_order_keep_their_own_fields():
    tr = Tracer()
    tr.record_many([5.0, 1.0], ["b", "a"], "rank_assigned", 0, ranks=[1, 0], world_size=2,
                   fields={"digest": "d0", "nnodes": 2, "latency": np.array([0.5, 0.25])})
    tr.record(3.0, "a", "rank_assigned", 1, rank=0, world_size=1,
              detail={"digest": "d1", "nnodes": 1, "latency": 0.125})
    events = events_table(tr, "s", 0)
    assert events["t"].tolist() == [1.0, 3.0, 5.0]
    assert tr.rank_fields["latency"].tolist() == [0.25, 0.125, 0.5]
    assert list(tr.rank_fields["digest"]) == ["d0", "d1", "d0"]
    assert set(tr.rank_fields) == set(RANK_FIELDS)


def test_details_given_as_text_are_parsed_instead():
    tr = Tracer()
    tr.record_many(1.0, ["a"], "rank_assigned", 0, ranks=[0], world_size=1,
                   details=['{"digest":"x","latency":2,"nnodes":1}'])
    events_table(tr, "s", 0)
    assert tr.rank_fields is None
