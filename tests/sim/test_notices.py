"""A hung collective fails the members of its round after the collective's timeout, unless
that notice was voided (the world restarted in place since: its old communicator is gone)."""
from rdzv_sim.reasons import Reason
from rdzv_sim.sim.sandbox import Sandbox


def members_notified(void: bool) -> set:
    sb = Sandbox(nodes=3)
    for n in sb.nodes:
        n.running_round = 0                        # all three train in round 0
    sb.runtime.peers_notice(0, {"n0"}, 5.0)
    if void:
        sb.env.run(until=1.0)
        sb.runtime.notices.pop(0)                   # what a recovery in place does (sim/in_place.py)
    sb.env.run(until=10.0)
    return {n.name for n in sb.nodes if Reason.PEER_FAILED in n.pending}


def test_a_notice_fails_every_member_but_its_culprit():
    assert members_notified(void=False) == {"n1", "n2"}


def test_a_voided_notice_fails_nobody():
    assert members_notified(void=True) == set()
