"""The recovery modes' invariants (rdzv_sim/testing/recovery.py) catch a planted fault in a
real run's tables, and pass the run as it was (the near miss)."""
import json

import pandas as pd

from rdzv_sim.api import run
from rdzv_sim.scenario import load
from rdzv_sim.testing.recovery import (falls_back_only_when_due, recovers_as_its_mode_says,
                                       shrunk_world_is_the_survivors)


def scenario(mode, faults):
    return load({"name": "inv", "seed": 3, "duration": 600, "fidelity": "aggregate",
                 "cluster": {"nodes": 6, "start_spread": 0}, "store": {"host": None},
                 "protocol": {"name": "hrw", "min_nodes": 3, "max_nodes": 6, "probe_interval": 3600},
                 "agent": {"collective_timeout": 30, "recovery": mode}, "faults": faults})


def tables(sc):
    r = run(sc)
    return {"events": r.events.copy(), "rounds": r.rounds}


SHRINK = scenario("shrink", [{"kind": "crash", "node": 2, "at": 200}])


def test_a_shrunk_world_with_a_member_too_many_is_caught():
    t = tables(SHRINK)
    assert shrunk_world_is_the_survivors(t, SHRINK) == []
    ev = t["events"]
    ra = ev[(ev["event"] == "rank_assigned") & (ev["round"] == 1)].iloc[[0]].copy()
    ra["node"], ra["rank"] = "node2", 99                  # the crashed host given a rank
    t["events"] = pd.concat([ev, ra]).sort_values("t", kind="stable")
    assert [v.invariant for v in shrunk_world_is_the_survivors(t, SHRINK)] == ["shrunk_world_is_the_survivors"]


def test_a_survivor_lost_while_the_world_shrinks_is_not_owed_a_rank():
    """Host 0's workers fail (a shrink drops it) and host 1 dies a second later, while the world
    shrinks: the new world's ranks go to the other six. Near miss: a survivor left out that
    did not die is caught."""
    sc = load({"name": "inv", "seed": 0, "duration": 240, "fidelity": "per_operation",
               "cluster": {"nodes": 8, "start_spread": 0}, "store": {"host": None},
               "protocol": {"name": "hrw", "min_nodes": 1, "max_nodes": 8, "last_call_timeout": 0,
                            "confirm_timeout": 5, "close_grace": 1},
               "agent": {"collective_timeout": 5, "monitor_interval": 0.5, "recovery": "shrink"},
               "faults": [{"kind": "worker_failure", "node": 0, "at": 188.5},
                          {"kind": "crash", "node": 1, "at": 189.5}]})
    t = tables(sc)
    ev = t["events"]
    shrink_t = float(ev.loc[ev["event"] == "shrink", "t"].min())
    ranked = ev[(ev["event"] == "rank_assigned") & (ev["round"] == 1)]
    assert shrink_t < 189.5 < ranked["t"].min() and "node1" not in set(ranked["node"]) and len(ranked) == 6
    assert shrunk_world_is_the_survivors(t, sc) == []
    t["events"] = ev.drop(ranked.index[-1])              # a live survivor without its rank
    assert [v.invariant for v in shrunk_world_is_the_survivors(t, sc)] == ["shrunk_world_is_the_survivors"]


def test_a_worker_failure_before_the_workers_run_kills_none():
    """Host 0's worker failure comes before its workers start: there is nothing to kill, and the
    shrink at host 1's keeps host 0 (a random seed found the checker dropping it). Near miss:
    the same failure once host 0's workers run makes a world that keeps host 0 a violation."""
    sc = load({"name": "inv", "seed": 0, "duration": 60, "fidelity": "per_operation",
               "cluster": {"nodes": 3, "start_spread": 0}, "store": {"host": None},
               "protocol": {"name": "c10d", "min_nodes": 1, "max_nodes": 3, "last_call_timeout": 1},
               "agent": {"collective_timeout": 5, "monitor_interval": 0.5, "worker_start": 0,
                         "recovery": "shrink"},
               "faults": [{"kind": "worker_failure", "node": 0, "at": 0.2},
                          {"kind": "worker_failure", "node": 1, "at": 1.2}]})
    t = tables(sc)
    ev = t["events"]
    started = float(ev.loc[(ev["event"] == "workers_started") & (ev["node"] == "node0"), "t"].min())
    early = (ev["event"] == "fault_worker_failure") & (ev["node"] == "node0")
    assert float(ev.loc[early, "t"].iloc[0]) < started < 1.2
    assert (ev["event"] == "shrink").any() and shrunk_world_is_the_survivors(t, sc) == []
    ev.loc[early, "t"] = (started + 1.2) / 2                 # the same failure, its workers running
    t["events"] = ev.sort_values("t", kind="stable")
    assert [v.invariant for v in shrunk_world_is_the_survivors(t, sc)] == ["shrunk_world_is_the_survivors"]


