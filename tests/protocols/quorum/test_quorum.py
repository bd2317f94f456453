"""The quorum protocol (torchft-style per-step fault tolerance) in the simulator."""
import math

import pytest
from hypothesis import HealthCheck, given, settings

from rdzv_sim import run
from rdzv_sim.protocols.quorum.lighthouse import Costs, Lighthouse, QuorumRules
from rdzv_sim.scenario.load import ScenarioError, load
from rdzv_sim.testing import check_run, fault_schedules, scenarios
from rdzv_sim.testing.strategies import FAULT_KINDS

BASE = {"name": "q", "seed": 3, "duration": 60, "cluster": {"nodes": 6}, "store": {"host": None},
        "protocol": {"name": "quorum", "group_size": 2, "step_time": 0.5, "quorum_cost": 0.0,
                     "reconfigure_time": 0.2, "heartbeat_timeout": 1.0, "quorum_join_timeout": 1.0,
                     "state_bytes": 4e9, "heal_bandwidth": 1e9, "last_call_timeout": 0,
                     "probe_interval": 1.0, "probe_timeout": 1.0},
        "agent": {"worker_start": 2.0, "peer_crash_detection": 0.3},
        "training": {"checkpoint_interval": 20, "checkpoint_cost": 1.0}}


def scenario(**faults):
    return {**BASE, "faults": faults.get("faults", [])}


def test_a_group_failing_leaves_the_others_training():
    r = run(scenario(faults=[{"kind": "crash", "at": 20, "node": 2}]))
    ev, q = r.events, r.quorums
    # hosts 0,1 (group 0) and 4,5 (group 2) never leave their rounds: no restart
    left = ev[(ev["event"] == "round_left") & ev["node"].isin(["node0", "node1", "node4", "node5"])]
    assert left.empty
    fail = q[q["cause"] == "failure"].iloc[0]
    assert fail["left"] == "1" and fail["members"] == "0,2" and not fail["restart"]
    # the survivors ask once their step failed (0.3 s); the Lighthouse drops the dead group
    # when its heartbeat goes stale (1 s), before their join timeout (1 s after they asked)
    assert fail["t"] == pytest.approx(20 + 1.0, abs=0.11)
    s = r.summary.iloc[0]
    assert s["absorbed"] == 1 and s["full_restarts"] == 0
    assert s["lost_recompute_s"] == 0 and s["lost_checkpoint_load_s"] == 0
    total = s["goodput"] * 60 + sum(s[c] for c in r.summary.columns if c.startswith("lost_"))
    assert total == pytest.approx(60)


def test_a_recovered_group_heals_before_it_contributes():
    r = run(scenario(faults=[{"kind": "crash", "at": 20, "node": 2}, {"kind": "restart", "at": 30, "node": 2}]))
    q = r.quorums
    join = q[(q["cause"] == "join") & (q["t"] > 30)].iloc[0]
    assert join["joined"] == "1" and join["members"] == "0,1,2"
    # the heal: 4 GB over 2 hosts at 1 GB/s, the others wait (reconfigure 0.2 s too)
    s = r.summary.iloc[0]
    assert s["lost_heal_s"] > 0
    rounds = r.rounds[r.rounds["train_start"] > 30]
    (g1,) = rounds["train_s"].tolist()
    assert g1 <= 60 - join["t"] - 2.0 - 0.2 + 1e-6


def test_every_group_down_restarts_from_the_checkpoint():
    r = run(scenario(faults=[{"kind": "rack_failure", "at": 25, "rack": 0, "repair": 10}]
                     ) | {"cluster": {"nodes": 6, "topology": {"kind": "racks", "racks": 1}}})
    q = r.quorums
    assert q["restart"].iloc[1:].any()
    s = r.summary.iloc[0]
    assert s["full_restarts"] >= 1 and s["lost_recompute_s"] > 0


