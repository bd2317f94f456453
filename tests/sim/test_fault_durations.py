"""A timed fault lasts what the scenario says: in the compiled timeline (which the real launcher
reads too) and in a simulated run, each asserted on its own."""
import pytest

import rdzv_sim
from rdzv_sim.scenario import load
from rdzv_sim.scenario.timeline import timeline


@pytest.mark.parametrize("fault,begin,end", [
    ({"kind": "partition", "nodes": [0], "at": 50, "duration": 120}, "cut", "heal"),
    ({"kind": "pause", "node": 1, "at": 50, "duration": 120}, "pause", "resume"),
    ({"kind": "store_pause", "at": 50, "duration": 120}, "store_pause", "store_resume"),
    ({"kind": "latency", "nodes": [0], "at": 50, "duration": 120, "delay": 0.01}, "slow", "unslow"),
])
def test_the_timeline_ends_a_timed_fault_after_its_duration(fault, begin, end):
    sc = load({"name": "x", "duration": 400, "cluster": {"nodes": 4}, "faults": [fault]})
    (acts,) = timeline(sc)
    assert [(a.kind, a.at) for a in acts] == [(begin, 50.0), (end, 170.0)]
    assert acts[1].after == 120.0


def test_a_partitioned_rack_heals_and_rejoins_when_its_duration_is_over():
    r = rdzv_sim.run("partition")                 # rack 3 (4 hosts) cut at 200 for 120 s
    ev = r.events
    cut = ev[ev.event == "fault_partition"].t.tolist()
    healed = ev[ev.event == "partition_healed"].t.tolist()
    assert cut == [200.0] and healed == [320.0]
    after = r.rounds[r.rounds.start >= 320.0]
    assert after.nnodes.iloc[0] == 16 and after.start.iloc[0] < 320.0 + 5     # back at once
    assert r.rounds[(r.rounds.start > 200) & (r.rounds.start < 320)].nnodes.tolist() == [12]
