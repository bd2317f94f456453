"""The `hrw` torchrun handler against a real TCPStore, in one process: the contract torchrun's
agent relies on (registration, RendezvousInfo, num_nodes_waiting, closing, run ids apart)."""
import threading
import time
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from torch.distributed.elastic.rendezvous import RendezvousParameters  # noqa: E402
from torch.distributed.elastic.rendezvous.api import RendezvousClosedError  # noqa: E402
from torch.distributed.elastic.rendezvous.registry import get_rendezvous_handler  # noqa: E402

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def store():
    s = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                      timeout=timedelta(seconds=30), use_libuv=True)
    yield s


def params(store, name, run_id="job", lo=2, hi=3, **conf):
    conf = {"last_call_timeout": "0.5", "join_timeout": "20", "is_host": "false",
            "read_timeout": "30", "node_name": name, **conf}
    return RendezvousParameters("hrw", f"127.0.0.1:{store.port}", run_id, lo, hi,
                                local_addr="127.0.0.1", **conf)


def join_all(handlers):
    out, errs = {}, []

    def go(h):
        try:
            out[h] = h.next_rendezvous()
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(e)
    threads = [threading.Thread(target=go, args=(h,)) for h in handlers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)                       # a bound, not a wait
    assert not errs, errs
    return [out[h] for h in handlers]


def test_registered_through_the_entry_point(store):
    h = get_rendezvous_handler(params(store, "a"))
    assert type(h).__name__ == "ProtocolRendezvousHandler"
    assert h.get_backend() == "hrw" and h.get_run_id() == "job" and h.use_agent_store is False
    h.shutdown()


def test_bad_conf_names_the_key(store):
    with pytest.raises(ValueError, match="last_cal_timeout"):
        get_rendezvous_handler(params(store, "a", last_cal_timeout="3"))
    with pytest.raises(ValueError, match="join_timeout"):
        get_rendezvous_handler(params(store, "a", join_timeout="soon"))
    with pytest.raises(ValueError, match="rank_order='alphabetical'"):
        get_rendezvous_handler(params(store, "a", rank_order="alphabetical"))


def test_ranks_store_waiting_and_a_late_non_zero_rank_gets_its_master(store):
    hs = [get_rendezvous_handler(params(store, n, run_id="grow")) for n in ("n1", "n2")]
    infos = join_all(hs)
    assert sorted(i.rank for i in infos) == [0, 1] and {i.world_size for i in infos} == {2}
    boot = {(i.bootstrap_store_info.master_addr, i.bootstrap_store_info.master_port) for i in infos}
    assert len(boot) == 1 and next(iter(boot))[1] > 0        # rank 0's reserved port, for all
    # the agent's store is per round: role info of this round cannot leak into the next
    infos[0].store.set("torchelastic/role_info/0", b"x")
    assert hs[0].num_nodes_waiting() == 0
    late = get_rendezvous_handler(params(store, "n3", run_id="grow", join_timeout="300"))
    t = threading.Thread(target=lambda: late_out.append(late.next_rendezvous()))
    late_out = []
    t.start()
    deadline = time.monotonic() + 300     # a bound, not a wait: it goes on once both see it
    while (hs[0].num_nodes_waiting() == 0 or hs[1].num_nodes_waiting() == 0) and time.monotonic() < deadline:
        time.sleep(0.05)                  # a local read: the watcher thread keeps it current
    assert hs[0].num_nodes_waiting() == 1 and hs[1].num_nodes_waiting() == 1
    again = join_all(hs)                  # torchrun restarts both members at a monitor tick
    t.join(300)
    infos = again + late_out
    assert len(infos) == 3 and sorted(i.rank for i in infos) == [0, 1, 2]
    boot = {(i.bootstrap_store_info.master_addr, i.bootstrap_store_info.master_port) for i in infos}
    assert len(boot) == 1                 # every member, the newcomer included, knows the master
    assert not infos[0].store.check(["torchelastic/role_info/0"])
    for h in (*hs, late):
        assert h.num_nodes_waiting() == 0
        h.shutdown()


def test_each_rendezvous_logs_what_it_did_at_info(store, caplog):
    """In torch's style: one line on the attempt, one on the round joined, nothing else."""
    import logging
    h = get_rendezvous_handler(params(store, "logger", run_id="logs", lo=1, hi=1))
    with caplog.at_level(logging.INFO, logger="real_backend.torchrun_plugin"):
        h.next_rendezvous()
    lines = [r.getMessage() for r in caplog.records if r.name == "real_backend.torchrun_plugin"]
    assert len(lines) == 2, lines
    assert lines[0] == "The node 'logger' attempts to join the next round of the hrw rendezvous 'logs'."
    assert lines[1].startswith("The node 'logger' has joined round 0 of the hrw rendezvous 'logs' "
                               "as rank 0 in a world of size 1")
    assert lines[1].endswith("members: logger).")           # it closed the round: it names them
    h.shutdown()


def test_a_rounds_members_are_logged_the_first_few_and_how_many_more():
    from real_backend.torchrun_plugin import members_text
    assert members_text(["a", "b"]) == "a, b"
    assert members_text([f"n{i}" for i in range(10)], shown=8).endswith("n7 and 2 more")
    assert members_text([f"n{i}" for i in range(8)], shown=8) == ", ".join(f"n{i}" for i in range(8))   # near miss
    assert members_text(None) == "in the log of the node that closed the round"