def test_the_lighthouse_waits_for_heartbeating_stragglers():
    """torchft's rule: while a group heartbeats without asking, a new quorum waits for it up
    to join_timeout; a fast quorum (every last member asks again) does not wait."""
    rules = QuorumRules(min_replicas=1, join_timeout=5.0, heartbeat_timeout=2.0)
    asked = {0: 1.0, 1: 1.0}
    assert rules.decide(1.0, asked, {0, 1, 2}, None) is None
    assert rules.decide(6.0, asked, {0, 1, 2}, None) == frozenset({0, 1})
    assert rules.decide(1.0, {0: 1.0, 1: 1.0}, {0, 1, 2}, frozenset({0, 1})) == frozenset({0, 1})
    # split brain: no quorum from half of the heartbeating groups or fewer
    assert rules.decide(9.0, {0: 1.0}, {0, 1}, frozenset({1})) is None


def test_the_join_timeout_counts_from_the_first_group_that_asked():
    """Staggered asks (1 s and 4 s, a third group heartbeating but silent): the Lighthouse
    waits join_timeout from the *first* ask (6 s), not from the latest (9 s)."""
    rules = QuorumRules(min_replicas=1, join_timeout=5.0, heartbeat_timeout=2.0)
    asked = {0: 1.0, 1: 4.0}
    assert rules.decide(5.99, asked, {0, 1, 2}, None) is None
    assert rules.decide(6.0, asked, {0, 1, 2}, None) == frozenset({0, 1})
    lh = Lighthouse(rules, Costs(step_time=1.0), duration=100.0)
    lh.replay([(0, 0.0, 1.0, math.inf), (1, 0.0, 4.0, math.inf), (2, 0.0, math.inf, math.inf)])
    assert [(q.t, sorted(q.groups)) for q in lh.quorums][0] == (6.0, [0, 1])


def test_replay_is_event_driven_not_stepped():
    """A week of 1 s steps with two changes costs a handful of segments, not 600k steps."""
    lh = Lighthouse(QuorumRules(), Costs(step_time=1.0), duration=7 * 86400.0)
    lh.replay([(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, 3600.0), (1, 7000.0, 7100.0, math.inf)])
    assert len(lh.segments) < 10 and [q.cause for q in lh.quorums] == ["start", "failure", "join"]


@pytest.mark.parametrize("field,value,path", [
    ("group_size", 4, "protocol.group_size"), ("min_replicas", 9, "protocol.min_replicas"),
    ("max_nodes", 4, "protocol.max_nodes")])
def test_bad_settings_are_refused_by_path(field, value, path):
    bad = {**BASE, "protocol": {**BASE["protocol"], field: value}}
    with pytest.raises(ScenarioError) as e:
        load(bad)
    assert path in str(e.value)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenarios(protocol="quorum", nodes=__import__("hypothesis").strategies.sampled_from([2, 4, 6]),
                 faults=lambda n: fault_schedules(n, horizon=60.0, kinds=(*FAULT_KINDS, "lighthouse_crash"))))
def test_quorum_invariants_hold_under_random_faults(sc):
    check_run(sc, liveness=False)


def test_a_quorum_forms_on_the_request_that_completes_it():
    """torchft runs a tick on every request: the last group's ask forms the quorum at once,
    not at the next timer tick."""
    lh = Lighthouse(QuorumRules(tick=0.1), Costs(step_time=1.0), duration=100.0)
    lh.replay([(0, 0.0, 1.03, math.inf), (1, 0.0, 1.07, math.inf)])
    assert lh.quorums[0].t == 1.07


