"""The aggregate hrw round's rules one by one, each at the time the per-operation runtime gives
(found by test_round_paths.py), with its near miss one step the other side."""
import pytest

import rdzv_sim

AGENT = {"max_rendezvous_attempts": 3, "worker_start": 2, "peer_crash_detection": 1,
         "monitor_interval": 1, "collective_timeout": 60}


def run(nodes, lo, hi, faults, fidelity="aggregate", last_call=0.5):
    return rdzv_sim.run({
        "name": "rule", "seed": 1, "duration": 400, "fidelity": fidelity,
        "cluster": {"nodes": nodes, "nproc_per_node": 1, "start_spread": 0},
        "store": {"host": None}, "shards": {"count": 0}, "agent": AGENT,
        "protocol": {"name": "hrw", "min_nodes": lo, "max_nodes": hi, "last_call_timeout": last_call,
                     "join_timeout": 120}, "faults": faults})


def left(r, rnd=0):
    ev = r.events
    return ev[(ev.event == "round_left") & (ev["round"] == rnd)].t.min()


@pytest.mark.parametrize("fidelity", ["aggregate", "per_operation"])
def test_a_member_dead_before_the_workers_came_up_costs_the_collective_timeout(fidelity):
    """Workers start 2 s after the ranks (~0.001 s): a crash at 1.25 s leaves the others in
    their process-group init until it times out, 60 s after it began."""
    r = run(3, 2, 3, [{"kind": "crash", "node": 0, "at": 1.25}], fidelity)
    assert left(r) == pytest.approx(2.0 + 60, abs=0.01)


def test_a_member_dead_once_the_workers_run_is_noticed_at_once():
    """The near miss: the same crash once the workers run (2.25 s) is seen 1 s later."""
    assert left(run(3, 2, 3, [{"kind": "crash", "node": 0, "at": 2.25}])) == pytest.approx(3.25, abs=0.01)


@pytest.mark.parametrize("crash, ends", [(90.25, 1 + 3 * 30 + 15),      # probe at 91 s
                                         (91.25, 1 + 4 * 30 + 15)])     # one step on: at 121 s
@pytest.mark.parametrize("fidelity", ["aggregate", "per_operation"])
def test_a_spare_ends_the_round_of_a_dead_member_at_its_next_probe(crash, ends, fidelity):
    """One seat, node 1 a spare from 1 s (probes every 30 s, 15 s to answer); the member dies."""
    r = run(2, 1, 1, [{"kind": "slow_join", "node": 1, "delay": 1},
                      {"kind": "crash", "node": 0, "at": crash}], fidelity)
    assert r.rounds.members.tolist() == ["node0", "node1"]
    assert r.rounds.end.iloc[1] == pytest.approx(ends, abs=0.01)


@pytest.mark.parametrize("fidelity", ["aggregate", "per_operation"])
def test_a_later_joiner_does_not_hold_back_the_earlier_ones_joins(fidelity):
    """min 1: node 0's last call (1.5 s) runs from its own join at 0 s, not from node 1's (1 s)."""
    r = run(3, 1, 3, [{"kind": "slow_join", "node": 1, "delay": 1}, {"kind": "slow_join", "node": 2, "delay": 9}],
            fidelity, last_call=1.5)
    assert r.rounds.end.iloc[0] == pytest.approx(1.5, abs=0.01)


@pytest.mark.parametrize("fidelity", ["aggregate", "per_operation"])
def test_the_round_after_one_of_two_waits_hole_grace_for_the_second(fidelity):
    """Node 0 dies in a round of two; node 1 re-forms alone, but waits hole_grace (1 s), not
    the 0.5 s last call, for the member the round before had (`_owed_arrived`)."""
    r = run(2, 1, 2, [{"kind": "slow_join", "node": 1, "delay": 1},
                      {"kind": "crash", "node": 0, "at": 90.25}], fidelity)
    ev = r.events
    join = ev[(ev.event == "join") & (ev["round"] == 2)].t.min()
    assert r.rounds.end.iloc[-1] - join == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("crash, prober", [(90.25, "node1"),    # node 1's probe at 91 s is first
                                           (91.25, "node2")])   # node 2's at 92 s is (node 1's: 121 s)
@pytest.mark.parametrize("fidelity", ["aggregate", "per_operation"])
def test_the_spare_whose_probe_ended_the_round_gets_the_seat(crash, prober, fidelity):
    r = run(3, 1, 1, [{"kind": "slow_join", "node": 1, "delay": 1}, {"kind": "slow_join", "node": 2, "delay": 2},
                      {"kind": "crash", "node": 0, "at": crash}], fidelity)
    assert r.rounds.members.tolist() == ["node0", prober]
