"""The `latency` fault: a slow link to the store for a while, then back to normal."""
import pytest

import rdzv_sim
from rdzv_sim.scenario.load import ScenarioError


def sc(faults, duration=60):
    return {"name": "slow-link", "seed": 1, "duration": duration,
            "cluster": {"nodes": 3, "start_spread": 0},
            "store": {"host": None},
            "protocol": {"name": "hrw", "min_nodes": 3, "max_nodes": 3, "last_call_timeout": 1},
            "agent": {"worker_start": 1}, "faults": faults}


def latencies(r):
    ra = r.events[r.events.event == "rank_assigned"]
    return dict(zip(ra.node, ra.latency))


def test_a_slow_link_slows_its_node_and_the_round_then_heals():
    base = latencies(rdzv_sim.run(sc([])))
    slow = rdzv_sim.run(sc([{"kind": "latency", "nodes": [2], "at": 0, "delay": 0.05, "duration": 30}]))
    got = latencies(slow)
    # hrw's joiner makes ~8 store round trips before its rank is known: 2 x 0.05 s each
    assert got["node2"] - base["node2"] >= 8 * 2 * 0.05 * 0.9
    assert got["node0"] > base["node0"] + 0.5          # the round waits for its slowest member
    ev = slow.events
    assert ev[ev.event == "fault_latency"].t.tolist() == [0.0]
    assert ev[ev.event == "latency_healed"].t.tolist() == [30.0]


def test_a_latency_fault_names_nodes_or_a_rack():
    with pytest.raises(ScenarioError, match=r"faults\[0\].*either `nodes` or `rack`"):
        rdzv_sim.run(sc([{"kind": "latency", "at": 0, "delay": 0.05, "duration": 3}]))