def test_a_restarted_group_is_a_new_replica_as_torchft_counts_it():
    """torchft's Manager gives every start a new replica id: a group back within the
    heartbeat timeout is no fast-quorum member, and its old life's heartbeat holds the quorum
    back until it goes stale. The replay's quorum is the sans-IO Lighthouse's, fed the same
    requests and heartbeats (the old life's last heartbeat at its death)."""
    from rdzv_sim.protocols.quorum import LighthouseState, Member
    rules = QuorumRules(min_replicas=1, join_timeout=60.0, heartbeat_timeout=5.0, tick=0.1)
    lh = Lighthouse(rules, Costs(step_time=1.0, quorum_cost=0.0), duration=200.0)
    lh.replay([(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, 100.5), (2, 0.0, 1.0, math.inf),
               (1, 100.8, 101.0, math.inf)])
    after = [q for q in lh.quorums if q.t > 100.5]
    s = LighthouseState(rules)
    for r in ("g0", "g1a", "g2"):              # every group heartbeats from 0, asks at 1
        s.heartbeat(0.0, r)
    for r in ("g0", "g1a", "g2"):
        s.request(1.0, Member(r))
    s.heartbeat(100.5, "g1a")                  # its last: it dies then
    s.heartbeat(100.8, "g1b")                  # the new life's Manager is up
    failed = 101.0                             # the survivors' step fails at its end
    for r in ("g0", "g2"):
        s.heartbeat(failed, r)
    s.request(failed, Member("g1b"))           # the new life asks at 101.0
    s.request(failed, Member("g0"))
    assert s.request(failed, Member("g2")) is None      # not fast: g1a is not asking
    t = failed
    for _ in range(100):                       # the timer's ticks, until it forms
        if (q := s.tick(t)) is not None:
            break
        t = rules.on_tick(t + rules.tick / 2)
    assert q.ids == ["g0", "g1b", "g2"]
    assert after[0].t == q.t == rules.on_tick(100.5 + 5.0)
    assert sorted(after[0].groups) == [0, 1, 2]


def test_step_counts_are_torchfts_on_a_run_whose_steps_are_known():
    """Two groups, 1 s steps, 1 s to reconfigure: the first quorum forms at 1 s (both ask), so
    steps end at 3, 4, ..., 100 s: 98 commit. Group 1 dies at 50.5 s: the step in flight
    (50-51 s) fails; 48 steps had committed (3..50 s). Its old heartbeat keeps group 0 from a
    majority until it goes stale (55.5 s); group 0 alone reconfigures until 56.5 s and commits
    the steps ending at 57.5, ..., 99.5 s: 43 more."""
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0)
    rules = QuorumRules(min_replicas=1, heartbeat_timeout=5.0, tick=0.1)
    calm = Lighthouse(rules, costs, duration=100.0).replay([(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, math.inf)])
    assert (calm.steps.committed, calm.steps.failed, calm.steps.group_steps) == (98, 0, 196)
    lh = Lighthouse(rules, costs, duration=100.0).replay([(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, 50.5)])
    assert [q.t for q in lh.quorums] == [1.0, 55.5]
    assert (lh.steps.committed, lh.steps.failed, lh.steps.attempted) == (48 + 43, 1, 92)
    assert lh.steps.group_steps == 48 * 2 + 43


def test_the_summary_of_a_quorum_run_counts_its_steps():
    r = run(scenario(faults=[{"kind": "crash", "node": 3, "at": 25}]))
    s = r.summary.iloc[0]
    assert s["steps_attempted"] == s["steps_committed"] + s["steps_failed"]
    assert s["steps_failed"] == 1 and s["steps_committed"] > 0
    assert s["step_efficiency"] == s["steps_committed"] / s["steps_attempted"]
    # torchft's average step time is per attempted step; a committed step cost more wall
    assert s["wall_per_attempted_step_s"] * s["steps_attempted"] == \
        pytest.approx(s["wall_per_committed_step_s"] * s["steps_committed"])
    assert s["wall_per_attempted_step_s"] < s["wall_per_committed_step_s"]
    assert 1 < s["groups_per_step"] < r.scenario.protocol.groups(r.scenario.max_nodes)


