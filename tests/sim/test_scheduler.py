"""The scheduler around a simulated job: hot spares take a failed member's place, a dead job
is requeued, hosts that keep failing are drained."""
import rdzv_sim
from rdzv_sim.scenario.load import ScenarioError, load
from rdzv_sim.trace import details

import pytest


def base(**kw):
    sc = {"name": "sched", "seed": 3, "duration": 400,
          "cluster": {"nodes": 4, "nproc_per_node": 1, "start_spread": 0},
          "protocol": {"name": "hrw", "min_nodes": 3, "max_nodes": 4, "last_call_timeout": 1},
          "agent": {"collective_timeout": 5, "peer_crash_detection": 0.3, "worker_start": 1,
                    "monitor_interval": 1},
          "shards": {"count": 0}}
    sc.update(kw)
    return sc


def members(r, i):
    return set(r.rounds.members.iloc[i].split(","))


def test_a_hot_spare_takes_the_failed_members_place():
    sc = base(scheduler={"hot_spares": 1})
    first = members(rdzv_sim.run(sc), 0)               # 4 of the 5 hosts; one waits, warm
    spare = ({f"node{i}" for i in range(5)} - first).pop()
    victim = sorted(first)[1]
    r = rdzv_sim.run({**sc, "faults": [{"kind": "crash", "node": int(victim[4:]), "at": 50}]})
    assert members(r, 0) == first and len(first) == 4
    assert members(r, 1) == first - {victim} | {spare}  # the spare took the place at once
    # without the spare the job shrinks to 3
    r0 = rdzv_sim.run(base(faults=[{"kind": "crash", "node": 1, "at": 50}]))
    assert len(members(r0, 1)) == 3


def test_a_dead_job_is_requeued_after_the_delay():
    sc = base(scheduler={"requeue_delay": 60}, faults=[{"kind": "store_crash", "at": 50}])
    r = rdzv_sim.run(sc)
    ev = r.events
    requeued = ev[ev.event == "job_requeued"].t
    assert len(requeued) == 1
    failed = float(ev[ev.event == "job_failed"].t.iloc[0])
    assert requeued.iloc[0] == pytest.approx(failed + 60)
    later = r.rounds[r.rounds.start > requeued.iloc[0]]
    assert len(later) == 1 and len(later.members.iloc[0].split(",")) == 4      # training again, on a new store
    assert r.summary.requeues.iloc[0] == 1
    # without a requeue delay the job stays dead
    r0 = rdzv_sim.run(base(faults=[{"kind": "store_crash", "at": 50}]))
    assert (r0.events.event == "job_requeued").sum() == 0 and len(r0.rounds) == 1


def test_job_interruptions_that_requeue():
    sc = base(duration=20000, scheduler={"requeue_delay": 300},
              random_faults=[{"kind": "interruptions", "cause": "planned", "count": 5, "scope": "job",
                              "requeue": True}])
    r = rdzv_sim.run(sc)
    n = int((r.events.event == "fault_job_interruption").sum())
    req = r.events[r.events.event == "job_requeued"].t.tolist()
    failed = r.events[r.events.event == "job_failed"].t.tolist()
    # one requeue per interruption, but one already pending absorbs the next, and the last may
    # fall after the end of the run
    assert 1 <= len(req) <= n and r.summary.requeues.iloc[0] == len(req)
    assert all(any(abs(q - f - 300) < 1e-6 for f in failed) for q in req)
    stopped = r.events[r.events.event == "agent_stopped"]
    assert (r.events.event == "fault_crash").sum() == 0 and len(stopped) >= 4


def test_repeat_offenders_are_drained():
    sc = base(duration=3000, scheduler={"exclude_after": 2},
              random_faults=[{"kind": "node_failures", "mtbf": 200, "repair": 20}])
    r = rdzv_sim.run(sc)
    ev = r.events
    crashes = ev[ev.event == "fault_crash"].node.value_counts()
    assert crashes.max() == 2                     # never a third time: drained after the second
    excluded = ev[ev.event == "node_excluded"]
    assert set(excluded.node) == set(crashes[crashes == 2].index)
    assert all(d["failures"] == 2 for d in details(excluded))
    assert r.summary.nodes_excluded.iloc[0] == len(excluded)


def test_scheduler_settings_are_checked():
    with pytest.raises(ScenarioError, match="requeue needs scheduler.requeue_delay"):
        load(base(random_faults=[{"kind": "interruptions", "cause": "x", "count": 1, "scope": "job",
                                  "requeue": True}]))
    with pytest.raises(ScenarioError, match="static world"):
        load(base(protocol={"name": "static"}, scheduler={"hot_spares": 1}))
