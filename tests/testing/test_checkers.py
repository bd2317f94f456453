"""Every invariant checker of rdzv_sim.testing against hand-built trace tables: one that
satisfies it, and one per way it can be violated, each reporting exactly what is wrong."""
import json

import pandas as pd
import pytest

from hrw import Placement
from rdzv_sim.testing import invariants as I
from rdzv_sim.testing import liveness as L


class Trace:
    """Events in the order they are added (the row order is the event order)."""

    def __init__(self):
        self.rows = []

    def add(self, t, node, event, rnd=None, rank=None, world=None, **detail):
        self.rows.append({"t": float(t), "node": node, "event": event, "round": rnd, "rank": rank,
                          "world_size": world, "detail": json.dumps(detail) if detail else ""})
        return self

    def rank(self, t, node, rnd, rank, nnodes, nproc=1, first=None, digest="d", world=None):
        return self.add(t, node, "rank_assigned", rnd, rank, world if world is not None else nnodes * nproc,
                        nnodes=nnodes, first_rank=rank * nproc if first is None else first,
                        digest=digest, latency=0.1, master="n0")

    def round(self, rnd, names, t=1.0, **kw):
        for i, n in enumerate(names):
            self.add(t - 0.1, n, "confirmed", rnd, i)
        for i, n in enumerate(names):
            self.rank(t, n, rnd, i, len(names), **kw)
        return self

    @property
    def df(self):
        return pd.DataFrame(self.rows)


def kinds(violations):
    return [(v.invariant, v.round, v.node) for v in violations]


# --- ranks_are_a_permutation -------------------------------------------------------------
def test_permutation_holds_for_a_proper_round():
    assert I.ranks_are_a_permutation(Trace().round(0, ["a", "b", "c"], nproc=2).df) == []


@pytest.mark.parametrize("ranks, why", [([0, 0, 2], "duplicate"), ([0, 1, 3], "rank >= n"),
                                        ([-1, 0, 1], "negative")])
def test_permutation_catches_bad_node_ranks(ranks, why):
    tr = Trace()
    for n, r in zip("abc", ranks):
        tr.rank(1, n, 0, r, 3, first=max(r, 0) * 10 if why != "duplicate" else None)
    v = I.ranks_are_a_permutation(tr.df)
    assert [x.invariant for x in v][:1] == ["ranks_are_a_permutation"] and v[0].round == 0
    assert "node ranks" in v[0].message


def test_permutation_catches_a_node_assigned_twice():
    tr = Trace().rank(1, "a", 0, 0, 2).rank(1, "a", 0, 1, 2)
    assert [x.message for x in I.ranks_are_a_permutation(tr.df)] == ["a node was assigned twice"]


def test_permutation_catches_worker_ranks_that_do_not_tile():
    tr = Trace().rank(1, "a", 0, 0, 2, nproc=2, first=0).rank(1, "b", 0, 1, 2, nproc=2, first=0)
    assert ["worker rank starts" in x.message for x in I.ranks_are_a_permutation(tr.df)] == [True]
    tr = Trace().rank(1, "a", 0, 0, 2, nproc=2, first=0).rank(1, "b", 0, 1, 2, nproc=2, first=4)
    assert kinds(I.ranks_are_a_permutation(tr.df)) == [("ranks_are_a_permutation", 0, None)]


def test_permutation_catches_no_global_rank_zero():
    tr = Trace().rank(1, "a", 0, 0, 2, nproc=2, first=1).rank(1, "b", 0, 1, 2, nproc=2, first=3)
    assert [x.message for x in I.ranks_are_a_permutation(tr.df)] == ["no worker has global rank 0"]


# --- members_agree ------------------------------------------------------------------------
def test_members_agree_holds_and_catches_each_disagreement():
    assert I.members_agree(Trace().round(0, ["a", "b"]).add(0.9, "a", "round_closed", 0).df) == []
    tr = Trace().rank(1, "a", 0, 0, 2, digest="x").rank(1, "b", 0, 1, 2, digest="y")
    assert [v.message for v in I.members_agree(tr.df)] == ["members disagree on the membership"]
    tr = Trace().rank(1, "a", 0, 0, 2).rank(1, "b", 0, 1, 2, world=4)
    assert [v.message for v in I.members_agree(tr.df)] == ["members disagree on the world size"]
    tr = Trace().round(0, ["a", "b"]).add(0.9, "a", "round_closed", 0).add(0.95, "b", "round_closed", 0)
    assert [v.message for v in I.members_agree(tr.df)] == ["closed 2 times"]