def test_async_quorum_hides_a_heal_behind_the_steps_compute_and_waits_for_the_rest():
    """torchft's use_async_quorum: the quorum call and a recovering group's heal run in the
    background, but torchft 0.2.0 fetches the state inside the quorum future and
    `Manager.allreduce` waits for it: the heal hides behind the step's compute, and what it
    takes beyond that stalls every group's all-reduce. The healing group contributes nothing
    to that step. 1 s steps, 1 s to reconfigure, groups 0 and 1 from 1 s (init_sync heals
    group 1), group 2 from 10.3 s.
    - A 0.5 s heal hides: no stall; group 1 heals in 2-3 s, group 2 joins at 11 s and heals
      in 12-13 s while the others train.
    - A 2.5 s heal: 1.5 s beyond the step's compute stall everyone (1-3.5 s: reconfigure and
      the wait), the healing group contributes from the boundary after (4.5 s); group 2 joins
      at the 10.5 s boundary, everyone waits to 13 s, and it contributes from 14 s."""
    def replay(heal):
        costs = Costs(step_time=1.0, quorum_cost=0.5, reconfigure=1.0, heal=heal, overlap=True)
        return Lighthouse(QuorumRules(tick=0.1), costs, duration=30.0).replay(
            [(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, math.inf), (2, 10.0, 10.3, math.inf)])

    def healing(lh):
        return [(s.t0, s.t1, sorted(s.healing)) for s in lh.segments if s.healing]
    hidden = replay(0.5)
    assert [q.t for q in hidden.quorums] == [1.0, 11.0]
    assert not [s for s in hidden.segments if s.kind == "heal"]
    assert healing(hidden) == [(2.0, 3.0, [1]), (12.0, 13.0, [2])]
    assert hidden.steps.committed == 9 + 18 and hidden.steps.group_steps == 1 + 8 * 2 + 2 + 17 * 3
    long = replay(2.5)
    assert [q.t for q in long.quorums] == [1.0, 10.5]
    assert [(s.t0, s.t1) for s in long.segments if s.kind == "heal"] == [(1.0, 3.5), (10.5, 13.0)]
    assert healing(long) == [(3.5, 4.5, [1]), (13.0, 14.0, [2])]
    assert long.steps.committed == 7 + 17 and long.steps.group_steps == 1 + 6 * 2 + 2 + 16 * 3
    sync = Lighthouse(QuorumRules(tick=0.1), Costs(step_time=1.0, quorum_cost=0.5, reconfigure=1.0,
                                                   heal=2.5), duration=30.0).replay(
        [(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, math.inf), (2, 10.0, 10.3, math.inf)])
    assert [(s.t0, s.t1) for s in sync.segments if s.kind == "heal"][0] == (1.0, 4.5)


def test_async_quorum_is_the_default_and_charges_a_hidden_heal_to_the_healing_group_only():
    # a 0.4 s heal (0.8 GB over 2 hosts at 1 GB/s) hides behind a 0.5 s step's compute
    base = {**BASE, "protocol": {**BASE["protocol"], "quorum_cost": 0.05, "state_bytes": 0.8e9}}
    faults = [{"kind": "crash", "at": 20, "node": 2}, {"kind": "restart", "at": 25, "node": 2}]
    a = run({**base, "faults": faults}).summary.iloc[0]
    s = run({**base, "faults": faults, "protocol": {**base["protocol"], "async_quorum": False}}).summary.iloc[0]
    assert a["lost_quorum_s"] == 0 < s["lost_quorum_s"]
    # sync: every group waits for the heal; async: only the healing group's share is lost
    assert 0 < a["lost_heal_s"] < s["lost_heal_s"]
    assert a["goodput"] > s["goodput"]
    for r in (a, s):
        total = r["goodput"] * 60 + sum(r[c] for c in r.index if c.startswith("lost_"))
        assert total == pytest.approx(60)


