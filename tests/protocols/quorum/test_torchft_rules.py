"""torchft's own unit tests of its quorum rules, ported case by case onto `QuorumRules`,
`LighthouseState` and `heal_plan`. Each test names the torchft test it comes from (torchft
`src/lighthouse.rs` and `src/manager.rs`); the facts are torchft's, the code is ours. The cases
that go through the server also run against torchft's real Lighthouse and Managers:
`tests/real/test_torchft_lighthouse.py`."""
from __future__ import annotations

import pytest

from rdzv_sim.protocols.quorum import (LighthouseState, Member, QuorumRules, Verdict,
                                       heal_plan)

HOUR = 3600.0


def state(min_replicas=1, join_timeout=HOUR, heartbeat_timeout=5.0) -> LighthouseState:
    return LighthouseState(QuorumRules(min_replicas, join_timeout, heartbeat_timeout, tick=0.01))


def compute(s: LighthouseState, now: float):
    """torchft's quorum_compute on a state: (members or None, verdict), changing nothing."""
    d = s.decision(now)
    return d.members, d.verdict


def join(s: LighthouseState, rid: str, now: float, **member) -> None:
    """A participant and its heartbeat, as torchft's tests insert them."""
    s.participants[rid] = (now, Member(rid, **member))
    s.heartbeats[rid] = now


def prev_quorum(s: LighthouseState, *ids: str) -> None:
    from rdzv_sim.protocols.quorum import Quorum
    s.prev = Quorum(1, tuple(Member(r) for r in ids), 0.0, Verdict.VALID)
    s.quorum_id = 1


def test_quorum_join_timeout():
    """lighthouse.rs test_quorum_join_timeout."""
    s, now = state(), 100.0
    assert compute(s, now) == (None, Verdict.TOO_FEW)
    join(s, "a", now)
    join(s, "b", now)
    assert compute(s, now) == ({"a", "b"}, Verdict.VALID)       # every healthy worker asked
    s.heartbeats["c"] = now                                      # healthy, not participating
    assert compute(s, now) == (None, Verdict.STRAGGLERS)
    s.participants["a"] = (now - 10 * HOUR, s.participants["a"][1])
    assert compute(s, now) == ({"a", "b"}, Verdict.VALID)       # past the join timeout


def test_quorum_heartbeats():
    """lighthouse.rs test_quorum_heartbeats (join_timeout 0)."""
    s, now = state(join_timeout=0.0), 100.0
    join(s, "a", now)
    assert compute(s, now) == ({"a"}, Verdict.VALID)
    s.heartbeats["a"] = now - 10                                 # expired heartbeat
    assert compute(s, now) == (None, Verdict.TOO_FEW)
    join(s, "b", now)                                            # one healthy, one expired
    assert compute(s, now) == ({"b"}, Verdict.VALID)


def test_quorum_fast_prev_quorum():
    """lighthouse.rs test_quorum_fast_prev_quorum."""
    s, now = state(), 100.0
    assert compute(s, now)[0] is None
    join(s, "a", now)
    s.heartbeats["b"] = now                                      # alive, not participating
    assert compute(s, now) == (None, Verdict.SPLIT_BRAIN)
    prev_quorum(s, "a")
    assert compute(s, now) == ({"a"}, Verdict.FAST)             # a fast quorum ignores b
    join(s, "b", now)                                            # grows by a fast quorum
    assert compute(s, now) == ({"a", "b"}, Verdict.FAST)


def test_quorum_shrink_only():
    """lighthouse.rs test_quorum_shrink_only: a shrink-only asker keeps out replicas that
    were not in the last quorum, even on a fast quorum."""
    s, now = state(), 100.0
    prev_quorum(s, "a", "b")
    join(s, "a", now, shrink_only=True)
    join(s, "c", now, shrink_only=True)                          # not in the last quorum
    members, verdict = compute(s, now)
    assert members == {"a"}


def test_quorum_shrink_only_counts_before_it_filters():
    """torchft counts min_replicas and split brain over every healthy asker, before the
    shrink-only filter: two askers meet min_replicas = 2 though the quorum keeps one."""
    s, now = state(min_replicas=2, join_timeout=0.0), 100.0
    prev_quorum(s, "a", "gone")
    join(s, "a", now, shrink_only=True)
    join(s, "c", now)
    assert compute(s, now) == ({"a"}, Verdict.VALID)


def test_quorum_split_brain():
    """lighthouse.rs test_quorum_split_brain."""
    s, now = state(), 100.0
    assert compute(s, now)[0] is None
    join(s, "a", now)
    assert compute(s, now) == ({"a"}, Verdict.VALID)
    s.heartbeats["b"] = now                                      # alive, not participating
    assert compute(s, now) == (None, Verdict.SPLIT_BRAIN)


def test_quorum_changed():
    """lighthouse.rs test_quorum_changed: only replica ids count, not steps or addresses."""
    assert QuorumRules.next_quorum_id(1, ["1"], ["1"], commit_failures=False) == 1
    assert QuorumRules.next_quorum_id(1, ["2"], ["1"], commit_failures=False) == 2
    assert QuorumRules.next_quorum_id(0, ["1"], None, commit_failures=False) == 1


def test_lighthouse_e2e():
    """lighthouse.rs test_lighthouse_e2e: a heartbeat, then one replica's request."""
    s = state(join_timeout=0.001)
    s.heartbeat(0.0, "foo")
    q = s.request(0.0, Member("foo", step=10))
    assert q is not None and q.ids == ["foo"] and q.quorum_id == 1


