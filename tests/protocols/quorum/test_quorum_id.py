"""torchft's quorum id (`_quorum_tick`): when it moves, so that every Manager reconfigures."""
import pytest

from rdzv_sim.protocols.quorum import LighthouseState, Member, QuorumRules

bump = QuorumRules.next_quorum_id


@pytest.mark.parametrize("members, prev, failures, expect", [
    (["a", "b"], None, False, 8),                # the first quorum
    (["a", "b"], ["a", "b"], False, 7),          # the same replicas, every commit good: kept
    (["b", "a"], ["a", "b"], False, 7),          # order does not matter
    (["a", "b"], ["a", "b"], True, 8),           # the same replicas, a failed commit
    (["a", "b", "c"], ["a", "b"], False, 8),     # one more
    (["a"], ["a", "b"], False, 8),               # one fewer
    (["a", "c"], ["a", "b"], False, 8),          # as many, another one
])
def test_next_quorum_id(members, prev, failures, expect):
    assert bump(7, members, prev, failures) == expect


def formed(commit_failures: tuple[int, int]) -> int:
    """Quorum id of a second quorum of the same two replicas, reporting these failed commits."""
    s = LighthouseState(QuorumRules(2, 3600.0, 5.0, tick=0.01))
    s.request(0, Member("r0", step=3))
    assert s.request(0, Member("r1", step=3)).quorum_id == 1
    s.request(1, Member("r0", step=4, commit_failures=commit_failures[0]))
    return s.request(1, Member("r1", step=4, commit_failures=commit_failures[1])).quorum_id


def test_a_single_failed_commit_of_one_replica_bumps_the_id():
    assert formed((0, 1)) == 2
    assert formed((1, 0)) == 2


def test_no_failed_commit_keeps_the_id():
    """The near miss: zero failures, one step below the single failure above."""
    assert formed((0, 0)) == 1