def test_sync_every_k_steps_syncs_without_a_dead_group_at_the_window_end():
    """torchft 0.2.0's LocalSGD / DiLoCo (sync_every = 5, 1 s steps) ask for the quorum at a
    window's end (measured: reports/validation/validate-quorum-localsgd). Both groups come up
    at 1 s and ask after their first window, at 6 s; the quorum forms then and syncs from 7 s
    (1 s to reconfigure): windows end at 12, 17, ..., 47, 52 s. Group 1 dies at 50.5 s: group 0
    trains its window out and commits it alone at 52 s, and its quorum call waits for the
    Lighthouse to drop group 1 (heartbeat stale at 55.5 s); from 56.5 s, 56.5 + 5k <= 100
    gives 8 more windows. No step fails."""
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0, sync_every=5)
    rules = QuorumRules(min_replicas=1, heartbeat_timeout=5.0, tick=0.1)
    lh = Lighthouse(rules, costs, duration=100.0).replay([(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, 50.5)])
    assert [q.t for q in lh.quorums] == [6.0, 55.5]
    fail = [s for s in lh.segments if s.kind == "failure"][0]
    assert (fail.t0, fail.t1) == (52.0, 55.5)
    assert (lh.steps.committed, lh.steps.failed) == (9 * 5 + 8 * 5, 0)
    assert lh.steps.group_steps == 8 * 5 * 2 + 5 + 8 * 5
    # both die in the window (a job-wide fault): the window is lost, nothing commits at 52 s
    both = Lighthouse(rules, costs, duration=100.0).replay([(0, 0.0, 1.0, 50.5), (1, 0.0, 1.0, 50.5)])
    assert (both.steps.committed, both.steps.failed) == (8 * 5, 5)
    assert not [s for s in both.segments if s.kind == "train" and s.t1 > 50.5]


def test_nothing_hides_behind_compute_when_syncing_every_k_steps():
    """The async quorum hides the call and a heal behind a step's compute; LocalSGD and DiLoCo
    ask at a window's end and all-reduce at once, so with sync_every > 1 nothing hides."""
    per_step = Costs(step_time=6.0, quorum_cost=0.5, heal=16.0, overlap=True)
    window = Costs(step_time=6.0, quorum_cost=0.5, heal=16.0, overlap=True, sync_every=8)
    assert per_step.overlapped and (per_step.heal_wait, per_step.step) == (10.0, 6.0)
    assert not window.overlapped and (window.heal_wait, window.step) == (16.0, 48.5)


def test_regression_async_join_with_nothing_to_fetch():
    """Found by the property test above (the loaded series): async quorum, nothing to fetch
    (state_bytes 0): a group that joins contributes right after the reconfiguration, and the
    invariant must not wait for a heal segment the async quorum never cuts."""
    from pathlib import Path
    check_run(load(Path(__file__).with_name("quorum-async-join-nothing-to-fetch.yaml")), liveness=False)


def test_a_lighthouse_back_before_the_managers_last_retry_costs_the_wait_and_a_step():
    """torchft 0.2.0, measured (reports/per_step_ft.md): a quorum call that finds no Lighthouse
    is retried every quorum_timeout / (retries + 1). Two groups, 1 s steps from 2 s; the
    Lighthouse is gone 30.5-36 s: the step starting at 31 s fails its call, and the retries at
    36 s reach the fresh Lighthouse. Its heartbeats come with the retries, so the first retry
    forms a quorum alone (1 s to reconfigure, a step alone) and the other joins at that step's
    end (1 s more); with ids that are never given twice (`unique`) nothing else fails."""
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0, quorum_retries=3, quorum_timeout=20.0,
                  ids="unique")
    lh = Lighthouse(QuorumRules(heartbeat_timeout=5.0, tick=0.1), costs, duration=100.0, first_retry=1).replay(
        [(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, math.inf)], outages=[(30.5, 36.0)])
    assert [(q.t, sorted(q.groups), q.cause, q.restart) for q in lh.quorums] == [
        (1.0, [0, 1], "start", True), (36.0, [1], "lighthouse", False), (38.0, [0, 1], "join", False)]
    assert [(s.t0, s.t1) for s in lh.segments if s.kind == "outage"] == [(31.0, 36.0)]
    assert (lh.steps.committed, lh.steps.failed) == (29 + 1 + 61, 1)