# --- size_within_bounds -------------------------------------------------------------------
@pytest.mark.parametrize("n, lo, hi, bad", [(2, 2, 4, False), (4, 2, 4, False), (1, 2, 4, True),
                                            (5, 2, 4, True)])
def test_size_is_checked_at_both_boundaries(n, lo, hi, bad):
    tr = Trace().round(0, [f"n{i}" for i in range(n)])
    assert bool(I.size_within_bounds(tr.df, lo, hi)) == bad


# --- rounds_increase ----------------------------------------------------------------------
def test_rounds_increase_per_node():
    ok = Trace().rank(1, "a", 0, 0, 1).rank(2, "a", 1, 0, 1).df
    assert I.rounds_increase(ok) == []
    same = Trace().rank(1, "a", 3, 0, 1).rank(2, "a", 3, 0, 1).rank(3, "b", 1, 0, 1).df
    assert kinds(I.rounds_increase(same)) == [("rounds_increase", None, "a")]
    back = Trace().rank(1, "a", 3, 0, 1).rank(2, "a", 2, 0, 1).df
    assert [v.message for v in I.rounds_increase(back)] == ["rounds went 3 -> 2"]


# --- members_were_alive -------------------------------------------------------------------
def test_a_crashed_node_may_not_confirm_but_a_restarted_one_may():
    dead = Trace().add(0, "a", "node_start").add(1, "a", "fault_crash").add(2, "a", "confirmed", 0)
    assert kinds(I.members_were_alive(dead.df)) == [("members_were_alive", 0, "a")]
    back = Trace().add(0, "a", "node_start").add(1, "a", "fault_crash").add(1.5, "a", "node_start") \
        .add(2, "a", "confirmed", 0)
    assert I.members_were_alive(back.df) == []
    after = Trace().add(0, "a", "node_start").add(1, "a", "confirmed", 0).add(2, "a", "fault_crash")
    assert I.members_were_alive(after.df) == []


# --- every_member_accounted ---------------------------------------------------------------
def test_a_member_without_a_rank_must_have_crashed():
    tr = Trace().add(0.5, "a", "confirmed", 0).add(0.5, "b", "confirmed", 0).rank(1, "a", 0, 0, 2)
    assert kinds(I.every_member_accounted(tr.df)) == [("every_member_accounted", 0, None)]
    tr.add(0.8, "b", "fault_crash")
    crashed_later = Trace().add(0.5, "a", "confirmed", 0).add(0.5, "b", "confirmed", 0) \
        .add(0.7, "b", "fault_crash").rank(1, "a", 0, 0, 2)
    assert I.every_member_accounted(crashed_later.df) == []


def test_a_member_lost_during_a_restart_in_place_is_accounted():
    def world(crash: bool):
        tr = Trace().add(0.5, "a", "in_process_restart", 1).add(0.5, "b", "in_process_restart", 1)
        if crash:
            tr.add(0.7, "b", "fault_crash")
        return tr.rank(1, "a", 1, 0, 2).df
    assert I.every_member_accounted(world(crash=True)) == []
    assert kinds(I.every_member_accounted(world(crash=False))) == [("every_member_accounted", 1, None)]


# --- the hrw protocol's own ---------------------------------------------------------------
def test_ranks_follow_hrw():
    names = ["a", "b", "c", "d"]
    order = Placement(names, seed=0).rank_order("job")
    good = Trace()
    for r, n in enumerate(order):
        good.rank(1, n, 0, r, 4)
    assert I.ranks_follow_hrw(good.df, "job") == []
    bad = Trace()
    for r, n in enumerate(sorted(names) if sorted(names) != order else sorted(names, reverse=True)):
        bad.rank(1, n, 0, r, 4)
    assert kinds(I.ranks_follow_hrw(bad.df, "job")) == [("ranks_follow_hrw", 0, None)]


