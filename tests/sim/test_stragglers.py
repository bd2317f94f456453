"""Stragglers: a slow host slows every synchronous step of the rounds it is in (goodput, not
ETTR), costs nothing outside them, and the scheduler can drain it. Values computed here."""
import pytest

import rdzv_sim
from rdzv_sim.scenario import ScenarioError, load
from rdzv_sim.scenario.timeline import timeline

from test_capacity import base

STRAGGLE = {"kind": "straggler", "node": 2, "at": 1000, "slowdown": 2.0, "duration": 1000}


def run(**kw):
    return rdzv_sim.run(base(nodes=4, duration=6000.0, **kw))


def test_a_straggler_slows_its_round_by_its_slowdown_while_it_lasts():
    calm, slow = run(), run(faults=[STRAGGLE])
    assert slow.rounds["round"].tolist() == calm.rounds["round"].tolist() == [0]   # no new round
    s, c, r = slow.summary.iloc[0], calm.summary.iloc[0], slow.rounds.iloc[0]
    assert s.ettr == c.ettr                                   # time is time; capacity is not
    length = r.train_end - r.train_start
    rate = (length - 1000 + 1000 / 2) / length                 # half speed for 1,000 s of it
    assert s.goodput == pytest.approx(r.train_s * rate / 6000, rel=1e-12)
    assert s.lost_straggling_s == pytest.approx(r.train_s * (1 - rate), rel=1e-12)
    assert c.lost_straggling_s == 0.0
    parts = sum(s[f"lost_{k}_s"] for k in ("startup", "detection", "rendezvous", "worker_start",
                                           "checkpoint_load", "checkpoint_stall", "recompute",
                                           "running_smaller", "straggling"))
    assert s.goodput * s.duration + parts == pytest.approx(s.duration, rel=1e-9)


def test_a_straggler_that_is_not_a_member_costs_nothing():
    gone = [{"kind": "crash", "node": 2, "at": 500}]
    a, b = run(faults=gone), run(faults=gone + [STRAGGLE])
    assert b.summary.iloc[0].lost_straggling_s == 0.0
    assert b.summary.iloc[0].goodput == a.summary.iloc[0].goodput


def test_the_slowest_member_sets_the_pace():
    two = [STRAGGLE, {**STRAGGLE, "node": 1, "slowdown": 4.0, "at": 1500, "duration": 100}]
    r = run(faults=two).rounds.iloc[0]
    length = r.train_end - r.train_start
    rate = (length - 1000 + 400 / 2 + 100 / 4 + 500 / 2) / length     # [1500, 1600) at 1/4
    assert run(faults=two).summary.iloc[0].goodput == pytest.approx(r.train_s * rate / 6000, rel=1e-12)


def test_the_scheduler_drains_a_slow_host_and_the_job_reforms_without_it():
    forever = {**STRAGGLE, "slowdown": 3.0, "duration": None}
    drain = {"drain_slower_than": 1.5, "drain_after": 60}
    kept, drained = run(faults=[forever]), run(faults=[forever], scheduler=drain)
    ev = drained.events
    out = ev[ev.event == "node_excluded"]
    assert out.node.tolist() == ["node2"] and out.t.tolist() == [1060.0]
    assert '"why":"straggler"' in out.detail.iloc[0]
    crash = ev[ev.event == "fault_crash"]
    assert crash.t.tolist() == [1060.0] and '"cause":"drained"' in crash.detail.iloc[0]
    assert (ev[ev.event == "node_start"].node == "node2").sum() == 1          # never again
    assert drained.rounds.members.tolist()[-1] == "node0,node1,node3"
    # three hosts at full speed beat four at a third of it
    assert drained.summary.iloc[0].goodput > kept.summary.iloc[0].goodput
    assert drained.summary.iloc[0].lost_straggling_s < kept.summary.iloc[0].lost_straggling_s


def test_a_straggler_that_heals_before_the_drain_is_kept():
    brief = {**STRAGGLE, "slowdown": 3.0, "duration": 30}
    r = run(faults=[brief], scheduler={"drain_slower_than": 1.5, "drain_after": 60})
    assert not r.events.event.isin(["node_excluded", "fault_crash"]).any()
    assert r.events[r.events.event == "straggler_healed"].t.tolist() == [1030.0]


def test_a_straggler_below_the_threshold_is_kept():
    r = run(faults=[STRAGGLE], scheduler={"drain_slower_than": 2.5, "drain_after": 0})
    assert not r.events.event.isin(["node_excluded"]).any()


def test_the_timeline_and_bad_input():
    sc = load(base(nodes=4, faults=[STRAGGLE]))
    assert [(a.kind, a.at, a.value) for a in timeline(sc)[0]] == [("straggle", 1000, 2.0),
                                                                ("unstraggle", 2000, 2.0)]
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.slowdown: Input should be greater than 1"):
        load(base(nodes=4, faults=[{**STRAGGLE, "slowdown": 1.0}]))
    with pytest.raises(ScenarioError, match=r"scheduler\.drain_slower_than: "):
        load(base(nodes=4, scheduler={"drain_slower_than": 0.5}))


def test_the_real_launcher_refuses_a_straggler_by_name():
    pytest.importorskip("torch")
    from real_backend.launcher import RealRun
    with pytest.raises(ValueError, match="does not do straggler: the launcher's workers run no training steps"):
        RealRun(base(nodes=2, duration=10, faults=[{**STRAGGLE, "node": 1, "at": 1}], training=None))