def _lost_lighthouse(ids: str, **given) -> Lighthouse:
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0, quorum_retries=3, quorum_timeout=20.0,
                  timeout=3.0, ids=ids)
    return Lighthouse(QuorumRules(heartbeat_timeout=5.0, tick=0.1), costs, duration=100.0, **given).replay(
        [(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, math.inf)], outages=[(30.5, 36.0)])


def test_a_fresh_lighthouse_numbering_from_one_gives_the_first_retry_its_old_id_and_its_step_fails():
    """torchft 0.2.0 (`lighthouse_ids: restart`): the fresh Lighthouse's first quorum is id 1
    again, the id the lone first retry last configured, for both groups: its Manager keeps that
    process group, of two, and the step (37-38 s) hangs to torchft's timeout (3 s); the next
    quorum (41 s) has commit failures, a new id, and both reconfigure. The near miss, ids never
    given twice: the lone quorum is id 2, a new process group, and it commits its step."""
    shipped = _lost_lighthouse("restart", first_retry=1)
    assert [(q.t, sorted(q.groups), q.quorum_id, q.stale) for q in shipped.quorums] == [
        (1.0, [0, 1], 1, False), (36.0, [1], 1, True), (41.0, [0, 1], 2, False)]
    assert (shipped.steps.committed, shipped.steps.failed) == (29 + 58, 2)
    fixed = _lost_lighthouse("unique", first_retry=1)
    assert [(sorted(q.groups), q.quorum_id, q.stale) for q in fixed.quorums] == [
        ([0, 1], 1, False), ([1], 2, False), ([0, 1], 3, False)]
    assert (fixed.steps.committed, fixed.steps.failed) == (29 + 1 + 61, 1)


def test_a_group_given_its_old_id_with_the_others_reconfiguring_fails_the_quorums_step():
    """As in the real runs (docs/per-step.md): start-up made two quorums, so both groups last
    had id 2; the lone first retry gets id 1 (a new process group) and commits a step alone;
    the quorum of both is id 2 again: group 0 keeps its old process group, group 1 makes a new
    one, and that step fails; id 3 trains both. The near miss: ids never given twice."""
    shipped = _lost_lighthouse("restart", first_retry=1, last_id=2)
    assert [(sorted(q.groups), q.quorum_id, q.stale) for q in shipped.quorums] == [
        ([0, 1], 1, False), ([1], 1, False), ([0, 1], 2, True), ([0, 1], 3, False)]
    assert shipped.steps.failed == 2
    fixed = _lost_lighthouse("unique", first_retry=1, last_id=2)
    assert [q.stale for q in fixed.quorums] == [False] * 3 and fixed.steps.failed == 1


def _lost_lighthouse3(**given) -> Lighthouse:
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0, quorum_retries=3, quorum_timeout=20.0,
                  timeout=3.0, ids="restart", stale_connect=25.0)
    return Lighthouse(QuorumRules(join_timeout=1.0, heartbeat_timeout=5.0, tick=0.1), costs, duration=100.0,
                      last_id=2, **given).replay([(g, 0.0, 1.0, math.inf) for g in range(3)],
                                                 outages=[(30.5, 36.0)])


