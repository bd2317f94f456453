"""A real 3-member etcd cluster (Debian's etcd-server), started and stopped by the tests: the
store client keeps TCPStore's semantics, and the hrw protocol runs on it unchanged, through a
leader's death and a paused member. Skips, saying why, where no etcd binary is installed."""
import threading
import time

import pytest

from real_backend.etcd.cluster import EtcdCluster, available

pytestmark = [pytest.mark.real, pytest.mark.skipif(available() is not None, reason=str(available()))]


@pytest.fixture(scope="module")
def cluster():
    with EtcdCluster(3) as c:
        yield c


def store(c, first=0, **kw):
    from real_backend.etcd.store import EtcdStore
    eps = c.endpoints[first:] + c.endpoints[:first]
    return EtcdStore(eps, timeout=kw.pop("timeout", 10.0), prefix=kw.pop("prefix", "t/"), **kw)


def test_tcpstore_semantics(cluster):
    s = store(cluster, prefix="sem/")
    assert s.compare_set("k", "", "a") == b"a"                    # created
    assert s.compare_set("k", "", "b") == b"a"                    # exists: the value stored
    assert s.compare_set("k", "a", "c") == b"c"                   # matched: swapped
    assert s.compare_set("k", "zz", "d") == b"c"                  # no match: the value stored
    assert s.compare_set("missing", "x", "y") == b"x"             # missing, non-empty expected
    assert not s.check(["missing"])
    assert s.add("n", 2) == 2 and s.add("n", 3) == 5 and s.add("n", 0) == 5
    s.multi_set([f"m{i}" for i in range(300)], [str(i) for i in range(300)])   # > one txn
    assert s.multi_get(["m0", "m299"]) == [b"0", b"299"]
    assert s.check(["k", "n", "m150"]) and s.delete_key("k") and not s.delete_key("k")
    t = time.monotonic()
    with pytest.raises(TimeoutError):
        s.wait(["never"], 0.5)
    assert time.monotonic() - t >= 0.5


