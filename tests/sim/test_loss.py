"""A lossy link (a gray failure): messages are resent after TCP's retransmission timeouts, so a
node's store calls slow down while it lasts; the draws come from the seed."""
import numpy as np
import pytest

import rdzv_sim
from rdzv_sim.scenario import ScenarioError, load
from rdzv_sim.sim.network import Network, flat


def lossy(rate=0.5, at=0.0, duration=50.0, **kw):
    return {"name": "lossy", "seed": 2, "duration": 100,
            "cluster": {"nodes": 4, "nproc_per_node": 1, "start_spread": 0},
            "store": {"host": None}, "shards": {"count": 0},
            "protocol": {"name": "hrw", "min_nodes": 4, "max_nodes": 4, "last_call_timeout": 1},
            "agent": {"worker_start": 1},
            "faults": [{"kind": "loss", "nodes": [1], "rate": rate, "at": at, "duration": duration, **kw}]}


def test_resends_add_what_tcp_would_wait():
    """E[rto (2^k - 1)] for k losses in a row (at most 6), k ~ geometric(rate)."""
    import simpy
    net = Network(simpy.Environment(), flat(["a", "store"], 1e-6), "store", 0.0, np.random.default_rng(0))
    net.set_loss("a", 0.5, 0.2)
    extra = np.array([net.latency("a") for _ in range(40_000)]) - net.base["a"]
    p = 0.5
    want = sum(p ** k * (1 - p) * 0.2 * (2 ** k - 1) for k in range(6)) + p ** 6 * 0.2 * 63
    assert extra.mean() == pytest.approx(want, rel=0.03)
    assert set(np.round(extra, 6)) <= {round(0.2 * (2 ** k - 1), 6) for k in range(7)}
    net.set_loss("a", 0.0)
    assert net.latency("a") == net.base["a"]


def test_a_lossy_node_slows_its_round_and_the_run_replays():
    clean = rdzv_sim.run({**lossy(), "faults": []})
    r = rdzv_sim.run(lossy())
    assert r.rounds.members.tolist() == clean.rounds.members.tolist() == ["node0,node1,node2,node3"]
    assert r.rounds.latency.iloc[0] > clean.rounds.latency.iloc[0] + 0.2    # at least one resend
    ev = r.events[r.events.node == "network"]
    assert ev.event.tolist() == ["fault_loss", "loss_healed"] and ev.t.tolist() == [0.0, 50.0]
    again = rdzv_sim.run(lossy())
    assert again.events.drop(columns="wall", errors="ignore").equals(r.events.drop(columns="wall", errors="ignore"))


@pytest.mark.parametrize("change, path", [({"rate": 0.95}, r"faults\[0\]\.rate"),
                                          ({"rate": 0}, r"faults\[0\]\.rate"),
                                          ({"rto": 0}, r"faults\[0\]\.rto")])
def test_bad_loss_is_refused_by_path(change, path):
    with pytest.raises(ScenarioError, match=path):
        load(lossy(**change) if "rate" not in change else lossy(rate=change["rate"]))


def test_a_loss_names_nodes_or_a_rack():
    sc = lossy()
    del sc["faults"][0]["nodes"]
    with pytest.raises(ScenarioError, match="a loss fault names either `nodes` or `rack`"):
        load(sc)
