"""hrw's store failover (store_failover=true): the store's host dies or is cut off, the last
round's members elect a successor by HRW, and the job goes on there; never two stores in an
epoch, never a round on both sides of a cut."""
import json

import pytest

from hrw import Placement
from rdzv_sim.api import run
from rdzv_sim.scenario import load
from rdzv_sim.testing import check_liveness, check_safety

NAMES = [f"node{i}" for i in range(8)]


def scenario(faults, nodes=8, **protocol):
    return load({
        "name": "failover", "seed": 5, "duration": 600,
        "cluster": {"nodes": nodes, "nproc_per_node": 8, "start_spread": 0},
        "store": {"host": 0, "op_timeout": 10},
        "protocol": {"name": "hrw", "min_nodes": 2, "max_nodes": nodes, "last_call_timeout": 1,
                     "store_failover": True, **protocol},
        "agent": {"collective_timeout": 30},
        "faults": faults})


def successors(members):
    """The order the closer elects: HRW for the run's store, the store's own host left out."""
    return Placement([m for m in members if m != "node0"], seed=0).rank_order("job/store")


def rounds_of(r):
    return {int(x.round): set(x.members.split(",")) for x in r.rounds.itertuples()}


def check(r, sc):
    tables = {"events": r.events, "rounds": r.rounds}
    assert check_safety(tables, sc).unexpected == []
    assert check_liveness(tables, sc).unexpected == []


def test_the_store_host_dies_and_the_job_goes_on_at_its_successor():
    sc = scenario([{"kind": "crash", "node": 0, "at": 150}])
    r = run(sc)
    check(r, sc)
    assert rounds_of(r) == {0: set(NAMES), 1: set(NAMES) - {"node0"}}
    ev = r.events
    started = ev[ev.event == "store_started"]
    assert list(started.node) == [successors(NAMES)[0]]               # one store, elected by HRW
    assert (ev.event == "agent_exit").sum() == 0
    assert int(r.summary.store_failovers.iloc[0]) == 1
    # the survivors train on until their collectives fail (30 s: host 0 vanished), then form
    # round 1 on the successor's store within its last call
    assert 180 < r.rounds.end.iloc[1] < 181.1
    lost = ev[ev.event == "store_lost"]
    assert len(lost) == 7 and (lost.t == 150).all()
    assert not ((ev.event == "round_left") & (ev.t < 180)).any()


def test_without_failover_the_job_ends():
    sc = scenario([{"kind": "crash", "node": 0, "at": 150}], store_failover=False)
    r = run(sc)
    assert list(r.rounds["round"]) == [0]
    assert set(r.events[r.events.event == "agent_exit"].node) == set(NAMES) - {"node0"}


def test_a_dead_successor_is_passed_over():
    """The first successor dies with the store: the others wait for it failover_timeout, then
    go to the second."""
    first, second = successors(NAMES)[:2]
    sc = scenario([{"kind": "crash", "node": 0, "at": 150},
                   {"kind": "crash", "node": int(first[4:]), "at": 150}], failover_timeout=5)
    r = run(sc)
    check(r, sc)
    assert rounds_of(r)[1] == set(NAMES) - {"node0", first}
    ev = r.events
    assert list(ev[ev.event == "store_started"].node) == [second]
    epochs = {json.loads(d)["epoch"] for d in ev[ev.event == "store_failover"].detail}
    assert epochs == {1, 2}
    assert 180 <= r.rounds.end.iloc[1] < 182


def test_a_store_cut_off_with_a_minority_cannot_split_the_job():
    """The store's host and one member are cut off from the other six for good: the six fail
    over and form round 1; the two still have the store but not a majority of round 0, so no
    round ever completes on their side."""
    sc = scenario([{"kind": "partition", "nodes": [0, 1], "at": 100, "duration": 10000}])
    r = run(sc)
    tables = {"events": r.events, "rounds": r.rounds}
    assert check_safety(tables, sc).unexpected == []
    done = rounds_of(r)
    assert done[0] == set(NAMES)
    assert all(m <= set(NAMES) - {"node0", "node1"} for rnd, m in done.items() if rnd > 0)
    assert done[max(done)] == set(NAMES) - {"node0", "node1"}
    ev = r.events
    assert (ev[ev.event == "no_quorum"].node.isin({"node0", "node1"})).all()
    assert (ev.event == "no_quorum").any()


def test_a_member_cut_off_alone_comes_back_from_its_own_store():
    """The first successor alone is cut off from the store past op_timeout while the others
    reach it: it fails over alone and serves a store of its own. Nobody joins it there, so
    after three rounds of failover_timeout below min_nodes it moves on through the cycle, home
    last, and is back in the job once the cut heals (before: it waited there for good)."""
    first = successors(NAMES)[0]
    sc = scenario([{"kind": "partition", "nodes": [int(first[4:])], "at": 100, "duration": 60}],
                  failover_timeout=5)
    r = run(sc)
    check(r, sc)
    ev = r.events
    mine = ev[ev.node == first]
    assert list(ev[ev.event == "store_started"].node) == [first]      # its own store
    alone = mine[mine.event == "no_quorum"]
    assert len(alone) == 3 and (alone.t > 100).all()
    done = rounds_of(r)
    assert set(NAMES) - {first} in done.values()                       # the others went on
    assert done[max(done)] == set(NAMES)                                # and it is back
    assert r.rounds.end.iloc[-1] > 160                                  # after the cut healed


def test_the_fence_costs_a_job_that_loses_half():
    """The price of the fence: four hosts, two crash at once (the store's among them); the
    other two are not a majority of round 0 and never form a round."""
    sc = scenario([{"kind": "crash", "node": 0, "at": 100}, {"kind": "crash", "node": 1, "at": 100}],
                  nodes=4)
    r = run(sc)
    assert list(r.rounds["round"]) == [0]
    assert (r.events.event == "no_quorum").any()


@pytest.mark.parametrize("text,why", [
    ('{"name":"a","addr":"a","nproc":1,"last":[1]}', "'last' is not"),
    ('{"name":"a","addr":"a","nproc":1,"last":[-2,3]}', "out of range"),
])
def test_a_descriptor_with_a_bad_memory_is_refused(text, why):
    from rdzv_sim.protocols.base import BadValue, NodeInfo
    with pytest.raises(BadValue, match=why):
        NodeInfo.decode(text)


def test_an_assignment_with_bad_successors_is_refused():
    from rdzv_sim.protocols.base import BadValue, RoundResult
    good = {"round": 0, "rank": 0, "nnodes": 1, "world_size": 1, "first_rank": 0, "master": "a",
            "digest": "x"}
    assert RoundResult.from_dict(good | {"succ": [["b", "10.0.0.2", 29400]]}).successors == \
        (("b", "10.0.0.2", 29400),)
    for bad in ([["b", "10.0.0.2"]], [["b", "x", 70000]], "b", [["b", "x", 1]] * 9):
        with pytest.raises(BadValue):
            RoundResult.from_dict(good | {"succ": bad})
