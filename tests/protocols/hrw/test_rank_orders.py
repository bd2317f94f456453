"""The hrw protocol's three rank orders, with exactly known outcomes: host 3 (rank 4 by HRW)
crashes and returns, and each policy moves the ranks it says it moves."""
import pytest

import rdzv_sim
from hrw import Placement
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.sim.sandbox import Sandbox

FAULTS = "faults=[{kind: crash, node: 3, at: 120}, {kind: restart, node: 3, at: 200}]"


def rounds(policy):
    sc = rdzv_sim.load_scenario("quickstart", [f"protocol.rank_order={policy}", FAULTS])
    ev = rdzv_sim.run(sc).tables()["events"]
    ranked = ev[ev["event"] == "rank_assigned"]
    return [[int(n[-1]) for n in g.sort_values("rank")["node"]] for _, g in ranked.groupby("round")]


def test_hrw_ranks_are_hrw_scores_and_shift_when_a_host_leaves():
    order = [int(n[-1]) for n in Placement([f"node{i}" for i in range(8)], seed=0).rank_order("job")]
    assert order == [2, 4, 5, 7, 3, 1, 0, 6]
    assert rounds("hrw") == [order, [h for h in order if h != 3], order]


def test_topology_ranks_are_the_node_list_order():
    assert rounds("topology") == [list(range(8)), [0, 1, 2, 4, 5, 6, 7], list(range(8))]


def test_stable_moves_only_the_last_rank_into_the_hole_and_the_returning_host_takes_the_end():
    assert rounds("stable") == [[2, 4, 5, 7, 3, 1, 0, 6], [2, 4, 5, 7, 6, 1, 0],
                                [2, 4, 5, 7, 6, 1, 0, 3]]


@pytest.mark.parametrize("garbage", ["not json", '["n0", "n0"]', '{"a": 1}', "[" + '"x",' * 20 + '"y"]'])
def test_an_unreadable_published_order_is_said_and_hrw_order_used(garbage):
    sb = Sandbox(nodes=3)
    sb.store.data["rdzv/r/order"] = garbage
    proto = HrwProtocol(HrwSettings(run_id="r", min_nodes=3, max_nodes=3, rank_order="stable"))
    results = sb.run(lambda info: proto.rendezvous(info), until=60)
    want = Placement(["n0", "n1", "n2"], seed=0).rank_order("r")
    assert [r.rank for r in results] == [want.index(f"n{i}") for i in range(3)]
    bad = [row for row in sb.trace.rows if row[2] == "bad_value"]
    assert len(bad) == 1 and '"key":"order"' in str(bad[0])
    assert sb.store.data["rdzv/r/order"] == '["' + '","'.join(want) + '"]'   # published anew


def test_a_bad_rank_order_is_refused_with_its_path():
    with pytest.raises(rdzv_sim.Error, match=r"protocol\.rank_order"):
        rdzv_sim.load_scenario("quickstart", ["protocol.rank_order=alphabetical"])


def test_a_host_back_at_a_new_address_is_its_rounds_master_there():
    """A pod rescheduled (same name, new IP): node2, rank 0 by HRW, returns at another address;
    every member of the next round gets the new one as MASTER_ADDR, never the stale one."""
    import json
    sc = rdzv_sim.load_scenario("quickstart", ["faults=[{kind: crash, node: 2, at: 120}, "
                                               "{kind: restart, node: 2, at: 200, new_address: true}]"])
    ev = rdzv_sim.run(sc).events
    ranked = ev[ev["event"] == "rank_assigned"]
    masters = {int(r): sorted({json.loads(d)["master"] for d in g["detail"]}) for r, g in ranked.groupby("round")}
    assert masters == {0: ["node2"], 1: ["node4"], 2: ["node2.2"]}


def test_topology_order_is_natural_past_single_digits():
    """node9 before node10, rack-2 before rack-10: digit runs sort as numbers."""
    from rdzv_sim.protocols.base import NodeInfo
    from rdzv_sim.protocols.ranking import order
    names = [f"node{i}" for i in (10, 9, 100, 1, 11, 2)]
    infos = [NodeInfo(n, n, 1, i) for i, n in enumerate(names)]
    assert order("topology", infos, sorted) == ["node1", "node2", "node9", "node10", "node11", "node100"]
    topo = [NodeInfo(n, n, 1, i, topo=t) for i, (n, t) in enumerate(
        [("a", "rack-10/slot-1"), ("b", "rack-2/slot-10"), ("c", "rack-2/slot-9")])]
    assert order("topology", topo, sorted) == ["c", "b", "a"]
