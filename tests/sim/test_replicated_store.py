"""The replicated store (etcd's shape) in the simulator: the job outlives any one member,
an election costs an election timeout, a store without a majority hangs instead of dying, a
minority behind a partition cannot write. Known outcomes on the quickstart cluster (8 hosts,
members on nodes 1, 2 and 3)."""
import pytest

import rdzv_sim
from rdzv_sim.scenario import ScenarioError, load

REPLICATED = "store={kind: replicated, host: null, hosts: [1, 2, 3], election_timeout: 1}"


def run(*sets):
    return rdzv_sim.run(rdzv_sim.load_scenario("quickstart", list(sets)))


def store_events(r):
    ev = r.events[r.events.node == "store"]
    return list(zip(ev.event, ev.t))


def test_the_leaders_host_dies_the_job_goes_on_after_an_election():
    r = run(REPLICATED, "faults=[{kind: crash, node: 1, at: 120}]")
    kinds = [e for e, _ in store_events(r)]
    assert kinds == ["store_member_lost", "store_leader_lost", "store_leader_elected"]
    elected = store_events(r)[-1][1]
    assert 121 <= elected < 122                                 # [1, 2) x election_timeout
    assert r.rounds.nnodes.tolist() == [8, 7] and not (r.events.event == "agent_exit").any()


def test_the_same_crash_ends_the_job_when_the_store_is_its_tcpstore():
    r = run("store.host=1", "faults=[{kind: crash, node: 1, at: 120}]")
    exits = r.events[r.events.event == "agent_exit"]
    assert len(exits) == 7 and exits.detail.str.contains("store_lost").all()


def test_without_a_majority_it_hangs_and_serves_again_when_one_is_back():
    r = run(REPLICATED, "faults=[{kind: crash, node: 1, at: 120}, {kind: crash, node: 2, at: 130},"
                        " {kind: restart, node: 1, at: 200}]")
    ev = store_events(r)
    assert [e for e, _ in ev][-2:] == ["store_member_back", "store_leader_elected"]
    assert 200 < ev[-1][1] < 202
    assert r.rounds.start.iloc[-1] > ev[-1][1]                  # nothing formed meanwhile
    assert not r.events.detail.str.contains("store_lost").any()


def test_a_minority_cut_off_cannot_write_and_the_majority_goes_on():
    """Node 1 (member 0, the leader) is cut off from everyone for 100 s: members 1 and 2 elect
    a leader and the others re-form without node 1; node 1's store calls hang."""
    r = run(REPLICATED, "faults=[{kind: partition, nodes: [1], at: 120, duration: 100}]")
    kinds = [e for e, _ in store_events(r)]
    assert kinds[:2] == ["store_leader_lost", "store_leader_elected"]
    second = r.rounds.iloc[1]
    assert second.nnodes == 7 and second.end < 220 and "node1" not in second.members.split(",")
    node1 = r.events[(r.events.node == "node1") & (r.events.t > 120) & (r.events.t < 220)]
    assert "rank_assigned" not in node1.event.tolist()


def test_a_paused_leader_is_replaced():
    r = run(REPLICATED, "faults=[{kind: store_pause, at: 120, duration: 60}]")
    kinds = [e for e, _ in store_events(r)]
    assert kinds[:4] == ["fault_store_pause", "fault_store_member_pause", "store_leader_lost",
                         "store_leader_elected"]
    assert r.rounds.nnodes.tolist() == [8]                      # training never noticed


def test_commits_cost_time_and_the_run_replays():
    tcp = run("store.host=null")
    rep = run(REPLICATED, "store.commit_time=0.01")
    assert rep.rounds.latency.iloc[0] > tcp.rounds.latency.iloc[0] + 0.05   # several commits
    again = run(REPLICATED, "store.commit_time=0.01")
    assert again.rounds.equals(rep.rounds)


@pytest.mark.parametrize("store, path", [
    ({"kind": "replicated", "host": None, "replicas": 2}, r"store\.replicas"),
    ({"kind": "replicated", "host": None, "replicas": 4}, r"store\.replicas"),
    ({"kind": "replicated", "host": None, "hosts": [1, 2]}, r"store\.hosts"),
    ({"kind": "replicated", "host": None, "hosts": [1, 2, 99]}, r"store\.hosts\[2\]"),
    ({"kind": "replicated", "host": None, "hosts": [1, 1, 2]}, r"store\.hosts"),
    ({"kind": "replicated", "host": 0}, r"store\.host"),
    ({"kind": "replicated", "host": None, "heartbeat_interval": 2}, r"store\.heartbeat_interval"),
    ({"kind": "etcd"}, r"store\.kind"),
])
def test_bad_replicated_stores_are_refused_by_path(store, path):
    sc = {"name": "bad", "duration": 10, "cluster": {"nodes": 4}, "store": store}
    with pytest.raises(ScenarioError, match=path):
        load(sc)


def test_aggregate_fidelity_refuses_a_replicated_store():
    with pytest.raises(ScenarioError, match=r"store\.kind"):
        load({"name": "agg", "duration": 10, "cluster": {"nodes": 4}, "fidelity": "aggregate",
              "store": {"kind": "replicated", "host": None}})
