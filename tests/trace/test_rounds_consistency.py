"""The rounds table's consistency check: a round is consistent when its members agree on the
membership digest, the node count and the world size, the ranks are 0..n-1 once each, and
nnodes is the count of distinct members. Each near miss breaks one of those, by one."""
import json

import pandas as pd
import pytest

from rdzv_sim.trace.tables import rounds_table


def events(members):
    """rank_assigned rows: (node, rank, world_size, digest, nnodes) for round 0."""
    rows = []
    for i, (node, rank, ws, dg, nn) in enumerate(members):
        rows.append({"t": 1.0 + i, "node": node, "event": "join", "round": 0, "rank": None,
                     "world_size": None, "detail": json.dumps({"slot": i + 1})})
        rows.append({"t": 5.0 + i, "node": node, "event": "rank_assigned", "round": 0, "rank": rank,
                     "world_size": ws, "detail": json.dumps({"digest": dg, "nnodes": nn, "first_rank": rank,
                                                            "master": "a", "latency": 1.0})})
    return pd.DataFrame(rows).astype({"rank": "Int64", "world_size": "Int64"})


GOOD = [("a", 0, 3, "d", 3), ("b", 1, 3, "d", 3), ("c", 2, 3, "d", 3)]


def consistent(members) -> bool:
    table = rounds_table(events(members))
    assert len(table) == 1
    return bool(table["consistent"].iloc[0])


def test_a_round_whose_members_agree_is_consistent():
    assert consistent(GOOD)
    row = rounds_table(events(GOOD)).iloc[0]
    assert (row.nnodes, row.world_size, row.members, row.start, row.end) == (3, 3, "a,b,c", 1.0, 7.0)


@pytest.mark.parametrize("i, change", [
    (1, {3: "e"}),              # another digest
    (2, {4: 2}),                # another node count
    (2, {2: 4}),                # another world size
    (2, {1: 1}),                # a rank given twice (and 2 never)
    (2, {1: 3}),                # ranks 0, 1, 3: one past the end
    (2, {0: "b"}),              # a member twice
])
def test_one_disagreement_makes_it_inconsistent(i, change):
    bad = [list(m) for m in GOOD]
    for k, v in change.items():
        bad[i][k] = v
    assert not consistent([tuple(m) for m in bad])


def test_everyone_agreeing_on_the_wrong_count_is_inconsistent():
    """nnodes must be the members counted, not only the same on every row."""
    assert not consistent([(n, r, 3, "d", 4) for n, r, *_ in GOOD])


def closed(members, count):
    """The rank rows of `members`, and the round's closing, which filled `count` seats."""
    ev = events(members)
    row = {"t": 4.5, "node": "a", "event": "round_closed", "round": 0, "rank": None, "world_size": 3,
           "detail": json.dumps({"members": ["a", "b", "c"], "count": count, "holes": 0})}
    return pd.concat([ev, pd.DataFrame([row]).astype({"rank": "Int64", "world_size": "Int64"})],
                     ignore_index=True).sort_values("t", kind="stable").reset_index(drop=True)


def test_a_member_lost_before_its_rank_is_a_hole_not_a_disagreement():
    """A round that closed with 3 seats, whose third member died before it learned its rank:
    the two given agree, rank 2 is a hole (byterobust-9600 under in_process: a host lost
    while the world restarts in place)."""
    row = rounds_table(closed([("a", 0, 3, "d", 3), ("b", 1, 3, "d", 3)], 3)).iloc[0]
    assert bool(row.consistent) and row.holes == 1
    gap = rounds_table(closed([("a", 0, 3, "d", 3), ("c", 2, 3, "d", 3)], 3)).iloc[0]
    assert bool(gap.consistent) and gap.holes == 1                    # the hole in the middle
    full = rounds_table(closed(GOOD, 3)).iloc[0]
    assert bool(full.consistent) and full.holes == 0


@pytest.mark.parametrize("count", [2, 4])
def test_a_hole_needs_a_closing_that_filled_the_seats_the_members_count(count):
    """Near miss: the closing filled another number of seats than the members agree on."""
    row = rounds_table(closed([("a", 0, 3, "d", 3), ("b", 1, 3, "d", 3)], count)).iloc[0]
    assert not bool(row.consistent) and row.holes == 0


def test_a_rank_twice_is_inconsistent_even_with_a_hole_to_spare():
    row = rounds_table(closed([("a", 0, 3, "d", 3), ("b", 0, 3, "d", 3)], 3)).iloc[0]
    assert not bool(row.consistent)
