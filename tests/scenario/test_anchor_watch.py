"""When an anchor (`after: round_complete`, ...) is met, fed events one by one: every member of
the round (its rank_assigned's nnodes) did the anchor's event. A round that never completes
never meets an anchor on it; the near miss is the same round with its last member in."""
import pytest

from rdzv_sim.scenario.faults import After


def ranks(rnd, n, nodes, t0=1.0):
    return [(t0 + i, node, "rank_assigned", rnd, {"nnodes": n}) for i, node in enumerate(nodes)]


def met(anchor: dict, events):
    w = After(**anchor).watch()
    for ev in events:
        if w.feed(*ev) is not None:
            return w.met
    return None


def test_a_round_missing_a_member_never_completes():
    assert met({"after": "round_complete", "round": 0}, ranks(0, 3, ["a", "b"])) is None


def test_the_same_round_with_its_last_member_completes_then():
    assert met({"after": "round_complete", "round": 0}, ranks(0, 3, ["a", "b", "c"])) == 3.0


def test_a_member_counted_twice_does_not_complete_it():
    assert met({"after": "round_complete", "round": 0}, ranks(0, 3, ["a", "b", "a"])) is None


def test_without_a_round_the_first_round_that_completes_is_the_anchor():
    events = ranks(0, 3, ["a", "b"]) + ranks(1, 2, ["a", "b"], t0=10.0)
    assert met({"after": "round_complete"}, events) == 11.0


def test_an_anchor_on_a_later_round_ignores_earlier_ones():
    events = ranks(0, 2, ["a", "b"]) + ranks(1, 2, ["a", "b"], t0=10.0)
    assert met({"after": "round_complete", "round": 1}, events) == 11.0
    assert met({"after": "round_complete", "round": 2}, events) is None


def test_workers_started_counts_the_rounds_members():
    events = ranks(0, 2, ["a", "b"]) + [(4.0, "a", "workers_started", 0, None)]
    assert met({"after": "workers_started", "round": 0}, events) is None
    assert met({"after": "workers_started", "round": 0},
               events + [(6.0, "b", "workers_started", 0, None)]) == 6.0


@pytest.mark.parametrize("plus", [0.0, 2.5])
def test_plus_counts_from_when_it_was_met(plus):
    w = After(after="round_complete", round=0, plus=plus).watch()
    out = [w.feed(*ev) for ev in ranks(0, 2, ["a", "b"])]
    assert out == [None, 2.0 + plus] and w.met == 2.0