def test_a_new_process_group_on_the_store_that_holds_its_ids_old_keys_hangs_and_the_others_go_on():
    """runs.md's path b: the quorum before the loss met on group 0's store (the first group at
    its max step), so its keys stay under /torchft/2/ there; the lone first retry, group 0, is
    at the max step of the stale quorum 2 and its store serves it again: group 0's new process
    group reads the old addresses and hangs in Gloo's connect (25 s from the call at 38 s),
    groups 1 and 2 fail their step (43 s), wait the join timeout for it and train as id 3
    without it (44 s); group 0 asks at 63 s and joins, healing. The near miss (path a): the
    lone retry is group 1, whose store holds no id-2 keys: its wait fails with the others'
    step and all three meet as id 3."""
    b = _lost_lighthouse3(first_retry=0)
    assert [(q.t, sorted(q.groups), q.quorum_id, q.store, sorted(q.hung), sorted(q.joined))
            for q in b.quorums[1:]] == [
        (36.0, [0], 1, 0, [], []), (38.0, [0, 1, 2], 2, 0, [0], []), (44.0, [1, 2], 3, 1, [], []),
        (63.0, [0, 1, 2], 4, 1, [], [0])]
    a = _lost_lighthouse3(first_retry=1)
    assert [(q.t, sorted(q.groups), q.quorum_id, q.store, sorted(q.hung)) for q in a.quorums[1:]] == [
        (36.0, [1], 1, 1, []), (38.0, [0, 1, 2], 2, 1, []), (43.0, [0, 1, 2], 3, 1, [])]
    assert (a.steps.failed, b.steps.failed) == (2, 2)


def test_the_stores_a_real_run_built_its_process_groups_on_are_given_to_the_model():
    """`stores` (for each quorum id before the loss, the group whose store its process groups
    were built on) replaces the model's own: group 1's store holding id 2's keys, group 1 as
    the lone retry hangs; group 0's store holding them, it does not."""
    assert sorted(_lost_lighthouse3(first_retry=1, stores={1: 0, 2: 1}).quorums[2].hung) == [1]
    assert not _lost_lighthouse3(first_retry=1, stores={1: 1, 2: 0}).quorums[2].hung


def test_a_quorums_store_is_the_first_group_at_its_max_step():
    """torchft's primary: the first participant (by replica id) among those at the max step;
    a group that trained in a later quorum is ahead of one that did not."""
    lh = Lighthouse(QuorumRules(), Costs(), duration=1.0)
    lh.trained_in = {0: 3, 1: 5, 2: 5}
    assert lh.store_of(frozenset({0, 1, 2})) == 1
    assert lh.store_of(frozenset({0, 2})) == 2
    lh.trained_in = {1: 5}
    assert lh.store_of(frozenset({0, 2})) == 0          # neither trained yet: all at step 0


def test_which_retry_comes_first_is_drawn_from_the_seed():
    firsts = {min(_lost_lighthouse_seeded(seed).quorums[1].groups) for seed in range(12)}
    assert firsts == {0, 1}
    assert _lost_lighthouse_seeded(5).quorums[1].groups == _lost_lighthouse_seeded(5).quorums[1].groups


def _lost_lighthouse_seeded(seed: int) -> Lighthouse:
    return _lost_lighthouse("restart", seed=seed)


def test_a_lighthouse_gone_past_the_retries_kills_the_training_and_restarts_it_from_a_checkpoint():
    """No retries (torchft's default): the call at 31 s fails, hangs to quorum_timeout (20 s)
    and raises; the processes restart (4 s) and ask at 55 s, the Lighthouse is back (45 s):
    a quorum with no live state, so a checkpoint load (3 s) before steps end at 60..100 s."""
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0, load=3.0, quorum_timeout=20.0, restart=4.0)
    lh = Lighthouse(QuorumRules(heartbeat_timeout=5.0, tick=0.1), costs, duration=100.0).replay(
        [(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, math.inf)], outages=[(30.5, 45.0)])
    assert [(q.t, q.cause, q.restart) for q in lh.quorums] == [(1.0, "start", True), (55.0, "lighthouse", True)]
    assert [(s.t0, s.t1, s.kind) for s in lh.segments if s.t0 >= 31] == [
        (31.0, 55.0, "outage"), (55.0, 59.0, "load"), (59.0, 100.0, "train")]
    assert (lh.steps.committed, lh.steps.failed) == (29 + 41, 1)
    never = Lighthouse(QuorumRules(), costs, duration=100.0).replay(
        [(0, 0.0, 1.0, math.inf)], outages=[(30.5, math.inf)])
    assert never.segments[-1].kind == "outage" and never.segments[-1].t1 == 100.0


