"""torchrun's static rendezvous in small worlds with exactly known outcomes: its deadline, its
ranks (the nodes' own indexes)."""
from rdzv_sim.protocols import RendezvousTimeout
from rdzv_sim.protocols.static import StaticProtocol, StaticSettings
from rdzv_sim.sim.sandbox import rendezvous_all


def run_rdzv(proto, n, until=100.0, nodes=None):
    return rendezvous_all(proto, n, until, nodes)


def test_static_times_out_at_its_deadline_when_a_rank_never_comes():
    proto = StaticProtocol(StaticSettings(run_id="s", min_nodes=3, max_nodes=3, join_timeout=42))
    results, sb = run_rdzv(proto, 3, nodes=[0, 1])
    assert all(isinstance(r, RendezvousTimeout) for r in results)
    assert all(42.0 <= r.at < 42.1 for r in results)


def test_static_ranks_are_node_indexes():
    proto = StaticProtocol(StaticSettings(run_id="s", min_nodes=3, max_nodes=3))
    results, _ = run_rdzv(proto, 3)
    assert [r.rank for r in results] == [0, 1, 2] and {r.master for r in results} == {"n0"}
