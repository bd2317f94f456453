"""A flapping link (gray failure): down for `down` s every `period` s. Each down outlasting the
collectives costs the job a shrink and a regrow; shorter downs stall it and cost no round."""
import pytest

import rdzv_sim
from rdzv_sim.scenario import ScenarioError, load
from rdzv_sim.scenario.timeline import timeline


def flap(down, duration=180, **kw):
    return {"name": "flap", "seed": 3, "duration": 600,
            "cluster": {"nodes": 4, "nproc_per_node": 1, "start_spread": 0},
            "store": {"host": None}, "shards": {"count": 0},
            "protocol": {"name": "hrw", "min_nodes": 3, "max_nodes": 4, "last_call_timeout": 1},
            "agent": {"collective_timeout": 10, "worker_start": 2, "max_restarts": 100, "monitor_interval": 1},
            "faults": [{"kind": "flap", "nodes": [3], "at": 100, "duration": duration, "period": 60,
                        "down": down, **kw}]}


def test_the_timeline_is_a_cut_and_a_heal_every_period_the_last_down_cut_short():
    acts = timeline(load(flap(5, duration=123)))[0]
    assert [(a.kind, a.at) for a in acts] == [("cut", 100), ("heal", 105), ("cut", 160),
                                             ("heal", 165), ("cut", 220), ("heal", 223)]
    assert [a.after for a in acts] == [100, 5, 55, 5, 55, 3]       # what the simulator sleeps


def test_downs_longer_than_the_collectives_cost_a_shrink_and_a_regrow_each():
    r = rdzv_sim.run(flap(20))
    assert r.rounds.nnodes.tolist() == [4, 3, 4, 3, 4, 3, 4]
    ev = r.events
    assert ev[ev.event == "fault_partition"].t.tolist() == [100, 160, 220]
    assert ev[ev.event == "partition_healed"].t.tolist() == [120, 180, 240]
    shrunk = r.rounds[r.rounds.nnodes == 3]
    assert shrunk.start.tolist() == pytest.approx([110.0, 170.0, 230.0], abs=0.01)   # the collective timeout
    assert all("node3" not in m for m in shrunk.members)


def test_downs_shorter_than_the_collectives_cost_no_round():
    r = rdzv_sim.run(flap(5))
    assert r.rounds.nnodes.tolist() == [4]
    assert r.events[r.events.event == "partition_healed"].t.tolist() == [105, 165, 225]


@pytest.mark.parametrize("change, where", [({"down": 60}, r"faults\[0\]\.down: 60 s down every 60 s"),
                                           ({"nodes": None}, r"faults\[0\]: a flap names either"),
                                           ({"period": 0.001, "down": 0.0005}, r"faults\[0\]\.period: 180,000 downs")])
def test_bad_flaps_are_refused_by_path(change, where):
    sc = flap(5)
    sc["faults"][0].update(change)
    with pytest.raises(ScenarioError, match=where):
        load(sc)
