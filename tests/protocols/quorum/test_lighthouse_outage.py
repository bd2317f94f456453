"""What a Lighthouse outage costs a job that syncs every k steps (torchft 0.2.0's LocalSGD): the
window whose quorum call fails, all of it."""
import math

import pytest

from rdzv_sim.protocols.quorum.lighthouse import Costs, Lighthouse, QuorumRules


def replay(sync_every: int):
    """Two groups from 1 s, 1 s steps; the Lighthouse gone 30.5-36 s, the Manager retrying every
    5 s (3 retries over 20 s). Ids never given twice: what a reused id costs on top is
    tests/protocols/quorum/test_quorum.py's."""
    costs = Costs(step_time=1.0, quorum_cost=0.0, reconfigure=1.0, sync_every=sync_every,
                  quorum_retries=3, quorum_timeout=20.0, ids="unique")
    return Lighthouse(QuorumRules(heartbeat_timeout=5.0, tick=0.1), costs, duration=100.0).replay(
        [(0, 0.0, 1.0, math.inf), (1, 0.0, 1.0, math.inf)], outages=[(30.5, 36.0)])


def test_the_window_whose_call_fails_is_lost_whole():
    """sync_every 5: the first call ends the first window (6 s), windows end 12, 17, ..., 32 s;
    the call at 32 s fails (a window of 5 steps), the retry at 37 s reaches the fresh
    Lighthouse (the first retry's quorum, alone; the other group joins at its window's end)."""
    lh = replay(5)
    assert [(q.t, q.cause) for q in lh.quorums][:2] == [(6.0, "start"), (37.0, "lighthouse")]
    assert [q.cause for q in lh.quorums[2:]] == ["join"]
    assert [(s.t0, s.t1) for s in lh.segments if s.kind == "outage"] == [(32.0, 37.0)]
    assert lh.steps.failed == 5


@pytest.mark.parametrize("k", [1, 2, 5])
def test_one_window_of_k_steps_fails(k):
    """The near miss: one step per window loses one step, two lose two."""
    assert replay(k).steps.failed == k