def test_ranks_follow_topology_in_natural_name_order():
    good = Trace()
    for r, n in enumerate(["node2", "node9", "node10"]):
        good.rank(1, n, 0, r, 3)
    assert I.ranks_follow_topology(good.df) == []
    bad = Trace()
    for r, n in enumerate(["node10", "node2", "node9"]):     # a plain string sort
        bad.rank(1, n, 0, r, 3)
    assert kinds(I.ranks_follow_topology(bad.df)) == [("ranks_follow_topology", 0, None)]


def stable_trace(second: list[str], published: bool = True) -> Trace:
    tr = Trace().add(0.9, "a", "round_closed", 0)
    for r, n in enumerate(["a", "b", "c", "d"]):
        tr.rank(1, n, 0, r, 4)
    if not published:                     # a round closed that no member learned the ranks of
        tr.add(1.5, "a", "round_closed", 1)
    tr.add(1.9, "a", "round_closed", 2)
    for r, n in enumerate(second):
        tr.rank(2, n, 2, r, len(second))
    return tr


def test_ranks_are_stable_keeps_what_it_can_and_judges_only_what_it_knows():
    assert I.ranks_are_stable(stable_trace(["a", "d", "c"]).df) == []       # b left: d takes 1
    assert I.ranks_are_stable(stable_trace(["a", "b", "c", "d", "e"]).df) == []
    assert I.ranks_are_stable(stable_trace(["b", "a", "c"], published=False).df) == []
    bad = stable_trace(["a", "c", "d"])                                     # c moved off rank 2
    assert kinds(I.ranks_are_stable(bad.df)) == [("ranks_are_stable", 2, None)]
    requeued = stable_trace(["b", "a", "c"])
    requeued.rows.insert(5, {"t": 1.2, "node": None, "event": "job_requeued", "round": None,
                             "rank": None, "world_size": None, "detail": ""})
    assert I.ranks_are_stable(requeued.df) == []


def test_hrw_moves_are_minimal_on_placements_it_did_not_make():
    ok = pd.DataFrame({"round": [0, 1], "members": ["a,b,c", "a,b"]})
    assert I.hrw_moves_are_minimal(ok) == []


def test_rounds_take_time_holds_and_catches_an_end_before_the_start():
    ok = pd.DataFrame({"round": [0, 1], "start": [0.0, 5.0], "end": [1.0, 5.0], "latency": [1.0, 0.0]})
    assert I.rounds_take_time(ok) == []
    bad = ok.assign(start=[0.0, 24.2], latency=[1.0, -19.2])
    assert [(v.invariant, v.round) for v in I.rounds_take_time(bad)] == [("rounds_take_time", 1)]


def test_a_member_that_joined_in_an_earlier_round_starts_the_round_it_is_in():
    """c10d labels a join with the round the node saw: the round it ends up in starts at its
    members' joins, not at a later join that carries its number (the -3.8 s latency of #18)."""
    from rdzv_sim.trace import rounds_table
    t = Trace()
    t.add(14.4, "n0", "join", 0).add(14.6, "n2", "join", 0)
    t.rank(17.4, "n0", 1, 0, 2).rank(16.6, "n2", 1, 1, 2)
    t.add(24.2, "n1", "join", 1)                                  # waits: joins round 2
    t.add(24.4, "n0", "join", 1).add(24.4, "n2", "join", 2)
    for i, n in enumerate(("n0", "n1", "n2")):
        t.rank(26.2, n, 2, i, 3)
    r = rounds_table(t.df)
    assert r["start"].tolist() == [14.4, 24.2] and (r["latency"] >= 0).all()


# --- confirmed_before_ranks (the barrier of hrw and static) ----------------------------------
def test_every_member_confirms_before_any_rank():
    assert I.confirmed_before_ranks(Trace().round(0, ["a", "b", "c"]).df) == []
    t = Trace().add(0.9, "a", "confirmed", 0, 0).add(0.9, "b", "confirmed", 0, 1)
    t.rank(1.0, "a", 0, 0, 3).add(1.1, "c", "confirmed", 0, 2)     # a's rank before c confirmed
    t.rank(1.2, "b", 0, 1, 3).rank(1.2, "c", 0, 2, 3)
    v = I.confirmed_before_ranks(t.df)
    assert kinds(v) == [("confirmed_before_ranks", 0, None)] and "2 of 3" in v[0].message
    twice = Trace().add(0.9, "a", "confirmed", 0, 0).add(0.9, "a", "confirmed", 0, 0)
    twice.rank(1.0, "a", 0, 0, 2).rank(1.0, "b", 0, 1, 2)            # one node twice is one
    assert kinds(I.confirmed_before_ranks(twice.df)) == [("confirmed_before_ranks", 0, None)]


