"""The aggregate fidelity against the per-operation one, on the same scenarios."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import rdzv_sim
from rdzv_sim.aggregate.queue import Fifo
from rdzv_sim.scenario.load import ScenarioError
from rdzv_sim.scenario.schema import Store


def one_round(n: int, fidelity: str) -> dict:
    return {"name": "round", "seed": 1, "duration": 600, "fidelity": fidelity,
            "cluster": {"nodes": n, "nproc_per_node": 8, "start_spread": 0.0},
            "store": {"host": None},
            "protocol": {"name": "hrw", "min_nodes": n, "max_nodes": n, "last_call_timeout": 1}}


def churn(fidelity: str, seed: int) -> dict:
    return {"name": "churn", "seed": seed, "duration": 86400, "fidelity": fidelity,
            "cluster": {"nodes": 64, "start_spread": 5, "topology": {"kind": "racks", "racks": 8}},
            "store": {"host": None},
            "protocol": {"name": "hrw", "min_nodes": 56, "max_nodes": 64, "last_call_timeout": 10},
            "agent": {"max_restarts": 1000, "max_rendezvous_attempts": 100, "collective_timeout": 120,
                      "peer_crash_detection": 5, "worker_start": 20},
            "training": {"checkpoint_interval": 600, "checkpoint_cost": 10},
            "random_faults": [
                {"kind": "interruptions", "cause": "gpu", "count": 12, "scope": "node", "repair": 1800},
                {"kind": "interruptions", "cause": "crash", "count": 4, "scope": "node", "repair": 600},
                {"kind": "interruptions", "cause": "bug", "count": 3, "scope": "job"},
                {"kind": "interruptions", "cause": "switch", "count": 1, "scope": "rack", "repair": 3600}]}


def ranks(r) -> dict:
    ra = r.events[r.events.event == "rank_assigned"]
    return dict(zip(zip(ra["round"], ra["node"]), ra["rank"]))


def test_one_round_matches_per_operation():
    per, agg = rdzv_sim.run(one_round(300, "per_operation")), rdzv_sim.run(one_round(300, "aggregate"))
    assert ranks(agg) == ranks(per)                          # same members, same HRW ranks
    assert agg.rounds.latency.iloc[0] == pytest.approx(per.rounds.latency.iloc[0], rel=0.02)
    s, g = per.summary.iloc[0], agg.summary.iloc[0]
    assert g.store_ops == s.store_ops                          # the same requests, batched
    assert g.rdzv_latency_p50 == pytest.approx(s.rdzv_latency_p50, rel=0.02)
    assert g.sim_events < s.sim_events / 10


@pytest.mark.parametrize("seed", [1, 3])
def test_churn_matches_per_operation(seed):
    per, agg = rdzv_sim.run(churn("per_operation", seed)), rdzv_sim.run(churn("aggregate", seed))
    s, g = per.summary.iloc[0], agg.summary.iloc[0]
    assert g.rounds_completed == s.rounds_completed
    assert g.failures_injected == s.failures_injected
    assert g.goodput == pytest.approx(s.goodput, abs=0.02)
    assert g.running_fraction == pytest.approx(s.running_fraction, abs=0.01)
    assert g.all_rounds_consistent
    assert list(agg.rounds.nnodes) == list(per.rounds.nnodes)


def test_aggregate_is_deterministic():
    a, b = rdzv_sim.run(churn("aggregate", 2)), rdzv_sim.run(churn("aggregate", 2))
    assert a.events.equals(b.events) and a.rounds.equals(b.rounds)


@pytest.mark.parametrize("change, path", [
    ({"protocol": {"name": "static"}}, "protocol.name"),
    ({"faults": [{"kind": "pause", "node": 1, "at": 5, "duration": 3}]}, "faults[0].kind"),
])
def test_aggregate_refuses_what_it_does_not_model(change, path):
    sc = {**churn("aggregate", 1), **change}
    with pytest.raises(ScenarioError) as e:
        rdzv_sim.run(sc)
    assert path in str(e.value) and "per_operation" in str(e.value)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 10), min_size=1, max_size=40), st.floats(0, 5),
       st.lists(st.integers(0, 2000), min_size=1, max_size=40))
def test_fifo_batch_is_lindleys_recursion(arrivals, busy_until, sizes):
    sizes = (sizes * len(arrivals))[:len(arrivals)]
    f = Fifo(Store(service_base=1e-3, service_per_byte=1e-6))
    f.free_at = busy_until
    got = f.serve(np.array(arrivals), np.array(sizes))
    free, want = busy_until, {}
    for i in sorted(range(len(arrivals)), key=lambda i: arrivals[i]):     # one at a time
        free = max(arrivals[i], free) + 1e-3 + 1e-6 * sizes[i]
        want[i] = free
    assert np.allclose(got, [want[i] for i in range(len(arrivals))])
    assert f.free_at == pytest.approx(free)


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 10), st.floats(0, 5), st.integers(0, 2000))
def test_a_lone_request_departs_exactly_as_in_a_batch(arrival, busy_until, size):
    """The lone-request path gives the batch path's departure to the last bit (the goldens
    hold to it); its near miss, a batch of two, takes the batch path."""
    lone, batch = (Fifo(Store(service_base=1e-3, service_per_byte=1e-6)) for _ in range(2))
    lone.free_at = batch.free_at = busy_until
    got = lone.serve(np.array([arrival]), size)
    want = batch.serve(np.array([arrival]), np.array([size]))      # an array: the batch path
    assert got.tolist() == want.tolist() and lone.free_at == batch.free_at
    assert (lone.ops, lone.bytes) == (batch.ops, batch.bytes) == (1, size)
    two = lone.serve(np.array([arrival, arrival]), size)       # queued behind it, one by one
    assert two[0] == pytest.approx(got[0] + 1e-3 + 1e-6 * size)
    assert two[1] == pytest.approx(two[0] + 1e-3 + 1e-6 * size)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 10), min_size=2, max_size=20), st.floats(0, 5), st.integers(0, 2000))
def test_one_size_for_a_batch_departs_exactly_as_sizes_each(arrivals, busy_until, size):
    one, each = (Fifo(Store(service_base=1e-3, service_per_byte=1e-6)) for _ in range(2))
    one.free_at = each.free_at = busy_until
    got = one.serve(np.array(arrivals), size)
    want = each.serve(np.array(arrivals), np.full(len(arrivals), size))
    assert got.tolist() == want.tolist() and one.free_at == each.free_at
    assert (one.ops, one.bytes) == (each.ops, each.bytes) == (len(arrivals), size * len(arrivals))