def test_run_ids_stay_apart_and_closing(store):
    a = get_rendezvous_handler(params(store, "x", run_id="one", lo=1, hi=1))
    b = get_rendezvous_handler(params(store, "y", run_id="two", lo=1, hi=1))
    ia, ib = join_all([a, b])
    assert ia.rank == ib.rank == 0 and ia.world_size == ib.world_size == 1
    assert not a.is_closed()
    a.set_closed()
    assert a.is_closed() and not b.is_closed()
    with pytest.raises(RendezvousClosedError):
        a.next_rendezvous()
    a.shutdown()
    b.shutdown()


def test_rank_order_topology_follows_each_nodes_key(store):
    """Keys as a scheduler gives them (SLURM_PROCID-like): natural order, 9 before 10."""
    keys = {"p": "10", "q": "9", "r": "11"}
    hs = [get_rendezvous_handler(params(store, n, run_id="topo", lo=3, hi=3, rank_order="topology",
                                        topology=k)) for n, k in keys.items()]
    ranks = {h.name: i.rank for h, i in zip(hs, join_all(hs))}
    assert ranks == {"q": 0, "p": 1, "r": 2}
    for h in hs:
        h.shutdown()


def test_rank_order_stable_keeps_ranks_when_a_node_joins(store):
    from hrw import Placement
    first = ["s1", "s2", "s3"]
    newcomer = next(f"s{i}" for i in range(4, 40)
                    if Placement(first + [f"s{i}"], seed=0).rank_order("stab")[-1] != f"s{i}")
    hs = [get_rendezvous_handler(params(store, n, run_id="stab", lo=3, hi=4, rank_order="stable"))
          for n in first]
    before = {h.name: i.rank for h, i in zip(hs, join_all(hs))}
    assert before == {n: Placement(first, seed=0).rank_order("stab").index(n) for n in first}
    hs.append(get_rendezvous_handler(params(store, newcomer, run_id="stab", lo=3, hi=4,
                                            rank_order="stable")))
    after = {h.name: i.rank for h, i in zip(hs, join_all(hs))}
    assert after == {**before, newcomer: 3}      # by HRW it would not have been last
    for h in hs:
        h.shutdown()


def test_a_node_back_at_a_new_address_gives_its_new_address_as_master(store):
    """A pod rescheduled: same node name, new IP. Its newest descriptor wins the slot, so the
    round's MASTER_ADDR is the new address for every member."""
    from hrw import Placement
    first = next(n for n in ("m1", "m2", "m3", "m4") if Placement([n, "other"], seed=0).rank_order("move")[0] == n)
    # (close_on_shutdown=false: the old pod's shutdown stands for its going, and must not close
    # the job as a shutdown does by torch's contract)
    old = get_rendezvous_handler(params(store, first, run_id="move", lo=2, hi=2, close_on_shutdown="false"))
    peer = get_rendezvous_handler(params(store, "other", run_id="move", lo=2, hi=2))
    infos = join_all([old, peer])
    assert {i.bootstrap_store_info.master_addr for i in infos} == {"127.0.0.1"}
    old.shutdown()                                         # the pod goes; it comes back elsewhere
    conf = {"last_call_timeout": "0.5", "join_timeout": "20", "is_host": "false", "read_timeout": "30",
            "node_name": first}
    moved = get_rendezvous_handler(RendezvousParameters("hrw", f"127.0.0.1:{store.port}", "move", 2, 2,
                                                        local_addr="127.0.0.2", **conf))
    infos = join_all([moved, peer])
    assert [i.rank for i in infos] == [0, 1]
    assert {i.bootstrap_store_info.master_addr for i in infos} == {"127.0.0.2"}
    for h in (moved, peer):
        h.shutdown()


def test_a_fixed_rank_is_refused_by_name(store):
    with pytest.raises(ValueError, match="rank=.*static backend"):
        get_rendezvous_handler(params(store, "a", rank="0"))


@pytest.mark.parametrize("fault", ["cut", "garble", "truncate"])
def test_a_hostile_store_fails_the_call_within_read_timeout_and_the_agent_recovers(store, fault):
    """A store that goes silent with the connection open, answers garbage, or closes in the
    middle of a reply: the agent's call fails as torchrun expects (a connection error) within
    its read_timeout and a backstop, never hangs, and the next rendezvous after the heal works."""
    from torch.distributed.elastic.rendezvous.api import RendezvousConnectionError, RendezvousError
    from real_backend.proxy import FaultProxy
    proxy = FaultProxy("127.0.0.1", store.port)
    try:
        port = proxy.add("agent")
        conf = {"last_call_timeout": "0", "join_timeout": "20", "is_host": "false",
                "read_timeout": "2", "node_name": "solo"}
        h = get_rendezvous_handler(RendezvousParameters(
            "hrw", f"127.0.0.1:{port}", f"hostile-{fault}", 1, 1, local_addr="127.0.0.1", **conf))
        first = h.next_rendezvous()
        getattr(proxy, fault)("agent")
        t = time.monotonic()
        with pytest.raises(RendezvousError) as err:
            h.next_rendezvous()
        took = time.monotonic() - t
        assert isinstance(err.value, RendezvousConnectionError), err.value
        # one call (2 s + the runtime's 1 s backstop), a reconnect (the same) and the watcher's
        # 5 s join: a hang would be minutes (a garbled length prefix) or forever (a cut)
        assert took < 15.0, took
        proxy.heal("agent")
        again = h.next_rendezvous()
        assert again.rank == 0 and again.world_size == 1
        assert first.rank == 0 and h._last.round >= 1          # a new round, not the old one
        h.shutdown()
    finally:
        proxy.close()
