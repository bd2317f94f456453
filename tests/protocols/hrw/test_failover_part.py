"""hrw's store failover as a part (`rdzv_sim/protocols/hrw/failover.py`): plain hrw gets
`OneStore`, `store_failover` gets `StoreFailover`; each rule beside its near miss. The fence's
admission is driven op by op (sans-IO)."""
import json

import pytest

from rdzv_sim import ops as O
from rdzv_sim.protocols.base import NodeInfo, RendezvousFailed
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings, OneStore, StoreFailover


def protocol(failover: bool, min_nodes=2, max_nodes=3):
    return HrwProtocol(HrwSettings(name="hrw", min_nodes=min_nodes, max_nodes=max_nodes,
                                   store_failover=failover, failover_timeout=7.0).resolved(8))


MEMBER = NodeInfo("h0", "10.0.0.0", last=4, last_n=3)
NEWCOMER = NodeInfo("h9", "10.0.0.9")


def run(gen, store: dict):
    """Drive `gen` against a dict store (Check, Get, Add, CompareSet, Set, Emit, StoreAddress):
    its return value and the events it emitted."""
    emitted, value = [], None
    while True:
        try:
            op = gen.send(value)
        except StopIteration as stop:
            return stop.value, emitted
        t = type(op)
        if t is O.Check:
            value = all(k in store for k in op.keys)
        elif t is O.Get:
            value = store[op.key]
        elif t is O.Add:
            store[op.key] = int(store.get(op.key, 0)) + op.amount
            value = store[op.key]
        elif t is O.Set:
            store[op.key] = value = op.value
        elif t is O.CompareSet:
            if store.get(op.key, "") == op.expected:
                store[op.key] = op.desired
            value = store.get(op.key, op.expected)
        elif t is O.Emit:
            emitted.append(op.event)
            value = None
        elif t is O.StoreAddress:
            value = ("10.0.0.0", 29500)
        else:
            raise AssertionError(op)


def test_plain_hrw_has_one_store_and_failover_its_part():
    assert type(protocol(False).failover) is OneStore
    assert type(protocol(True).failover) is StoreFailover
    assert not OneStore.seats_every_joiner and StoreFailover.seats_every_joiner


def test_a_fresh_store_goes_on_from_the_members_last_round():
    assert protocol(True).failover.first_round(MEMBER, 0) == 5
    assert protocol(True).failover.first_round(NEWCOMER, 0) == 0     # near miss: no memory
    assert protocol(False).failover.first_round(MEMBER, 0) == 0      # near miss: one store


def test_only_a_member_that_failed_over_asks_whether_it_is_alone():
    assert protocol(True).failover.alone_limit(MEMBER) == 7.0
    assert protocol(True).failover.alone_limit(NEWCOMER) is None
    assert protocol(False).failover.alone_limit(MEMBER) is None


def test_alone_on_a_fresh_store_ends_the_round_as_no_quorum():
    p = protocol(True)
    store = {p._k(5, "seq"): 1}
    with pytest.raises(RendezvousFailed) as e:
        run(p.failover.alone(5), store)
    assert e.value.why == "no_quorum" and store[p._k(5, "end")] == "no_quorum"
    # near miss: a store where a round closed with ranks (`members`) is not a fresh one
    store = {p._k(5, "seq"): 1, p.prefix + "members": json.dumps(["h0"])}
    assert run(p.failover.alone(5), store)[0] is None and p._k(5, "end") not in store


def joiners(n, last=4, of=3):
    return {i + 1: NodeInfo(f"h{i}", f"10.0.0.{i + 1}", last=last, last_n=of) for i in range(n)}


def test_the_fence_admits_a_majority_of_the_last_round_and_not_half():
    p = protocol(True, min_nodes=1, max_nodes=4)
    members = {p.prefix + "members": json.dumps(["h0", "h1", "h2", "h9"])}
    infos, failed = run(p.failover.admit(5, joiners(3)), dict(members))[0]
    assert failed is None and len(infos) == 3
    (infos, failed), said = run(p.failover.admit(5, joiners(2)), dict(members))   # 2 of 4
    assert failed == "no_quorum" and said == ["no_quorum"]


def test_plain_hrw_admits_any_round_of_min_nodes():
    p = protocol(False)
    assert run(p.failover.admit(5, joiners(2)), {})[0][1] is None
    assert run(p.failover.admit(5, joiners(1)), {})[0][1] == "too_few_members"
    assert p.failover.published(["h0"]) == [] and run(p.failover.successors([]), {})[0] == ()


def test_successors_skip_the_stores_own_address_and_are_capped():
    p = protocol(True)
    infos = [NodeInfo(f"h{i}", f"10.0.0.{i}") for i in range(6)]     # h0 shares the store's
    succ = run(p.failover.successors(infos), {})[0]
    assert len(succ) == 3 and "h0" not in [n for n, _, _ in succ]
    assert all(port == 29500 for _, _, port in succ)
    assert p.failover.published(["h1", "h0"]) == [(p.prefix + "members", '["h0","h1"]')]