# --- rounds_are_prompt: round 0 by its close rule plus a few round trips -------------------
def prompt_scenario(protocol="hrw", faults=(), **settings):
    from rdzv_sim.scenario import load
    return load({"name": "prompt", "duration": 100, "cluster": {"nodes": 3, "nproc_per_node": 1},
                 "store": {"host": None}, "faults": list(faults),
                 "protocol": {"name": protocol} | settings})


def joined(times, rank_at):
    t = Trace()
    for i, at in enumerate(times):
        t.add(at, f"n{i}", "join", 0)
    for i in range(len(times)):
        t.rank(rank_at, f"n{i}", 0, i, len(times))
    return t.df


@pytest.mark.parametrize("times, due", [([0.1, 0.2, 0.3], 0.3),      # full: the 3rd closes at once
                                        ([0.1, 0.2], 2.2)])          # min 2 joined: last call 2 s
def test_hrw_round_zero_is_due_by_its_close_rule(times, due):
    sc = prompt_scenario(min_nodes=2, max_nodes=3, last_call_timeout=2.0)
    slack = L.PROMPT_ROUND_TRIPS * L.round_trip(sc)
    assert 0 < slack < 0.01
    assert L.rounds_are_prompt(joined(times, due + slack * 0.99), sc) == []
    v = L.rounds_are_prompt(joined(times, due + slack * 1.01), sc)
    assert kinds(v) == [("rounds_are_prompt", 0, None)] and f"due by {due:.6g} s" in v[0].message


def test_a_fault_before_the_bound_lifts_the_promise():
    late = joined([0.1, 0.2, 0.3], 5.0)
    assert len(L.rounds_are_prompt(late, prompt_scenario())) == 1
    crash = [{"kind": "crash", "node": 2, "at": 0.25}]
    assert L.rounds_are_prompt(late, prompt_scenario(faults=crash)) == []
    after = [{"kind": "crash", "node": 2, "at": 1.0}]                # after the bound: no excuse
    assert len(L.rounds_are_prompt(late, prompt_scenario(faults=after))) == 1


def test_close_rules_of_static_and_c10d():
    from rdzv_sim.protocols.c10d.protocol import SYNC_DELAY
    st = prompt_scenario("static").protocol.resolved(3)
    assert st.close_due([0.1, 0.2, 0.4]) == 0.4 and st.close_due([0.1, 0.2]) is None
    c = prompt_scenario("c10d", min_nodes=2, max_nodes=3, last_call_timeout=2.0).protocol
    assert c.close_due([0.1, 0.2, 0.3]) == 0.3 + SYNC_DELAY                 # the others' next sync
    assert c.close_due([0.1, 0.2]) == 0.2 + 2.0 + 2 * SYNC_DELAY            # deadline set once, at min
    assert c.close_due([0.1]) is None


def test_closed_stays_closed_catches_a_round_begun_after_the_close():
    """hrw with close_on_shutdown=false re-forms after an agent's error exit; read as if the
    close had been on, that later round breaks torch's contract, and the checker says so."""
    import rdzv_sim
    from rdzv_sim.scenario import load
    from rdzv_sim.testing.invariants import closed_stays_closed
    fault = "faults=[{kind: agent_failure, node: 2, at: 30}]"
    opened = rdzv_sim.run(load("sigterm-one-agent", ["protocol.name=hrw", fault, "protocol.close_on_shutdown=false"]))
    closing = load("sigterm-one-agent", ["protocol.name=hrw", fault])
    tables = {"events": opened.events, "rounds": opened.rounds}
    bad = closed_stays_closed(tables, closing)
    assert {v.node for v in bad} == {"node0", "node1"} and all(v.invariant == "closed_stays_closed" for v in bad)
    closed = rdzv_sim.run(closing)
    assert closed_stays_closed({"events": closed.events, "rounds": closed.rounds}, closing) == []