def test_lighthouse_join_during_shrink():
    """lighthouse.rs test_lighthouse_join_during_shrink: a joiner that asks while the others
    shrink is kept out of that quorum, asks again at once, and joins the next."""
    s = state(min_replicas=2, join_timeout=1.0)
    assert s.request(0.0, Member("replica0", step=1)) is None
    q1 = s.request(0.0, Member("replica1", step=1))
    assert q1.ids == ["replica0", "replica1"] and q1.quorum_id == 1
    assert s.request(0.1, Member("joiner", step=1)) is None      # waits
    assert s.request(0.2, Member("replica0", step=2, shrink_only=True)) is None
    q2 = s.request(0.2, Member("replica1", step=2))
    assert q2.ids == ["replica0", "replica1"] and q2.participants[1].step == 2
    assert q2.quorum_id == 1                                      # same replicas, same id
    assert "joiner" in s.waiting and s.participants["joiner"][0] == 0.2   # asked again
    assert s.request(0.3, Member("replica0", step=3)) is None
    q3 = s.request(0.3, Member("replica1", step=3))
    assert q3.ids == ["joiner", "replica0", "replica1"] and q3.participants[2].step == 3
    assert q3.quorum_id == 2 and not s.waiting


def test_lighthouse_commit_failures():
    """lighthouse.rs test_lighthouse_commit_failures: the same replicas with a failed commit
    bump the quorum id, so the Managers reconfigure."""
    s = state(min_replicas=2, join_timeout=1.0)
    for k in range(2):
        s.request(k, Member("replica0", step=10))
        q = s.request(k, Member("replica1", step=10))
        assert q.quorum_id == 1 and [m.commit_failures for m in q.participants] == [0, 0]
    s.request(2, Member("replica0", step=10))
    q = s.request(2, Member("replica1", step=10, commit_failures=2))
    assert q.quorum_id == 2 and [m.commit_failures for m in q.participants] == [0, 2]


def test_a_tick_forms_what_the_join_timeout_held_back():
    """torchft's timer tick (not a request) forms the quorum once the join timeout passes."""
    s = state(join_timeout=1.0)
    s.heartbeat(0.0, "silent")
    assert s.request(0.0, Member("a")) is None and s.request(0.0, Member("b")) is None
    assert s.tick(0.99) is None and s.verdict is Verdict.STRAGGLERS
    q = s.tick(1.0)
    assert q.ids == ["a", "b"]


def steps(*pairs):
    return dict(pairs)


def test_compute_quorum_results_first_step():
    """manager.rs test_compute_quorum_results_first_step: at step 0 every replica but the
    primary heals (init_sync); the primary rotates with the group rank."""
    q = steps(("replica_0", 0), ("replica_1", 0))
    r = heal_plan("replica_0", 0, q)
    assert (r.heal, r.replica_rank, r.recover_src_replica_rank, r.recover_dst_replica_ranks) == (False, 0, None, (1,))
    r = heal_plan("replica_1", 0, q)
    assert (r.heal, r.replica_rank, r.recover_src_replica_rank, r.recover_dst_replica_ranks) == (True, 1, 0, ())
    r = heal_plan("replica_1", 1, q)
    assert (r.heal, r.replica_rank, r.recover_src_replica_rank, r.recover_dst_replica_ranks) == (False, 1, None, (0,))


def test_compute_quorum_results_recovery():
    """manager.rs test_compute_quorum_results_recovery: replicas behind the max step heal,
    sources round-robin over the up-to-date replicas from the group rank."""
    q = steps(("replica_0", 0), ("replica_1", 1), ("replica_2", 0), ("replica_3", 1), ("replica_4", 0))
    r = heal_plan("replica_0", 0, q)
    assert (r.heal, r.replica_rank, r.recover_src_replica_rank, r.recover_dst_replica_ranks) == (True, 0, 1, ())
    r = heal_plan("replica_1", 0, q)
    assert (r.heal, r.replica_rank, r.recover_src_replica_rank, r.recover_dst_replica_ranks) == (False, 1, None, (0, 4))
    r = heal_plan("replica_3", 0, q)
    assert (r.heal, r.replica_rank, r.recover_src_replica_rank, r.recover_dst_replica_ranks) == (False, 3, None, (2,))
    r = heal_plan("replica_1", 1, q)
    assert (r.heal, r.replica_rank, r.recover_src_replica_rank, r.recover_dst_replica_ranks) == (False, 1, None, (2,))
    assert (r.max_step, r.max_world_size, r.max_replica_rank) == (1, 2, 0)


def test_compute_quorum_results_skip_init_sync():
    """manager.rs test_compute_quorum_results_skip_init_sync."""
    q = steps(("replica_0", 0), ("replica_1", 0))
    assert not heal_plan("replica_0", 0, q).heal
    assert heal_plan("replica_1", 0, q).heal
    assert not heal_plan("replica_1", 0, q, init_sync=False).heal
    q["replica_0"] = 1
    assert heal_plan("replica_1", 0, q, init_sync=False).heal


def test_compute_quorum_results_commit_failures():
    """manager.rs test_compute_quorum_results_commit_failures: the quorum's highest count."""
    q = steps(("replica_0", 0), ("replica_1", 0))
    assert heal_plan("replica_0", 0, q, commit_failures={"replica_1": 2}).commit_failures == 2


def test_a_replica_outside_the_quorum_is_refused():
    with pytest.raises(ValueError, match="not participating"):
        heal_plan("x", 0, {"a": 0})
