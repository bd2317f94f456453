"""Preemption with notice: SIGTERM, then the host goes away. hrw uses the notice (it ends its
round, so the others re-form before the kill); torchrun's c10d writes nothing on a signal, so
its peers wait for their collectives to fail. Times asserted exactly."""
import pytest

import rdzv_sim
from rdzv_sim.scenario import ScenarioError, load
from rdzv_sim.scenario.timeline import timeline


def preempt(protocol, at=100.0, notice=30.0):
    return {"name": "preempt", "seed": 3, "duration": 400,
            "cluster": {"nodes": 4, "nproc_per_node": 1, "start_spread": 0},
            "store": {"host": None}, "shards": {"count": 0},
            "protocol": {"name": protocol, "min_nodes": 3, "max_nodes": 4, "last_call_timeout": 1},
            "agent": {"collective_timeout": 60, "worker_start": 2, "max_restarts": 100, "monitor_interval": 1},
            "faults": [{"kind": "preemption", "node": 3, "at": at, "notice": notice}]}


def test_the_timeline_is_sigterm_then_the_kill():
    assert [(a.kind, a.at) for a in timeline(load(preempt("hrw")))[0]] == [("terminate", 100), ("reclaim", 130)]


def test_hrw_uses_the_notice_and_reforms_before_the_kill():
    r = rdzv_sim.run(preempt("hrw"))
    assert r.rounds.members.tolist() == ["node0,node1,node2,node3", "node0,node1,node2"]
    assert 100 < r.rounds.iloc[1].start and r.rounds.iloc[1].end < 100 + 1 + 0.1   # its last call
    ev = r.events[r.events.node == "node3"]
    assert ev[ev.t >= 100].event.tolist() == ["fault_preemption", "round_left", "agent_exit", "fault_crash"]
    assert '"reason":"terminated"' in ev[ev.event == "agent_exit"].detail.iloc[0]
    assert ev[ev.event == "fault_crash"].t.tolist() == [130.0]


def test_c10d_peers_wait_for_their_collectives():
    r = rdzv_sim.run(preempt("c10d"))
    assert r.rounds.nnodes.tolist() == [4, 3]
    assert r.rounds.iloc[1].start >= 100 + 60                  # the collective timeout
    hrw = rdzv_sim.run(preempt("hrw")).rounds.iloc[1]
    assert r.rounds.iloc[1].end - hrw.end > 59                 # what the notice bought hrw


def test_outside_a_round_the_agent_exits_at_once():
    from rdzv_sim.testing import check_run
    r, report = check_run(load(preempt("hrw", at=0.0, notice=5)))    # while round 0 forms
    ev = r.events[r.events.node == "node3"]
    assert "agent_stopped" in ev.event.tolist() and "rank_assigned" not in ev.event.tolist()
    assert r.rounds.members.tolist() == ["node0,node1,node2"]
    assert not report.violations            # the liveness check counts a stopped agent as down
    assert ev[ev.event == "fault_crash"].t.tolist() == [5.0]            # the host goes anyway


def test_a_negative_notice_is_refused_by_path():
    sc = preempt("hrw")
    sc["faults"][0]["notice"] = -1
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.notice"):
        load(sc)