def test_a_lighthouse_crash_in_a_run_is_charged_to_the_quorum_and_refused_elsewhere():
    faults = [{"kind": "lighthouse_crash", "at": 20, "duration": 5}]
    base = {**BASE, "protocol": {**BASE["protocol"], "quorum_retries": 5, "quorum_timeout": 12.0}}
    r = run({**base, "faults": faults})
    ev = r.events
    assert ev[ev["event"] == "fault_lighthouse_crash"]["t"].tolist() == [20.0]
    assert ev[ev["event"] == "lighthouse_restarted"]["t"].tolist() == [25.0]
    q = r.quorums
    back = q[q["cause"] == "lighthouse"]
    assert len(back) == 1 and not back["restart"].iloc[0] and 25.0 <= back["t"].iloc[0] <= 27.0
    assert back["groups"].iloc[0] == 1                  # the first retry, alone (torchft 0.2.0)
    s = r.summary.iloc[0]
    calm = run(base).summary.iloc[0]
    # the call that found no Lighthouse, and the lone quorum's step on a reused id
    assert s["lost_quorum_s"] > calm["lost_quorum_s"] + 4.0 and s["steps_failed"] == 2
    assert q["stale"].tolist().count(True) == 1
    assert s["goodput"] * 60 + sum(s[c] for c in r.summary.columns if c.startswith("lost_")) == pytest.approx(60)
    with pytest.raises(ScenarioError, match="needs a protocol with torchft.s Lighthouse"):
        load({**base, "protocol": {"name": "hrw"}, "faults": faults})


def test_min_replica_size_gates_commits_apart_from_the_lighthouses_min_replicas():
    """torchft's Manager commits a step only with min_replica_size participants; the
    Lighthouse forms quorums from min_replicas. The known-steps case above with
    min_replica_size 2: after group 1 dies at 50.5 s, group 0 alone still gets its quorum
    (min_replicas 1) at 55.5 s, but none of its 43 steps commits."""
    rules = QuorumRules(min_replicas=1, heartbeat_timeout=5.0, tick=0.1)
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0, min_commit=2)
    lh = Lighthouse(rules, costs, duration=100.0).replay([(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, 50.5)])
    assert [q.t for q in lh.quorums] == [1.0, 55.5]
    assert (lh.steps.committed, lh.steps.failed) == (48, 1 + 43)
    base = {**BASE, "faults": [{"kind": "crash", "at": 20, "node": 2}, {"kind": "crash", "at": 20, "node": 3}]}
    loose = run(base).summary.iloc[0]
    strict = run({**base, "protocol": {**BASE["protocol"], "min_replica_size": 3}}).summary.iloc[0]
    assert strict["steps_committed"] < loose["steps_committed"]
    assert strict["lost_quorum_s"] > loose["lost_quorum_s"] and strict["goodput"] < loose["goodput"]
    assert strict["goodput"] * 60 + sum(strict[c] for c in strict.index if c.startswith("lost_")) == pytest.approx(60)
    with pytest.raises(ScenarioError, match="min_replica_size"):
        load({**BASE, "protocol": {**BASE["protocol"], "min_replica_size": 4}})


def test_the_quorums_table_says_each_quorums_store_and_who_hung():
    from rdzv_sim.training.quorum import quorums_table
    q = quorums_table(_lost_lighthouse3(first_retry=0), group_size=1)
    assert q["store"].tolist() == [0, 0, 0, 1, 1]
    assert q["hung"].tolist() == ["", "", "0", "", ""]
