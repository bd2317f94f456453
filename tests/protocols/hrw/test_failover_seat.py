"""hrw store_failover's seating (`StoreFailover.seat`): with more joiners than seats, who is seated first."""
from rdzv_sim.protocols.base import NodeInfo
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings


def protocol(max_nodes=3):
    return HrwProtocol(HrwSettings(name="hrw", min_nodes=1, max_nodes=max_nodes,
                                   store_failover=True).resolved(8))


def joiners(*lasts):
    """Slot i+1 holds host h{i}, which remembers round lasts[i] (-1: none)."""
    return {i + 1: NodeInfo(f"h{i}", f"10.0.0.{i}", last=r, last_n=3 if r >= 0 else 0)
            for i, r in enumerate(lasts)}


def seated(infos, last=None, max_nodes=3):
    return [infos[i].name for i in protocol(max_nodes).failover.seat(infos, last)]


def test_the_last_rounds_members_are_seated_before_earlier_joiners():
    infos = joiners(-1, -1, -1, 4, 4)                  # two newcomers joined first
    assert seated(infos, last={"h3", "h4"}) == ["h0", "h3", "h4"]


def test_the_rest_are_seated_in_slot_order():
    infos = joiners(-1, -1, -1, -1, -1)
    assert seated(infos, last={"h4"}) == ["h0", "h1", "h4"]      # not h2, h3: a later slot


def test_seats_come_back_in_slot_order():
    infos = joiners(4, -1, 4, -1, 4)
    assert list(protocol().failover.seat(infos, {"h4", "h2", "h0"})) == [1, 3, 5]


def test_a_fresh_store_seats_those_who_remember_the_latest_round():
    """No `members` key (a failover's fresh store): the joiners' own memory decides."""
    infos = joiners(3, 3, 4, -1, 4)
    assert seated(infos) == ["h0", "h2", "h4"]          # h1 remembers round 3 only


def test_an_older_round_is_no_claim():
    """The near miss: round 3 is one behind round 4, and gets no priority over slot order."""
    infos = joiners(-1, 3, -1, 4)
    assert seated(infos, max_nodes=2) == ["h0", "h3"]  # not h1


def test_when_nobody_remembers_a_round_the_first_joiners_are_seated():
    infos = joiners(-1, -1, -1, -1)
    assert seated(infos) == ["h0", "h1", "h2"]


def test_as_many_seats_as_max_nodes_and_no_more():
    infos = joiners(4, 4, 4, 4)
    assert len(seated(infos, last={"h0", "h1", "h2", "h3"})) == 3
    assert len(seated(joiners(4, 4), last={"h0", "h1"})) == 2
