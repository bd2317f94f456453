"""hrw's aggregate round: a round that never fills ends at the *first* joiner's join timeout
(its deadline passes first; with close_on_shutdown its exit closes the rendezvous for the rest),
as the per-operation runtime has it."""
import pytest

import rdzv_sim


def scenario(fidelity, delays=(10, 20), join_timeout=100):
    return {"name": "agg-join-timeout", "seed": 1, "duration": 400, "fidelity": fidelity,
            "cluster": {"nodes": 4, "nproc_per_node": 1, "start_spread": 0, "start_nodes": 3},
            "store": {"host": None}, "shards": {"count": 0},
            "protocol": {"name": "hrw", "min_nodes": 4, "max_nodes": 4, "join_timeout": join_timeout},
            "agent": {"max_rendezvous_attempts": 1},
            "faults": [{"kind": "slow_join", "node": i + 1, "delay": d} for i, d in enumerate(delays)]}


def exits(fidelity, **kw):
    ev = rdzv_sim.run(scenario(fidelity, **kw)).events
    return ev[ev.event == "agent_exit"].set_index("node").t.to_dict()


@pytest.mark.parametrize("delays", [(10, 20), (1, 2), (50, 99)])
def test_a_round_that_never_fills_ends_at_the_first_joiners_timeout(delays):
    agg = exits("aggregate", delays=delays)
    assert sorted(agg) == ["node0", "node1", "node2"]
    assert list(agg.values()) == pytest.approx([100.0] * 3, abs=1e-3)     # node0's: 0 + 100


def test_not_the_last_joiners():
    """The near miss: the last joiner (at 20 s) would time out at 120 s."""
    assert max(exits("aggregate").values()) < 20 + 100 - 1


def test_the_per_operation_runtime_agrees():
    agg, per = exits("aggregate"), exits("per_operation")
    assert agg.keys() == per.keys()
    assert all(agg[n] == pytest.approx(per[n], abs=0.01) for n in agg)
