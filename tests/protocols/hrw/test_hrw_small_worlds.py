"""hrw in small worlds with exactly known outcomes (static's: tests/protocols/static/)."""
import pytest

from hrw import Placement
from rdzv_sim.protocols import RendezvousTimeout
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.sim.sandbox import Sandbox, rendezvous_all


def run_rdzv(proto, n, until=100.0, nodes=None):
    return rendezvous_all(proto, n, until, nodes)


def test_hrw_full_round_ranks_follow_hrw_order():
    proto = HrwProtocol(HrwSettings(run_id="r1", min_nodes=2, max_nodes=4))
    results, sb = run_rdzv(proto, 4)
    order = Placement([f"n{i}" for i in range(4)], seed=0).rank_order("r1")
    assert [r.rank for r in results] == [order.index(f"n{i}") for i in range(4)]
    assert {r.world_size for r in results} == {4} and {r.nnodes for r in results} == {4}
    assert len({r.digest for r in results}) == 1
    assert {r.master for r in results} == {order[0]}
    assert sorted(r.first_rank for r in results) == [0, 1, 2, 3]


def test_hrw_min_nodes_closes_after_last_call():
    proto = HrwProtocol(HrwSettings(run_id="r", min_nodes=2, max_nodes=5, last_call_timeout=3.0))
    results, sb = run_rdzv(proto, 3)
    assert {r.nnodes for r in results} == {3}
    closed = [row[0] for row in sb.trace.rows if row[2] == "round_closed"]
    assert len(closed) == 1 and 3.0 <= closed[0] < 3.1


def test_hrw_late_joiner_waits_and_asks_for_a_restart():
    proto = HrwProtocol(HrwSettings(run_id="r", min_nodes=2, max_nodes=3, last_call_timeout=1))
    sb = Sandbox(nodes=3)
    procs = [sb.spawn(n, proto.rendezvous(n.info)) for n in sb.nodes[:2]]

    def late():
        yield sb.env.timeout(10)
        procs.append(sb.spawn(sb.nodes[2], proto.rendezvous(sb.nodes[2].info)))
    sb.env.process(late())
    sb.env.run(until=50)
    assert [p.value.nnodes for p in procs[:2]] == [2, 2] and not procs[2].triggered
    assert sb.store.data["rdzv/r/r0/waiting"] == "1"         # members see it: restart


def test_hrw_full_round_ignores_waiting_nodes():
    proto = HrwProtocol(HrwSettings(run_id="r", min_nodes=2, max_nodes=2))
    sb = Sandbox(nodes=3)
    procs = [sb.spawn(n, proto.rendezvous(n.info)) for n in sb.nodes]
    sb.env.run(until=50)
    done = [p.value for p in procs if p.triggered]
    assert len(done) == 2 and {r.round for r in done} == {0}
    assert sb.store.data["rdzv/r/r0/waiting"] == "1"
    assert all(w.reason != "nodes_waiting" for w in proto.watch(done[0]))
    partial = HrwProtocol(HrwSettings(run_id="r", min_nodes=2, max_nodes=3))
    assert any(w.reason == "nodes_waiting" for w in partial.watch(done[0]))


def test_hrw_times_out_below_min_nodes():
    proto = HrwProtocol(HrwSettings(run_id="r", min_nodes=3, max_nodes=3, join_timeout=20))
    results, sb = run_rdzv(proto, 2, until=100)
    assert all(isinstance(r, RendezvousTimeout) for r in results)


def test_store_never_holds_pickle():
    proto = HrwProtocol(HrwSettings(run_id="r", min_nodes=2, max_nodes=3))
    _, sb = run_rdzv(proto, 3)
    import json
    for k, v in sb.store.data.items():
        assert not v.startswith("\x80")
        if "/n" in k or "/a" in k:
            json.loads(v)