def test_adds_from_many_clients_all_count_and_a_wait_wakes_on_a_put(cluster):
    done = []

    def adder(i):
        s = store(cluster, first=i % 3, prefix="race/")
        for _ in range(20):
            s.add("count", 1)
        done.append(i)
    threads = [threading.Thread(target=adder, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(done) == 6 and store(cluster, prefix="race/").add("count", 0) == 120
    waiter, got = store(cluster, first=1, prefix="race/"), []
    t = threading.Thread(target=lambda: got.append(waiter.get("late")))
    t.start()
    time.sleep(0.3)
    store(cluster, first=2, prefix="race/").set("late", b"here")
    t.join(10)
    assert got == [b"here"]


def hrw_round(c, run_id, names, firsts, before=None, timeout=30.0):
    """`names` join one hrw round on the etcd cluster, each over its own real runtime;
    `before(i)` runs in node i's thread before it joins."""
    from rdzv_sim.protocols.base import NodeInfo
    from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
    from real_backend.runtime import RealRuntime
    proto = HrwProtocol(HrwSettings(run_id=run_id, min_nodes=len(names), max_nodes=len(names),
                                    last_call_timeout=0.5, confirm_timeout=10, join_timeout=timeout))
    out, errs = {}, []

    def node(i, name):
        try:
            if before:
                before(i)
            rt = RealRuntime("etcd", 0, lambda *a: None, op_timeout=10.0,
                             connect=lambda: store(c, first=firsts[i], prefix=""))
            out[name] = rt.drive(proto.rendezvous(NodeInfo(name, "127.0.0.1", 1, i)))
            rt.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(e)
    threads = [threading.Thread(target=node, args=(i, n)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 10)
    assert not errs, errs
    return out


def test_hrw_completes_a_round_on_etcd(cluster):
    out = hrw_round(cluster, "plain", ["a", "b", "c"], [0, 1, 2])
    assert sorted(r.rank for r in out.values()) == [0, 1, 2]
    assert len({r.digest for r in out.values()}) == 1


def test_hrw_completes_a_round_after_the_leader_is_killed_mid_rendezvous(cluster):
    """Two nodes join; the leader dies; the third joins through a member that was a follower:
    the round completes with all three, after an election."""
    leader = cluster.leader()
    others = [i for i, n in enumerate(cluster.names) if n != leader]

    def before(i):
        if i == 2:
            time.sleep(1.0)                  # a and b are in and waiting
            cluster.kill(leader)
    out = hrw_round(cluster, "leader-dies", ["a", "b", "c"], [others[0], others[1], others[0]], before)
    assert sorted(r.rank for r in out.values()) == [0, 1, 2]
    assert cluster.leader() != leader
    cluster.restart(leader)
    cluster.wait_healthy(30, members=cluster.names)


def test_a_paused_member_does_not_stall_the_others(cluster):
    """Member m2 is stopped (SIGSTOP): a node whose client talks to it moves on to another
    member after its request timeout, and the round completes."""
    victim = cluster.names[2]
    cluster.pause(victim)
    try:
        out = hrw_round(cluster, "paused", ["a", "b", "c"], [0, 1, 2])
        assert sorted(r.rank for r in out.values()) == [0, 1, 2]
    finally:
        cluster.resume(victim)


def test_the_launcher_runs_a_scenario_on_a_replicated_store_through_a_member_hosts_crash():
    """store.kind: replicated for real: members on nodes 0-2 of a local etcd cluster, node 0
    (and its member) killed 2 s after round 0 forms and back 2 s after round 1 does: the job re-forms without it and grows
    back, the process groups come up over etcd, and the simulator says the same rounds."""
    from real_backend.launcher import run_real
    from rdzv_sim.testing import check_safety
    from rdzv_sim.scenario import load
    sc = {"name": "real-etcd", "seed": 1, "duration": 120,
          "cluster": {"nodes": 3, "nproc_per_node": 1, "start_spread": 0},
          "store": {"kind": "replicated", "host": None, "hosts": [0, 1, 2], "op_timeout": 4},
          "protocol": {"name": "hrw", "min_nodes": 2, "max_nodes": 3, "last_call_timeout": 1,
                       "confirm_timeout": 5},
          "agent": {"collective_timeout": 5, "monitor_interval": 1, "worker_start": 0,
                    "peer_crash_detection": 0.3},
          "shards": {"count": 0},
          # timed from the workers running: a fault inside a loaded machine's process-group
          # set-up fails the set-up, another path
          "faults": [{"kind": "crash", "node": 0, "at": {"after": "workers_started", "round": 0, "plus": 2}},
                     {"kind": "restart", "node": 0, "at": {"after": "workers_started", "round": 1, "plus": 2}}]}
    r = run_real(sc, until={"after": "pg_ready", "round": 2, "plus": 1})
    ev = r.events
    assert r.rounds.nnodes.tolist() == [3, 2, 3], ev[["t", "node", "event"]].to_string()
    assert ev[ev.node == "store"].event.tolist() == ["store_member_lost", "store_member_back"]
    assert (ev.event == "pg_ready").sum() == 8 and not (ev.event == "agent_exit").any()
    assert not check_safety({"events": ev, "rounds": r.rounds}, load(sc)).violations
    import rdzv_sim
    assert rdzv_sim.run(sc).rounds.nnodes.tolist() == [3, 2, 3]


def test_the_torchrun_handler_on_etcd(cluster):
    """--rdzv-backend=hrw --rdzv-endpoint=<members> --rdzv-conf=store=etcd: three handlers
    rendezvous on the cluster, and the store torchrun's agent gets works."""
    pytest.importorskip("torch")
    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from torch.distributed.elastic.rendezvous.registry import get_rendezvous_handler
    hs = [get_rendezvous_handler(RendezvousParameters(
        "hrw", ",".join(cluster.endpoints[i:] + cluster.endpoints[:i]), "on-etcd", 3, 3,
        local_addr="127.0.0.1", store="etcd", node_name=f"e{i}", last_call_timeout="0.5",
        read_timeout="5", join_timeout="20")) for i in range(3)]
    out = {}
    threads = [threading.Thread(target=lambda h=h: out.__setitem__(h, h.next_rendezvous())) for h in hs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    infos = [out[h] for h in hs]
    assert sorted(i.rank for i in infos) == [0, 1, 2] and {i.world_size for i in infos} == {3}
    infos[0].store.set("role", b"x")
    assert infos[1].store.get("role") == b"x"             # one agent store for the round
    with pytest.raises(ValueError, match="store='zookeeper'"):
        get_rendezvous_handler(RendezvousParameters("hrw", cluster.endpoints[0], "x", 1, 1,
                                                    store="zookeeper"))
    for h in hs:
        h.shutdown()


def test_a_member_cut_off_by_the_proxy_does_not_stall_the_others(cluster):
    """Every node reaches the members through a fault proxy each; member m0's link is cut
    (silent: its bytes are held) while the round forms: clients that began there move to the
    next member after their request timeout, and the round completes."""
    from real_backend.proxy import FaultProxy
    proxies = [FaultProxy("127.0.0.1", int(ep.rsplit(":", 1)[1])) for ep in cluster.endpoints]
    try:
        fronts = [f"127.0.0.1:{p.add('m')}" for p in proxies]
        proxies[0].cut("m")

        class Fronted:                     # the cluster as the nodes see it: through the proxies
            endpoints = fronts
        out = hrw_round(Fronted, "cut-member", ["a", "b", "c"], [0, 0, 1])
        assert sorted(r.rank for r in out.values()) == [0, 1, 2]
    finally:
        for p in proxies:
            p.close()