def test_workers_that_start_with_their_ranks_can_fail_at_once():
    """With no worker_start a host's workers start as its rank is given (the same instant): a
    worker failure then on the lone host leaves no survivor, so shrink falls back below
    min_nodes (CI's seed found the checker missing those workers). Near miss: the failure
    before the ranks are given kills none, and the same fallback is caught."""
    sc = load({"name": "inv", "seed": 0, "duration": 30, "fidelity": "per_operation",
               "cluster": {"nodes": 1, "start_spread": 0}, "store": {"host": None},
               "protocol": {"name": "hrw", "min_nodes": 1, "max_nodes": 1, "last_call_timeout": 0},
               "agent": {"collective_timeout": 5, "worker_start": 0, "recovery": "shrink"},
               "faults": [{"kind": "worker_failure", "node": 0, "at": 0.1}]})
    t = tables(sc)
    ev = t["events"]
    ranked = float(ev.loc[(ev["event"] == "rank_assigned") & (ev["round"] == 0), "t"].min())
    assert float(ev.loc[ev["event"] == "workers_started", "t"].min()) == ranked
    assert json.loads(ev.loc[ev["event"] == "recovery_fallback", "detail"].iloc[0])["why"] == "below_min"
    assert falls_back_only_when_due(t, sc) == []
    failure = ev["event"] == "fault_worker_failure"
    ev.loc[failure, "t"] = ranked / 2                      # before the workers run: kills none
    t["events"] = ev.sort_values("t", kind="stable")
    assert [v.invariant for v in falls_back_only_when_due(t, sc)] == ["falls_back_only_when_due"]


def test_an_in_place_world_under_in_job_is_caught():
    t = tables(SHRINK)
    assert recovers_as_its_mode_says(t, SHRINK) == []
    in_job = scenario("in_job", [])
    assert [v.invariant for v in recovers_as_its_mode_says(t, in_job)] == ["recovers_as_its_mode_says"]
    in_process = scenario("in_process", [])
    assert recovers_as_its_mode_says(t, in_process)          # a shrink is not in_process's either


def test_a_fallback_the_tables_do_not_bear_out_is_caught():
    sc = scenario("shrink", [{"kind": "crash", "node": n, "at": 200} for n in (1, 2, 3, 4)])
    t = tables(sc)
    fb = t["events"]["event"] == "recovery_fallback"
    assert fb.sum() == 1 and falls_back_only_when_due(t, sc) == []
    # the same fallback with enough survivors: planted by raising the floor's complement
    roomy = scenario("shrink", [])
    roomy = load({**roomy.model_dump(mode="json"), "protocol": {**roomy.protocol.model_dump(), "min_nodes": 1}})
    assert [v.invariant for v in falls_back_only_when_due(t, roomy)] == ["falls_back_only_when_due"]
    # a fallback "by mode" under shrink, which absorbs every fault
    ev = t["events"]
    ev["detail"] = ev["detail"].astype(object)          # (a categorical: as text to plant one)
    ev.loc[fb, "detail"] = json.dumps({"fault": "host_lost", "why": "mode"})
    assert falls_back_only_when_due(t, sc)


def test_an_unusable_device_bears_out_in_process_falling_back():
    sc = scenario("in_process", [{"kind": "crash", "node": 2, "at": 200, "device_unusable": True}])
    t = tables(sc)
    assert (t["events"]["event"] == "recovery_fallback").sum() == 1
    assert falls_back_only_when_due(t, sc) == []
    ev = t["events"]
    crash = ev["event"] == "fault_crash"
    ev["detail"] = ev["detail"].astype(object)          # (a categorical: as text to plant one)
    ev.loc[crash, "detail"] = json.dumps({"cause": "crash"})     # the device was fine after all
    assert falls_back_only_when_due(t, sc)
